"""A training checkpoint turned into an inference model and its input contract.

The checkpoint (``hyperframes train``'s ``best.pt`` / ``last.pt``, or a run folder: its
``best.pt``, else ``last.pt``; read with ``torch.load(weights_only=True)``: nothing in it is
unpickled as code) carries the model's :class:`~hyperframes._core._contract.InputContract`: the
window (T, frame stride), the store's frame size and rate, the crop, the normalisation, the
layout and the classes. Predict and export prepare input with it and nothing else, exactly
as evaluation does.

**Frame size and rate.** Taken from, first found first:

1. the ``size`` / ``fps`` arguments, unless None (``"128"``: short side 128, aspect kept;
   ``"112x112"``: exact height x width; ``"none"``: native; ``fps=0``: keep every decoded
   frame);
2. the checkpoint's contract (older checkpoints: their ``"input"`` entry,
   ``{"size": "128", "fps": 15.0}``);
3. (older checkpoints) the ``build`` options in the manifest of the store at
   ``config.data.store``, if it is there;
4. the store defaults: short side 128, every decoded frame.

:attr:`InputContract.source` says which one was used.

**Bounds.** Nothing read from a checkpoint sizes an allocation before it is checked
(:func:`~hyperframes.checkpoint._checkpoint.check_checkpoint`,
:func:`~hyperframes.checkpoint._checkpoint.rebuild_model`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from .. import models
from .._core._contract import InputContract
from .._core._device import resolve_device
from .._core._tasks import TaskTraits, task_traits
from .._core._text import model_name
from ..checkpoint import load_checkpoint, rebuild_model

__all__ = [
    "InferenceModel",
    "InputContract",
    "Preprocess",
    "load_inference_model",
    "read_checkpoint",
]

#: the name this object had before it became the input contract
Preprocess = InputContract
#: reading a checkpoint for inference is reading it (one reader for train and infer)
read_checkpoint = load_checkpoint


@dataclass
class InferenceModel:
    """A model in eval mode with what it needs around it."""

    model: nn.Module
    contract: InputContract
    classes: list[str]
    task: str = "classification"
    name: str = ""
    path: str | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def preprocess(self) -> InputContract:
        """The input contract (its former name)."""
        return self.contract

    @property
    def traits(self) -> TaskTraits:
        """What the model's task is (its outputs: class scores, masks, boxes, pictures)."""
        return task_traits(self.task)


def load_inference_model(
    checkpoint: str | os.PathLike,
    *,
    size: Any = None,
    fps: Any = None,
    device: str | torch.device = "cpu",
    frames: int | None = None,
) -> InferenceModel:
    """Rebuild the checkpoint's model (eval mode, on ``device``; ``"auto"``: CUDA when there is
    a GPU) and its input contract.

    ``size`` / ``fps`` override the frame size and rate (module doc); ``frames`` the window's
    T, for models that take any T (a :class:`ConfigError` with the reason for the others,
    whose layers are built for their T); errors are
    :class:`InputError` (not a checkpoint, weights that do not fit) or :class:`ConfigError`.
    """
    device = resolve_device(device)
    state = load_checkpoint(checkpoint)
    model, contract = rebuild_model(state, device=device, size=size, fps=fps, frames=frames)
    name = model_name(model)
    task = state.get("task") or models.get_spec(name).task
    notes = []
    if contract.source.startswith("default"):
        notes.append(
            "frame size: the store's size is not recorded in the checkpoint and the store is "
            "not here; using short side 128 (pass size to match the store)"
        )
    return InferenceModel(model, contract, list(contract.classes), task, name, state["path"], notes)
