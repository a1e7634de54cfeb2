"""Video metadata records (what a sampler knows about a video) and the plan it returns.

A sampler never reads pixels: it sees, per video, the number of stored frames, their rate, and
optionally their presentation times, a class label and a per-frame change score. A list of
:class:`VideoMeta` is turned once into a :class:`VideoTable` (column arrays) so that planning an
item costs microseconds even for hundreds of thousands of videos.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from .._core._errors import DataError

if TYPE_CHECKING:
    from ._segments import SegmentTable

__all__ = ["PerFrame", "Plan", "VideoMeta", "VideoTable", "as_video_table"]


#: what a per-frame column must hold beyond one value per stored frame: when its values are
#: bad, and what is said of them after the column's name
_PER_FRAME_RULES: dict[str, tuple[Callable[[np.ndarray], bool], str]] = {
    "pts_seconds": (
        lambda a: not np.all(np.isfinite(a)) or bool(np.any(np.diff(a) < 0)),
        "must be finite and non-decreasing (one time per stored frame, in frame order); pass "
        "pts_seconds=None to use fps instead",
    ),
    "change_score": (
        lambda a: bool(np.any(np.isnan(a))),
        "contains NaN; compute it with hyperframes.store.change_score(frames)",
    ),
    "flow_score": (
        lambda a: not np.all(np.isfinite(a) & (a >= 0)),
        "must be finite and >= 0 (the mean flow length from the frame before, in pixels, as a "
        "--flow store build records it)",
    ),
}


def _check_per_frame(name: str, values, num_frames: int, where: str) -> np.ndarray | None:
    """``values`` of the per-frame column ``name`` as float64, checked (one per stored frame,
    and its :data:`_PER_FRAME_RULES`); None stays None."""
    if values is None:
        return None
    arr = np.asarray(values, dtype=np.float64).reshape(-1)
    if arr.shape[0] != num_frames:
        raise DataError(
            f"{where}: {name} has {arr.shape[0]} values but the video has {num_frames} frames; "
            f"give one value per stored frame (or None)"
        )
    bad, said = _PER_FRAME_RULES[name]
    if bad(arr):
        raise DataError(f"{where}: {name} {said}")
    return arr


_check_pts = functools.partial(_check_per_frame, "pts_seconds")
_check_scores = functools.partial(_check_per_frame, "change_score")
_check_flow_scores = functools.partial(_check_per_frame, "flow_score")


@dataclasses.dataclass(frozen=True, eq=False)
class VideoMeta:
    """What a sampler knows about one stored video.

    ``num_frames`` frames are stored at ``fps``; ``pts_seconds`` (optional) gives each stored
    frame's time; ``label`` is a class id (-1 = none); ``change_score`` (optional, one value per
    frame, see :func:`hyperframes.store.change_score`) is used by the ``keyframes`` sampler,
    and so is ``flow_score`` (optional, one value per frame: the mean length in pixels of the
    optical flow from the frame before, 0 for frame 0, as a ``--flow`` store build records it:
    ``Store.flow_scores``).
    """

    num_frames: int
    fps: float
    pts_seconds: np.ndarray | None = None
    label: int = -1
    change_score: np.ndarray | None = None
    flow_score: np.ndarray | None = None

    def __post_init__(self) -> None:
        if int(self.num_frames) != self.num_frames or self.num_frames < 0:
            raise DataError(
                f"VideoMeta: num_frames must be an integer >= 0, got {self.num_frames!r}"
            )
        if not (np.isfinite(self.fps) and self.fps > 0):
            raise DataError(f"VideoMeta: fps must be a finite number > 0, got {self.fps!r}")
        where = "VideoMeta"
        object.__setattr__(self, "num_frames", int(self.num_frames))
        object.__setattr__(
            self, "pts_seconds", _check_pts(self.pts_seconds, self.num_frames, where)
        )
        object.__setattr__(
            self, "change_score", _check_scores(self.change_score, self.num_frames, where)
        )
        object.__setattr__(
            self, "flow_score", _check_flow_scores(self.flow_score, self.num_frames, where)
        )


class PerFrame(Sequence):
    """A per-frame column of many videos without an array object per video: one flat array of
    every video's values (``values``, e.g. a store's per-frame index, memory-mapped) and each
    video's ``starts`` and ``counts`` in it. ``column[v]`` is video ``v``'s values (a view).

    ``check(values, num_frames, where)`` (the same checks :class:`VideoMeta` makes) runs on a
    video's values the first time they are asked for, not over the whole column up front: a
    table over 100M frames is made in microseconds and planning touches only planned videos.
    ``ids`` (optional) are the videos' own ids, as error messages name them (a store's ids).
    """

    __slots__ = ("_check", "_checked", "counts", "ids", "name", "starts", "values")

    def __init__(
        self, values: np.ndarray, starts, counts, *, name: str = "values", check=None, ids=None
    ):
        self.values = values
        self.starts = np.asarray(starts, np.int64).reshape(-1)
        self.counts = np.asarray(counts, np.int64).reshape(-1)
        if self.starts.shape != self.counts.shape:
            raise DataError(
                f"PerFrame {name}: {self.starts.shape[0]} starts for {self.counts.shape[0]} "
                "videos; give one start and one count per video"
            )
        n = values.shape[0]
        if (
            np.any(self.counts < 0)
            or np.any(self.starts < 0)
            or np.any(self.starts > n - self.counts)
        ):
            raise DataError(f"PerFrame {name}: a video's values lie outside the {n} values given")
        self.name = name
        self.ids = ids
        self._check = check
        self._checked = np.zeros(len(self.starts), bool) if check is not None else None

    def __len__(self) -> int:
        return int(self.starts.shape[0])

    def __getitem__(self, video):
        if isinstance(video, slice):
            return [self[v] for v in range(*video.indices(len(self)))]
        v = int(video)
        s = int(self.starts[v])
        out = self.values[s : s + int(self.counts[v])]
        if self._checked is not None and not self._checked[v]:
            who = v if self.ids is None else int(self.ids[v])
            out = self._check(out, int(self.counts[v]), f"video {who}")
            self._checked[v] = True
        return np.asarray(out, dtype=np.float64)

    def ends(self) -> tuple[np.ndarray, np.ndarray]:
        """Every video's first and last value (NaN for a video with none), vectorised."""
        has = self.counts > 0
        first = np.full(len(self), np.nan)
        last = np.full(len(self), np.nan)
        first[has] = self.values[self.starts[has]]
        last[has] = self.values[self.starts[has] + self.counts[has] - 1]
        return first, last


class VideoTable:
    """Column form of a list of videos: the arrays samplers precompute their item space from.

    Build it with :meth:`from_metas` or, without per-video objects, :meth:`from_arrays`
    (per-frame columns may then be :class:`PerFrame`). Treat it as immutable: samplers cache
    work keyed on the table object.
    """

    __slots__ = (
        "change_score",
        "flow_score",
        "fps",
        "labels",
        "num_frames",
        "pts_seconds",
        "segments",
    )

    def __init__(
        self,
        num_frames: np.ndarray,
        fps: np.ndarray,
        labels: np.ndarray,
        pts_seconds: list[np.ndarray | None] | None,
        change_score: list[np.ndarray | None] | None,
        segments: SegmentTable | None = None,
        flow_score: list[np.ndarray | None] | None = None,
    ) -> None:
        self.num_frames = num_frames
        self.fps = fps
        self.labels = labels
        self.pts_seconds = pts_seconds
        self.change_score = change_score
        #: labelled time ranges of the videos (:class:`SegmentTable`), or None
        self.segments = segments
        #: per-frame flow scores (``VideoMeta.flow_score``), or None
        self.flow_score = flow_score

    def __len__(self) -> int:
        return int(self.num_frames.shape[0])

    @classmethod
    def from_metas(cls, metas: Sequence[VideoMeta]) -> VideoTable:
        """Collect a sequence of :class:`VideoMeta` (already validated) into columns."""
        n = len(metas)
        num_frames = np.fromiter((m.num_frames for m in metas), dtype=np.int64, count=n)
        fps = np.fromiter((m.fps for m in metas), dtype=np.float64, count=n)
        labels = np.fromiter((m.label for m in metas), dtype=np.int64, count=n)
        pts = [m.pts_seconds for m in metas]
        scores = [m.change_score for m in metas]
        motion = [m.flow_score for m in metas]
        return cls(
            num_frames,
            fps,
            labels,
            pts if any(p is not None for p in pts) else None,
            scores if any(s is not None for s in scores) else None,
            flow_score=motion if any(s is not None for s in motion) else None,
        )

    @classmethod
    def from_arrays(
        cls,
        num_frames: Sequence[int] | np.ndarray,
        fps: Sequence[float] | np.ndarray | float,
        *,
        labels: Sequence[int] | np.ndarray | None = None,
        pts_seconds: Sequence[np.ndarray | None] | PerFrame | None = None,
        change_score: Sequence[np.ndarray | None] | PerFrame | None = None,
        segments: SegmentTable | None = None,
        flow_score: Sequence[np.ndarray | None] | PerFrame | None = None,
    ) -> VideoTable:
        """Build a table from columns (``fps`` may be one number for every video); validates.

        ``pts_seconds``, ``change_score`` and ``flow_score`` are one array per video, or a
        :class:`PerFrame`
        column (no object per video; each video's values are checked when first planned);
        ``segments`` are the videos' labelled time ranges (their ``video`` numbers the
        table's videos)."""
        nf = np.asarray(num_frames, dtype=np.int64).reshape(-1)
        n = nf.shape[0]
        rates = np.broadcast_to(np.asarray(fps, dtype=np.float64), (n,)).copy()
        lab = np.full(n, -1, np.int64) if labels is None else np.asarray(labels, np.int64)
        if lab.shape != (n,):
            raise DataError(f"VideoTable: {lab.shape[0]} labels for {n} videos; give one per video")
        if np.any(nf < 0):
            raise DataError(f"VideoTable: num_frames must be >= 0 (video {int(np.argmax(nf < 0))})")
        if not np.all(np.isfinite(rates) & (rates > 0)):
            bad = int(np.flatnonzero(~(np.isfinite(rates) & (rates > 0)))[0])
            raise DataError(f"VideoTable: fps must be finite and > 0, video {bad} has {rates[bad]}")
        pts = cls._column(pts_seconds, nf, _check_pts, "pts_seconds")
        scores = cls._column(change_score, nf, _check_scores, "change_score")
        motion = cls._column(flow_score, nf, _check_flow_scores, "flow_score")
        if segments is not None:
            segments.check_videos(n)
        return cls(nf, rates, lab, pts, scores, segments, flow_score=motion)

    @staticmethod
    def _column(values, nf, check, name):
        if values is None:
            return None
        if isinstance(values, PerFrame):
            if values.counts.shape != nf.shape or np.any(values.counts != nf):
                raise DataError(
                    f"VideoTable: the {name} column does not give one value per stored frame "
                    f"of each of the {nf.shape[0]} videos"
                )
            return PerFrame(
                values.values, values.starts, values.counts, name=name, check=check, ids=values.ids
            )
        if len(values) != nf.shape[0]:
            raise DataError(f"VideoTable: {len(values)} {name} arrays for {nf.shape[0]} videos")
        return [
            check(v, int(f), f"VideoTable video {i}") for i, (v, f) in enumerate(zip(values, nf))
        ]


def as_video_table(videos: VideoTable | Sequence[VideoMeta]) -> VideoTable:
    """Return ``videos`` as a :class:`VideoTable` (a table is returned unchanged)."""
    if isinstance(videos, VideoTable):
        return videos
    for i, m in enumerate(videos):
        if not isinstance(m, VideoMeta):
            raise DataError(
                f"video {i} is a {type(m).__name__}, not a VideoMeta; samplers take a list of "
                f"hyperframes.sampling.VideoMeta or a VideoTable"
            )
    return VideoTable.from_metas(videos)


@dataclasses.dataclass(frozen=True, eq=False)
class Plan:
    """Which frames to read for one item: ``frame_indices`` (int64, length T) index the stored
    frames of video ``video``; ``mask`` is False where a position is padding; ``clip`` numbers
    the clip for multi-clip samplers (0 otherwise); ``segment`` is the row of the table's
    :class:`SegmentTable` the window was drawn in (``per_segment``; -1 otherwise)."""

    video: int
    frame_indices: np.ndarray
    mask: np.ndarray
    clip: int = 0
    segment: int = -1

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Plan):
            return NotImplemented
        return (
            self.video == other.video
            and self.clip == other.clip
            and self.segment == other.segment
            and np.array_equal(self.frame_indices, other.frame_indices)
            and np.array_equal(self.mask, other.mask)
        )

    __hash__ = None  # type: ignore[assignment]
