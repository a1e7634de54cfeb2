"""Frames kept as 8-bit I420 planes (the ``yuv420`` codec): the chunk layout, the colour
conversions, and the read that crops and resizes the planes before converting.

A chunk is one frame: an 8-byte header (``b"I420"``, the matrix's code, 1 for full range or
0 for limited, two zero bytes), then Y (H x W), U and V (each ceil(H/2) x ceil(W/2)), row
after row. The header records the matrix and range the frame's source was decoded with
(BT.601 / BT.709 / BT.2020 / SMPTE 240M / FCC; full or limited), so a read converts with the
same ones the RGB build would have used (swscale takes them from the decoded frame's tags;
an untagged frame is BT.601, limited unless its pixel format says full). Frames that come as
RGB (another decoder, a conversion) are stored as BT.601 full range (JPEG's YCbCr).

A read of a box (:func:`decode_box`) never converts a whole frame: it resizes the box of the Y
plane and the matching box of each chroma plane (half as many pixels each way) straight to
the output size, then converts those three output-sized planes to R, G and B straight into
the (3, h, w) planes of the batch buffer, with the C kernel ``i420_to_rgb`` (fixed point,
within a level of the matrix in float64) or, without it, four saturating OpenCV
``addWeighted`` calls (the conversion is affine, so it commutes with the resize; only the
clipping of colours outside RGB's gamut does not).
"""

from __future__ import annotations

import math
import threading
from itertools import pairwise

import numpy as np

from .._core._kernels import pixels
from .._core._resize import resize_planes

__all__ = [
    "HEADER_BYTES",
    "MATRICES",
    "chunk_problem",
    "decode_box",
    "decode_frames",
    "encode_planes",
    "encode_rgb",
    "frame_bytes",
]

MAGIC = b"I420"
HEADER_BYTES = 8
#: matrix name -> (code in the header, Kr, Kb)
MATRICES = {
    "bt601": (0, 0.299, 0.114),
    "bt709": (1, 0.2126, 0.0722),
    "bt2020": (2, 0.2627, 0.0593),
    "smpte240m": (3, 0.212, 0.087),
    "fcc": (4, 0.30, 0.11),
}
_BY_CODE = {code: name for name, (code, _, _) in MATRICES.items()}
_KNOWN_CODE = np.isin(np.arange(256), list(_BY_CODE))  # a header's matrix byte -> known
_MAGIC_BYTES = np.frombuffer(MAGIC, np.uint8)


def chroma_shape(h: int, w: int) -> tuple[int, int]:
    return (h + 1) // 2, (w + 1) // 2


def frame_bytes(h, w):
    """Bytes of one stored frame of ``h`` x ``w`` (ints or int64 arrays), header included."""
    return HEADER_BYTES + h * w + 2 * ((h + 1) // 2) * ((w + 1) // 2)


def _header(matrix: str, full: bool) -> bytes:
    return MAGIC + bytes((MATRICES[matrix][0], int(bool(full)), 0, 0))


def encode_planes(y: np.ndarray, u: np.ndarray, v: np.ndarray, matrix: str, full: bool) -> bytes:
    """One frame's chunk from its planes (uint8 Y (H, W), U and V (ceil(H/2), ceil(W/2)))."""
    h, w = y.shape
    if u.shape != chroma_shape(h, w) or v.shape != u.shape:
        raise ValueError(f"chroma planes {u.shape}, {v.shape} do not match a {h}x{w} Y plane")
    return b"".join(
        (_header(matrix, full), *(np.ascontiguousarray(p, np.uint8).data for p in (y, u, v)))
    )


def encode_rgb(chw: np.ndarray) -> bytes:
    """One RGB frame (3, H, W) uint8 as a chunk: BT.601 full range, chroma averaged over
    2 x 2 pixels (OpenCV's area filter: a half pixel at an odd edge)."""
    import cv2  # deferred: optional/heavy dependency

    _, kr, kb = MATRICES["bt601"]
    kg = 1.0 - kr - kb
    r, g, b = (p.astype(np.float32) for p in chw)
    y = kr * r + kg * g + kb * b
    u = (b - y) / (2.0 * (1.0 - kb)) + 128.0
    v = (r - y) / (2.0 * (1.0 - kr)) + 128.0
    h, w = y.shape
    ch, cw = chroma_shape(h, w)

    def half(p):
        return cv2.resize(p, (cw, ch), interpolation=cv2.INTER_AREA)

    yq, uq, vq = (np.clip(np.rint(p), 0, 255).astype(np.uint8) for p in (y, half(u), half(v)))
    return encode_planes(yq, uq, vq, "bt601", True)


def _parse(data, h: int, w: int):
    """The (matrix, full, Y, U, V) views of a chunk of an ``h`` x ``w`` frame, or a
    ValueError saying what is wrong with it."""
    buf = np.frombuffer(data, np.uint8)
    ch, cw = (h + 1) // 2, (w + 1) // 2
    a = HEADER_BYTES + h * w
    head = buf[:HEADER_BYTES].tobytes()
    matrix = _BY_CODE.get(head[4]) if len(head) == HEADER_BYTES else None
    if buf.size != a + 2 * ch * cw or head[:4] != MAGIC or matrix is None or head[5] > 1:
        raise ValueError(f"a yuv420 chunk {_problem(data, h, w)}")
    y = buf[HEADER_BYTES:a].reshape(h, w)
    u = buf[a : a + ch * cw].reshape(ch, cw)
    v = buf[a + ch * cw :].reshape(ch, cw)
    return matrix, bool(head[5]), y, u, v


def _problem(data, h: int, w: int) -> str | None:
    n, want = len(data), frame_bytes(h, w)
    if n != want:
        return f"is {n} bytes, a {h}x{w} frame is {want} (header included)"
    head = bytes(data[:HEADER_BYTES])
    if head[:4] != MAGIC or head[4] not in _BY_CODE or head[5] > 1:
        return f"has the header {head!r}, not b'I420' + a known matrix and range"
    return None


def chunk_problem(data, shape: tuple, dtype: np.dtype) -> str | None:
    """What is wrong with a chunk against the ``(1, 3, H, W)`` uint8 frame the index gives."""
    n, c, h, w = shape
    if n != 1 or c != 3 or np.dtype(dtype) != np.uint8:
        return f"cannot hold {shape} frames of {np.dtype(dtype)} (one 3-channel uint8 frame)"
    return _problem(data, h, w)


def _coefficients(matrix: str, full: bool) -> tuple[float, ...]:
    """(ys, rv, bu, gu, gv, cr, cb, cg): R = ys*Y + rv*V + cr, B = ys*Y + bu*U + cb,
    G = ys*Y + gu*U + gv*V + cg, from 8-bit Y, U, V."""
    _, kr, kb = MATRICES[matrix]
    kg = 1.0 - kr - kb
    ys, yo, cs = (1.0, 0.0, 1.0) if full else (255.0 / 219.0, 16.0, 255.0 / 224.0)
    rv, bu = cs * 2.0 * (1.0 - kr), cs * 2.0 * (1.0 - kb)
    gu, gv = -cs * 2.0 * kb * (1.0 - kb) / kg, -cs * 2.0 * kr * (1.0 - kr) / kg
    y0 = -ys * yo
    return ys, rv, bu, gu, gv, y0 - 128.0 * rv, y0 - 128.0 * bu, y0 - 128.0 * (gu + gv)


def to_rgb(y: np.ndarray, u: np.ndarray, v: np.ndarray, matrix: str, full: bool, out) -> None:
    """Y, U, V planes of one size (uint8, 2-D) into ``out`` (3, h, w) uint8: R, G, B, each
    rounded and clipped to 0..255 by OpenCV's ``addWeighted`` on uint8 planes only (its
    SIMD path: a float32 or int16 operand is ~10x slower here). G's two chroma terms go
    through one uint8 plane at half scale (128 + (gu*U' + gv*V') / 2, within 60..196 for
    every matrix): G is then exact to a level."""
    import cv2  # deferred: optional/heavy dependency

    ys, rv, bu, gu, gv, cr, cb, cg = _coefficients(matrix, full)
    cv2.addWeighted(y, ys, v, rv, cr, dst=out[0], dtype=cv2.CV_8U)
    cv2.addWeighted(y, ys, u, bu, cb, dst=out[2], dtype=cv2.CV_8U)
    k = 128.0 - 64.0 * (gu + gv)
    half = cv2.addWeighted(u, gu / 2.0, v, gv / 2.0, k, dtype=cv2.CV_8U)
    cv2.addWeighted(y, ys, half, 2.0, cg - 2.0 * k, dst=out[1], dtype=cv2.CV_8U)


_local = threading.local()


def _scratch(name: str, shape: tuple[int, ...]) -> np.ndarray:
    """A per-thread uint8 scratch array of ``shape``, one per ``name``."""
    size = math.prod(shape)
    buf = getattr(_local, name, None)
    if buf is None or buf.size < size:
        buf = np.empty(size, np.uint8)
        setattr(_local, name, buf)
    return buf[:size].reshape(shape)


def _chroma(lo: int, n: int, full: int, out: int) -> tuple[slice, int, int]:
    """The chroma rows (or columns) of a luma span ``lo .. lo + n`` of ``full`` luma pixels,
    resized to ``out``: (the chroma slice, the size to resize it to, where the span starts
    in that resized image), so that the span's edges land where the luma's do."""
    c0, c1 = lo // 2, min((lo + n + 1) // 2, (full + 1) // 2)
    size = max(out, round(out * 2 * (c1 - c0) / n))
    at = min(round(out * (lo - 2 * c0) / n), size - out)
    return slice(c0, c1), size, at


def decode_box(datas: list, shape: tuple[int, int], box, out: np.ndarray, filter: str) -> None:
    """Frames (one chunk each) of ``shape`` (H, W), cropped to ``box`` (top, left, height,
    width) and resized into ``out`` (T, 3, h, w) uint8 with the resize's ``filter``.

    The window's Y boxes are resized together into a (T, h, w) plane stack and its U and V
    boxes into two more, each stack by one :func:`~hyperframes._core._resize.resize_planes`
    (a bilinear resize: one call of the C kernel for the whole stack); then
    :func:`_convert`. A 16-frame
    112x112 window on one thread here: 630 us with 48 OpenCV resizes and OpenCV's
    conversion, 250 us now."""
    h, w = shape
    y0, x0, bh, bw = box
    t, (oh, ow) = len(datas), out.shape[-2:]
    rows, sh, ay = _chroma(y0, bh, h, oh)
    cols, sw, ax = _chroma(x0, bw, w, ow)
    crh, crw = rows.stop - rows.start, cols.stop - cols.start
    planes = _scratch("planes", (3, t, oh, ow))
    # the window's boxes side by side: Y (1, T, bh, bw), U and V (2, T, crh, crw)
    views = _stacked(datas, h, w)
    if views is not None:  # chunks at equal steps in one buffer: views, no copy
        colours, y, u = views
        ybox = y[None, :, y0 : y0 + bh, x0 : x0 + bw]
        cbox = u[:, :, rows, cols]
    else:
        ybox = _scratch("ybox", (1, t, bh, bw))
        cbox = _scratch("cbox", (2, t, crh, crw))
        colours = []
        for j, data in enumerate(datas):
            matrix, full, y, u, v = _parse(data, h, w)
            colours.append((matrix, full))
            np.copyto(ybox[0, j], y[y0 : y0 + bh, x0 : x0 + bw])
            np.copyto(cbox[0, j], u[rows, cols])
            np.copyto(cbox[1, j], v[rows, cols])
    resize_planes(ybox, (0, 0, bh, bw), planes[:1], filter=filter)
    if (sh, sw) == (oh, ow):  # the chroma box lands on the output: no slice to copy
        resize_planes(cbox, (0, 0, crh, crw), planes[1:], filter=filter)
    else:
        chroma = _scratch("chroma", (2, t, sh, sw))
        resize_planes(cbox, (0, 0, crh, crw), chroma, filter=filter)
        np.copyto(planes[1:], chroma[:, :, ay : ay + oh, ax : ax + ow])
    _convert(planes, colours, out)


def _convert(planes: np.ndarray, colours: list, out: np.ndarray) -> None:
    """Same-sized Y, U, V stacks ``planes`` (3, T, h, w) to RGB in ``out`` (T, 3, h, w): the
    C kernel ``i420_to_rgb`` straight into ``out`` (one pass: 80 us a 16-frame 112x112 window
    here, against 143 for OpenCV's four and the copy), else :func:`to_rgb` into planar
    scratch and a copy. Each run of frames of one matrix and range (a video's frames share
    their source's) is one call."""
    t, (h, w) = planes.shape[1], planes.shape[-2:]
    runs = [0] + [j for j in range(1, t) if colours[j] != colours[j - 1]] + [t]
    for a, b in pairwise(runs):
        matrix, full = colours[a]
        if pixels is not None and out.flags.c_contiguous:
            flat = planes[:, a:b].reshape(3, b - a, h * w)
            target = out[a:b].reshape(b - a, 3, h * w)
            coefficients = _coefficients(matrix, full)
            pixels.i420_to_rgb(flat[0], flat[1], flat[2], target, b - a, h * w, coefficients)
            continue
        flat = planes[:, a:b].reshape(3, (b - a) * h, w)
        rgb = _scratch("rgb", (3, b - a, h, w))
        to_rgb(flat[0], flat[1], flat[2], matrix, full, rgb.reshape(3, (b - a) * h, w))
        np.copyto(out[a:b], rgb.transpose(1, 0, 2, 3))


def _stacked(datas: list, h: int, w: int):
    """``(colours, Y (T, H, W), U and V (2, T, ceil(H/2), ceil(W/2)))`` as strided views when
    the chunks are numpy views at equal steps in one buffer (a local store's map, a URL
    store's batch of ranges) and every header is valid; None otherwise (the caller then
    parses chunk by chunk, which names what is wrong)."""
    t, size = len(datas), frame_bytes(h, w)
    at = []
    for d in datas:
        if not isinstance(d, np.ndarray) or d.shape != (size,) or d.dtype != np.uint8:
            return None
        at.append(d.__array_interface__["data"][0])
    step = at[1] - at[0] if t > 1 else size
    if (t > 1 and abs(step) < size) or any(b - a != step for a, b in pairwise(at)):
        return None
    first = datas[0]
    view = np.lib.stride_tricks.as_strided
    heads = view(first, (t, HEADER_BYTES), (step, 1), writeable=False)
    codes, fulls = heads[:, 4], heads[:, 5]
    if not ((heads[:, :4] == _MAGIC_BYTES).all() and _KNOWN_CODE[codes].all() and fulls.max() <= 1):
        return None
    if (codes == codes[0]).all() and (fulls == fulls[0]).all():
        colours = [(_BY_CODE[int(codes[0])], bool(fulls[0]))] * t
    else:
        colours = [(_BY_CODE[int(c)], bool(f)) for c, f in zip(codes.tolist(), fulls.tolist())]
    ch, cw = chroma_shape(h, w)
    y = view(first[HEADER_BYTES:], (t, h, w), (step, w, 1), writeable=False)
    uv = view(
        first[HEADER_BYTES + h * w :], (2, t, ch, cw), (ch * cw, step, cw, 1), writeable=False
    )
    return colours, y, uv


def decode_frames(datas: list, out: np.ndarray) -> None:
    """Whole frames (one chunk each) into ``out`` (T, 3, H, W) uint8."""
    _, _, h, w = out.shape
    decode_box(datas, (h, w), (0, 0, h, w), out, "linear")
