"""A training checkpoint turned into an inference model and its preprocessing.

The checkpoint (``hyperframes train``'s ``best.pt`` / ``last.pt``, read with
``torch.load(weights_only=True)``: nothing in it is unpickled as code) names the model
(``config.model``), the window (``config.data.frames``, ``config.data.layout``), the
normalisation (``config.data.mean`` / ``std``), the classes and the task.

**Frame size.** Frames are resized as the store that trained the model resized them; a model
trained on crops (``data.augmentation.size`` = s) gets what validation frames got instead:
the short side resized to s, then the central s x s square. The store's size and frame rate
are taken, first found first:

1. the ``size`` / ``fps`` arguments, unless None (``"128"``: short side 128, aspect kept; ``"112x112"``:
   exact height x width; ``"none"``: native; ``fps=0``: keep every decoded frame);
2. the checkpoint's ``"input"`` entry (``{"size": "128", "fps": 15.0}``; ``hyperframes train`` writes it);
3. the ``build`` options in the manifest of the store at ``config.data.store``, if it is there;
4. the store defaults: short side 128, every decoded frame.

:attr:`Preprocess.source` says which one was used.

**Bounds.** Nothing read from a checkpoint sizes an allocation before it is checked: the
config and the ``frames`` / ``num_classes`` / ``classes`` / ``input`` entries get the bounds of
a training config (:func:`hyperframes.train._checkpoint.check_checkpoint`), every frame size
(argument, checkpoint, store) has sides of at most 8192 and a rate of at most 1000 fps, and
the model is first built on the ``meta`` device (no memory) so that options which do not fit
the checkpoint's weights are refused before the real build.
"""

from __future__ import annotations

import json
import math
import os
import pickle
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from .._errors import ConfigError, InputError
from ..store._options import parse_size, target_size

__all__ = ["InferenceModel", "Preprocess", "load_inference_model", "read_checkpoint"]

FORMAT = "hyperframes-checkpoint"
VERSION = 1
DEFAULT_SIZE = "128"  # the store's default (hyperframes build --size)
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


# --------------------------------------------------------------------------- preprocessing


@dataclass(frozen=True)
class Preprocess:
    """How raw RGB frames become model input (see the module doc for where values come from).

    ``size``: the store's frame size (short side ``"128"``, ``"HxW"`` or ``None`` = native);
    ``crop``: if set, frames are instead resized to this short side and centre-cropped to
    ``crop`` x ``crop`` (validation of a model trained on crops); ``fps``: frames
    are resampled to this rate (``None``: every frame is used); ``mean``/``std`` on the
    [0, 1] scale; ``frames``: T; ``layout``: the model's input layout.
    """

    frames: int
    layout: str
    size: str | None = DEFAULT_SIZE
    crop: int | None = None
    mean: tuple[float, float, float] = IMAGENET_MEAN
    std: tuple[float, float, float] = IMAGENET_STD
    fps: float | None = None
    source: str = "defaults"

    def __post_init__(self) -> None:
        from ..train._checkpoint import check_frame_size
        from ..train._config import MAX_FPS, MAX_FRAMES, MAX_SIDE

        if isinstance(self.frames, bool) or not isinstance(self.frames, int):
            raise ConfigError(f"frames must be an integer, got {self.frames!r}")
        if not 1 <= self.frames <= MAX_FRAMES:
            raise ConfigError(f"frames: out of range: {self.frames}; allowed: 1 to {MAX_FRAMES}")
        check_frame_size(self.size, "size")
        if self.crop is not None and (
            isinstance(self.crop, bool)
            or not isinstance(self.crop, int)
            or not 1 <= self.crop <= MAX_SIDE
        ):
            raise ConfigError(
                f"crop must be an integer from 1 to {MAX_SIDE} or None, got {self.crop!r}"
            )
        if self.fps is not None and not (math.isfinite(self.fps) and 0 < self.fps <= MAX_FPS):
            raise ConfigError(
                f"fps must be a positive number up to {MAX_FPS:g} or None, got {self.fps!r}"
            )

    def resize_to(self, height: int, width: int) -> tuple[int, int]:
        """(H, W) a ``height`` x ``width`` source frame is resized to (before the crop)."""
        size = str(self.crop) if self.crop else self.size
        return target_size(height, width, size) or (height, width)

    def input_size(self, height: int, width: int) -> tuple[int, int]:
        """(H, W) of the model input for a ``height`` x ``width`` source frame."""
        h, w = self.resize_to(height, width)
        if self.crop is None:
            return (h, w)
        return (min(h, self.crop), min(w, self.crop))

    def square_size(self) -> tuple[int, int]:
        """A representative input size when no source frame is known (export): the crop, the
        exact size, or a square of the short side (64 for native-size stores)."""
        if self.crop is not None:
            return (self.crop, self.crop)
        spec = parse_size(self.size)
        if spec is None:
            return (64, 64)
        return (spec[1], spec[2])

    def crop_frame(self, rgb: np.ndarray) -> np.ndarray:
        """Centre-crop an (H, W, 3) frame to :attr:`crop` (no-op without one)."""
        if self.crop is None:
            return rgb
        h, w = rgb.shape[:2]
        ch, cw = min(h, self.crop), min(w, self.crop)
        top, left = (h - ch) // 2, (w - cw) // 2
        return rgb[top : top + ch, left : left + cw]

    def normalize(self, frames: Tensor) -> Tensor:
        """uint8 (..., H, W, 3) frames -> float32 (..., 3, H, W), ``(x / 255 - mean) / std``."""
        x = frames.movedim(-1, -3).to(torch.float32).div_(255.0)
        mean = torch.tensor(self.mean, dtype=torch.float32, device=x.device).reshape(3, 1, 1)
        std = torch.tensor(self.std, dtype=torch.float32, device=x.device).reshape(3, 1, 1)
        return (x - mean) / std

    def to_dict(self) -> dict:
        return {
            "frames": self.frames,
            "layout": self.layout,
            "size": self.size,
            "crop": self.crop,
            "mean": list(self.mean),
            "std": list(self.std),
            "fps": self.fps,
            "source": self.source,
        }


@dataclass
class InferenceModel:
    """A model in eval mode with what it needs around it."""

    model: nn.Module
    preprocess: Preprocess
    classes: list[str]
    task: str = "classification"
    name: str = ""
    path: str | None = None
    notes: list[str] = field(default_factory=list)


# --------------------------------------------------------------------------- reading


def _where(path: str | os.PathLike) -> Path:
    p = Path(path).expanduser()
    if p.is_dir():
        for name in ("best.pt", "last.pt"):
            if (p / name).is_file():
                return p / name
        raise InputError(
            f"checkpoint {p}: a folder without best.pt or last.pt; give RUN_DIR/best.pt "
            "written by `hyperframes train`"
        )
    if not p.is_file():
        raise InputError(
            f"checkpoint {p}: no such file; give RUN_DIR/best.pt or RUN_DIR/last.pt written by "
            "`hyperframes train`"
        )
    return p


def read_checkpoint(path: str | os.PathLike) -> dict:
    """Read and check a hyperframes checkpoint (``weights_only=True``); :class:`InputError` if not one.

    ``path`` may be a run folder (its ``best.pt``, else ``last.pt``).
    """
    p = _where(path)
    try:
        state = torch.load(p, map_location="cpu", weights_only=True)
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
        why = re.search(r"WeightsUnpickler error:\s*(.+)", text)
        why = why[1].strip() if why else " ".join(text.split())[:200]
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
            "(model.pretrained in a training config), not for predict/export"
        )
    if state.get("version") != VERSION:
        raise InputError(
            f"checkpoint {p}: version {state.get('version')!r} is not readable by this "
            f"hyperframes, which reads version {VERSION}"
        )
    for key, kind in (("model", Mapping), ("config", Mapping)):
        if not isinstance(state.get(key), kind):
            raise InputError(
                f"checkpoint {p}: the {key!r} entry is missing or not a mapping; the checkpoint "
                "is incomplete"
            )
    from ..train._checkpoint import check_checkpoint

    check_checkpoint(state, p)  # sizes first: ConfigError naming the file and the key
    out = dict(state)
    out["path"] = str(p)
    return out


def _section(state: dict, name: str) -> dict:
    sec = state["config"].get(name) or {}
    if not isinstance(sec, Mapping):
        raise InputError(f"checkpoint {state['path']}: config.{name} is not a mapping")
    return dict(sec)


def _store_build(store: Any) -> dict | None:
    """The ``build`` options in the manifest of the store at ``store``, or None if not there."""
    if not store:
        return None
    p = Path(str(store))
    if p.is_dir():  # a store folder: read its manifest, nothing else
        try:
            build = json.loads((p / "manifest.json").read_text()).get("build")
        except (OSError, ValueError, AttributeError):
            return None
    elif p.is_file():  # an HDF5 store keeps the manifest in its attributes
        try:
            from ..store import open_store

            with open_store(p) as h5:
                build = h5.manifest.get("build")
        except Exception:
            return None
    else:
        return None
    return build if isinstance(build, dict) else None


def _fps_value(value: Any, where: str) -> float | None:
    from ..train._config import MAX_FPS

    if value is None:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not (math.isfinite(value) and 0 <= value <= MAX_FPS)
    ):
        raise ConfigError(
            f"{where} must be a number >= 0 and <= {MAX_FPS:g} (0 = every decoded frame), "
            f"got {value!r}"
        )
    return float(value) if value > 0 else None


def preprocess_from_checkpoint(
    state: dict, layout: str, *, size: Any = None, fps: Any = None
) -> Preprocess:
    """The :class:`Preprocess` a checkpoint implies (see the module doc for the order)."""
    data = _section(state, "data")
    frames = data.get("frames", 8)
    aug = data.get("augmentation") or {}
    crop = aug.get("size") if isinstance(aug, Mapping) else None
    recorded = state.get("input") if isinstance(state.get("input"), Mapping) else None
    build = None if recorded else _store_build(data.get("store"))
    sources = []
    if size is not None:
        chosen_size, sources = size, ["size argument"]
    elif recorded and "size" in recorded:
        chosen_size, sources = recorded["size"], ["checkpoint input.size"]
    elif build and "size" in build:
        chosen_size, sources = build["size"], [f"store {data.get('store')}"]
    else:
        chosen_size, sources = DEFAULT_SIZE, ["default size 128"]
    if fps is not None:
        chosen_fps, src = _fps_value(fps, "fps"), "fps argument"
    elif recorded and "fps" in recorded:
        chosen_fps, src = _fps_value(recorded["fps"], "checkpoint input.fps"), "checkpoint"
    elif build and "fps" in build:
        chosen_fps, src = _fps_value(build["fps"], "store fps"), f"store {data.get('store')}"
    else:
        chosen_fps, src = None, "default: every frame"
    if src not in sources:
        sources.append(src)
    from ..train._checkpoint import check_frame_size

    check_frame_size(chosen_size, "frame size")
    return Preprocess(
        frames=int(frames),
        layout=layout,
        size=None if parse_size(chosen_size) is None else str(chosen_size),
        crop=int(crop) if crop else None,
        mean=tuple(float(v) for v in data.get("mean", IMAGENET_MEAN)),
        std=tuple(float(v) for v in data.get("std", IMAGENET_STD)),
        fps=chosen_fps,
        source=", ".join(sources),
    )


def _strip_wrappers(sd: Mapping[str, Tensor]) -> dict[str, Tensor]:
    sd = dict(sd)
    for wrapper in ("module.", "_orig_mod."):  # DistributedDataParallel, torch.compile
        if sd and all(k.startswith(wrapper) for k in sd):
            sd = {k[len(wrapper) :]: v for k, v in sd.items()}
    return sd


def _shape_mismatch(
    name: str, num_classes: int, frames: int, options: dict, weights: Mapping, path: str
) -> str | None:
    """Build the model on the ``meta`` device (shapes, no memory) and say how the checkpoint's
    weights differ from it, or None: ``model.options`` such as ``hidden_size: 10**9`` are
    refused here instead of allocated (every registered family builds on ``meta``; a test
    says so)."""
    from .. import models

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
        if not isinstance(value, Tensor):
            return f"{key} is a {type(value).__name__}, not a tensor"
    have = {k: tuple(v.shape) for k, v in weights.items()}
    missing, unexpected = sorted(want.keys() - have.keys()), sorted(have.keys() - want.keys())
    if missing or unexpected:
        return f"missing keys {missing[:5]}, unexpected keys {unexpected[:5]}"
    for key, shape in want.items():
        if have[key] != shape:
            return f"size mismatch for {key}: the checkpoint has {have[key]}, the model {shape}"
    return None


def load_inference_model(
    checkpoint: str | os.PathLike,
    *,
    size: Any = None,
    fps: Any = None,
    device: str | torch.device = "cpu",
) -> InferenceModel:
    """Rebuild the checkpoint's model (eval mode, on ``device``) and its preprocessing.

    ``size`` / ``fps`` override the frame size and rate (module doc); errors are
    :class:`InputError` (not a checkpoint, weights that do not fit) or :class:`ConfigError`.
    """
    from .. import models

    state = read_checkpoint(checkpoint)
    path = state["path"]
    mcfg = _section(state, "model")
    data = _section(state, "data")
    name = mcfg.get("name")
    if not isinstance(name, str):
        raise InputError(
            f"checkpoint {path}: config.model.name is missing; cannot rebuild the model"
        )
    try:
        spec = models.get_spec(name)
    except ConfigError as e:
        raise InputError(f"checkpoint {path}: config.model.name: {e}") from None
    classes = [str(c) for c in (state.get("classes") or [])]
    num_classes = mcfg.get("num_classes") or len(classes)
    if not num_classes:
        raise InputError(
            f"checkpoint {path}: neither config.model.num_classes nor a class list says how "
            "many classes the model predicts"
        )
    if not classes:
        classes = [str(i) for i in range(num_classes)]
    if len(classes) != num_classes:
        raise InputError(
            f"checkpoint {path}: {len(classes)} class names for a model of {num_classes} classes"
        )
    options = {k: v for k, v in dict(mcfg.get("options") or {}).items() if k != "checkpointing"}
    frames = data.get("frames", 8)
    weights = _strip_wrappers(state["model"])
    unfit = _shape_mismatch(name, num_classes, frames, options, weights, path)
    if unfit:
        raise InputError(
            f"checkpoint {path}: the weights do not fit model {name!r} built from its config "
            f"({unfit}); the checkpoint is damaged or its config was edited"
        )
    try:
        model = models.create(name, num_classes=num_classes, frames=frames, **options)
    except ConfigError as e:
        raise InputError(f"checkpoint {path}: its config does not build a model: {e}") from None
    try:
        model.load_state_dict(weights, strict=True)
    except RuntimeError as e:
        text = " ".join(str(e).split())
        raise InputError(
            f"checkpoint {path}: the weights do not fit model {name!r} built from its config "
            f"({text[:400]}); the checkpoint is damaged or its config was edited"
        ) from None
    model.eval().to(device)
    layout = data.get("layout") or "auto"
    if layout == "auto":
        layout = spec.layout
    pre = preprocess_from_checkpoint(state, layout, size=size, fps=fps)
    task = state.get("task") or spec.task
    notes = []
    if pre.source.startswith("default"):
        notes.append(
            "frame size: the store's size is not recorded in the checkpoint and the store is "
            "not here; using short side 128 (pass size= / --size to match the store)"
        )
    return InferenceModel(model, pre, classes, task, name, path, notes)
