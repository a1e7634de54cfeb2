"""Decode one source once and stream its kept frames into a shard: :func:`ingest` checks the
source, decodes it, stores its frames and tracks, and commits its :class:`JournalRecord`."""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable, Iterator

import numpy as np

from .._core._errors import DecodeError, InputError
from .._core._sizes import target_size
from ..decode import Decoder, DecodeReport, FpsResampler, Resampled, VideoInfo
from ..inputs import Source, source_stat
from ..store import ChangeScorer, Codec, SignatureBuilder
from ._journal import JournalRecord
from ._options import BuildOptions
from ._shard import ShardWriter, VideoSink
from ._track_writer import FlowSpill, write_tracks


def check_source(source: Source) -> None:
    """Refuse unusable paths before any decoder sees them, with a plain message (one stat;
    no :class:`Path` made, whose interned parts a build of ten million rows would keep)."""
    p = source.path
    try:
        st = os.stat(p)
    except OSError as e:
        if e.errno not in _NO_SUCH_FILE:
            raise
        raise no_such_file(p, source.row) from None
    if source.kind == "video" and stat.S_ISDIR(st.st_mode):
        raise InputError(f"{p}: is a directory, expected a video file or a folder of frames")
    if not os.access(p, os.R_OK):
        raise InputError(f"{p}: permission denied (cannot read)")
    if stat.S_ISREG(st.st_mode) and st.st_size == 0:
        raise InputError(f"{p}: is empty (0 bytes)")


def no_such_file(path: str, row: str | None) -> InputError:
    """The refusal of ``path`` (listed at ``row``), which leads to no file."""
    listed = f" (listed at {row})" if row else ""
    return InputError(f"{path}: no such file{listed}")


#: what a stat of a path that does not lead to a file raises (as ``Path.exists`` reads them)
_NO_SUCH_FILE = frozenset([errno.ENOENT, errno.ENOTDIR, errno.EBADF, errno.ELOOP])


def kept_frames(
    decoder: Decoder,
    path: str,
    *,
    stream: int | None,
    fps: float | None,
    counter: list[int],
    native_fps: float | None = None,
    report: DecodeReport | None = None,
    max_gap_seconds: float | None = None,
    gaps: list | None = None,
) -> Iterator:
    """Decoded frames resampled to ``fps`` by their timestamps (all of them when None).
    ``counter[0]`` counts the frames actually decoded; the decoder's error signals go to
    ``report``. Frames further apart than ``max_gap_seconds`` are not bridged (see
    ``FpsResampler``); ``gaps`` (a list) receives each such gap as ``(pts_before, pts_after)``
    once the frames are done."""
    resampler = FpsResampler(fps, native_fps=native_fps, max_gap_seconds=max_gap_seconds)
    for frame in decoder.frames(path, stream=stream, report=report):
        counter[0] += 1
        yield from resampler.push(frame)
    try:
        yield from resampler.finish()
    except InputError as e:
        raise InputError(f"{path}: {e}") from None
    if gaps is not None:
        gaps += resampler.gaps


def ingest(
    source: Source,
    options: BuildOptions,
    decoder: Decoder,
    codec: Codec,
    writer: ShardWriter,
    *,
    on_frames: Callable[[int], None] = lambda n: None,
) -> JournalRecord:
    """Store one source; returns its (committed) record. On error nothing of it remains."""
    check_source(source)
    source_bytes, source_mtime_ns = source_stat(source)
    info = _probe(source, options, decoder)
    hw = target_size(info.height, info.width, options.size)
    fps = options.target_fps(info.fps)
    flow = None
    if options.flow:
        flow_hw = hw if hw is not None else (info.height, info.width)
        flow = FlowSpill(options.flow, target_size(*flow_hw, options.flow_size), writer.directory)
    sink = writer.begin_video(codec)
    kept = _KeptFrames(source.path, options, hw, sink, flow, codec)
    damage = DecodeReport()
    try:
        kept.decode(decoder, fps=fps, native_fps=info.fps, report=damage, on_frames=on_frames)
        offset, nbytes, checksum = sink.finish()
        if not kept.pts:
            raise DecodeError(f"{source.path}: no frames could be decoded")
        span = _span(kept.pts, options.fps)
        tracks = write_tracks(source, options, writer, flow, span=span, report=damage)
        if damage.total and options.on_damaged == "fail":
            raise DecodeError(f"{source.path}: damaged: the decoder reported {damage}")
    except BaseException:
        writer.rollback(sink.offset)
        raise
    finally:
        if flow is not None:
            flow.close()
    on_frames(len(kept.pts) % 16)
    assert sink.shape is not None  # pts is not empty: the sink took a frame
    c, h, w = sink.shape
    record = JournalRecord(
        path=source.path,
        label=source.label,
        split=source.split,
        kind=source.kind,
        source_bytes=source_bytes,
        source_mtime_ns=source_mtime_ns,
        offset=offset,
        nbytes=nbytes,
        payload_xxh3_64=checksum,
        shape=(c, h, w),
        num_frames=len(kept.pts),
        num_frames_decoded=kept.decoded[0],
        num_frames_from_header=info.num_frames_from_header,
        fps=fps if fps else _native_fps(kept.pts, info.fps),
        stream=info.stream_index,
        codec=info.codec,
        source_size=(info.height, info.width),
        rotation=info.rotation,
        color_matrix=info.color_matrix,
        color_range=info.color_range,
        pts_seconds=kept.pts,
        source_frame_indices=kept.indices,
        change_score=kept.scorer.scores().tolist(),
        signature=[int(h) for h in kept.signature.signature()],
        chunks=sink.chunks,
        decode_errors=damage.total,
        decode_error_counts=damage.counts,
        decode_error_messages=damage.messages,
        tracks=tracks,
        timestamp_gaps=gap_entry(kept.gaps, options.max_gap) if kept.gaps else None,
    )
    writer.commit(record.to_json())
    return record


def _probe(source: Source, options: BuildOptions, decoder: Decoder) -> VideoInfo:
    """The source's header, refused when its frames exceed the decode pixel cap."""
    info = decoder.probe(source.path, stream=options.stream)
    if info.width * info.height > options.max_pixels:
        raise InputError(
            f"{source.path}: frames of {info.width}x{info.height} "
            f"({info.width * info.height / 1e6:.1f} MP) exceed the decode pixel cap of "
            f"{options.max_pixels / 1e6:.1f} MP; refused before decoding (raise max_pixels "
            "to store it)"
        )
    return info


class _KeptFrames:
    """The frames of one video as they are stored: each sized to ``hw``, given to the flow
    (``flow``), signed and scored, normalised to float16 when the build asks, and added to
    ``sink``; ``pts`` and ``indices`` say when each was shown and which source frame it is,
    ``decoded[0]`` counts the frames decoded, ``gaps`` the gaps over ``max_gap`` not bridged."""

    def __init__(self, path: str, options: BuildOptions, hw, sink: VideoSink, flow, codec: Codec):
        self.path, self.options, self.hw, self.sink, self.flow = path, options, hw, sink, flow
        #: a codec that stores the decoder's own YUV planes (yuv420): the frame's RGB is then
        #: what a read of them gives, so its signature and change score are of those pixels
        self.planar = codec if codec.encode_planes is not None else None
        self.scorer = ChangeScorer()
        self.signature = SignatureBuilder()
        self.pts: list[float] = []
        self.indices: list[int] = []
        self.decoded = [0]
        self.gaps: list[tuple[float, float]] = []
        self.normalise = options.dtype == "float16"
        if self.normalise:
            self.mean = np.asarray(options.mean, np.float32).reshape(3, 1, 1) * 255.0
            self.std = np.asarray(options.std, np.float32).reshape(3, 1, 1) * 255.0

    def decode(self, decoder: Decoder, *, fps, native_fps, report, on_frames) -> None:
        """Decode the video and store the frames kept at ``fps`` (``kept_frames``), saying
        every 16 frames stored to ``on_frames``."""
        for frame in kept_frames(
            decoder,
            self.path,
            stream=self.options.stream,
            fps=fps,
            counter=self.decoded,
            native_fps=native_fps,
            report=report,
            max_gap_seconds=self.options.max_gap,
            gaps=self.gaps,
        ):
            self.add(frame)
            if len(self.pts) % 16 == 0:
                on_frames(16)

    def add(self, kept: Resampled) -> None:
        if len(self.pts) == self.options.max_frames:
            raise InputError(
                f"{self.path}: would store more than {self.options.max_frames} frames (the "
                f"per-video budget, max_frames), at {_rate(self.options.fps)} from "
                f"{self.pts[0]:.3f} s to past {self.pts[-1]:.3f} s; stopped, nothing of it is "
                "kept (raise max_frames, or lower fps, to store it)"
            )
        chunk, rgb = None, None
        to_i420 = getattr(kept.frame, "to_i420", None) if self.planar else None
        planes = to_i420(self.hw) if to_i420 is not None else None
        if planes is not None:
            assert self.planar is not None and self.planar.encode_planes is not None
            chunk = self.planar.encode_planes(*planes)
            h, w = planes[0].shape
            chw = np.empty((3, h, w), np.uint8)
            self.planar.decode_into(chunk, chw[None])
            rgb = chw.transpose(1, 2, 0)
        else:
            rgb = kept.frame.to_rgb(self.hw)
        if self.flow is not None:
            self.flow.add(np.ascontiguousarray(rgb))
        chw = rgb.transpose(2, 0, 1)
        self.signature.add(chw, kept.pts_seconds)  # of the uint8 frame, before normalising
        if self.normalise:
            chw = ((chw.astype(np.float32) - self.mean) / self.std).astype(np.float16)
        self.sink.add(chw, chunk)
        self.scorer.add(chw)
        self.pts.append(float(kept.pts_seconds))
        self.indices.append(int(kept.source_index))


#: gaps a record lists one by one (the rest are counted)
_LISTED_GAPS = 5


def gap_entry(gaps: list[tuple[float, float]], max_gap: float | None) -> dict:
    """A record's ``timestamp_gaps``: how many gaps over ``max_gap`` seconds the frames had,
    how long they were in all, and the first few as ``[pts_before, pts_after]``."""
    return {
        "count": len(gaps),
        "seconds": float(sum(b - a for a, b in gaps)),
        "max_gap": max_gap,
        "first": [[float(a), float(b)] for a, b in gaps[:_LISTED_GAPS]],
    }


def _rate(fps: float | None) -> str:
    return "the native rate" if fps is None else f"{fps:g} fps"


def _span(pts: list[float], fps: float | None) -> tuple[float, float]:
    """The time the stored frames cover: from the first to one frame interval past the last
    (1 / fps; at the native rate the last interval, at most a second)."""
    if fps:
        step = 1.0 / fps
    else:
        step = min(pts[-1] - pts[-2], 1.0) if len(pts) > 1 else 0.0
    return pts[0], pts[-1] + step


def _native_fps(pts: list[float], header_fps: float | None) -> float:
    """Rate of a video kept at its native rate: the header's, else from the timestamps."""
    if header_fps and header_fps > 0:
        return float(header_fps)
    if len(pts) > 1 and pts[-1] > pts[0]:
        return (len(pts) - 1) / (pts[-1] - pts[0])
    return 0.0
