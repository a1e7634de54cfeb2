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
"""

from __future__ import annotations

import os
import random
from pathlib import Path

import numpy as np
import torch

from .._atomic import write_atomic
from .._errors import InputError

__all__ = [
    "FORMAT",
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
    state["path"] = str(p)
    return state


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
