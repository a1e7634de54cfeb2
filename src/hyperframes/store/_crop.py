"""Read + crop + resize in one pass: windows of any stored shape straight into one
``(B, T, C, h, w)`` batch buffer.

Each window ``b`` has a box ``(top, left, height, width)`` in its stored frames' pixels. A raw
store on local disk is read through its memory map: only the box's rows and columns of each
frame are touched, and each (C) plane of the box is resized (:mod:`hyperframes._core._resize`: on uint8
``INTER_LINEAR`` by the C kernel, all the window's planes in one call with its flip;
``INTER_AREA`` by OpenCV when the box is larger than the output, which keeps the antialiasing
a downscale needs) straight into its plane of the batch buffer, with no tensor per window and
no channel-last copy (measured on a 2-core box: OpenCV resizing each plane in place
0.7 ms per 16-frame window, one 48-channel channel-last resize 2.9 ms with its copies, torch's
batched ``interpolate`` on uint8 2.7 ms, on float 9.8 ms; the C kernel a quarter of OpenCV's
plane by plane, 8 against 32 us a 112x112 frame). A box of the output's size is a
plain copy. A jpeg store decodes each frame over its box only, at a DCT scale when the box
is at least twice the output, and resizes it once (:mod:`._jpeg_crop`; whole frames where
partial decoding is unavailable). Other readers (codec stores, stores at a URL, a store held
in RAM) decode the
window's whole frames once into a per-thread scratch array and crop from there; a store at a
URL first fetches the ranges of the whole batch at once (or takes them from its read-ahead).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np

from .._core._errors import DataError
from .._core._resize import FILTERS, flip_planes, resize_planes

_local = threading.local()


def _scratch(shape: tuple[int, ...], dtype) -> np.ndarray:
    size = int(np.prod(shape)) * np.dtype(dtype).itemsize
    buf = getattr(_local, "frames", None)
    if buf is None or buf.size < size:
        buf = _local.frames = np.empty(size, np.uint8)
    return buf[:size].view(dtype).reshape(shape)


def check_boxes(boxes: np.ndarray, shapes: Sequence[tuple[int, int]], where: str) -> np.ndarray:
    """``boxes`` (B, 4) int64 ``(top, left, height, width)``, each inside its frames."""
    boxes = np.asarray(boxes, np.int64)
    if boxes.shape != (len(shapes), 4):
        raise DataError(f"{where}: boxes must be ({len(shapes)}, 4), got {boxes.shape}")
    for b, ((h, w), (y, x, bh, bw)) in enumerate(zip(shapes, boxes.tolist())):
        if bh < 1 or bw < 1 or y < 0 or x < 0 or y + bh > h or x + bw > w:
            raise DataError(
                f"{where}: box {b} (top {y}, left {x}, {bh}x{bw}) is not inside its {h}x{w} "
                "frames; boxes are (top, left, height, width) in stored-frame pixels"
            )
    return boxes


def centre_boxes(shapes: Sequence[tuple[int, int]], size: tuple[int, int]) -> np.ndarray:
    """(B, 4) centred boxes of ``size`` in frames of ``shapes`` (as ``CenterCrop`` places
    them); a frame smaller than ``size`` is a :class:`DataError`."""
    boxes = []
    for h, w in shapes:
        if size[0] > h or size[1] > w:
            raise DataError(
                f"a centred {size[0]}x{size[1]} box does not fit {h}x{w} frames; give boxes= "
                "(then the box is resized to size) or a smaller size"
            )
        boxes.append((round((h - size[0]) / 2.0), round((w - size[1]) / 2.0), *size))
    return np.asarray(boxes, np.int64).reshape(-1, 4)


def _run(idx: np.ndarray) -> slice | None:
    """``idx`` as a slice when it is a strided run of frames (a view, where fancy indexing
    would first copy the whole frames), else None."""
    if not len(idx):
        return None
    step = int(idx[1] - idx[0]) if len(idx) > 1 else 1
    if step > 0 and bool(np.all(np.diff(idx) == step)):
        return slice(int(idx[0]), int(idx[-1]) + 1, step)
    return None


def _copy_box(frames: np.ndarray, idx: np.ndarray, box, out: np.ndarray) -> None:
    """``frames[idx]`` cropped to ``box`` into ``out``: a strided run is one slice copy."""
    y, x, bh, bw = box
    run = _run(idx)
    if run is not None:
        np.copyto(out, frames[run, :, y : y + bh, x : x + bw])
        return
    for j, i in enumerate(idx.tolist()):
        np.copyto(out[j], frames[i, :, y : y + bh, x : x + bw])


def _partial_crop(reader):
    """The reader's codec's ``crop_frames`` (jpeg: decode over the box only), or None."""
    crop = getattr(getattr(reader, "_codec", None), "crop_frames", None)
    return crop if crop is not None and callable(getattr(reader, "encoded_frames", None)) else None


def _crop_window(reader, crop, video: int, idx, box, out: np.ndarray, flip: bool, filter) -> bool:
    _, h, w = (int(s) for s in reader.videos.shapes[video])
    datas = reader.encoded_frames(video, idx)  # checks the indices (and check="video")
    try:
        return crop(datas, box, out, flip=flip, filter=filter, frame_hw=(h, w))
    except ValueError as e:  # the codec's: a chunk that does not decode as the index says
        raise reader._undecodable(video, e) from None


def read_boxes(
    reader,
    requests: Sequence[tuple],
    boxes,
    out: np.ndarray,
    *,
    flips=None,
    filter: str = "area",
) -> np.ndarray:
    """Window ``b`` of ``requests`` ((video, frame_indices) pairs, every window T frames),
    cropped to ``boxes[b]`` and resized into ``out[b]`` ((B, T, C, h, w), the store's dtype),
    mirrored left-right where ``flips[b]`` ((B,) bools) in the same pass; ``filter`` is the
    resize's (:mod:`hyperframes._core._resize`: ``"area"`` or ``"linear"``). Returns ``out``."""
    if filter not in FILTERS:
        raise DataError(f"read_boxes: filter must be one of {FILTERS}, got {filter!r}")
    reqs = [(int(v), np.asarray(ix, np.int64).reshape(-1)) for v, ix in requests]
    shapes = reader.videos.shapes
    hw = [(int(shapes[v][1]), int(shapes[v][2])) for v, _ in reqs]
    boxes = check_boxes(boxes, hw, "read_boxes")
    b, t = out.shape[:2]
    if len(reqs) != b or any(len(ix) != t for _, ix in reqs):
        raise DataError(
            f"read_boxes: out {out.shape} needs {b} windows of {t} frames, got "
            f"{[len(ix) for _, ix in reqs]}"
        )
    mapped = (  # a raw store on local disk: read through its memory map
        getattr(reader, "codec_name", None) == "raw"
        and getattr(getattr(reader, "_source", None), "is_local", False)
        and callable(getattr(reader, "frames_view", None))
    )
    flip = [False] * b if flips is None else [bool(f) for f in np.asarray(flips).reshape(-1)]
    if len(flip) != b:
        raise DataError(f"read_boxes: flips must be ({b},), got {len(flip)}")
    fetch = getattr(reader, "fetch_batch", None)
    if not mapped and fetch is not None:  # a store at a URL: the batch's ranges at once
        fetch(reqs)
    # a codec that crops its own chunks (yuv420): each window's frames, never decoded whole
    decode_box = getattr(getattr(reader, "_codec", None), "decode_box", None)
    crop = None if mapped or decode_box is not None else _partial_crop(reader)
    for k, ((video, idx), box) in enumerate(zip(reqs, boxes.tolist())):
        if decode_box is not None:
            reader._check_indices(video, idx)
            try:
                decode_box(reader.frame_chunks(video, idx), hw[k], box, out[k], filter)
            except ValueError as e:  # the codec's: a chunk that is not what the index says
                raise reader._undecodable(video, e) from None
            if flip[k]:
                flip_planes(out[k])
            continue
        if crop is not None:  # a jpeg store: each frame decoded over its box only
            if _crop_window(reader, crop, video, idx, box, out[k], flip[k], filter):
                continue
            crop = None  # partial decoding is unavailable here (said once): whole frames
        if mapped:
            reader._check_indices(video, idx)
            frames = reader.frames_view(video)
        else:
            c, h, w = (int(s) for s in shapes[video])
            frames = reader.read_numpy(video, idx, out=_scratch((t, c, h, w), out.dtype))
            idx = np.arange(t)
        if tuple(box[2:]) == out.shape[-2:]:
            _copy_box(frames, idx, box, out[k])
            if flip[k]:
                flip_planes(out[k])
            continue
        run = _run(idx)
        if run is not None:  # a strided run of frames: one view, one call for the window
            resize_planes(frames[run], box, out[k], filter=filter, flip=flip[k])
        else:
            for j, i in enumerate(idx.tolist()):
                resize_planes(frames[i], box, out[k, j], filter=filter, flip=flip[k])
    return out
