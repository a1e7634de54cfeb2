"""Photometric jitter (brightness, contrast, saturation and hue factors) and Gaussian noise.

By default one set of factors for the whole window (frames keep consistent colours);
``per_frame=True`` draws a set per frame (flicker augmentation). Factors are applied in a fixed
order: brightness, contrast, saturation, hue. Contrast blends each frame with its own mean grey.
"""

from __future__ import annotations

import torch
import torchvision.transforms.v2.functional as F

from ..._core._errors import ConfigError, DataError
from . import _random as R
from ._base import Transform, Window
from ._registry import register_transform

__all__ = ["ColorJitter", "GaussianNoise"]


@register_transform("color_jitter")
class ColorJitter(Transform):
    """``brightness``/``contrast``/``saturation`` = v draws a factor in [max(0, 1-v), 1+v] (or
    give (low, high)); ``hue`` = v draws a shift in [-v, v], v <= 0.5. Applied with prob. ``p``."""

    random = True

    def __init__(
        self,
        brightness: float | tuple[float, float] = 0.0,
        contrast: float | tuple[float, float] = 0.0,
        saturation: float | tuple[float, float] = 0.0,
        hue: float | tuple[float, float] = 0.0,
        *,
        p: float = 1.0,
        per_frame: bool = False,
    ) -> None:
        self.brightness = R.span("ColorJitter", "brightness", brightness, center=1.0, lo=0.0)
        self.contrast = R.span("ColorJitter", "contrast", contrast, center=1.0, lo=0.0)
        self.saturation = R.span("ColorJitter", "saturation", saturation, center=1.0, lo=0.0)
        self.hue = R.span("ColorJitter", "hue", hue)
        if not -0.5 <= self.hue[0] <= self.hue[1] <= 0.5:
            raise ConfigError(f"ColorJitter: hue must lie within [-0.5, 0.5], got {hue!r}")
        self.p = R.probability("ColorJitter", p)
        self.per_frame = bool(per_frame)

    def _ops(self):
        return (
            (F.adjust_brightness, self.brightness, 1.0),
            (F.adjust_contrast, self.contrast, 1.0),
            (F.adjust_saturation, self.saturation, 1.0),
            (F.adjust_hue, self.hue, 0.0),
        )

    def _factors(self, g: torch.Generator, n: int) -> list[list[float]]:
        """One list per op of ``n`` factors (identity ops are not drawn)."""
        return [
            [neutral] * n if lo == hi == neutral else R.uniform(g, lo, hi, n)
            for _, (lo, hi), neutral in self._ops()
        ]

    def apply(self, window, generator):
        if not R.coin(generator, self.p):
            return window
        frames = window.frames
        n = frames.shape[0] if self.per_frame else 1
        factors = self._factors(generator, n)
        for (op, _, neutral), values in zip(self._ops(), factors):
            if all(v == neutral for v in values):
                continue
            if self.per_frame:
                frames = torch.stack([op(f, v) for f, v in zip(frames, values)])
            else:
                frames = op(frames, values[0])
        return Window(frames, window.indices, window.mask)


@register_transform("gaussian_noise")
class GaussianNoise(Transform):
    """Add zero-mean Gaussian noise of standard deviation ``std`` (on the [0, 1] scale: uint8
    frames get ``std * 255`` levels, rounded and clipped to 0..255), drawn independently for
    every pixel of every frame (per-pixel noise need not be frame-consistent); prob. ``p``."""

    random = True

    def __init__(self, std: float = 0.02, *, p: float = 1.0) -> None:
        std = float(std)
        if not 0.0 <= std <= 1.0:
            raise ConfigError(f"GaussianNoise: std must lie within [0, 1], got {std!r}")
        self.std = std
        self.p = R.probability("GaussianNoise", p)

    def apply(self, window, generator):
        if self.std == 0.0 or not R.coin(generator, self.p):
            return window
        frames = window.frames
        noise = torch.randn(
            frames.shape, generator=generator, device=generator.device, dtype=torch.float32
        ).to(frames.device)
        if frames.dtype == torch.uint8:
            out = (frames.float() + noise * (self.std * 255.0)).round_().clamp_(0, 255)
            return Window(out.to(torch.uint8), window.indices, window.mask)
        if not frames.is_floating_point():
            raise DataError(f"GaussianNoise expects uint8 or floating frames, got {frames.dtype}")
        return Window(frames + (noise * self.std).to(frames.dtype), window.indices, window.mask)
