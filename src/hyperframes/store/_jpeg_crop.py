"""Crop during decode for the jpeg store: a window's JPEGs decoded only over its box, at the
largest DCT scale that keeps the box at least the output's size. At full scale with a bilinear
resize (the training crop's usual case), each frame's box is split into planes and the window's
planes are resized and mirrored by one call of the C kernel ``resize_linear`` straight into the
batch buffer (OpenCV's pixels; 16 interleaved resizes, 16 splits and a flip pass before: 11%
of a window here). Otherwise the region is resized once, interleaved, split into the window's
planes of the batch buffer (OpenCV, in place) and mirrored there.

The decoding is the C extension :mod:`hyperframes.store._jpegcrop` (libjpeg-turbo's partial
decompression: ``jpeg_crop_scanline`` for the box's iMCU columns, ``jpeg_skip_scanlines`` for
the rows above it, nothing read below it; ``scale_denom`` 2, 4 or 8 when the box is at least
that many times the output in both directions; two more columns each side, so that chroma
upsampling at the box's edges is the whole frame's). At full scale the pixels are the
whole-frame path's exactly; at a DCT scale the box's fractional position in the scaled image is
mapped exactly by a bilinear warp (the measured difference: docs/guides/jpeg-crop-decode.md).

Where the extension did not build (no compiler or no libjpeg headers at install) or
``HYPERFRAMES_JPEG_CROP=0`` is set, :func:`crop_window` returns False and the reader decodes
whole frames as before; the first time, one line on stderr says so and why.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Sequence

import numpy as np

from .._core._kernels import pixels
from .._core._resize import _interp, flip_planes, resize_planes

#: "0" turns partial decoding off (the whole-frame path), e.g. to compare the two
ENV = "HYPERFRAMES_JPEG_CROP"
DENOMS = (8, 4, 2)

_local = threading.local()
_noted: set[str] = set()
_decoder: list = []  # [the C function or None, why not]


def _load() -> tuple[Callable | None, str]:
    if not _decoder:
        try:
            from . import _jpegcrop  # deferred: the optional C extension, loaded on first use

            _decoder[:] = [_jpegcrop.decode_window, ""]
        except ImportError as e:
            _decoder[:] = [None, f"the C extension hyperframes.store._jpegcrop is not built: {e}"]
    return _decoder[0], _decoder[1]


def partial_decoder() -> Callable | None:
    """The C ``decode_window``, or None when partial decoding is unavailable or turned off
    (the first time, a note on stderr says why)."""
    if os.environ.get(ENV, "1") == "0":
        fn, why = None, f"{ENV}=0 is set"
    else:
        fn, why = _load()
    if fn is None and why not in _noted:
        _noted.add(why)
        print(
            f"hyperframes: note: partial JPEG decoding is off ({why}); jpeg stores decode "
            "whole frames for crops (slower); a build with a C compiler and libjpeg-turbo's "
            "headers (apt-get install libjpeg-dev) turns it on",
            file=sys.stderr,
            flush=True,
        )
    return fn


def dct_denom(box_hw: tuple[int, int], out_hw: tuple[int, int]) -> int:
    """The largest DCT scale denominator (8, 4, 2; else 1) with the scaled box still at least
    the output's size in both directions."""
    for d in DENOMS:
        if box_hw[0] >= d * out_hw[0] and box_hw[1] >= d * out_hw[1]:
            return d
    return 1


def _scratch(name: str, shape: tuple[int, ...]) -> np.ndarray:
    """A uint8 array of ``shape`` owned by the calling thread, reused across windows."""
    size = int(np.prod(shape))
    buf = getattr(_local, name, None)
    if buf is None or buf.size < size:
        buf = np.empty(size, np.uint8)
        setattr(_local, name, buf)
    return buf[:size].reshape(shape)


def crop_window(
    datas: Sequence,
    box,
    out: np.ndarray,
    *,
    flip: bool = False,
    filter: str = "area",
    frame_hw: tuple[int, int] | None = None,
) -> bool:
    """The JPEGs ``datas`` (one window's frames, each ``frame_hw`` (H, W) when given), each
    cropped to ``box`` ``(top, left, height, width)`` and resized into ``out`` ((T, 3, h, w)
    uint8, a window of the batch buffer), mirrored left-right when ``flip``. False (``out``
    untouched) when partial decoding is unavailable; a corrupt JPEG, or one of another size
    than ``frame_hw``, raises ValueError."""
    import cv2  # deferred: optional/heavy dependency

    decode = partial_decoder()
    if decode is None:
        return False
    t, _, oh, ow = out.shape
    y, x, bh, bw = (int(v) for v in box)
    d = dct_denom((bh, bw), (oh, ow))
    # the region: the box's rows, its columns and 2 more each side widened to iMCU
    # boundaries (16 scaled pixels for 4:2:0; 64 covers any sampling)
    rows = (y + bh + d - 1) // d - y // d
    cols = (x + bw + d - 1) // d - x // d + 68
    region = _scratch("region", (t, rows, cols, 3))
    h, w, r0, c0, got_rows, got_cols = decode(datas, region, y, x, bh, bw, d)
    if frame_hw is not None and (h, w) != tuple(frame_hw):
        raise ValueError(f"a JPEG chunk holds a {h}x{w} image where {frame_hw} is stored")
    # the resized frames, contiguous (OpenCV's split of a strided view is 7x slower)
    frames = _scratch("resized", (t, oh, ow, 3))
    if d == 1:  # the box's own pixels: as from whole frames
        crop = region[:, y - r0 : y - r0 + bh, x - c0 : x - c0 + bw]
        if (
            (bh, bw) != (oh, ow)
            and pixels is not None
            and out.flags.c_contiguous
            and _interp(bh, bw, oh, ow, filter) == cv2.INTER_LINEAR
        ):  # the box split into planes, then one kernel call for the window, flip included
            planes = _scratch("planes", (t, 3, bh, bw))
            for j in range(t):
                cv2.split(crop[j], [planes[j, 0], planes[j, 1], planes[j, 2]])
            resize_planes(planes, (0, 0, bh, bw), out, filter=filter, flip=flip)
            return True
        if (bh, bw) == (oh, ow):
            np.copyto(frames, crop)
        else:  # the reader's filter
            interp = _interp(bh, bw, oh, ow, filter)
            for j in range(t):
                cv2.resize(crop[j], (ow, oh), dst=frames[j], interpolation=interp)
    else:  # the box in the scaled region's pixels (fractional)
        scaled = (y / d - r0, x / d - c0, bh / d, bw / d)
        _warp(region[:, :got_rows, :got_cols], scaled, frames)
    if out.flags.c_contiguous:  # interleaved -> planes: OpenCV's split, in place (2.6x numpy)
        for j in range(t):
            cv2.split(frames[j], [out[j, 0], out[j, 1], out[j, 2]])
        if flip:
            flip_planes(out)
    else:  # (a strided buffer: numpy's transposed copy, mirrored in the same copy)
        np.copyto(out, (frames[:, :, ::-1] if flip else frames).transpose(0, 3, 1, 2))
    return True


def _warp(src: np.ndarray, box: tuple[float, ...], out: np.ndarray) -> None:
    """The fractional ``box`` (top, left, height, width) of each frame of ``src`` (T, R, S, 3)
    resized bilinearly onto ``out`` (T, h, w, 3), pixel centres mapped exactly (a box rounded
    to whole pixels would move the picture by up to half a pixel)."""
    import cv2  # deferred: optional/heavy dependency

    oh, ow = out.shape[1:3]
    y, x, bh, bw = box
    ay, ax = bh / oh, bw / ow
    by, bx = y + 0.5 * ay - 0.5, x + 0.5 * ax - 0.5  # output pixel 0's centre, in src pixels
    m = np.array([[ax, 0.0, bx], [0.0, ay, by]])
    flags = cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP
    for j in range(src.shape[0]):
        cv2.warpAffine(
            src[j], m, (ow, oh), dst=out[j], flags=flags, borderMode=cv2.BORDER_REPLICATE
        )
