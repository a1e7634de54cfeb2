"""The on-the-fly anchor at its fastest honest setting, for ``bench_read`` and ``bench_train_wait``.

A loader that decodes windows from the source videos every epoch does best with: the decoder
resizing (swscale / decord's / torchcodec's own resize, not a resize after decoding at full
size), one decoding thread per decoder, and as many decoders as cores running in parallel
(processes: no GIL between them). Each function returns one window ``(T, C, H, W)`` uint8 at
``size``, for the stored frames ``pts_seconds`` (presentation times) / ``indices`` (decode-order
indices) of a video's stream; the file is opened per window, as a shuffled loader must.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

import numpy as np

DECODERS = ("pyav", "torchcodec", "decord")


def available() -> list[str]:
    """The decoders of :data:`DECODERS` that load here (hyperframes.bench's own probe)."""
    from hyperframes.bench._onthefly import available_window_decoders

    loaded = set(available_window_decoders())
    return [name for name in DECODERS if name in loaded]


def pyav_window(path, pts_seconds, indices, stream, size) -> np.ndarray:
    """PyAV: one decoding thread; the keyframe seek; frames converted and resized in one
    swscale pass (``to_ndarray(width=, height=)``), only for the frames kept."""
    import av

    want = np.asarray(pts_seconds, np.float64)
    h, w = size
    out: list[np.ndarray] = []
    with av.open(str(path)) as container:
        st = container.streams.video[stream]
        st.thread_type = "SLICE"
        st.codec_context.thread_count = 1
        tb = float(st.time_base)
        half = 0.5 / float(st.average_rate or 25)
        container.seek(max(0, int((want[0] - half) / tb)), stream=st, backward=True)
        last = None
        for frame in container.decode(st):
            t = float(frame.pts * tb) if frame.pts is not None else float(frame.time or 0.0)
            if want[len(out)] > t + half:  # before the window: decoded, not converted
                last = frame
                continue
            rgb = frame.to_ndarray(format="rgb24", width=w, height=h, interpolation="AREA")
            while len(out) < len(want) and want[len(out)] <= t + half:
                out.append(rgb)
            if len(out) == len(want):
                break
            last = frame
        while len(out) < len(want):  # past the last frame: hold it
            if not out and last is not None:
                out.append(last.to_ndarray(format="rgb24", width=w, height=h))
            out.append(out[-1])
    return np.stack(out[: len(want)]).transpose(0, 3, 1, 2)


def torchcodec_window(path, pts_seconds, indices, stream, size) -> np.ndarray:
    """torchcodec: ``num_ffmpeg_threads=1``, approximate seeking, decoder-side Resize."""
    import av
    from torchcodec.decoders import VideoDecoder
    from torchcodec.transforms import Resize

    with av.open(str(path)) as c:
        absolute = c.streams.video[stream].index
    dec = VideoDecoder(
        str(path),
        stream_index=absolute,
        num_ffmpeg_threads=1,
        seek_mode="approximate",
        transforms=[Resize(tuple(size))],
    )
    return dec.get_frames_played_at(seconds=[float(t) for t in pts_seconds]).data.numpy()


def decord_window(path, pts_seconds, indices, stream, size) -> np.ndarray:
    """decord: one thread, decoder-side resize (``width=``, ``height=``)."""
    import decord

    h, w = size
    reader = decord.VideoReader(str(path), ctx=decord.cpu(0), width=w, height=h, num_threads=1)
    frames = reader.get_batch([int(i) for i in indices]).asnumpy()
    return np.ascontiguousarray(frames.transpose(0, 3, 1, 2))


WINDOW: dict[str, Callable[..., np.ndarray]] = {
    "pyav": pyav_window,
    "torchcodec": torchcodec_window,
    "decord": decord_window,
}


def _decode_for(
    name: str, windows: list, seconds: float, augment: int | None = None
) -> tuple[int, float]:
    """In a worker process: decode ``windows`` in turn for about ``seconds`` (and, with
    ``augment``, crop each to a random box resized to ``augment`` and flip it, with OpenCV:
    ``_frontier_peers.augment_window``)."""
    fn = WINDOW[name]
    if augment:
        import cv2

        from _frontier_peers import augment_window

        cv2.setNumThreads(1)
        rng = np.random.default_rng(0)
        decode = fn

        def fn(*window):
            return augment_window(decode(*window), augment, rng)

    fn(*windows[0])  # warm-up: libraries loaded, first file opened
    done, t0 = 0, time.perf_counter()
    while True:
        fn(*windows[done % len(windows)])
        done += 1
        if time.perf_counter() - t0 >= seconds and done >= 2:
            return done, time.perf_counter() - t0


def parallel_rate(
    name: str,
    windows: list,
    *,
    decoders: int | None = None,
    seconds=10.0,
    augment: int | None = None,
) -> dict:
    """Windows/s of ``decoders`` (default: the cores) processes decoding with ``name`` at once,
    each its own share of ``windows`` (tuples ``(path, pts_seconds, indices, stream, size)``);
    ``augment``: the side of a RandomResizedCrop + flip done after decoding (None: none)."""
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor

    n = decoders or os.cpu_count() or 1
    with ProcessPoolExecutor(n, mp_context=mp.get_context("spawn")) as pool:
        shares = [windows[k::n] for k in range(n)]
        runs = list(pool.map(_decode_for, [name] * n, shares, [seconds] * n, [augment] * n))
    return {
        "decoders": n,
        "threads_per_decoder": 1,
        "windows": sum(d for d, _ in runs),
        "windows_per_s": sum(d / s for d, s in runs),
    }
