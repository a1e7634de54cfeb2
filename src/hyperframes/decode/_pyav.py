"""The PyAV backend (the default): FFmpeg through PyAV, converting to RGB only on request.

Timestamps are FFmpeg's best-effort timestamps (what ffprobe prints as
``best_effort_timestamp_time``), from each frame's pts and the dts FFmpeg attaches to it
(``frame.dts``), chosen by FFmpeg's own rule with a few frames of lookahead (see ``Timeline``).

Damage is decoded through as FFmpeg's command line does: a packet the decoder rejects as invalid
data is skipped. With a ``DecodeReport`` the backend counts ``failed_packets`` (those skipped),
``corrupt_packets`` (flagged corrupt by the demuxer), ``corrupt_frames`` (``frame.is_corrupt``:
FFmpeg's decode_error_flags or corrupt flag, set e.g. on concealed frames) and, from FFmpeg's
log (see ``_pyav_log``), ``concealed``, ``decode_errors`` and ``demux_errors``.

Rotation: FFmpeg attaches the stream's display matrix to each decoded frame
(``VideoFrame.rotation``, degrees counter-clockwise). ``to_rgb`` scales the stored picture with
swscale, then turns it by that many quarter turns with ``np.rot90``, so frames come out upright
and ``size`` is the upright size; ``VideoInfo.rotation`` records the same turn as degrees clockwise.
"""

from __future__ import annotations

import contextlib
import dataclasses
import re
from collections.abc import Callable, Generator, Iterator
from itertools import islice
from typing import Any

import av
import numpy as np

from .._core._errors import DecodeError, HyperframesError, InputError
from ._base import DecodeReport, Timeline, VideoInfo, check_path, register_decoder
from ._pyav_log import LogTap
from ._resize import SWSCALE_AREA, check_size
from ._streams import VideoStreamHeader, choose_video_stream, list_video_streams

# FFmpeg's AVColorSpace / AVColorRange numbers -> names
_MATRIX = {
    0: "rgb",
    1: "bt709",
    4: "fcc",
    5: "bt601",
    6: "bt601",
    7: "smpte240m",
    9: "bt2020",
    10: "bt2020",
}
_RANGE = {1: "tv", 2: "pc"}
#: FFmpeg's AVColorSpace -> the matrix swscale converts with (any other: BT.601, its default)
_I420_MATRIX = {1: "bt709", 4: "fcc", 7: "smpte240m", 9: "bt2020", 10: "bt2020"}
_LOOKAHEAD = 8  # frames held so the pts-or-dts choice sees the next ones (see Timeline)
#: demuxers whose timestamps wrap around (FFmpeg's ``pts_wrap_bits`` for them): MPEG-TS and
#: MPEG-PS carry 33-bit timestamps
_WRAP_BITS = {"mpegts": 33, "mpegtsraw": 33, "mpeg": 33}


def _wrap_seconds(container, s) -> float | None:
    """The period after which the stream's timestamps wrap around, or None if they do not."""
    bits = _WRAP_BITS.get(container.format.name)
    return None if bits is None else float((1 << bits) * s.time_base)


@dataclasses.dataclass(frozen=True)
class Inspection:
    """A probed file: the chosen stream's info, its header, and every video stream's header.

    ``error`` is PyAV's reason when it could not decode the first frame (then rotation and
    start time are unknown): the PyAV backend raises it, other backends try their own decoder.
    """

    info: VideoInfo
    chosen: VideoStreamHeader
    streams: list[VideoStreamHeader]
    error: str | None = None


def open_video(path: str, stream: int | None):
    """Open ``path`` with PyAV and choose the stream: ``(container, av_stream, header, headers)``."""
    path = check_path(path)
    try:
        container = av.open(path, metadata_errors="ignore")
    except Exception as e:
        raise InputError(f"{path}: cannot be opened as a video (PyAV: {e})") from e
    try:
        headers = list_video_streams(container)
        others = ", ".join(f"{s.index}: {s.type}" for s in container.streams)
        chosen = choose_video_stream(path, headers, stream, others)
    except BaseException:
        container.close()
        raise
    return container, container.streams[chosen.absolute_index], chosen, headers


def inspect(path: str, stream: int | None = None) -> Inspection:
    """Probe with PyAV: the header, plus the first frame for rotation and start time."""
    container, s, chosen, headers = open_video(path, stream)
    frames = decoded_frames(container, s)
    try:
        first, start, error = None, None, None
        try:
            first = next(frames, None)
            if first is not None:
                start = _start_seconds(first, frames, s.time_base)
            else:
                error = "no frame decoded"
        except Exception as e:
            error = str(e)
        info = _info(container, s, chosen, first, start)
    finally:
        frames.close()  # the decoder idle before the container goes
        container.close()
    return Inspection(info, chosen, headers, error)


def decoded_frames(container, s, report: DecodeReport | None = None) -> Generator[Any, None, None]:
    """Every frame of stream ``s`` (video or audio), skipping packets the decoder rejects as invalid data.

    As FFmpeg's command line does, a damaged packet costs its frames, not the video; if no
    packet decodes at all, the first failure is raised. Counted into ``report`` when given:
    failed_packets, corrupt_packets, corrupt_frames, and the errors FFmpeg logs (``LogTap``,
    switched on only then).
    """
    first_failure, decoded = None, False
    codec = s.codec_context.codec.name if s.codec_context is not None else "unknown"
    tap = (
        LogTap(report, decoder=codec, demuxer=container.format.name) if report is not None else None
    )
    with tap or contextlib.nullcontext():
        try:
            for packet in container.demux(s):
                if report is not None and packet.is_corrupt:
                    report.add("corrupt_packets", message=f"packet at dts {packet.dts} is corrupt")
                try:
                    frames = packet.decode()
                except av.error.InvalidDataError as e:
                    first_failure = first_failure or e
                    if report is not None:
                        why = f"{codec}: packet at dts {packet.dts} failed to decode: {e.strerror}"
                        report.add("failed_packets", message=why)
                    continue
                if tap is not None:
                    tap.drain()
                    for frame in frames:
                        if frame.is_corrupt:
                            tap.report.add("corrupt_frames")
                decoded = decoded or bool(frames)
                yield from frames
        finally:
            quiesce(s)  # ended or given up: idle threads before PyAV frees them
    if first_failure is not None and not decoded:
        raise first_failure


def quiesce(s) -> None:
    """Let stream ``s``'s decoder threads finish their packets (with the GIL released).

    PyAV frees a codec context holding the GIL, and FFmpeg waits for the frame threads there;
    a frame thread that logs meanwhile (a damaged packet, while a log tap or PyAV's logging is
    on) waits for the GIL forever. Every decode (``decoded_frames``) flushes as it ends, given
    up half-way or not, so its threads are idle by then."""
    if s.codec_context is not None:
        s.codec_context.flush_buffers()


def _start_seconds(first, frames: Iterator, time_base) -> float | None:
    """The first frame's best-effort time. When its pts and dts disagree, the choice depends on
    the next frames (see ``Timeline``), so they are decoded too."""
    if first.pts is None and first.dts is None:
        return None
    num, den = time_base.numerator, time_base.denominator
    timeline = Timeline(None, lookahead=_LOOKAHEAD)
    ready = []
    more = first.pts is not None and first.dts is not None and first.pts != first.dts
    for frame in [first, *islice(frames, _LOOKAHEAD if more else 0)]:
        pts, duration, dts = _stamps(frame, num, den)
        ready += timeline.push(None, pts, duration, dts=dts)
    return (ready + timeline.flush())[0][2]


def _stamps(frame, num: int, den: int) -> tuple:
    """``(pts, duration, dts)`` of a frame in seconds (None where FFmpeg has none)."""
    pts, dts, duration = frame.pts, frame.dts, frame.duration
    return (
        None if pts is None else float(pts) * num / den,
        float(duration) * num / den if duration else None,
        None if dts is None else float(dts) * num / den,
    )


def _info(container, s, chosen: VideoStreamHeader, first, start: float | None) -> VideoInfo:
    turns = _quarter_turns(first.rotation) if first is not None else 0
    width, height = (
        (first.width, first.height) if first is not None else (chosen.width, chosen.height)
    )
    cc = s.codec_context
    return VideoInfo(
        path=container.name,
        stream_index=chosen.video_index,
        codec=chosen.codec,
        width=height if turns % 2 else width,
        height=width if turns % 2 else height,
        fps=chosen.fps,
        num_frames_from_header=chosen.frames,
        duration_seconds=_duration(container, s),
        rotation=(-90 * turns) % 360,
        pix_fmt=first.format.name if first is not None else (cc.pix_fmt if cc else None),
        color_matrix=_MATRIX.get(int(cc.colorspace)) if cc else None,
        color_range=_RANGE.get(int(cc.color_range)) if cc else None,
        start_seconds=start,
    )


def _quarter_turns(ccw_degrees) -> int:
    """Counter-clockwise quarter turns (for ``np.rot90``) from a display rotation."""
    return round((ccw_degrees or 0) / 90) % 4


def _duration(container, s) -> float | None:
    wrap = _wrap_seconds(container, s)
    if wrap is not None:  # FFmpeg measures it between timestamps that may have wrapped wrongly
        said = _header_duration(container, s)
        return said if said is not None and said < wrap / 2 else None
    return _header_duration(container, s)


def _header_duration(container, s) -> float | None:
    if s.duration:
        return float(s.duration * s.time_base)
    tag = s.metadata.get("DURATION") or s.metadata.get("duration")  # Matroska per-stream tag
    m = re.fullmatch(r"(\d+):(\d+):(\d+(?:\.\d+)?)", tag or "")
    if m:
        return int(m[1]) * 3600 + int(m[2]) * 60 + float(m[3])
    if container.duration:
        return container.duration / av.time_base
    return None


class PyAVFrame:
    """A decoded ``av.VideoFrame``; pixels are converted (and scaled) by swscale in ``to_rgb``."""

    __slots__ = ("_frame", "_path", "_turns", "index", "pts_seconds")

    def __init__(self, frame, index: int, pts_seconds: float, path: str):
        self._frame = frame
        self._turns = _quarter_turns(frame.rotation)
        self._path = path
        self.index = index
        self.pts_seconds = pts_seconds

    def _scaling(self, size: tuple[int, int] | None) -> dict:
        """swscale's arguments for an upright ``size`` (None: the frame's own): one thread
        (FFmpeg 8's threaded conversion does not always give the same bytes, and a store
        must not depend on scheduling: workers parallelise builds), the area filter."""
        kwargs: dict = {"threads": 1}
        if size is not None:
            height, width = check_size(size)
            if self._turns % 2:
                width, height = height, width
            kwargs.update(width=width, height=height, interpolation="AREA")
        return kwargs

    def _converted(self, what: str, convert: Callable[..., Any], **kwargs: Any) -> Any:
        """``convert(**kwargs)``, a failure raised as the :class:`DecodeError` naming the frame."""
        try:
            return convert(**kwargs)
        except Exception as e:
            raise DecodeError(
                f"{self._path}: frame {self.index}: {what} conversion failed: {e}"
            ) from e

    def to_rgb(self, size: tuple[int, int] | None = None) -> np.ndarray:
        scaling = self._scaling(size)  # a bad size is the caller's ConfigError, raised here
        rgb = self._converted("RGB", self._frame.to_ndarray, format="rgb24", **scaling)
        if self._turns:
            rgb = np.rot90(rgb, self._turns)
        return np.ascontiguousarray(rgb)

    def to_i420(self, size: tuple[int, int] | None = None) -> tuple | None:
        """The frame as 8-bit I420 planes ``(y, u, v, matrix, full_range)``, scaled by the
        swscale area filter ``to_rgb`` uses, before any RGB conversion: Y at ``size`` (the
        upright size), U and V at half of it (rounded up), and the matrix and range that
        ``to_rgb``'s conversion would use (the frame's tags: an untagged frame is BT.601,
        limited unless its pixel format is a full-range ``yuvj`` one). None for a frame
        that is not YUV (RGB, grey, palette): convert its ``to_rgb`` instead."""
        source = self._frame.format.name
        if not source.startswith("yuv"):
            return None
        yuv = self._converted("I420", self._frame.reformat, format="yuv420p", **self._scaling(size))
        planes = []
        for p in yuv.planes:
            a = np.frombuffer(p, np.uint8).reshape(p.height, p.line_size)[:, : p.width]
            planes.append(np.ascontiguousarray(np.rot90(a, self._turns)) if self._turns else a)
        full = int(self._frame.color_range) == 2 or source.startswith("yuvj")
        matrix = _I420_MATRIX.get(int(self._frame.colorspace), "bt601")
        return (*planes, matrix, full)


@register_decoder("pyav", install_hint="pip install av")
class PyAVDecoder:
    """FFmpeg via PyAV: threaded decoding of one demuxed stream; lazy RGB conversion."""

    name = "pyav"
    resize_algorithm = SWSCALE_AREA

    def version(self) -> str:
        return f"av {av.__version__} (FFmpeg {av.ffmpeg_version_info})"

    def probe(self, path: str, stream: int | None = None) -> VideoInfo:
        found = inspect(path, stream)
        if found.error:
            raise DecodeError(
                f"{found.info.path}: PyAV cannot decode {found.chosen.describe()}: {found.error}"
            )
        return found.info

    def frames(
        self, path: str, stream: int | None = None, report: DecodeReport | None = None
    ) -> Iterator[PyAVFrame]:
        info = self.probe(path, stream)
        container, s, chosen, _ = open_video(path, stream)
        s.thread_type = "AUTO"
        for other in container.streams:  # the demuxer skips the other streams' packets
            if other.index != s.index:
                other.discard = av.stream.Discard.all
        return self._decode(container, s, chosen, info, report)

    def _decode(
        self, container, s, chosen, info: VideoInfo, report: DecodeReport | None
    ) -> Iterator[PyAVFrame]:
        timeline = Timeline(
            info.fps,
            start=info.start_seconds,
            lookahead=_LOOKAHEAD,
            wrap_seconds=_wrap_seconds(container, s),
        )
        path, push = info.path, timeline.push
        num, den = s.time_base.numerator, s.time_base.denominator
        frames = decoded_frames(container, s, report)  # demuxes only this stream
        try:
            for frame in frames:
                pts, duration, dts = _stamps(frame, num, den)
                for item, index, t in push(frame, pts, duration, dts=dts):
                    yield PyAVFrame(item, index, t, path)
            for item, index, t in timeline.flush():
                yield PyAVFrame(item, index, t, path)
        except HyperframesError:
            raise
        except Exception as e:
            raise DecodeError(
                f"{path}: PyAV failed on {chosen.describe()} after {timeline.count} frames "
                f"(truncated or corrupt?): {e}"
            ) from e
        finally:
            frames.close()  # idles the decoder's threads and ends the log tap
            container.close()
        timeline.check_complete(info, "pyav", report)
