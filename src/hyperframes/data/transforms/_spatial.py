"""Spatial transforms: one set of parameters for every frame of a window.

The pixel work is torchvision.transforms.v2.functional, which applies one operation to every
(C, H, W) image of a (..., C, H, W) tensor; only the parameter drawing is ours (from the
explicit generator). uint8 and float windows are both accepted.
"""

from __future__ import annotations

import math

import torch
import torchvision.transforms.v2.functional as F
from torchvision.transforms import InterpolationMode

from ..._core._errors import ConfigError, DataError
from . import _random as R
from ._base import Transform, Window
from ._registry import register_transform

__all__ = [
    "CenterCrop",
    "RandomAffine",
    "RandomCrop",
    "RandomHorizontalFlip",
    "RandomResizedCrop",
    "Resize",
]


def _replace(window: Window, frames: torch.Tensor) -> Window:
    return Window(frames, window.indices, window.mask)


def _check_fits(who: str, size: tuple[int, int], frames: torch.Tensor) -> None:
    h, w = frames.shape[-2:]
    if size[0] > h or size[1] > w:
        raise DataError(
            f"{who}: crop {size[0]}x{size[1]} is larger than the {h}x{w} frames; put a Resize "
            f"(or RandomResizedCrop) before it or store frames at a larger size"
        )


@register_transform("resize")
class Resize(Transform):
    """Resize every frame: ``size`` an int (shorter side, aspect kept) or (h, w)."""

    def __init__(self, size, *, antialias: bool = True) -> None:
        if isinstance(size, int) and not isinstance(size, bool):
            if size < 1:
                raise ConfigError(f"Resize: size must be > 0, got {size!r}")
            self.size = [size]
        else:
            self.size = list(R.size2("Resize", size))
        self.antialias = bool(antialias)

    def apply(self, window, generator):
        return _replace(window, F.resize(window.frames, self.size, antialias=self.antialias))


@register_transform("center_crop")
class CenterCrop(Transform):
    """Crop the central ``size`` (int or (h, w)) region of every frame."""

    def __init__(self, size) -> None:
        self.size = R.size2("CenterCrop", size)

    def apply(self, window, generator):
        _check_fits("CenterCrop", self.size, window.frames)
        return _replace(window, F.center_crop(window.frames, list(self.size)))


@register_transform("random_crop")
class RandomCrop(Transform):
    """Crop a ``size`` region at a random position (the same for every frame)."""

    random = True

    def __init__(self, size) -> None:
        self.size = R.size2("RandomCrop", size)

    def apply(self, window, generator):
        _check_fits("RandomCrop", self.size, window.frames)
        h, w = window.frames.shape[-2:]
        top = R.randint(generator, 0, h - self.size[0])
        left = R.randint(generator, 0, w - self.size[1])
        return _replace(window, F.crop(window.frames, top, left, *self.size))


@register_transform("random_resized_crop")
class RandomResizedCrop(Transform):
    """Inception-style crop: a random box of ``scale`` times the area and aspect in ``ratio``
    (log-uniform), resized to ``size``; the same box for every frame. After 10 failed draws the
    largest central box within ``ratio`` is used (as torchvision does)."""

    random = True

    def __init__(
        self,
        size,
        *,
        scale: tuple[float, float] = (0.08, 1.0),
        ratio: tuple[float, float] = (3 / 4, 4 / 3),
        antialias: bool = True,
    ) -> None:
        self.size = R.size2("RandomResizedCrop", size)
        self.scale = R.span("RandomResizedCrop", "scale", scale, lo=0.0)
        self.ratio = R.span("RandomResizedCrop", "ratio", ratio, lo=0.0)
        if self.scale[1] <= 0 or self.ratio[0] <= 0 or self.scale[1] > 1:
            raise ConfigError(
                f"RandomResizedCrop: need 0 < scale <= 1 and ratio > 0, got scale={scale}, "
                f"ratio={ratio}"
            )
        self.antialias = bool(antialias)

    def box(self, height: int, width: int, g: torch.Generator) -> tuple[int, int, int, int]:
        """(top, left, h, w) of the crop box for frames of ``height`` x ``width``."""
        area = height * width
        log_lo, log_hi = math.log(self.ratio[0]), math.log(self.ratio[1])
        for _ in range(10):
            target = area * R.uniform(g, *self.scale)
            aspect = math.exp(R.uniform(g, log_lo, log_hi))
            w = round(math.sqrt(target * aspect))
            h = round(math.sqrt(target / aspect))
            if 0 < w <= width and 0 < h <= height:
                return R.randint(g, 0, height - h), R.randint(g, 0, width - w), h, w
        in_ratio = width / height
        if in_ratio < self.ratio[0]:
            w, h = width, round(width / self.ratio[0])
        elif in_ratio > self.ratio[1]:
            h, w = height, round(height * self.ratio[1])
        else:
            h, w = height, width
        return (height - h) // 2, (width - w) // 2, h, w

    def apply(self, window, generator):
        top, left, h, w = self.box(*window.frames.shape[-2:], generator)
        out = F.resized_crop(
            window.frames, top, left, h, w, list(self.size), antialias=self.antialias
        )
        return _replace(window, out)


@register_transform("random_horizontal_flip")
class RandomHorizontalFlip(Transform):
    """Mirror every frame left-right with probability ``p`` (all frames or none)."""

    random = True

    def __init__(self, p: float = 0.5) -> None:
        self.p = R.probability("RandomHorizontalFlip", p)

    def apply(self, window, generator):
        if R.coin(generator, self.p):
            return _replace(window, F.horizontal_flip(window.frames))
        return window


@register_transform("random_affine")
class RandomAffine(Transform):
    """A small random rotation (``degrees``), translation (``translate`` as fractions of width
    and height), ``scale`` and horizontal ``shear`` (degrees), bilinear, the same for every
    frame; uncovered pixels get ``fill``."""

    random = True

    def __init__(
        self,
        *,
        degrees: float | tuple[float, float] = 10.0,
        translate: tuple[float, float] = (0.1, 0.1),
        scale: tuple[float, float] = (0.9, 1.1),
        shear: float | tuple[float, float] = 0.0,
        fill: float = 0.0,
    ) -> None:
        self.degrees = R.span("RandomAffine", "degrees", degrees)
        if len(translate) != 2 or not all(0 <= t <= 1 for t in translate):
            raise ConfigError(
                f"RandomAffine: translate must be (fx, fy) fractions in [0, 1], got {translate!r}"
            )
        self.translate = (float(translate[0]), float(translate[1]))
        self.scale = R.span("RandomAffine", "scale", scale, lo=0.0)
        if self.scale[0] <= 0:
            raise ConfigError(f"RandomAffine: scale must be > 0, got {scale!r}")
        self.shear = R.span("RandomAffine", "shear", shear)
        self.fill = float(fill)

    def params(self, height: int, width: int, g: torch.Generator) -> dict:
        """The affine parameters drawn for frames of ``height`` x ``width``."""
        tx = round(R.uniform(g, -self.translate[0], self.translate[0]) * width)
        ty = round(R.uniform(g, -self.translate[1], self.translate[1]) * height)
        return {
            "angle": R.uniform(g, *self.degrees),
            "translate": [tx, ty],
            "scale": R.uniform(g, *self.scale),
            "shear": [R.uniform(g, *self.shear), 0.0],
        }

    def apply(self, window, generator):
        p = self.params(*window.frames.shape[-2:], generator)
        out = F.affine(
            window.frames,
            **p,
            interpolation=InterpolationMode.BILINEAR,
            fill=[self.fill] * window.frames.shape[-3],
        )
        return _replace(window, out)
