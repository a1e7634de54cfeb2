"""Checkpoints: written atomically (temp file + rename), readable with ``weights_only=True``;
the one place train and infer read them, resolve run folders and rebuild models.

A checkpoint is a dict of tensors and plain Python values only (state dicts, the resolved
config as a dict, metrics, positions, RNG states), so ``torch.load(path, weights_only=True)``
reads it without unpickling code::

    {"format": "hyperframes-checkpoint", "version": 2,
     "checksum": {"algorithm": "sha256", "digest": str},
     "model": state_dict, "optimizer": state_dict, "scaler": state_dict | None,
     "config": dict, "contract": InputContract.to_dict(), "classes": [str],
     "task": "classification" | "segmentation",
     "epoch": int, "batches_done": int, "step": int, "samples": int,
     "best": {"metric": str, "value": float, "epoch": int},
     "metrics": dict, "history": [dict], "epoch_state": dict, "rng": dict,
     "loader": dict, "world_size": int, "steps_per_epoch": int, "log_records": int}

**Checksum.** ``checksum`` is SHA-256 over every other entry, tensors by their bytes
(:mod:`hyperframes._core._checksum`): torch does not check the zip's CRCs, so without it a bit
flipped on disk loads as another weight. Every reader checks it (:func:`load_checkpoint`:
resume, eval, predict, export; ``model.pretrained`` given a checkpoint) and refuses a
mismatch as damage naming the file. Checkpoints of version 1, from before checksums, load
unchecked with a note on stderr (they are the user's trained models; refusing them would
strand them): resuming re-saves ``last.pt`` with a checksum.

**The previous last.pt.** Each save of ``last.pt`` first keeps the one it replaces as
``last.prev.pt`` (:func:`~hyperframes._core._atomic.keep_previous`: a hard link, then the
atomic write), so a ``last.pt`` found damaged on resume has a previous checkpoint to fall
back to, which the error names (:func:`load_for_resume`).

``contract`` (:class:`~hyperframes._core._contract.InputContract`) is how input is prepared for
the model; checkpoints written before it have an ``input`` entry (``{"size", "fps"}``) and
their contract is derived from that and the config
(:func:`~hyperframes.train.resolve_contract`).
``epoch`` and ``batches_done`` say where training stands: resuming continues epoch ``epoch``
after its first ``batches_done`` batches (0 = a fresh epoch). ``loader`` is the training
loader's ``state_dict()`` (the position reached in the epoch's global order, all ranks
together), ``world_size`` and ``steps_per_epoch`` those of the run that saved it: with them a
run resumes on another number of processes (:mod:`hyperframes.train._loop._resume`); ``log_records``
is how many records ``log.jsonl`` held. Checkpoints without them resume on the same number.

**Run folders.** Every command takes a checkpoint file or a run folder; a folder resolves
(:func:`resolve_checkpoint`) to ``RUN_DIR/best.pt`` if it exists, else ``RUN_DIR/last.pt``,
for eval, predict and export alike; ``--resume`` always continues from ``RUN_DIR/last.pt``.

**Rebuilding.** :func:`rebuild_model` is the one way from a checkpoint to a model (eval,
predict, export); :func:`load_weights` (which it uses, as ``--resume`` does) strips the
``module.`` / ``_orig_mod.`` prefixes of DistributedDataParallel and ``torch.compile``.

Whoever reads a checkpoint checks the values that size what it will build with
:func:`check_checkpoint` first (:func:`load_checkpoint` does): the config with the bounds of
a config file, and ``frames``, ``num_classes``, ``classes``, ``contract`` and ``input``, so a
crafted checkpoint asking for ``data.frames: 1000000000`` is a :class:`ConfigError` naming
the file and the key, not an allocation; the model is first built on the ``meta`` device (no
memory) so that options which do not fit the checkpoint's weights are refused before the
real build.
"""

from __future__ import annotations

import errno
import os
import pickle
import random
import re
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from .. import models
from .._core._atomic import keep_previous, write_atomic
from .._core._checksum import (
    CHECKPOINT_FORMAT,
    checkpoint_file_problem,
    checksum_problem,
    note_unchecked,
    state_checksum,
    stored_bytes,
)
from .._core._config_models import DataConfig, ModelConfig
from .._core._config_values import check_config_values, check_field
from .._core._contract import InputContract
from .._core._errors import ConfigError, InputError
from .._core._limits import MAX_CLASSES, MAX_FPS, MAX_FRAMES
from .._core._text import model_name
from ._contract import check_frame_size, is_frame_rate, resolve_contract

__all__ = [
    "FORMAT",
    "check_checkpoint",
    "check_frame_size",
    "get_rng_state",
    "load_checkpoint",
    "load_for_resume",
    "load_weights",
    "rebuild_model",
    "resolve_checkpoint",
    "save_checkpoint",
    "set_rng_state",
    "strip_wrappers",
]

FORMAT = CHECKPOINT_FORMAT
#: 2: with a checksum; 1 (still read, unchecked): without
VERSION = 2
READABLE_VERSIONS = (1, 2)
#: what a run folder resolves to, first found first (``resume``: last.pt only)
RUN_DIR_ORDER = ("best.pt", "last.pt")
#: the save of last.pt before the latest, kept beside it
PREVIOUS = "last.prev.pt"


def save_checkpoint(
    path: str | os.PathLike, state: Mapping, *, keep: str | os.PathLike | None = None
) -> Path:
    """Save ``state`` (tensors and plain values) to ``path`` atomically, with its checksum
    (a ``path`` entry, as :func:`load_checkpoint` adds, is not saved). ``keep``: first make
    the file there a copy of the checkpoint being replaced (the run's ``last.prev.pt``)."""
    entries = {k: v for k, v in state.items() if k not in ("path", "checksum")}
    entries = {"format": FORMAT, "version": VERSION, **entries}
    if entries["version"] == VERSION:  # a test may write another version on purpose
        entries["checksum"] = state_checksum(entries)
    try:
        if keep is not None:
            keep_previous(path, keep)
        return write_atomic(path, lambda f: torch.save(entries, f))
    except Exception as e:
        full = _no_room(e)
        if full is None:
            raise
        folder = Path(path).parent
        try:
            free = f"{shutil.disk_usage(folder).free / 2**20:,.1f} MiB free"
        except OSError:
            free = "free space unknown"
        raise InputError(
            f"checkpoint {path}: not saved: no room in {folder} ({full}); it needs about "
            f"{(stored_bytes(entries) + (64 << 10)) / 2**20:,.1f} MiB, {free}. The checkpoints "
            "already there are intact: free space (or write to a larger disk) and run again "
            "(a training run: with --resume)"
        ) from None


#: what a write says when the disk (or the user's quota, or the file size limit) is full
_FULL = {errno.ENOSPC: "disk full", errno.EDQUOT: "quota exceeded", errno.EFBIG: "file too large"}


def _no_room(error: BaseException | None) -> str | None:
    """How ``error`` (or an error it was raised from: torch.save wraps the OSError) says the
    disk is full, or None when it does not."""
    seen = 0
    while error is not None and seen < 8:
        if isinstance(error, OSError) and error.errno in _FULL:
            return _FULL[error.errno]
        error, seen = error.__cause__ or error.__context__, seen + 1
    return None


def resolve_checkpoint(path: str | os.PathLike, *, resume: bool = False) -> Path:
    """The checkpoint file ``path`` names: a file is itself; a run folder gives its
    ``best.pt`` if it exists, else its ``last.pt`` (``resume=True``: its ``last.pt``).
    :class:`InputError` when there is none."""
    p = Path(path).expanduser()
    if p.is_dir():
        for name in ("last.pt",) if resume else RUN_DIR_ORDER:
            if (p / name).is_file():
                return p / name
        wanted = "last.pt" if resume else "best.pt or last.pt"
        raise InputError(
            f"checkpoint {p}: a folder without {wanted}; give a run folder or a .pt written "
            "by `hyperframes train`"
        )
    if not p.is_file():
        raise InputError(
            f"checkpoint {p}: no such file; give a run folder (its best.pt, else last.pt) or a "
            ".pt written by `hyperframes train`"
        )
    return p


def load_checkpoint(
    path: str | os.PathLike, *, resume: bool = False, map_location: Any = "cpu"
) -> dict:
    """Read and check a checkpoint (``weights_only=True``); ``path`` may be a run folder
    (:func:`resolve_checkpoint`). :class:`InputError` if it is not one, :class:`ConfigError`
    for values out of bounds. The dict gets ``path``, the file read."""
    p = resolve_checkpoint(path, resume=resume)
    costly = checkpoint_file_problem(p)  # bounded before torch.load inflates anything
    if costly is not None:
        raise InputError(f"checkpoint {p}: {costly}; it is not loaded")
    try:
        state = torch.load(p, map_location=map_location, weights_only=True)
    except Exception as e:  # zip / pickle framing errors, truncated files, refused objects
        text = str(e)
        refused = re.search(r"Unsupported global: GLOBAL ([\w.]+)", text)
        if isinstance(e, pickle.UnpicklingError) and refused:
            raise InputError(
                f"checkpoint {p}: not a hyperframes checkpoint: it holds Python objects "
                f"({refused[1]}) that torch.load(weights_only=True) refuses to load; "
                "hyperframes never unpickles code. Give a best.pt/last.pt written by "
                "`hyperframes train`"
            ) from None
        said = re.search(r"WeightsUnpickler error:\s*(.+)", text)
        why = said[1].strip() if said else " ".join(text.split())[:200]
        raise InputError(
            f"checkpoint {p}: not a hyperframes checkpoint: torch.load cannot read it "
            f"({type(e).__name__}: {why}); the file is damaged or is not a checkpoint written "
            "by `hyperframes train`"
        ) from None
    if not isinstance(state, Mapping) or state.get("format") != FORMAT:
        found = type(state).__name__
        if isinstance(state, Mapping):
            found = f"a {found} with keys {sorted(map(str, state))[:6]}"
        raise InputError(
            f"checkpoint {p}: not a hyperframes checkpoint (expected a dict with format "
            f"{FORMAT!r}, found {found}); plain state dicts load as pretrained weights "
            "(model.pretrained in a training config), not for eval/predict/export"
        )
    version = state.get("version")
    if isinstance(version, bool) or version not in READABLE_VERSIONS:
        raise InputError(
            f"checkpoint {p}: version {version!r} is not readable by this hyperframes, which "
            f"reads versions {', '.join(map(str, READABLE_VERSIONS))}"
        )
    problem = checksum_problem(state)
    if problem is not None:
        raise InputError(
            f"checkpoint {p}: {problem}; it is not loaded. Use another checkpoint of the run "
            f"({PREVIOUS}, best.pt) or copy this one again from where it came from"
        )
    for key in ("model", "config"):
        if not isinstance(state.get(key), Mapping):
            raise InputError(
                f"checkpoint {p}: the {key!r} entry is missing or not a mapping; the checkpoint "
                "is incomplete"
            )
    check_checkpoint(state, p)  # sizes first: ConfigError naming the file and the key
    if "checksum" not in state:
        note_unchecked(p)
    out = dict(state)
    out["path"] = str(p)
    return out


def load_for_resume(run_dir: str | os.PathLike) -> dict:
    """``RUN_DIR/last.pt`` read by :func:`load_checkpoint` for ``--resume``; when it cannot be
    read (damaged, truncated, refused), an :class:`InputError` that says why and names the
    previous checkpoint ``RUN_DIR/last.prev.pt``: intact (where it stands, and how to continue
    from it), damaged too, or missing."""
    run = Path(run_dir)
    last, prev = run / "last.pt", run / PREVIOUS
    try:
        return load_checkpoint(last)
    except (InputError, ConfigError) as e:
        said = str(e)
    try:
        ck = load_checkpoint(prev)
    except (InputError, ConfigError) as e:
        if not prev.is_file():
            fallback = f"there is no previous checkpoint ({prev} does not exist)"
        else:
            fallback = f"the previous checkpoint is unusable too ({e})"
        hint = "start a new run (another --out), from the weights of best.pt if it loads"
        raise InputError(f"resume: {said}. And {fallback}: {hint}") from None
    where = f"epoch {int(ck.get('epoch', 0))}, step {int(ck.get('step', 0))}"
    damaged = last.with_name("last.damaged.pt")
    raise InputError(
        f"resume: {said}. The previous checkpoint {prev} ({where}) is intact: to continue "
        f"from it, set the damaged one aside and put it in its place (mv {last} {damaged} "
        f"&& mv {prev} {last}), then run again with --resume"
    )


def check_checkpoint(state: Mapping, path: str | os.PathLike) -> None:
    """Check what a checkpoint's values would make a reader build, before it builds anything:
    its ``config`` (:func:`~hyperframes._core._config_values.check_config_values`), ``frames``,
    ``num_classes``, ``classes``, ``contract`` and ``input``. :class:`ConfigError` naming
    ``path`` and the key.
    """
    try:
        frame_size = _check_entries(state)
        if isinstance(state.get("config"), Mapping):
            check_config_values(state["config"], prefix="config.", frame_size=frame_size)
    except ConfigError as e:
        raise ConfigError(f"checkpoint {path}: {e}") from None


def _check_entries(state: Mapping) -> tuple[int, int, str] | None:
    """Check the top-level sizes; returns the frame size the checkpoint implies, if any."""
    if state.get("frames") is not None:
        check_field("frames", state["frames"], DataConfig, "frames")
    if state.get("num_classes") is not None:
        check_field("num_classes", state["num_classes"], ModelConfig, "num_classes")
    classes = state.get("classes")
    if classes is not None and (
        not isinstance(classes, list | tuple) or len(classes) > MAX_CLASSES
    ):
        found = f"{len(classes)} names" if isinstance(classes, list | tuple) else repr(classes)
        raise ConfigError(
            f"classes: expected a list of at most {MAX_CLASSES} class names, got {found[:80]}"
        )
    if "contract" in state:
        contract = InputContract.from_dict(state["contract"])
        return check_frame_size(contract.size, "contract.size")
    recorded = state.get("input")
    if recorded is None:
        return None
    if not isinstance(recorded, Mapping):
        raise ConfigError(f"input: expected a mapping with size and fps, got {recorded!r:.80}")
    fps = recorded.get("fps")
    if fps is not None and not is_frame_rate(fps):
        raise ConfigError(
            f"input.fps: {fps!r:.80} is not a frame rate; allowed: a number >= 0 and <= "
            f"{MAX_FPS:g} (0 = every decoded frame)"
        )
    return check_frame_size(recorded.get("size"), "input.size")


# --------------------------------------------------------------------------- models


def strip_wrappers(weights: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """A state dict without the ``module.`` (DistributedDataParallel) and ``_orig_mod.``
    (``torch.compile``) prefixes its keys may all carry."""
    sd = dict(weights)
    for wrapper in ("module.", "_orig_mod."):
        if sd and all(k.startswith(wrapper) for k in sd):
            sd = {k[len(wrapper) :]: v for k, v in sd.items()}
    return sd


def load_weights(model: nn.Module, state: Mapping) -> None:
    """Load a checkpoint's ``model`` weights into ``model`` (prefixes stripped, strict);
    :class:`InputError` naming the file when they do not fit."""
    try:
        model.load_state_dict(strip_wrappers(state["model"]), strict=True)
    except RuntimeError as e:
        text = " ".join(str(e).split())
        name = model_name(model)
        raise InputError(
            f"checkpoint {state.get('path', '')}: the weights do not fit model {name!r} "
            f"({text[:400]}); the checkpoint is damaged or its config was edited"
        ) from None


def _model_entry(state: Mapping, contract: InputContract) -> tuple[str, int, dict, list[str]]:
    """(name, num_classes, options, classes) of a checkpoint's model."""
    path = state.get("path", "")
    mcfg = state["config"].get("model") or {}
    if not isinstance(mcfg, Mapping):
        raise InputError(f"checkpoint {path}: config.model is not a mapping")
    name = mcfg.get("name") or state.get("model_name")
    if not isinstance(name, str):
        raise InputError(
            f"checkpoint {path}: config.model.name is missing; cannot rebuild the model"
        )
    try:
        models.get_spec(name)
    except ConfigError as e:
        raise InputError(f"checkpoint {path}: config.model.name: {e}") from None
    classes = [str(c) for c in (contract.classes or state.get("classes") or [])]
    num_classes = state.get("num_classes") or mcfg.get("num_classes") or len(classes)
    if not num_classes:
        raise InputError(
            f"checkpoint {path}: neither config.model.num_classes nor a class list says how "
            "many classes the model predicts"
        )
    classes = classes or [str(i) for i in range(num_classes)]
    if len(classes) != num_classes:
        raise InputError(
            f"checkpoint {path}: {len(classes)} class names for a model of {num_classes} classes"
        )
    options = {k: v for k, v in dict(mcfg.get("options") or {}).items() if k != "checkpointing"}
    if mcfg.get("norm") is not None:  # model.norm
        options["norm"] = mcfg["norm"]
    return name, int(num_classes), options, classes


def rebuild_model(
    state: Mapping, *, device: str | torch.device = "cpu", **overrides: Any
) -> tuple[nn.Module, InputContract]:
    """The model of a checkpoint read by :func:`load_checkpoint` (its weights, eval mode, on
    ``device``) and its :class:`InputContract` (``overrides``: see
    :func:`~hyperframes.train.resolve_contract`; the contract's classes are the model's).
    :class:`InputError` when the config does not build a model the weights fit."""
    path = state.get("path", "")
    frames = overrides.pop("frames", None)  # windows of another T (models that take any)
    try:
        contract = resolve_contract(state, **overrides)
    except ConfigError as e:
        if "size" in overrides or "fps" in overrides:
            raise
        raise ConfigError(f"checkpoint {path}: {e}") from None
    name, num_classes, options, classes = _model_entry(state, contract)
    built = built_frames(contract)
    options = {**contract.replace(frames=built).model_options(), **options}
    weights = strip_wrappers(state["model"])
    unfit = _shape_mismatch(name, num_classes, built, options, weights, path)
    if unfit:
        raise InputError(
            f"checkpoint {path}: the weights do not fit model {name!r} built from its config "
            f"({unfit}); the checkpoint is damaged or its config was edited"
        )
    try:
        model = models.create(name, num_classes=num_classes, frames=built, **options)
    except ConfigError as e:
        raise InputError(f"checkpoint {path}: its config does not build a model: {e}") from None
    load_weights(model, {"model": weights, "path": path})
    model.eval().to(device)
    if tuple(classes) != contract.classes:
        contract = contract.replace(classes=tuple(classes))
    return model, at_frames(model, contract, frames)


def _shape_mismatch(
    name: str, num_classes: int, frames: int, options: dict, weights: Mapping, path: str
) -> str | None:
    """Build the model on the ``meta`` device (shapes, no memory) and say how the checkpoint's
    weights differ from it, or None: ``model.options`` such as ``hidden_size: 10**9`` are
    refused here instead of allocated (every registered family builds on ``meta``; a test
    says so)."""
    try:
        with torch.device("meta"):
            ghost = models.create(name, num_classes=num_classes, frames=frames, **options)
    except ConfigError as e:
        raise InputError(f"checkpoint {path}: its config does not build a model: {e}") from None
    except Exception as e:  # an option the builder chokes on (every family builds on meta)
        raise InputError(
            f"checkpoint {path}: its config does not build a model ({type(e).__name__}: "
            f"{' '.join(str(e).split())[:300]})"
        ) from None
    want = {k: tuple(v.shape) for k, v in ghost.state_dict().items()}
    for key, value in weights.items():
        if not isinstance(value, torch.Tensor):
            return f"{key} is a {type(value).__name__}, not a tensor"
    have = {k: tuple(v.shape) for k, v in weights.items()}
    missing, unexpected = sorted(want.keys() - have.keys()), sorted(have.keys() - want.keys())
    if missing or unexpected:
        return f"missing keys {missing[:5]}, unexpected keys {unexpected[:5]}"
    for key, shape in want.items():
        if have[key] != shape:
            return f"size mismatch for {key}: the checkpoint has {have[key]}, the model {shape}"
    return None


def built_frames(contract: Any) -> int:
    """The T a checkpoint's model was built (and trained) for: its contract's, or for a
    re-calibrated one the T it was trained at."""
    cal = contract.calibration
    return int(cal["trained_frames"]) if cal is not None else int(contract.frames)


def at_frames(model: Any, contract: Any, frames: int | None) -> Any:
    """``contract`` for windows of ``frames`` (None: as it is) on ``model``;
    :class:`ConfigError` with the reason when the model or the contract's tracks cannot."""

    if frames is None or frames == contract.frames:
        return contract
    if isinstance(frames, bool) or not isinstance(frames, int) or not 1 <= frames <= MAX_FRAMES:
        raise ConfigError(f"frames {frames!r:.40}: allowed: an integer from 1 to {MAX_FRAMES}")
    why = models.other_frames_refusal(model, frames)
    if why is None and (contract.flow or contract.audio is not None or contract.register):
        why = (
            f"the model was trained with tracks (flow, audio or registration) made for "
            f"T={contract.frames}"
        )
    if why is not None:
        raise ConfigError(f"--frames {frames}: {why}")
    return contract.replace(frames=frames)


# --------------------------------------------------------------------------- RNG state


def get_rng_state() -> dict:
    """Python, numpy and torch (CPU and CUDA) generator states, as tensors and ints."""
    np_state = np.random.get_state()
    assert isinstance(np_state, tuple)  # legacy=True (the default) on the global MT19937
    py_state = random.getstate()
    state = {
        "torch": torch.get_rng_state(),
        "numpy": {
            "keys": torch.from_numpy(np.asarray(np_state[1], dtype=np.int64)),
            "pos": int(np_state[2]),
            "has_gauss": int(np_state[3]),
            "gauss": float(np_state[4]),
        },
        "python": {
            "version": int(py_state[0]),
            "state": torch.tensor(py_state[1], dtype=torch.int64),
            "gauss": py_state[2],
        },
    }
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict) -> None:
    """Restore what :func:`get_rng_state` returned."""
    torch.set_rng_state(state["torch"])
    n = state["numpy"]
    np.random.set_state(
        ("MT19937", n["keys"].numpy().astype(np.uint32), n["pos"], n["has_gauss"], n["gauss"])
    )
    p = state["python"]
    random.setstate((p["version"], tuple(int(v) for v in p["state"].tolist()), p["gauss"]))
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])
