"""Checkpoints: written atomically (temp file + rename), readable with ``weights_only=True``.

A checkpoint is a dict of tensors and plain Python values only (state dicts, the resolved
config as a dict, metrics, positions, RNG states), so ``torch.load(path, weights_only=True)``
reads it without unpickling code::

    {"format": "hyperframes-checkpoint", "version": 1,
     "model": state_dict, "optimizer": state_dict, "scaler": state_dict | None,
     "config": dict, "classes": [str], "task": "classification" | "segmentation",
     "epoch": int, "batches_done": int, "step": int, "samples": int,
     "best": {"metric": str, "value": float, "epoch": int},
     "metrics": dict, "history": [dict], "epoch_state": dict, "rng": dict}

``epoch`` and ``batches_done`` say where training stands: resuming continues epoch ``epoch``
after its first ``batches_done`` batches (0 = a fresh epoch).

Whoever reads a checkpoint (resume, eval, predict, export) checks the values that size what
it will build with :func:`check_checkpoint` first: the config with the bounds of a config
file, and ``frames``, ``num_classes``, ``classes`` and ``input`` (``{"size", "fps"}``), so a
crafted checkpoint asking for ``data.frames: 1000000000`` is a :class:`ConfigError` naming
the file and the key, not an allocation.
"""

from __future__ import annotations

import math
import os
import random
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import torch

from .._atomic import write_atomic
from .._errors import ConfigError, InputError
from ._config import (
    MAX_CLASSES,
    MAX_FPS,
    MAX_SIDE,
    DataConfig,
    ModelConfig,
    check_config_values,
    check_field,
)

__all__ = [
    "FORMAT",
    "check_checkpoint",
    "get_rng_state",
    "load_checkpoint",
    "save_checkpoint",
    "set_rng_state",
]

FORMAT = "hyperframes-checkpoint"
VERSION = 1


def save_checkpoint(path: str | os.PathLike, state: dict) -> Path:
    """Save ``state`` (tensors and plain values) to ``path`` atomically."""
    state = {"format": FORMAT, "version": VERSION, **state}
    return write_atomic(path, lambda f: torch.save(state, f))


def load_checkpoint(path: str | os.PathLike, map_location="cpu") -> dict:
    """Read a checkpoint with ``weights_only=True``; :class:`InputError` if it is not one."""
    p = Path(path)
    if p.is_dir():
        for name in ("last.pt", "best.pt"):
            if (p / name).exists():
                p = p / name
                break
    if not p.is_file():
        raise InputError(
            f"{p}: no checkpoint here; give RUN_DIR/best.pt or RUN_DIR/last.pt written by "
            "`hyperframes train`"
        )
    try:
        state = torch.load(p, map_location=map_location, weights_only=True)
    except Exception as e:  # torch raises several kinds for truncated or foreign files
        raise InputError(
            f"{p}: cannot be read as a hyperframes checkpoint ({type(e).__name__}: {e}); the "
            "file is damaged or was not written by `hyperframes train`"
        ) from None
    if not isinstance(state, dict) or state.get("format") != FORMAT:
        raise InputError(
            f"{p}: not a hyperframes checkpoint (no format {FORMAT!r}); for plain weights use "
            "model.pretrained in the config"
        )
    if state.get("version") != VERSION:
        raise InputError(
            f"{p}: checkpoint version {state.get('version')} is not readable by this "
            f"hyperframes, which reads version {VERSION}"
        )
    if not isinstance(state.get("config"), Mapping):
        raise InputError(
            f"{p}: the 'config' entry is missing or not a mapping; the checkpoint is incomplete"
        )
    check_checkpoint(state, p)
    state["path"] = str(p)
    return state


def check_checkpoint(state: Mapping, path: str | os.PathLike) -> None:
    """Check what a checkpoint's values would make a reader build, before it builds anything:
    its ``config`` (:func:`~hyperframes.train._config.check_config_values`), ``frames``,
    ``num_classes``, ``classes`` and ``input``. :class:`ConfigError` naming ``path`` and the key.
    """
    try:
        frame_size = _check_entries(state)
        if isinstance(state.get("config"), Mapping):
            check_config_values(state["config"], prefix="config.", frame_size=frame_size)
    except ConfigError as e:
        raise ConfigError(f"checkpoint {path}: {e}") from None


def _check_entries(state: Mapping) -> tuple[int, int, str] | None:
    """Check the top-level sizes; returns the frame size ``input.size`` implies, if any."""
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
    recorded = state.get("input")
    if recorded is None:
        return None
    if not isinstance(recorded, Mapping):
        raise ConfigError(f"input: expected a mapping with size and fps, got {recorded!r:.80}")
    fps = recorded.get("fps")
    if fps is not None and (
        isinstance(fps, bool)
        or not isinstance(fps, int | float)
        or not (math.isfinite(fps) and 0 <= fps <= MAX_FPS)
    ):
        raise ConfigError(
            f"input.fps: {fps!r:.80} is not a frame rate; allowed: a number >= 0 and <= "
            f"{MAX_FPS:g} (0 = every decoded frame)"
        )
    return check_frame_size(recorded.get("size"), "input.size")


def check_frame_size(size, key: str) -> tuple[int, int, str] | None:
    """``size`` as the store reads it (``"128"``, ``"112x96"``, ``"none"``) with each side at most
    :data:`~hyperframes.train._config.MAX_SIDE`; (H, W, ``key``) at least, None for native."""
    from ..store._options import parse_size

    spec = parse_size(size, where=key)
    if spec is None:
        return None
    _, height, width = spec
    if max(height, width) > MAX_SIDE:
        raise ConfigError(
            f"{key}: {size!r} asks for frames of {height} x {width} pixels; allowed: sides of at "
            f"most {MAX_SIDE} (a short side 128, HxW 112x112, or none)"
        )
    return (height, width, key)


# --------------------------------------------------------------------------- RNG state


def get_rng_state() -> dict:
    """Python, numpy and torch (CPU and CUDA) generator states, as tensors and ints."""
    np_state = np.random.get_state()
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
