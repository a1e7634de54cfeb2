"""The anchor: decode a window of frames straight from the video file, as loaders without a
store do every epoch (open, seek to the keyframe before the window, decode, convert).

One function per installed decoder, registered by name; each returns (T, C, H, W) uint8 for the
frames of a video's stream at the given decode-order indices / presentation times.
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Callable

import numpy as np

from .._core._errors import ConfigError, DecodeError, HyperframesError
from ..decode import create_decoder

WindowDecoder = Callable[..., np.ndarray]
_REGISTRY: dict[str, WindowDecoder] = {}


def _register(name: str):
    def wrap(fn):
        _REGISTRY[name] = fn
        return fn

    return wrap


def available_window_decoders() -> list[str]:
    """Names of the on-the-fly decoders whose library loads here (torchcodec imports without
    the system's FFmpeg libraries and fails only when it decodes: the decoder's own check)."""

    names = []
    for name in ("pyav", "torchcodec", "decord", "opencv"):
        try:
            create_decoder(name)
        except ConfigError:  # not installed, or its native libraries fail to load
            continue
        names.append(name)
    return names


def window_decoder(name: str) -> WindowDecoder:
    return _REGISTRY[name]


def cannot_decode(name: str, rec) -> str | None:
    """Why decoder ``name`` cannot give the windows of store video ``rec`` (None: it can).

    Asks the decoder package to open the video's stream (which refuses a backend that would
    decode another stream than the store's) and decodes the video's first stored frame.
    """

    try:
        create_decoder(name).probe(rec.path, stream=rec.stream)
        window_decoder(name)(
            rec.path,
            rec.pts_seconds[:1],
            indices=rec.source_frame_indices[:1],
            stream=rec.stream,
            size=rec.shape[1:],
        )
    except HyperframesError as e:
        return str(e)
    except Exception as e:  # the library's own words
        return f"{type(e).__name__}: {e}"
    return None


class StderrTap:
    """While open, what anything in the process writes to file descriptor 2 (FFmpeg's warnings
    inside OpenCV and decord included) goes to a temporary file instead of the terminal.

    ``take()`` returns the lines written since its last call; ``lines`` counts them all.
    """

    def __enter__(self) -> StderrTap:
        sys.stderr.flush()
        fd, path = tempfile.mkstemp(prefix="hyperframes-stderr-")
        os.close(fd)
        self._fd = os.open(path, os.O_RDWR | os.O_APPEND)
        os.unlink(path)
        self._saved = os.dup(2)
        os.dup2(self._fd, 2)
        self._read = 0
        self.lines = 0
        return self

    def take(self) -> list[str]:
        data = b""
        while chunk := os.pread(self._fd, 1 << 16, self._read + len(data)):
            data += chunk
        self._read += len(data)
        lines = [x for x in data.decode(errors="replace").splitlines() if x.strip()]
        self.lines += len(lines)
        return lines

    def __exit__(self, *exc) -> None:
        sys.stderr.flush()
        os.dup2(self._saved, 2)
        os.close(self._saved)
        self.take()
        os.close(self._fd)


def _resize(frames: np.ndarray, size: tuple[int, int] | None) -> np.ndarray:
    """(T, C, H, W) uint8 resized to ``size`` with antialiasing (what a loader must do too)."""
    if size is None or tuple(frames.shape[2:]) == tuple(size):
        return frames
    import torch  # deferred: optional/heavy dependency
    import torch.nn.functional as F  # deferred: optional/heavy dependency

    x = F.interpolate(torch.from_numpy(frames).float(), size=size, mode="bilinear", antialias=True)
    return x.round_().clamp_(0, 255).to(torch.uint8).numpy()


@_register("pyav")
def pyav_window(
    path: str,
    pts_seconds: np.ndarray,
    *,
    indices: np.ndarray | None = None,
    stream: int = 0,
    size: tuple[int, int] | None = None,
) -> np.ndarray:
    """Frames at ``pts_seconds`` (sorted; nearest frame) via PyAV with a keyframe seek."""
    import av  # deferred: optional/heavy dependency

    # threads=1: PyAV's default multi-threaded swscale is ~2x slower on small frames
    kw: dict = {"threads": 1}
    if size is not None:
        kw.update(height=size[0], width=size[1], interpolation="AREA")

    want = np.asarray(pts_seconds, np.float64)
    out: list[np.ndarray] = []
    with av.open(path) as container:
        st = container.streams.video[stream]
        st.thread_type = "AUTO"
        assert st.time_base is not None  # set on every demuxed stream
        tb = float(st.time_base)
        half = 0.5 / float(st.average_rate or 25)
        container.seek(max(0, int((want[0] - half) / tb)), stream=st, backward=True)
        prev = None
        for frame in container.decode(st):
            t = float(frame.pts * tb) if frame.pts is not None else float(frame.time or 0.0)
            rgb = None
            while len(out) < len(want) and want[len(out)] <= t + half:
                if want[len(out)] >= t - half or prev is None:
                    if rgb is None:
                        rgb = frame.to_ndarray(format="rgb24", **kw).transpose(2, 0, 1)
                    out.append(rgb)
                else:
                    out.append(prev)
            if len(out) >= len(want):
                break
            if rgb is not None:
                prev = rgb
            elif want[len(out)] - t < 4 * half:
                prev = frame.to_ndarray(format="rgb24", **kw).transpose(2, 0, 1)
        while len(out) < len(want):  # past the last frame: hold it
            out.append(prev if prev is not None else out[-1])
        # the decode stops mid-stream: idle its frame threads before PyAV frees them holding
        # the GIL (see hyperframes.decode._pyav.quiesce)
        st.codec_context.flush_buffers()
    return np.stack(out)


@_register("torchcodec")
def torchcodec_window(path, pts_seconds, *, indices=None, stream=0, size=None) -> np.ndarray:
    """Frames at decode-order ``indices`` (the store's ``source_frame_indices``) via torchcodec.

    By index, not time: torchcodec finds no frame "played at" the last frame's time when the
    header's duration ends there (or when FFmpeg gives that frame no time at all).
    """
    import av  # deferred: optional/heavy dependency
    from torchcodec.decoders import VideoDecoder  # deferred: optional/heavy dependency

    with av.open(path) as c:
        absolute = c.streams.video[stream].index
    dec = VideoDecoder(path, stream_index=absolute, dimension_order="NCHW", seek_mode="approximate")
    if indices is None:
        frames = dec.get_frames_played_at(seconds=[float(t) for t in pts_seconds]).data.numpy()
    else:
        frames = dec.get_frames_at(indices=[int(i) for i in indices]).data.numpy()
    return _resize(frames, size)


@_register("decord")
def decord_window(path, pts_seconds, *, indices=None, stream=0, size=None) -> np.ndarray:
    import decord  # deferred: optional/heavy dependency

    reader = decord.VideoReader(path, ctx=decord.cpu(0))
    frames = reader.get_batch(list(map(int, indices))).asnumpy().transpose(0, 3, 1, 2)
    return _resize(np.ascontiguousarray(frames), size)


@_register("opencv")
def opencv_window(path, pts_seconds, *, indices=None, stream=0, size=None) -> np.ndarray:
    import cv2  # deferred: optional/heavy dependency

    idx = list(map(int, indices))
    cap = cv2.VideoCapture(path)
    try:
        cap.set(cv2.CAP_PROP_POS_FRAMES, idx[0])
        frames, pos, got = [], idx[0], {}
        while pos <= idx[-1]:
            ok, bgr = cap.read()
            if not ok:
                break
            got[pos] = bgr
            pos += 1
        if not got:
            raise DecodeError(f"{path}: OpenCV decoded no frame at index {idx[0]} or after it")
        last = got[max(got)]
        for i in idx:
            rgb = cv2.cvtColor(got.get(i, last), cv2.COLOR_BGR2RGB)
            if size is not None:
                rgb = cv2.resize(rgb, (size[1], size[0]), interpolation=cv2.INTER_AREA)
            frames.append(rgb.transpose(2, 0, 1))
    finally:
        cap.release()
    return np.stack(frames)
