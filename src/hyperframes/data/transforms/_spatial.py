"""Spatial transforms: one set of parameters for every frame of a window.

The pixel work is torchvision.transforms.v2.functional, which applies one operation to every
(C, H, W) image of a (..., C, H, W) tensor; only the parameter drawing is ours (from the
explicit generator). uint8 and float windows are both accepted.

Batch forms: the crops and resizes give the read its box (:meth:`read_box`: the batch pipeline
crops and resizes while it reads, OpenCV's filters); a flip mirrors the batch's planes in place
(OpenCV); :class:`RandomAffine` warps uint8 frames on the CPU with the C kernel's bilinear
(:func:`warp_affine_batch`: each window's weights computed once for all its frames, the fill
blended into the edge as torchvision blends it), within a grey level of torchvision's (OpenCV's
``warpAffine``, within two, where the kernel is not built). Other dtypes and devices run
torchvision sample by sample.
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torchvision.transforms.v2.functional as F
from torchvision.transforms import InterpolationMode

from ..._core._errors import ConfigError, DataError
from ..._core._kernels import pixels
from ..._core._resize import flip_planes
from ...store import centre_boxes
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


def _cpu_uint8(frames: torch.Tensor) -> bool:
    return frames.dtype == torch.uint8 and frames.device.type == "cpu"


class _Box(Transform):
    """A crop or resize: one box of the frames resized to a size. The batch pipeline's read
    takes it when it is the first step (:meth:`read_box`, resized with ``read_filter``)."""

    geometry = "box"
    #: the read's resize filter (:mod:`hyperframes._core._resize`)
    read_filter = "area"

    def read_box(self, height: int, width: int, generator) -> tuple[tuple, tuple[int, int]]:
        """((top, left, h, w), (out_h, out_w)) for frames of ``height`` x ``width``."""
        raise NotImplementedError

    def draw(self, generator, shape):
        return self.read_box(int(shape[-2]), int(shape[-1]), generator)

    def apply_drawn(self, window, params):
        (top, left, h, w), size = params
        frames = window.frames
        if (h, w) == tuple(size):
            if (top, left) == (0, 0) and (h, w) == tuple(frames.shape[-2:]):
                return window
            return _replace(window, frames[..., top : top + h, left : left + w])
        out = F.resized_crop(frames, top, left, h, w, list(size), antialias=self._antialias())
        return _replace(window, out)

    def _antialias(self) -> bool:
        return bool(getattr(self, "antialias", True))


@register_transform("resize")
class Resize(_Box):
    """Resize every frame: ``size`` an int (shorter side, aspect kept) or (h, w)."""

    def __init__(self, size, *, antialias: bool = True) -> None:
        if isinstance(size, int) and not isinstance(size, bool):
            if size < 1:
                raise ConfigError(f"Resize: size must be > 0, got {size!r}")
            self.size = [size]
        else:
            self.size = list(R.size2("Resize", size))
        self.antialias = bool(antialias)

    def read_box(self, height, width, generator):
        if len(self.size) == 2:
            return (0, 0, height, width), (self.size[0], self.size[1])
        short, long = sorted((height, width))  # torchvision's rule for the longer side
        side = (self.size[0], int(self.size[0] * long / short))
        return (0, 0, height, width), side if height <= width else side[::-1]

    def apply_drawn(self, window, params):
        return _replace(window, F.resize(window.frames, self.size, antialias=self.antialias))


def _check_fits(who: str, size: tuple[int, int], height: int, width: int) -> None:
    if size[0] > height or size[1] > width:
        raise DataError(
            f"{who}: crop {size[0]}x{size[1]} is larger than the {height}x{width} frames; put "
            f"a Resize (or RandomResizedCrop) before it or store frames at a larger size"
        )


@register_transform("center_crop")
class CenterCrop(_Box):
    """Crop the central ``size`` (int or (h, w)) region of every frame."""

    def __init__(self, size) -> None:
        self.size = R.size2("CenterCrop", size)

    def read_box(self, height, width, generator):
        _check_fits("CenterCrop", self.size, height, width)
        return tuple(centre_boxes([(height, width)], self.size)[0].tolist()), self.size


@register_transform("random_crop")
class RandomCrop(_Box):
    """Crop a ``size`` region at a random position (the same for every frame)."""

    random = True

    def __init__(self, size) -> None:
        self.size = R.size2("RandomCrop", size)

    def read_box(self, height, width, generator):
        _check_fits("RandomCrop", self.size, height, width)
        top = R.randint(generator, 0, height - self.size[0])
        left = R.randint(generator, 0, width - self.size[1])
        return (top, left, *self.size), self.size


@register_transform("random_resized_crop")
class RandomResizedCrop(_Box):
    """Inception-style crop: a random box of ``scale`` times the area and aspect in ``ratio``
    (log-uniform), resized to ``size``; the same box for every frame. After 10 failed draws the
    largest central box within ``ratio`` is used (as torchvision does)."""

    random = True
    read_filter = "linear"

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

    def read_box(self, height, width, generator):
        return self.box(height, width, generator), self.size

    def apply_drawn(self, window, params):
        (top, left, h, w), size = params
        out = F.resized_crop(window.frames, top, left, h, w, list(size), antialias=self.antialias)
        return _replace(window, out)


def flip_batch(frames: torch.Tensor, flips) -> torch.Tensor:
    """Mirror, in place, the (B, T, C, h, w) windows whose ``flips`` is True (OpenCV's flip
    per window on the CPU: torch's ``frames[sel] = frames[sel].flip(-1)`` gathers, flips and
    scatters, ~1 ms a 16-frame 112x112 window against ~0.04 ms). Returns ``frames``."""
    sel = np.flatnonzero(np.asarray(flips, bool))
    if frames.device.type != "cpu" or frames.dtype not in (torch.uint8, torch.float32):
        for k in sel.tolist():
            frames[k] = frames[k].flip(-1)
        return frames
    arr = frames.numpy()
    for k in sel.tolist():
        flip_planes(arr[k])
    return frames


@register_transform("random_horizontal_flip")
class RandomHorizontalFlip(Transform):
    """Mirror every frame left-right with probability ``p`` (all frames or none)."""

    random = True
    geometry = "mirror"

    def __init__(self, p: float = 0.5) -> None:
        self.p = R.probability("RandomHorizontalFlip", p)

    def draw(self, generator, shape) -> bool:
        return R.coin(generator, self.p)

    def apply_drawn(self, window, params):
        return _replace(window, F.horizontal_flip(window.frames)) if params else window

    def batch_apply(self, batch, params):
        """Mirrors the batch's frames in place (a contiguous batch)."""
        if not any(params):
            return batch
        return _replace(batch, flip_batch(batch.frames.contiguous(), params))


@register_transform("random_affine")
class RandomAffine(Transform):
    """A small random rotation (``degrees``), translation (``translate`` as fractions of width
    and height), ``scale`` and horizontal ``shear`` (degrees), bilinear, the same for every
    frame; uncovered pixels get ``fill``."""

    random = True
    geometry = "warp"

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

    def draw(self, generator, shape) -> dict:
        return self.params(int(shape[-2]), int(shape[-1]), generator)

    def apply_drawn(self, window, params):
        out = F.affine(
            window.frames,
            **params,
            interpolation=InterpolationMode.BILINEAR,
            fill=[self.fill] * window.frames.shape[-3],
        )
        return _replace(window, out)

    def batch_apply(self, batch, params):
        if not _cpu_uint8(batch.frames):
            return super().batch_apply(batch, params)
        h, w = batch.frames.shape[-2:]
        maps = np.stack([affine_source_map(p, h, w) for p in params])
        return _replace(batch, warp_affine_batch(batch.frames, maps, self.fill))


def affine_source_map(params: dict, height: int, width: int) -> np.ndarray:
    """(2, 3): output pixel -> source pixel of torchvision's ``affine`` with ``params``
    (angle, translate, scale, shear; centre of rotation the frame's centre): the inverse of
    rotation-scale-shear ``R(a) S(s) ShY(sy) ShX(sx)`` after the translation, in pixel
    coordinates whose centres are the integers."""
    a = math.radians(params["angle"])
    sx, sy = (math.radians(v) for v in params["shear"])
    tx, ty = (float(v) for v in params["translate"])
    s = float(params["scale"])
    # forward linear part (rows): [[p, q], [r, u]] with determinant 1 before scaling
    p = math.cos(a - sy) / math.cos(sy)
    r = math.sin(a - sy) / math.cos(sy)
    q = -(p * math.tan(sx) + math.sin(a))
    u = math.cos(a) - r * math.tan(sx)
    inv = np.array([[u, -q], [-r, p]]) / s
    centre = np.array([(width - 1) * 0.5, (height - 1) * 0.5])
    offset = centre - inv @ (centre + np.array([tx, ty]))
    return np.concatenate([inv, offset[:, None]], 1)


def warp_affine_batch(frames: torch.Tensor, maps: np.ndarray, fill: float) -> torch.Tensor:
    """uint8 (B, T, C, H, W) frames warped by ``maps`` (B, 2, 3) output -> source pixel,
    bilinear, ``fill`` outside, as torchvision's ``affine``: the warped frame meets the fill
    as torchvision blends it (``m * (x - fill) + fill``, ``m`` the share
    of the pixel inside the frame), rounded. Every plane of a window shares its map: the C
    kernel (:mod:`hyperframes._core._pixels`) computes each window's weights once (in 1/16384)
    and runs all its T*C planes through them, eight pixels a step (SSE2), window by window in
    place (a contiguous batch is overwritten and returned); within one grey level of
    torchvision's float arithmetic. Without the kernel, OpenCV (:func:`_warp_opencv`,
    1/32 pixel, within two levels, about twice the time)."""
    b, t, c, h, w = frames.shape
    if pixels is None or h < 2 or w < 2:
        return _warp_opencv(frames, maps, fill)
    frames = frames.contiguous()
    pixels.warp_affine(frames.numpy(), np.ascontiguousarray(maps, np.float64), b, t * c, h, w, fill)
    return frames


def _warp_opencv(frames: torch.Tensor, maps: np.ndarray, fill: float) -> torch.Tensor:
    """:func:`warp_affine_batch` with OpenCV's ``warpAffine`` (fixed point 1/32 pixel), the
    window's T*C planes four at a time, interleaved; the fill blended afterwards where a ones
    plane warped once per window is below 1."""
    import cv2  # deferred: optional/heavy dependency

    b, t, c, h, w = frames.shape
    src = frames.contiguous().numpy().reshape(b, t * c, h, w)
    out = np.empty_like(src)
    flags = cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP
    ones = np.ones((h, w), np.float32)
    for k in range(b):
        for lo in range(0, t * c, 4):
            planes = src[k, lo : lo + 4]
            img = cv2.merge(list(planes)) if len(planes) > 1 else planes[0]
            got = cv2.warpAffine(img, maps[k], (w, h), flags=flags, borderValue=0)
            if got.ndim == 3:
                cv2.split(got, list(out[k, lo : lo + 4]))  # into the planes, no transpose
            else:
                out[k, lo] = got
        inside = cv2.warpAffine(ones, maps[k], (w, h), flags=flags, borderValue=0.0)
        band = np.flatnonzero(inside < 1.0 - 1e-6)
        if band.size:
            flat = out[k].reshape(t * c, -1)
            share = inside.reshape(-1)[band]
            mixed = share * (flat[:, band].astype(np.float32) - fill) + fill
            flat[:, band] = np.clip(np.rint(mixed), 0, 255).astype(np.uint8)
    return torch.from_numpy(out.reshape(b, t, c, h, w))
