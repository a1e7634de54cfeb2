"""Conversion to float and per-channel normalisation, for any layout.

uint8 input is first scaled to [0, 1] (divided by 255), so ``mean``/``std`` are given on the
[0, 1] scale (e.g. ImageNet's, :data:`hyperframes._core._contract.IMAGENET_MEAN` / ``IMAGENET_STD``).

A model's input is prepared by its :class:`~hyperframes._core._contract.InputContract`, which
normalises temporal windows (C channels per frame) and applies the layout afterwards;
``layout=`` here is for callers holding frames already in another layout.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..._core._errors import ConfigError
from ..._core._normalize import normalize, to_float
from ._base import Transform, Window
from ._registry import register_transform

__all__ = ["Normalize", "ToFloat", "normalize", "to_float"]


@register_transform("to_float")
class ToFloat(Transform):
    """Frames to float32 in [0, 1] (uint8 divided by 255); on a batch, the whole batch."""

    geometry = "none"

    def draw(self, generator, shape) -> None:
        return None

    def apply_drawn(self, window, params):
        return Window(to_float(window.frames), window.indices, window.mask)

    def batch_apply(self, batch, params):
        return self.apply_drawn(batch, None)


@register_transform("normalize")
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

    geometry = "none"

    def draw(self, generator, shape) -> None:
        return None

    def apply_drawn(self, window, params):
        out = normalize(window.frames, self.mean, self.std)  # (..., C, H, W): a batch too
        return Window(out, window.indices, window.mask)

    def batch_apply(self, batch, params):
        return self.apply_drawn(batch, None)
