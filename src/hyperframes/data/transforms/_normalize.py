"""Conversion to float and per-channel normalisation, for any layout.

uint8 input is first scaled to [0, 1] (divided by 255), so ``mean``/``std`` are given on the
[0, 1] scale (e.g. ImageNet's, :data:`hyperframes._core._contract.IMAGENET_MEAN` / ``IMAGENET_STD``).

A model's input is prepared by its :class:`~hyperframes._core._contract.InputContract`, which
normalises temporal windows (C channels per frame) and applies the layout afterwards;
``layout=`` here is for callers holding frames already in another layout.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from ..._core._errors import ConfigError, DataError
from ..._core._layouts import _check_name, expand_channel_stats
from ._base import Transform, Window

__all__ = ["Normalize", "ToFloat", "normalize", "to_float"]


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


class ToFloat(Transform):
    """Frames to float32 in [0, 1] (uint8 divided by 255)."""

    def apply(self, window, generator):
        return Window(to_float(window.frames), window.indices, window.mask)


class Normalize(Transform):
    """Per-channel ``(x - mean) / std`` of a (T, C, H, W) window (uint8 is scaled to [0, 1]
    first); for other layouts use :func:`normalize` with ``layout=``."""

    def __init__(self, mean: Sequence[float], std: Sequence[float]) -> None:
        self.mean = [float(v) for v in mean]
        self.std = [float(v) for v in std]
        if len(self.mean) != len(self.std) or not self.mean or min(self.std) <= 0:
            raise ConfigError(
                f"Normalize needs mean and std of equal length with std > 0, got "
                f"mean={self.mean}, std={self.std}"
            )

    def apply(self, window, generator):
        out = normalize(window.frames, self.mean, self.std)
        return Window(out, window.indices, window.mask)
