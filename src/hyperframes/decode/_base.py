"""The decoder backend interface, its registry, and the timeline every backend shares.

A backend opens one video and streams its frames **in presentation order, one at a time**, each
with its presentation time in seconds and its index among the frames actually decoded. Pixels are
converted to RGB only when asked (``to_rgb``), so frames that a frame-rate resampler drops cost
no colour conversion. Nothing here knows about stores, sampling or models.
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any, Literal, NamedTuple, Protocol, get_args

import numpy as np

from .._core._errors import ConfigError, DecodeError, InputError
from .._core._registry import Registry

__all__ = [
    "DecodeReport",
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


@dataclasses.dataclass
class DecodeReport:
    """The decoder's own error signals for one video, filled while ``frames`` runs.

    ``counts`` maps a signal name ("decode_errors", "concealed", "corrupt_frames",
    "failed_packets", ...) to how often the decoder reported it; ``messages`` keeps the first few
    of the decoder's own words. A clean decode leaves both empty.
    """

    counts: dict[str, int] = dataclasses.field(default_factory=dict)
    messages: list[str] = dataclasses.field(default_factory=list)
    max_messages: int = 5

    def add(self, signal: str, n: int = 1, message: str | None = None) -> None:
        self.counts[signal] = self.counts.get(signal, 0) + n
        if message and len(self.messages) < self.max_messages:
            self.messages.append(message)

    def include(self, other: DecodeReport, *, what: str) -> None:
        """Add ``other``'s signals as ``WHAT_signal`` and its messages as ``"WHAT: ..."`` (the
        audio's damage joins its video's report so)."""
        for signal, n in other.counts.items():
            self.counts[f"{what}_{signal}"] = self.counts.get(f"{what}_{signal}", 0) + n
        room = max(self.max_messages - len(self.messages), 0)
        self.messages += [f"{what}: {m}" for m in other.messages[:room]]

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def __str__(self) -> str:
        """``"3 error signal(s) (concealed 2, failed_packets 1); first: h264: ..."``"""
        counts = ", ".join(f"{k} {v}" for k, v in sorted(self.counts.items()))
        first = f"; first: {self.messages[0]}" if self.messages else ""
        return f"{self.total} error signal(s) ({counts}){first}"


class DecodedFrame(Protocol):
    """One decoded frame. ``index`` counts decoded frames from 0; ``pts_seconds`` is FFmpeg's
    best-effort timestamp (ffprobe's ``best_effort_timestamp_time``), made finite and increasing."""

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

    def frames(
        self, path: str, *, stream: int | None = None, report: DecodeReport | None = None
    ) -> Iterator[DecodedFrame]:
        """Decode ``path`` once, in order, in bounded memory, yielding every decoded frame.
        The decoder's error signals (concealment, corrupt frames, failed packets) are counted
        into ``report`` when one is given."""


#: what a backend reads: video files, or folders of numbered frames
Reads = Literal["video", "frames"]
READS: tuple[Reads, ...] = get_args(Reads)


class _Backend(NamedTuple):
    """A registered backend: how to make it, how to install its library, what it reads."""

    factory: Callable[..., Decoder]
    install_hint: str
    reads: Reads


#: a backend registered again under its name replaces the first (as before the registry)
_REGISTRY: Registry[_Backend] = Registry("decoder", replace=True)


def register_decoder(name: str, *, install_hint: str = "", reads: Reads = "video") -> Callable:
    """Class decorator adding a backend to the registry under ``name``.

    A backend whose library is missing raises ``ImportError`` from its constructor;
    ``create_decoder`` turns that into a ``ConfigError`` quoting ``install_hint``. ``reads``
    says what it reads (one of :data:`READS`).
    """
    if reads not in READS:
        raise ConfigError(f"reads must be one of {', '.join(READS)}, got {reads!r}")

    def wrap(factory: Callable[..., Decoder]):
        _REGISTRY.register(name, _Backend(factory, install_hint, reads))
        return factory

    return wrap


def list_decoders(*, reads: Reads | None = None) -> list[str]:
    """Names of every registered backend (installed or not), default first; ``reads="video"``
    only those that decode video files, ``reads="frames"`` those that read frame folders."""
    if reads is not None and reads not in READS:
        raise ConfigError(f"reads must be one of {', '.join(READS)} or None, got {reads!r}")
    names = [n for n, b in _REGISTRY.items() if reads is None or b.reads == reads]
    return sorted(names, key=lambda n: (n != "pyav", n))


def resize_algorithm_of(name: str) -> str:
    """How decoder ``name`` resizes frames in a build (its ``resize_algorithm``, as store
    manifests record it), without creating it (its library need not be installed)."""
    return str(getattr(_REGISTRY.get(name).factory, "resize_algorithm", "pil-bilinear"))


def create_decoder(name: str = "pyav", **options: Any) -> Decoder:
    """Instantiate a backend by name (``options`` go to its constructor, e.g. ``fps=25``)."""
    backend = _REGISTRY.get(name)
    try:
        return backend.factory(**options)
    except ImportError as e:
        raise ConfigError(
            f"decoder {name!r} is not installed or cannot load ({e}); install it with: "
            f"{backend.install_hint}"
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


#: seconds; FFmpeg's AV_NOPTS_VALUE (INT64_MIN ticks) shows up at or below minus this in any
#: time base (about -3.7e17 s in 1/25; -9.2e9 s even in 1/1e9); a time of +1e9 s is a time
_NOPTS_LIMIT = 1e9
_TICK = 1e-6  # seconds; a time no later than the previous one + this does not increase


def _stamp(seconds: float | None) -> float | None:
    """``seconds`` as a float, or None when it is missing (None, NaN, FFmpeg's "no pts", which
    is hugely negative; a late time, however large, is kept)."""
    if seconds is None or not math.isfinite(seconds) or seconds <= -_NOPTS_LIMIT:
        return None
    return float(seconds)


class Timeline:
    """Gives decoded frames FFmpeg's best-effort timestamps, made finite and strictly increasing.

    ``push(item, pts, duration, dts=...)`` returns the items that are ready, as
    ``(item, index, pts_seconds)``; all in seconds, ``duration`` is the frame's own (optional),
    ``dts`` the decoding time FFmpeg attaches to the frame (``AVFrame.pkt_dts``), when known.

    A frame's time is what FFmpeg calls its best-effort timestamp (``guess_correct_pts`` in
    libavcodec; ffprobe's ``best_effort_timestamp_time``): its pts, unless the pts have gone
    backwards more often than the dts so far, then its dts. With ``lookahead=n`` each frame is
    held until n more have arrived, and those count too, so a stream whose pts turn out wrong is
    timed by its dts from the first frame on. (FFmpeg 7+ invents pts in decode order for B-frame
    video in AVI, wrong from the first frame on; older FFmpeg gives none there, so ffprobe times
    those frames by their dts.) A time that is still missing (None, NaN, FFmpeg's "no pts") or
    does not increase (by over a microsecond) becomes the previous time + 1/fps (the first
    frame: ``start``).

    ``wrap_seconds``: the period of a container whose timestamps wrap around (MPEG-TS and
    MPEG-PS count 33 bits of 90 kHz ticks: 2^33 / 90000 s, about 26.5 h). FFmpeg's demuxer
    unwraps them against the first timestamp it reads, which goes wrong when the clock is reset
    (segments of two recordings put end to end): a pts that goes back becomes a jump forward of
    nearly a whole period. Each pts (and dts) is taken here, as FFmpeg's wrap correction does,
    as the one of its values modulo ``wrap_seconds`` nearest the previous one: a jump back by
    more than half the period adds a period, a jump forward by more than half subtracts one.
    """

    def __init__(
        self,
        fps: float | None,
        *,
        start: float | None = None,
        lookahead: int = 0,
        wrap_seconds: float | None = None,
    ):
        self.fps = fps if fps and math.isfinite(fps) and fps > 0 else None
        self.start = start if start is not None and math.isfinite(start) else 0.0
        self.lookahead = lookahead
        self.wrap = wrap_seconds if wrap_seconds and math.isfinite(wrap_seconds) else None
        self._unwrapped: dict[str, float] = {}  # the last pts / dts, unwrapped
        self.unwrapped = 0  # how many timestamps were moved by a whole wrap period
        self._pending: deque = deque()
        # FFmpeg's pts correction state: how often pts / dts failed to increase, last values
        self._faulty_pts = self._faulty_dts = 0
        self._last_pts = self._last_dts = -math.inf
        self.count = 0
        self.first: float | None = None
        self.last: float | None = None
        self.step: float | None = None  # the last interval between frames
        self.last_duration: float | None = None  # the last frame's own duration, if known

    def push(
        self,
        item: Any,
        pts: float | None,
        duration: float | None = None,
        *,
        dts: float | None = None,
    ) -> list[tuple[Any, int, float]]:
        pts, dts = self._unwrap("pts", _stamp(pts)), self._unwrap("dts", _stamp(dts))
        if dts is not None:
            self._faulty_dts += dts <= self._last_dts
            self._last_dts = dts
        elif pts is not None:
            self._last_dts = pts
        if pts is not None:
            self._faulty_pts += pts <= self._last_pts
            self._last_pts = pts
        elif dts is not None:
            self._last_pts = dts
        self._pending.append((item, pts, dts, duration))
        out = []
        while len(self._pending) > self.lookahead:
            out.append(self._pop())
        return out

    def _unwrap(self, which: str, t: float | None) -> float | None:
        if t is None or self.wrap is None:
            return t
        last = self._unwrapped.get(which)
        if last is not None:
            periods = round((last - t) / self.wrap)
            if periods:
                t += periods * self.wrap
                self.unwrapped += 1
        self._unwrapped[which] = t
        return t

    def flush(self) -> list[tuple[Any, int, float]]:
        return [self._pop() for _ in range(len(self._pending))]

    def _pop(self) -> tuple[Any, int, float]:
        item, pts, dts, duration = self._pending.popleft()
        if pts is None or (dts is not None and self._faulty_pts > self._faulty_dts):
            pts = dts
        if self.last is None:
            pts = self.start if pts is None else pts
            self.first = pts
        elif pts is None or pts <= self.last + _TICK:
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

    def check_complete(
        self, info: VideoInfo, backend: str, report: DecodeReport | None = None
    ) -> None:
        """Raise ``DecodeError`` if nothing was decoded, or if the file looks cut short.

        Cut short: the decoded span falls clearly short (by over 0.5 s and 10 %) of the header's
        duration, and the decoded count of the header's frame count when it has one (so a
        still frame ending a variable-rate video, or dropped AVI frames, are not "truncated").
        A header's duration may count from time 0 (Matroska's), so the last frame's end time
        counts as the decoded span too. A header claiming more frames than the file has bytes
        (an AVI whose count says 2e9) is not believed: the frames decoded are the video's.
        The message quotes ``report`` when the decoder reported errors.
        """
        path = info.path
        said = f"; {backend} reported {report}" if report is not None and report.total else ""
        if self.count == 0:
            raise DecodeError(
                f"{path}: {backend} decoded no frames from video stream v:{info.stream_index} "
                f"({info.codec}); the stream is empty or {backend} cannot decode {info.codec}"
                f"{said}"
            )
        expected, got = expected_seconds(info), self.decoded_seconds()
        header = info.num_frames_from_header
        reached = got  # or the end time, for a header's duration counted from 0
        if self.last is not None:
            ends = self.last + (self.last_duration or self.step or self._frame_period())
            reached = max(got, ends)
        if _beyond_the_file(info, expected):
            return
        short = expected is not None and expected - reached > max(0.5, 0.1 * expected)
        if short and (not header or self.count < header - max(2, 0.1 * header)):
            raise DecodeError(
                f"{path}: truncated: decoded {self.count} frames ({got:.2f} s) of "
                f"~{expected:.2f} s that the header announces ({backend}); "
                f"the file is cut short or damaged{said}"
            )


def _beyond_the_file(info: VideoInfo, expected: float | None) -> bool:
    """Whether the header claims more frames than the file has bytes (every frame takes at
    least one): a header no truncation can be judged by."""
    try:
        size = os.path.getsize(info.path) if os.path.isfile(info.path) else None
    except OSError:
        size = None
    if size is None:
        return False
    claimed = max(info.num_frames_from_header or 0, (expected or 0) * (info.fps or 0))
    return claimed > size


def expected_seconds(info: VideoInfo) -> float | None:
    """The longest duration the header claims for the stream (duration, or frames / fps)."""
    claims = []
    if info.duration_seconds:
        claims.append(info.duration_seconds)
    if info.num_frames_from_header and info.fps:
        claims.append(info.num_frames_from_header / info.fps)
    return max(claims) if claims else None
