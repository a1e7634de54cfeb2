"""The batch pipeline's ops stage: every transform step after the read, a batch operation
each, the flow following their geometry."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from ..._core._errors import ConfigError
from .._flow_geometry import _jacobian
from ..transforms import Window

__all__ = ["run_steps"]


def run_steps(steps: Sequence, batch: Window, generators: Sequence, flow=None) -> tuple:
    """Every step of ``steps`` over ``batch`` (frames (B, T, C, H, W), indices and mask
    (B, T) tensors), in order: each sample's parameters drawn from its generator
    (``step.draw``), then the step on the whole batch (``step.batch_apply``). ``flow``
    (B, T-1, 2, H, W), when given, follows the geometric steps as the per-window
    :func:`~hyperframes.data._flow_geometry.follow_geometry` does: the step, with the same parameters,
    resamples the flow beside a map of pixel coordinates, whose Jacobian turns the vectors
    into the output's pixels. Returns the batch and the flow."""
    aux = None
    if flow is not None and flow.shape[1] and any(s.geometry != "none" for s in steps):
        b, n, _, h, w = flow.shape
        ys, xs = torch.meshgrid(
            torch.arange(h, dtype=torch.float32),
            torch.arange(w, dtype=torch.float32),
            indexing="ij",
        )
        coords = torch.stack([xs, ys]).expand(b, n, 2, h, w)
        aux = torch.cat([coords, flow.float()], 2)
    for step in steps:
        if flow is not None:
            _check_flow_step(step)
        shape = tuple(batch.frames.shape[1:])
        params = [step.draw(g, shape) for g in generators]
        if aux is not None and step.geometry != "none":
            ones = torch.ones(aux.shape[:2], dtype=torch.bool)
            aux = step.batch_apply(Window(aux, torch.zeros(aux.shape[:2]), ones), params)[0]
        batch = step.batch_apply(batch, params)
    if aux is not None:
        flow = torch.stack([_output_vectors(a) for a in aux])
    return batch, flow


def _check_flow_step(step) -> None:
    who = type(step).__name__
    if step.changes_sequence or step.changes_count:
        raise ConfigError(
            f"flow=True: transform {who} reorders or drops frames, which breaks the flow "
            "between consecutive frames; leave it out"
        )
    if step.geometry == "unknown":
        raise ConfigError(
            f"flow=True: cannot tell how transform {who} moves pixels; the flow follows "
            "Resize, CenterCrop, RandomCrop, RandomResizedCrop, RandomHorizontalFlip, "
            "RandomAffine and photometric transforms"
        )


def _output_vectors(aux: torch.Tensor) -> torch.Tensor:
    """(n, 2, h, w) flow in output pixels from ``aux`` (n, 4, h, w): source coordinates
    then source vectors, through the inverse of the coordinates' Jacobian."""
    inv = torch.linalg.inv(_jacobian(aux[:, :2]))
    return torch.einsum("ij,njhw->nihw", inv, aux[:, 2:]).contiguous()
