"""Photometric jitter (brightness, contrast, saturation and hue factors) and Gaussian noise.

By default one set of factors for the whole window (frames keep consistent colours);
``per_frame=True`` draws a set per frame (flicker augmentation). Factors are applied in a fixed
order: brightness, contrast, saturation, hue. Contrast blends each frame with its own mean grey.

Batch forms: on uint8 frames on the CPU the jitter runs on the whole batch with each sample's
(or frame's) factors (:func:`jitter_batch`, OpenCV's saturating uint8 arithmetic, within a level
or two of torchvision's; :func:`hue_batch`, a C kernel vectorised over the pixels, within a level
of it); other frames run torchvision sample by sample. Noise is drawn per sample from its own
generator (the same numbers as the per-sample path) and added to the whole batch.
"""

from __future__ import annotations

import numpy as np
import torch
import torchvision.transforms.v2.functional as F

from ..._core._errors import ConfigError, DataError
from ..._core._kernels import pixels
from . import _random as R
from ._base import Transform, Window
from ._registry import register_transform

__all__ = ["ColorJitter", "GaussianNoise", "hue_batch", "jitter_batch"]

#: added to an affine map before OpenCV rounds it to uint8: ``round(v - 0.49)`` truncates, as
#: torchvision's uint8 blend does (``(a * x + b).clamp(0, 255).to(uint8)``), but for fractions
#: within 0.01 of the next level
_TRUNC = -0.49
#: torchvision's float -> uint8 scale (``x * (255 + 1 - 1e-3)``, truncated)
_TO_UINT8 = 256.0 - 1e-3


def _cpu_uint8(frames: torch.Tensor) -> bool:
    return frames.dtype == torch.uint8 and frames.device.type == "cpu"


def jitter_batch(frames: np.ndarray, factors: np.ndarray) -> None:
    """Colour jitter, in place, of uint8 (B, T, C, h, w) ``frames`` with (B, T, 3) brightness,
    contrast, saturation factors (1: unchanged; (B, 3): one set per window), in that order,
    as torchvision's ``adjust_*``: brightness an affine pass, contrast one per frame around
    the frame's mean grey, saturation a blend with each pixel's grey; each pass OpenCV's SIMD
    uint8 arithmetic with saturation (``convertScaleAbs`` for brightness, whose results are
    never negative, ``addWeighted`` for the rest: two to three times faster than a lookup
    table, which gathers byte by byte). A window whose frames share their factors takes one
    pass for all its frames."""
    import cv2  # deferred: optional/heavy dependency

    b, t, c, h, w = frames.shape
    factors = np.asarray(factors, np.float64)
    if factors.ndim == 2:
        factors = np.repeat(factors[:, None], t, 1)
    hw = h * w
    weights = np.asarray([0.2989, 0.587, 0.114]) if c == 3 else np.ones(1)
    for k in range(b):
        sample = frames[k].reshape(t, c * hw)
        fk = factors[k]
        same = bool((fk == fk[0]).all())
        runs = [(0, t)] if same else [(j, j + 1) for j in range(t)]
        for lo, hi in runs:
            fb = float(fk[lo, 0])
            if fb != 1.0:
                rows = sample[lo:hi]
                cv2.convertScaleAbs(rows, dst=rows, alpha=fb, beta=_TRUNC)
        if (fk[:, 1] != 1.0).any():
            sums = cv2.reduce(sample.reshape(t * c, hw), 1, cv2.REDUCE_SUM, dtype=cv2.CV_32S)
            means = sums.reshape(t, c) @ weights / hw
            if c == 3:
                means = means - 0.5  # torchvision floors each pixel's grey before the mean
            for j in range(t):
                fc = float(fk[j, 1])
                if fc == 1.0:
                    continue
                row = sample[j : j + 1]
                beta = (1.0 - fc) * float(means[j]) + _TRUNC
                # addWeighted saturates at 0; convertScaleAbs would mirror a negative value
                cv2.addWeighted(row, fc, row, 0.0, beta, dst=row)
        if c != 3:
            continue
        for lo, hi in runs:
            fs = float(fk[lo, 2])
            if fs == 1.0:
                continue
            rows = sample[lo:hi]
            r, g, bl = rows[:, :hw], rows[:, hw : 2 * hw], rows[:, 2 * hw :]
            grey = cv2.addWeighted(r, 0.2989, g, 0.587, 0.0)
            grey = cv2.addWeighted(grey, 1.0, bl, 0.114, 0.0)
            for plane in (r, g, bl):  # strided views: OpenCV writes them in place
                cv2.addWeighted(plane, fs, grey, 1.0 - fs, _TRUNC, dst=plane)


def hue_batch(frames: np.ndarray, shifts: np.ndarray) -> None:
    """Hue shift, in place, of uint8 RGB (B, T, 3, h, w) ``frames`` by (B, T) ``shifts``
    (fractions of a turn, 0: unchanged), as torchvision's ``adjust_hue``: RGB to HSV, the hue
    turned, back to RGB and to uint8 as torchvision converts (``x * 255.999``, truncated).
    The C kernel (:mod:`hyperframes._core._pixels`) does it pixel by pixel in float32,
    vectorised, with one division a pixel (torchvision's ``v * (1 - s * f)`` written as
    ``v - (v - min) * f``): the largest and smallest channel come out exactly, the third
    within one level (it differs where torchvision's value lies within ~1e-5 of a level).
    Without the kernel, OpenCV's float32 HSV conversions frame by frame
    (:func:`_hue_opencv`, within a level, four to five times the time)."""
    b, t, c = frames.shape[:3]
    shifts = np.ascontiguousarray(np.asarray(shifts, np.float64).reshape(b, t))
    if c != 3:
        return  # torchvision leaves grey frames as they are
    if pixels is None or not frames.flags.c_contiguous:
        _hue_opencv(frames, shifts)
        return
    pixels.hue_shift(frames, shifts, b * t, frames.shape[3] * frames.shape[4])


def _hue_opencv(frames: np.ndarray, shifts: np.ndarray) -> None:
    """:func:`hue_batch` with OpenCV's float32 conversions, frame by frame, the planes
    interleaved by ``merge`` and written back by ``split``."""
    import cv2  # deferred: optional/heavy dependency

    scale, turn = np.float32(1.0 / 255.0), np.float32(360.0)
    for k, j in zip(*np.nonzero(shifts)):
        planes = frames[k, j]
        img = cv2.merge(list(planes)).astype(np.float32)
        img *= scale
        hsv = cv2.cvtColor(img, cv2.COLOR_RGB2HSV)  # hue in degrees [0, 360)
        hue = hsv[..., 0]
        hue += np.float32(shifts[k, j] * 360.0)
        np.mod(hue, turn, out=hue)
        rgb = np.asarray(cv2.cvtColor(hsv, cv2.COLOR_HSV2RGB), np.float32)
        rgb *= np.float32(_TO_UINT8)
        np.clip(rgb, 0, 255, out=rgb)
        cv2.split(rgb.astype(np.uint8), list(planes))  # into the frame's planes


@register_transform("color_jitter")
class ColorJitter(Transform):
    """``brightness``/``contrast``/``saturation`` = v draws a factor in [max(0, 1-v), 1+v] (or
    give (low, high)); ``hue`` = v draws a shift in [-v, v], v <= 0.5. Applied with prob. ``p``."""

    random = True
    geometry = "none"

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

    def draw(self, generator, shape) -> np.ndarray | None:
        """(n, 4) factors (brightness, contrast, saturation, hue), n = T with ``per_frame``
        else 1; None when the coin of ``p`` says no jitter."""
        if not R.coin(generator, self.p):
            return None
        n = int(shape[0]) if self.per_frame else 1
        return np.asarray(self._factors(generator, n), np.float64).T

    def apply_drawn(self, window, params):
        if params is None:
            return window
        frames = window.frames
        for (op, _, neutral), values in zip(self._ops(), params.T.tolist()):
            if all(v == neutral for v in values):
                continue
            if self.per_frame:
                frames = torch.stack([op(f, v) for f, v in zip(frames, values)])
            else:
                frames = op(frames, values[0])
        return Window(frames, window.indices, window.mask)

    def batch_apply(self, batch, params):
        frames = batch.frames
        if not _cpu_uint8(frames):
            return super().batch_apply(batch, params)
        b, t = frames.shape[:2]
        factors = np.tile(np.asarray([1.0, 1.0, 1.0, 0.0]), (b, t, 1))
        for k, p in enumerate(params):
            if p is not None:
                factors[k] = p  # (1, 4) broadcasts over the window's frames
        if (factors[..., :3] != 1.0).any() or (factors[..., 3] != 0.0).any():
            frames = frames.contiguous()
            arr = frames.numpy()
            if (factors[..., :3] != 1.0).any():
                jitter_batch(arr, factors[..., :3])
            if (factors[..., 3] != 0.0).any():
                hue_batch(arr, factors[..., 3])
        return Window(frames, batch.indices, batch.mask)


@register_transform("gaussian_noise")
class GaussianNoise(Transform):
    """Add zero-mean Gaussian noise of standard deviation ``std`` (on the [0, 1] scale: uint8
    frames get ``std * 255`` levels, rounded and clipped to 0..255), drawn independently for
    every pixel of every frame (per-pixel noise need not be frame-consistent); prob. ``p``."""

    random = True
    geometry = "none"

    def __init__(self, std: float = 0.02, *, p: float = 1.0) -> None:
        std = float(std)
        if not 0.0 <= std <= 1.0:
            raise ConfigError(f"GaussianNoise: std must lie within [0, 1], got {std!r}")
        self.std = std
        self.p = R.probability("GaussianNoise", p)

    def draw(self, generator, shape) -> torch.Tensor | None:
        """The (T, C, H, W) standard normal draws, or None (no noise)."""
        if self.std == 0.0 or not R.coin(generator, self.p):
            return None
        return torch.randn(
            tuple(shape), generator=generator, device=generator.device, dtype=torch.float32
        )

    def apply_drawn(self, window, params):
        if params is None:
            return window
        frames = window.frames
        noise = params.to(frames.device)
        if frames.dtype == torch.uint8:
            out = (frames.float() + noise * (self.std * 255.0)).round_().clamp_(0, 255)
            return Window(out.to(torch.uint8), window.indices, window.mask)
        if not frames.is_floating_point():
            raise DataError(f"GaussianNoise expects uint8 or floating frames, got {frames.dtype}")
        return Window(frames + (noise * self.std).to(frames.dtype), window.indices, window.mask)
