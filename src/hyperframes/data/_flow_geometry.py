"""A window's optical flow through the dataset transform's geometry: :func:`follow_geometry`
applies the transform to the frames and the same resize, crop, flip or affine to the flow,
turning its vectors into the output's pixels."""

from __future__ import annotations

import torch

from .._core._errors import ConfigError
from .transforms import (
    CenterCrop,
    ColorJitter,
    ContractCrop,
    Normalize,
    RandomAffine,
    RandomCrop,
    RandomHorizontalFlip,
    RandomResizedCrop,
    Resize,
    ToFloat,
    Window,
)

__all__ = ["follow_geometry"]

_GEOMETRIC = (CenterCrop, RandomAffine, RandomCrop, RandomHorizontalFlip, RandomResizedCrop, Resize)


def _aux(flow: torch.Tensor) -> torch.Tensor:
    """(n, 4, H, W): pixel coordinates (x, y) then the flow (dx, dy)."""
    n, _, h, w = flow.shape
    ys, xs = torch.meshgrid(
        torch.arange(h, dtype=torch.float32), torch.arange(w, dtype=torch.float32), indexing="ij"
    )
    coords = torch.stack([xs, ys]).expand(n, 2, h, w)
    return torch.cat([coords, flow.float()], 1)


def _jacobian(coords: torch.Tensor) -> torch.Tensor:
    """(2, 2) d(source x, y) / d(output x, y), the median finite difference over the image."""
    c = coords[0]
    jx = c[:, :, 1:] - c[:, :, :-1]  # along output x
    jy = c[:, 1:, :] - c[:, :-1, :]  # along output y
    cols = [
        jx.reshape(2, -1).median(1).values if jx.numel() else torch.tensor([1.0, 0.0]),
        jy.reshape(2, -1).median(1).values if jy.numel() else torch.tensor([0.0, 1.0]),
    ]
    return torch.stack(cols, 1)


def follow_geometry(transform, window: Window, flow: torch.Tensor, generator) -> tuple:
    """Apply ``transform`` to ``window`` and the same geometry to ``flow`` (n, 2, H, W).

    Each step of a :class:`~.transforms.Compose` runs on the frames; a geometric step (resize,
    crops, flip, affine) runs again, with the generator state it started from, on the flow
    beside a map of pixel coordinates, from which the step's Jacobian turns the resampled
    vectors into the output's pixels (a flip negates dx, a resize scales). Photometric steps
    leave the flow; steps that reorder frames are refused."""
    steps = list(getattr(transform, "transforms", [transform]))
    aux = _aux(flow) if flow.shape[0] else None
    for step in steps:
        who = type(step).__name__
        if getattr(step, "changes_sequence", False) or getattr(step, "changes_count", False):
            raise ConfigError(
                f"flow=True: transform {who} reorders or drops frames, which breaks the flow "
                "between consecutive frames; leave it out"
            )
        geometric = isinstance(step, (*_GEOMETRIC, ContractCrop))
        state = generator.get_state() if geometric and generator is not None else None
        if hasattr(step, "apply"):
            out = step.apply(window, generator)
        else:  # a callable transform (ContractCrop)
            out = step(*window, generator=generator)
        if geometric and aux is not None:
            g2 = None
            if state is not None:
                g2 = torch.Generator()
                g2.set_state(state)
            aw = Window(aux, torch.arange(aux.shape[0]), torch.ones(aux.shape[0], dtype=torch.bool))
            aux = (step.apply(aw, g2) if hasattr(step, "apply") else step(*aw, generator=g2))[0]
        elif not geometric and not _photometric(step):
            raise ConfigError(
                f"flow=True: cannot tell how transform {who} moves pixels; the flow follows "
                "Resize, CenterCrop, RandomCrop, RandomResizedCrop, RandomHorizontalFlip, "
                "RandomAffine and photometric transforms"
            )
        window = out
    if aux is None:
        return window, torch.zeros(0, 2, *window.frames.shape[-2:])
    jac = _jacobian(aux[:, :2])  # output -> source
    vec = aux[:, 2:]
    inv = torch.linalg.inv(jac)
    out_flow = torch.einsum("ij,njhw->nihw", inv, vec)
    return window, out_flow.contiguous()


def _photometric(step) -> bool:
    return isinstance(step, ColorJitter | Normalize | ToFloat)
