"""Crop + resize of uint8 or float32 planes with OpenCV, straight into a destination: the one
resize the batch pipeline, the store's box reads and the input contract's eval crop share
(a (..., H, W) array resized plane by plane: no channel-last copy, see
:mod:`hyperframes.store._crop`).

Two filters:

- ``"area"`` (the default; the eval crop and fixed resizes): OpenCV's ``INTER_AREA`` when the
  box is larger than the output (the antialiasing a downscale needs), ``INTER_LINEAR`` when it
  is smaller;
- ``"linear"`` (random resized crops in training): ``INTER_LINEAR`` unless the box is at least
  twice the output in a direction (then ``INTER_AREA``). A non-integer ``INTER_AREA`` shrink
  runs OpenCV's generic path, 5-6x slower than ``INTER_LINEAR``'s SIMD one (3.7 against
  0.65 ms per 16-frame 112x112 window here); below 2x a bilinear shrink skips no source
  pixel's whole neighbourhood, the choice mmaction2's ``RandomResizedCrop`` (mmcv's
  ``imresize``, ``cv2.INTER_LINEAR``) makes for training too.

``INTER_LINEAR`` on uint8 runs in the C kernel ``resize_linear`` (:mod:`._kernels`) where it
is built: OpenCV's weights and integer arithmetic, so the same pixels, with the weights
computed once for all of a window's planes, each source row resized horizontally once and the
flip folded into the horizontal pass (a 16-frame 112x112 window from a 100x150 box: 9 us a
frame against OpenCV's 33, one call per plane). Without it, OpenCV resizes plane by plane.
"""

from __future__ import annotations

import numpy as np

from ._kernels import pixels

FILTERS = ("area", "linear")


def _interp(bh: int, bw: int, oh: int, ow: int, filter: str) -> int:
    import cv2  # deferred: optional/heavy dependency

    if filter == "linear":
        return cv2.INTER_AREA if bh >= 2 * oh or bw >= 2 * ow else cv2.INTER_LINEAR
    return cv2.INTER_AREA if bh > oh or bw > ow else cv2.INTER_LINEAR


def resize_planes(
    src: np.ndarray, box, dst: np.ndarray, *, filter: str = "area", flip: bool = False
) -> None:
    """``src`` (..., H, W) cropped to ``box`` and resized into ``dst`` (..., h, w), plane by
    plane (uint8 or float32), mirrored left-right when ``flip``."""
    import cv2  # deferred: optional/heavy dependency

    y, x, bh, bw = box
    oh, ow = dst.shape[-2:]
    crop = src[..., y : y + bh, x : x + bw]
    if (bh, bw) == (oh, ow):
        np.copyto(dst, crop)
    else:
        interp = _interp(bh, bw, oh, ow, filter)
        if interp == cv2.INTER_LINEAR and _linear_kernel(crop, dst, flip):
            return
        size = (ow, oh)
        if crop.ndim == 4:  # a window (T, C, ...): plain loops, ~1 us a plane (ndindex: ~3)
            for t in range(crop.shape[0]):
                ct, dt = crop[t], dst[t]
                for c in range(crop.shape[1]):
                    cv2.resize(ct[c], size, dst=dt[c], interpolation=interp)
        else:
            for p in np.ndindex(*crop.shape[:-2]):  # views, never a copy of a strided crop
                cv2.resize(crop[p], size, dst=dst[p], interpolation=interp)
    if flip:
        flip_planes(dst)


def _linear_kernel(crop: np.ndarray, dst: np.ndarray, flip: bool) -> bool:
    """``crop`` resized bilinearly into ``dst`` and mirrored when ``flip``, by the C kernel in
    one call; False (nothing done) where it is not built or does not take these arrays."""
    if (
        pixels is None
        or crop.dtype != np.uint8
        or dst.dtype != np.uint8
        or not 2 <= crop.ndim <= 4
        or crop.strides[-1] != 1
        or not dst.flags.c_contiguous
    ):
        return False
    lead = (None,) * (4 - crop.ndim)  # (T, C, h, w) views: no copy
    pixels.resize_linear(crop[lead], dst[lead], flip)
    return True


def flip_planes(a: np.ndarray) -> None:
    """Mirror, in place, every (h, w) plane of ``a`` (..., h, w) left-right."""
    import cv2  # deferred: optional/heavy dependency

    w = a.shape[-1]
    if a.flags.c_contiguous:  # one call for all planes: rows are independent
        rows = a.reshape(-1, w)
        cv2.flip(rows, 1, dst=rows)
        return
    for p in np.ndindex(*a.shape[:-2]):
        cv2.flip(a[p], 1, dst=a[p])
