"""Labelled segments of untrimmed videos: their column form, the classes of each frame by
pts, and ``per_segment``, the sampler that makes one item per segment.

A segment holds the stored frames whose time ``t`` (pts; frame ``i`` at ``i / fps`` for a
video without pts) satisfies ``start_seconds <= t < end_seconds``, so variable-rate videos
are cut where the annotation says, whatever their frame count per second.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .._core._errors import DataError
from ._base import ShortPolicy, finish
from ._meta import Plan, VideoTable
from ._registry import register_sampler
from ._windows import _StridedSampler

__all__ = ["PerSegmentSampler", "SegmentTable", "frame_labels"]


class SegmentTable:
    """Labelled time ranges of a table's videos, as columns (no object per segment).

    ``video`` (int64, non-decreasing: a video's segments together), ``start_seconds`` and
    ``end_seconds`` (float64, 0 <= start < end) per segment; segment ``r``'s classes are
    ``labels[label_start[r] : label_start[r] + num_labels[r]]`` (int64 class ids; ``labels``
    may be shared with other rows, e.g. a store's whole segment_labels column)."""

    __slots__ = ("end_seconds", "label_start", "labels", "num_labels", "start_seconds", "video")

    def __init__(
        self,
        video,
        start_seconds,
        end_seconds,
        *,
        labels,
        label_start,
        num_labels,
    ) -> None:
        self.video = np.asarray(video, np.int64).reshape(-1)
        self.start_seconds = np.asarray(start_seconds, np.float64).reshape(-1)
        self.end_seconds = np.asarray(end_seconds, np.float64).reshape(-1)
        self.labels = np.asarray(labels).reshape(-1)
        self.label_start = np.asarray(label_start, np.int64).reshape(-1)
        self.num_labels = np.asarray(num_labels, np.int64).reshape(-1)
        n = self.video.shape[0]
        for name in ("start_seconds", "end_seconds", "label_start", "num_labels"):
            if getattr(self, name).shape[0] != n:
                raise DataError(
                    f"SegmentTable: {getattr(self, name).shape[0]} {name} for {n} segments; "
                    "give one per segment"
                )
        s, e = self.start_seconds, self.end_seconds
        bad = ~(np.isfinite(s) & np.isfinite(e) & (s >= 0) & (e > s))
        if bad.any():
            r = int(np.argmax(bad))
            raise DataError(
                f"SegmentTable: segment {r} runs {s[r]:g}..{e[r]:g} s; expected 0 <= start < end"
            )
        if n and np.any(np.diff(self.video) < 0):
            raise DataError("SegmentTable: rows must be in video order (a video's together)")
        a, k, m = self.label_start, self.num_labels, self.labels.shape[0]
        if np.any((a < 0) | (k < 0) | (a > m) | (k > m - a)):
            raise DataError(f"SegmentTable: a segment's classes lie outside the {m} labels given")

    @classmethod
    def from_rows(cls, rows: Sequence[tuple[int, float, float, Sequence[int]]]) -> SegmentTable:
        """From ``(video, start_seconds, end_seconds, class ids)`` rows (sorted by video here)."""
        rows = sorted(rows, key=lambda r: (r[0], r[1], r[2]))
        counts = [len(r[3]) for r in rows]
        return cls(
            [r[0] for r in rows],
            [r[1] for r in rows],
            [r[2] for r in rows],
            labels=np.array([c for r in rows for c in r[3]], np.int64),
            label_start=np.cumsum([0, *counts])[:-1] if rows else [],
            num_labels=counts,
        )

    def __len__(self) -> int:
        return int(self.video.shape[0])

    def __repr__(self) -> str:
        return f"SegmentTable({len(self)} segments)"

    def check_videos(self, num_videos: int) -> None:
        if len(self) and (self.video.min() < 0 or self.video.max() >= num_videos):
            bad = self.video[(self.video < 0) | (self.video >= num_videos)][0]
            raise DataError(
                f"SegmentTable: a segment of video {bad}, but the table has {num_videos} videos"
            )

    def rows_of(self, video: int) -> np.ndarray:
        """The rows of ``video``'s segments (int64)."""
        lo = np.searchsorted(self.video, video, side="left")
        hi = np.searchsorted(self.video, video, side="right")
        return np.arange(lo, hi, dtype=np.int64)

    def labels_of(self, row: int) -> np.ndarray:
        """Segment ``row``'s class ids (int64)."""
        a = int(self.label_start[row])
        return np.asarray(self.labels[a : a + int(self.num_labels[row])], np.int64)

    def first_labels(self) -> np.ndarray:
        """Each segment's first class id (-1 for a segment without one)."""
        out = np.full(len(self), -1, np.int64)
        has = self.num_labels > 0
        out[has] = self.labels[self.label_start[has]]
        return out


def frame_labels(
    segments: SegmentTable, video: int, times: np.ndarray, num_classes: int
) -> np.ndarray:
    """(T, num_classes) bool: which classes act at each of ``times`` (seconds) of ``video``,
    by its segments (start <= t < end). Class ids outside ``0..num_classes-1`` are an error."""
    times = np.asarray(times, np.float64).reshape(-1)
    out = np.zeros((times.shape[0], num_classes), bool)
    for r in segments.rows_of(video).tolist():
        ids = segments.labels_of(r)
        if ids.size and (ids.min() < 0 or ids.max() >= num_classes):
            raise DataError(
                f"segment {r} of video {video} has class ids {ids.tolist()}; the model has "
                f"{num_classes} classes"
            )
        inside = (times >= segments.start_seconds[r]) & (times < segments.end_seconds[r])
        out[np.ix_(inside, ids)] = True
    return out


def _times(table: VideoTable, video: int) -> np.ndarray:
    pts = None if table.pts_seconds is None else table.pts_seconds[video]
    if pts is not None:
        return np.asarray(pts, np.float64)
    return np.arange(int(table.num_frames[video]), dtype=np.float64) / float(table.fps[video])


class _SegmentFrames:
    """Per segment of a table: its first stored frame and frame count (computed once per
    table, one ``searchsorted`` per video that has segments)."""

    __slots__ = ("count", "first", "table")

    def __init__(self, table: VideoTable) -> None:
        seg = table.segments
        assert seg is not None  # the per_segment sampler's _validate refused a table without
        self.table = table
        self.first = np.zeros(len(seg), np.int64)
        self.count = np.zeros(len(seg), np.int64)
        if not len(seg):
            return
        videos, starts = np.unique(seg.video, return_index=True)
        ends = np.append(starts[1:], len(seg))
        for v, a, b in zip(videos.tolist(), starts.tolist(), ends.tolist()):
            t = _times(table, v)
            lo = np.searchsorted(t, seg.start_seconds[a:b], side="left")
            hi = np.searchsorted(t, seg.end_seconds[a:b], side="left")
            self.first[a:b] = lo
            self.count[a:b] = hi - lo


@register_sampler("per_segment")
class PerSegmentSampler(_StridedSampler):
    """One item per labelled segment (``VideoTable.segments``; a store's, through
    ``HyperframeDataset``): ``frames`` frames ``stride`` apart inside the segment's own stored
    frames (by pts), at a random place when ``train=True`` (new every epoch), centred
    otherwise. Items run over the videos in order and, within a video, its segments in time
    order; a video without segments has none. A video stored once serves all its segments:
    trimmed classification from untrimmed sources.

    Short segments (fewer frames than a window spans) follow ``short`` as short videos do for
    the other samplers: ``error`` names the video and the segment, ``drop`` leaves the segment
    out, ``pad`` repeats its last frame (mask False there); a segment holding no stored frame
    cannot be padded.
    """

    def __init__(
        self, *, frames: int, stride: int = 1, train: bool = True, short: ShortPolicy = "error"
    ) -> None:
        super().__init__(frames=frames, stride=stride, short=short)
        self.train = bool(train)
        self._segs: tuple | None = None

    @property
    def random(self) -> bool:  # type: ignore[override]
        return self.train

    def __getstate__(self) -> dict:
        state = super().__getstate__()
        state["_segs"] = None
        return state

    def _validate(self, table: VideoTable) -> None:
        if table.segments is None or not len(table.segments):
            raise DataError(
                "the per_segment sampler needs labelled segments, but the videos have none; "
                "build the store from an annotation with start/end times (csv start,end, "
                "Charades, ActivityNet, Kinetics clips of untrimmed files), or pass "
                "VideoTable.from_arrays(..., segments=SegmentTable(...))"
            )

    def _short(self, table: VideoTable) -> np.ndarray:
        return np.zeros(len(table), bool)  # shortness is per segment (see _counts)

    def _segments(self, table: VideoTable) -> tuple:
        """(frames per segment, the usable rows in item order, each video's first usable row)."""
        if self._segs is not None and self._segs[0] is table:
            return self._segs[1:]
        frames = _SegmentFrames(table)
        seg = table.segments
        assert seg is not None  # _validate refused a table without
        short = frames.count < self._need()
        if short.any() and self.short != "drop":
            empty = short & (frames.count == 0) if self.short == "pad" else short
            if empty.any():
                r = int(np.argmax(empty))
                more = int(empty.sum()) - 1
                why = (
                    "no stored frame, so there is nothing to pad with"
                    if self.short == "pad"
                    else f"{int(frames.count[r])} stored frames but the per_segment sampler "
                    f"needs {self._need_text()}"
                )
                hint = (
                    "use short='drop' to skip such segments"
                    if self.short == "pad"
                    else "use short='pad' to repeat the last frame (mask False there) or "
                    "short='drop' to skip short segments"
                )
                raise DataError(
                    f"video {int(seg.video[r])}: segment {seg.start_seconds[r]:g}.."
                    f"{seg.end_seconds[r]:g} s has {why}"
                    + (f" ({more} more segments too)" if more > 0 else "")
                    + f"; {hint}"
                )
        usable = np.flatnonzero(~short) if self.short == "drop" else np.arange(len(seg))
        offsets = np.searchsorted(seg.video[usable], np.arange(len(table)), side="left")
        self._segs = (table, frames, usable, offsets)
        return frames, usable, offsets

    def _counts(self, table: VideoTable, short: np.ndarray) -> np.ndarray:
        _, usable, _ = self._segments(table)
        assert table.segments is not None  # _validate refused a table without
        return np.bincount(table.segments.video[usable], minlength=len(table)).astype(np.int64)

    def item_labels(self, videos) -> np.ndarray:
        """Each item's class: its segment's first class (-1 for a segment without one)."""
        index = self._index(videos)
        _, usable, _ = self._segments(index.table)
        assert index.table.segments is not None  # _validate refused a table without
        return index.table.segments.first_labels()[usable]

    def _plan(self, table, video, local, is_short, item, seed, epoch) -> Plan:
        frames, usable, offsets = self._segments(table)
        row = int(usable[int(offsets[video]) + local])
        first, count = int(frames.first[row]), int(frames.count[row])
        room = max(count - self._need(), 0)
        if self.train:
            start = first + int(self._rng(seed, epoch, item).integers(0, room + 1))
        else:
            start = first + room // 2
        idx, mask = finish(
            start + np.arange(self.frames, dtype=np.int64) * self.stride, first + count
        )
        return Plan(video, idx, mask, segment=row)
