"""The decoder backend interface, its registry, and the timeline every backend shares.

A backend opens one video and streams its frames **in presentation order, one at a time**, each
with its presentation time in seconds and its index among the frames actually decoded. Pixels are
converted to RGB only when asked (``to_rgb``), so frames that a frame-rate resampler drops cost
no colour conversion. Nothing here knows about stores, sampling or models.
"""

from __future__ import annotations

import dataclasses
import heapq
import math
import os
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any, Protocol

import numpy as np

from .._errors import ConfigError, DecodeError, InputError

__all__ = [
    "DecodedFrame",
    "Decoder",
    "VideoInfo",
    "create_decoder",
    "list_decoders",
    "register_decoder",
]


@dataclasses.dataclass(frozen=True)
class VideoInfo:
    """What a container says about the chosen video stream (the header: it may lie)."""

    path: str
    stream_index: int  # index among the file's *video* streams (0 = v:0)
    codec: str
    width: int  # as displayed, after rotation is applied
    height: int
    fps: float | None  # average frame rate from the header, None when unknown
    num_frames_from_header: int | None  # None when the container does not say
    duration_seconds: float | None
    rotation: int = 0  # degrees clockwise applied to decoded frames to display them
    pix_fmt: str | None = None
    color_matrix: str | None = None  # e.g. "bt709", "bt601"; None = unspecified
    color_range: str | None = None  # "tv" (limited) or "pc" (full); None = unspecified
    start_seconds: float | None = None  # presentation time of the first decoded frame


class DecodedFrame(Protocol):
    """One decoded frame. ``index`` counts decoded frames from 0; ``pts_seconds`` is finite."""

    index: int
    pts_seconds: float

    def to_rgb(self, size: tuple[int, int] | None = None) -> np.ndarray:
        """Return the frame as an (H, W, 3) uint8 RGB array, resized to ``size=(height, width)``."""


class Decoder(Protocol):
    """A decoder backend. Instances are cheap; ``frames`` does the work."""

    name: str
    #: how this backend resizes, recorded in store manifests ("swscale-area", "pil-bilinear", ...)
    resize_algorithm: str

    def version(self) -> str: ...

    def probe(self, path: str, *, stream: int | None = None) -> VideoInfo:
        """Read the header of ``path``; ``stream=None`` picks the best video stream."""

    def frames(self, path: str, *, stream: int | None = None) -> Iterator[DecodedFrame]:
        """Decode ``path`` once, in order, in bounded memory, yielding every decoded frame."""


_REGISTRY: dict[str, Callable[..., Decoder]] = {}
_UNAVAILABLE_HINT: dict[str, str] = {}


def register_decoder(name: str, *, install_hint: str = "") -> Callable:
    """Class decorator adding a backend to the registry under ``name``.

    A backend whose library is missing raises ``ImportError`` from its constructor;
    ``create_decoder`` turns that into a ``ConfigError`` quoting ``install_hint``.
    """

    def wrap(factory: Callable[..., Decoder]):
        _REGISTRY[name] = factory
        _UNAVAILABLE_HINT[name] = install_hint
        return factory

    return wrap


def list_decoders() -> list[str]:
    """Names of every registered backend (installed or not), default first."""
    return sorted(_REGISTRY, key=lambda n: (n != "pyav", n))


def create_decoder(name: str = "pyav", **options: Any) -> Decoder:
    """Instantiate a backend by name (``options`` go to its constructor, e.g. ``fps=25``)."""
    if name not in _REGISTRY:
        raise ConfigError(
            f"unknown decoder {name!r}; available decoders are {', '.join(list_decoders())}"
        )
    try:
        return _REGISTRY[name](**options)
    except ImportError as e:
        hint = _UNAVAILABLE_HINT[name]
        raise ConfigError(
            f"decoder {name!r} is not installed ({e}); install it with: {hint}"
        ) from e
    except TypeError as e:
        raise ConfigError(f"decoder {name!r} got an unknown option: {e}") from e


def check_path(path: str | os.PathLike, *, folder: bool = False) -> str:
    """Return ``path`` as a string, or raise ``InputError`` if it is missing, empty or the wrong kind."""
    path = os.fspath(path)
    if not isinstance(path, str):
        path = os.fsdecode(path)
    if not os.path.exists(path):
        raise InputError(f"{path}: No such file or directory")
    if folder and not os.path.isdir(path):
        raise InputError(f"{path}: Not a directory: expected a folder of image frames")
    if not folder:
        if os.path.isdir(path):
            raise InputError(f"{path}: Is a directory: expected a video file")
        if os.path.getsize(path) == 0:
            raise InputError(f"{path}: the file is empty (0 bytes): not a video")
    return path


_NOPTS_LIMIT = 1e9  # seconds; FFmpeg's AV_NOPTS_VALUE shows up as about -3.7e17 s


class Timeline:
    """Gives decoded frames finite, strictly increasing ``pts_seconds``.

    ``push(item, raw_pts, duration)`` returns the items that are ready, as
    ``(item, index, pts_seconds)``; ``duration`` (seconds, optional) is the frame's own duration.
    A missing raw timestamp (None, NaN, FFmpeg's "no pts" sentinel) or one that does not increase
    becomes the previous time + 1/fps (the first frame: ``start``). With ``reorder=n`` it
    holds n frames and hands each the smallest timestamp pending: decoders output frames in
    presentation order, so this repairs streams whose timestamps arrive permuted (AVI with
    packed B-frames read by FFmpeg 7+).
    """

    def __init__(self, fps: float | None, *, start: float | None = None, reorder: int = 0):
        self.fps = fps if fps and math.isfinite(fps) and fps > 0 else None
        self.start = start if start is not None and math.isfinite(start) else 0.0
        self.reorder = reorder
        self._items: deque = deque()
        self._heap: list[float] = []
        self.count = 0
        self.first: float | None = None
        self.last: float | None = None
        self.step: float | None = None  # the last interval between frames
        self.last_duration: float | None = None  # the last frame's own duration, if known

    def push(
        self, item: Any, raw_pts: float | None, duration: float | None = None
    ) -> list[tuple[Any, int, float]]:
        valid = raw_pts is not None and math.isfinite(raw_pts) and abs(raw_pts) < _NOPTS_LIMIT
        if valid:
            heapq.heappush(self._heap, float(raw_pts))
        self._items.append((item, valid, duration))
        out = []
        while len(self._items) > self.reorder:
            out.append(self._pop())
        return out

    def flush(self) -> list[tuple[Any, int, float]]:
        return [self._pop() for _ in range(len(self._items))]

    def _pop(self) -> tuple[Any, int, float]:
        item, valid, duration = self._items.popleft()
        pts = heapq.heappop(self._heap) if valid else None
        if self.last is None:
            pts = self.start if pts is None else pts
            self.first = pts
        elif pts is None or pts <= self.last:
            pts = self.last + self._frame_period()
        if self.last is not None:
            self.step = pts - self.last
        self.last = pts
        ok = duration is not None and math.isfinite(duration) and 0 < duration < _NOPTS_LIMIT
        self.last_duration = duration if ok else None
        self.count += 1
        return item, self.count - 1, pts

    def _frame_period(self) -> float:
        if self.fps:
            return 1.0 / self.fps
        return self.step if self.step else 1.0 / 30.0

    def decoded_seconds(self) -> float:
        """Span from the first frame's start to the last frame's end.

        The last frame lasts its own duration when the decoder gives one (a still at the end of
        a variable-rate video), else the last interval, else 1/fps.
        """
        if self.first is None or self.last is None:
            return 0.0
        return self.last - self.first + (self.last_duration or self.step or self._frame_period())

    def check_complete(self, info: VideoInfo, backend: str) -> None:
        """Raise ``DecodeError`` if nothing was decoded, or if the file looks cut short.

        Cut short: the decoded span falls clearly short (by over 0.5 s and 10 %) of the header's
        duration, and the decoded count of the header's frame count when it has one (so a
        still frame ending a variable-rate video, or dropped AVI frames, are not "truncated").
        """
        path = info.path
        if self.count == 0:
            raise DecodeError(
                f"{path}: {backend} decoded no frames from video stream v:{info.stream_index} "
                f"({info.codec}); the stream is empty or {backend} cannot decode {info.codec}"
            )
        expected, got = expected_seconds(info), self.decoded_seconds()
        header = info.num_frames_from_header
        short = expected is not None and expected - got > max(0.5, 0.1 * expected)
        if short and (not header or self.count < header - max(2, 0.1 * header)):
            raise DecodeError(
                f"{path}: truncated: decoded {self.count} frames ({got:.2f} s) of "
                f"~{expected:.2f} s that the header announces ({backend}); "
                "the file is cut short or damaged"
            )


def expected_seconds(info: VideoInfo) -> float | None:
    """The longest duration the header claims for the stream (duration, or frames / fps)."""
    claims = []
    if info.duration_seconds:
        claims.append(info.duration_seconds)
    if info.num_frames_from_header and info.fps:
        claims.append(info.num_frames_from_header / info.fps)
    return max(claims) if claims else None
