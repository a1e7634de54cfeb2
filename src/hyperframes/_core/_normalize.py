"""Frames to float and per-channel normalisation: the one implementation the input contract
(:meth:`~hyperframes._core._contract.InputContract.prepare`) and the dataset's ``Normalize``
transform share. uint8 is scaled to [0, 1] first, so ``mean``/``std`` are on that scale.

Imports torch at import time: ``_core`` modules that are imported without torch ask for this
one inside the function that needs it."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from ._errors import ConfigError, DataError
from ._layouts import _check_name, expand_channel_stats

__all__ = ["normalize", "to_float"]


def to_float(x: torch.Tensor, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """uint8 -> ``dtype`` in [0, 1]; floating tensors are only cast."""
    if x.dtype == torch.uint8:
        return x.to(dtype).div_(255.0)
    if not x.is_floating_point():
        raise DataError(f"to_float expects uint8 or floating frames, got {x.dtype}")
    return x.to(dtype)


def normalize(
    x: torch.Tensor,
    mean: Sequence[float],
    std: Sequence[float],
    *,
    layout: str = "temporal",
    dtype: torch.dtype = torch.float32,
) -> torch.Tensor:
    """``(x - mean) / std`` per channel for a window or batch in ``layout`` (temporal, channel or
    conv3d); for the channel layout the C values are repeated for each of the T frames."""
    _check_name(layout)
    if layout == "keyframe":
        raise ConfigError(
            "normalize a keyframe layout's key and context separately (layout='temporal' for "
            "the context, a (C, H, W) key broadcasts like it)"
        )
    m = torch.as_tensor(mean, dtype=torch.float64).reshape(-1)
    s = torch.as_tensor(std, dtype=torch.float64).reshape(-1)
    if m.shape != s.shape or m.numel() == 0 or bool((s <= 0).any()):
        raise ConfigError(
            f"normalize needs mean and std with one value per channel and std > 0, got "
            f"mean={list(mean)}, std={list(std)}"
        )
    c = m.numel()
    axis = -4 if layout == "conv3d" else -3
    if x.ndim < 3 or x.ndim < -axis:
        raise DataError(f"normalize: tensor of shape {tuple(x.shape)} has no channel axis")
    channels = x.shape[axis]
    frames = None
    if layout == "channel":
        if channels % c:
            raise DataError(
                f"normalize(layout='channel'): {channels} channels is not a multiple of the "
                f"{c} mean/std values"
            )
        frames = channels // c
    elif channels != c:
        raise DataError(
            f"normalize(layout={layout!r}): frames have {channels} channels but mean/std have "
            f"{c} values"
        )
    x = to_float(x, dtype)
    mean_t = expand_channel_stats(m, layout, frames=frames, dtype=dtype, device=x.device)
    std_t = expand_channel_stats(s, layout, frames=frames, dtype=dtype, device=x.device)
    return (x - mean_t) / std_t
