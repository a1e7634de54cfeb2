"""``keyframes``: the frames where the content changes, spread apart, in temporal order.

A plan is made from the video's change scores (:func:`hyperframes.sampling.change_score`:
``score[i]`` is how much the coarse picture changed from frame ``i - 1`` to ``i``):

1. **Salience**: ``score[i]`` minus the median score of frames ``i - 4 .. i + 4``, so steady
   motion, which changes every frame a little, does not count; a cut stands out of it. Frame 0
   has no predecessor: its score is taken as 0 whatever the metadata says.
2. **Changes, spread**: frames whose salience is at least ``min_change`` (a fraction of the
   video's contrast, see the score) are taken by decreasing salience (ties: earlier frame),
   each at least ``min_gap`` frames from those already taken (non-maximum suppression), until
   T are taken.
3. **The rest, spread**: while fewer than T are taken, the longest run of frames without one
   gets its middle frame. This fill never looks at scores, so the small bumps that a codec's
   I-frames and compression noise leave are not picked.

``min_gap`` defaults to ``num_frames // (2 T)`` (at least 1), a gap the fill also keeps; a larger
``min_gap`` binds the changes, and the fill when the video has room. A video without changes
gets frames spread evenly; frame 0 only when the fill reaches it. Deterministic: seed and
epoch are ignored.
"""

from __future__ import annotations

import numpy as np

from .._core._errors import ConfigError, DataError
from ._base import Sampler, _positive_int, finish
from ._meta import PerFrame, Plan, VideoTable
from ._registry import register_sampler

__all__ = ["KeyframesSampler"]


@register_sampler("keyframes")
class KeyframesSampler(Sampler):
    """T frames of each video: its content changes (cuts) first, at least ``min_gap`` frames
    apart, then the middles of the longest stretches without a pick (see the module doc).

    ``min_gap``: fewest frames between two picks (default ``num_frames // (2 T)``, at least 1).
    ``min_change``: the salience a frame needs to count as a change (default 0.5: half the
    video's coarse contrast; a cut between unrelated scenes scores about 1).
    """

    def __init__(
        self,
        *,
        frames: int,
        min_gap: int | None = None,
        min_change: float = 0.5,
        short: str = "error",
    ) -> None:
        super().__init__(frames=frames, short=short)
        self.min_gap = None if min_gap is None else _positive_int("min_gap", min_gap, self.name)
        if (
            isinstance(min_change, bool)
            or not isinstance(min_change, int | float | np.floating | np.integer)
            or not 0 < min_change < float("inf")
        ):
            raise ConfigError(
                f"keyframes sampler: min_change must be a number > 0, got {min_change!r} (the "
                f"salience a frame needs to count as a content change; 0.5 is half the "
                f"video's coarse contrast)"
            )
        self.min_change = float(min_change)

    def _validate(self, table: VideoTable) -> None:
        scores = table.change_score
        if scores is None:
            missing = np.arange(len(table))
        elif isinstance(scores, PerFrame):  # a column holds every video's scores
            missing = np.zeros(0, np.int64)
        else:
            missing = np.flatnonzero([s is None for s in scores])
        if missing.shape[0]:
            raise DataError(
                f"the keyframes sampler needs a change score for every video, but video "
                f"{int(missing[0])} has none ({missing.shape[0]} videos without); compute it with "
                f"hyperframes.sampling.change_score(frames) from the stored (F, C, H, W) frames "
                f"and pass it as VideoMeta(change_score=...)"
            )

    def _plan(self, table, video, local, is_short, item, seed, epoch) -> Plan:
        scores = table.change_score[video]
        num_frames = scores.shape[0]
        if is_short:
            idx, mask = finish(np.arange(self.frames, dtype=np.int64), num_frames)
            return Plan(video, idx, mask)
        gap = self.min_gap or max(num_frames // (2 * self.frames), 1)
        picks = pick_changes(salience(scores), self.frames, gap=gap, min_change=self.min_change)
        picks = fill_spread(picks, self.frames, num_frames)
        return Plan(video, picks, np.ones(self.frames, dtype=bool))


#: frames on each side of a frame whose median score is its background (steady motion)
BACKGROUND_RADIUS = 4


def salience(scores: np.ndarray, radius: int = BACKGROUND_RADIUS) -> np.ndarray:
    """``scores`` minus their running median over ``2 radius + 1`` frames (edges repeated);
    frame 0 scores 0 (it has no predecessor). Float64, same length."""
    s = np.array(scores, dtype=np.float64)  # a copy: scores may be a read-only store column
    if s.shape[0] == 0:
        return s
    s[0] = 0.0
    padded = np.pad(s, radius, mode="edge")
    windows = np.lib.stride_tricks.sliding_window_view(padded, 2 * radius + 1)
    return s - np.median(windows, axis=1)


def pick_changes(salience: np.ndarray, count: int, *, gap: int, min_change: float) -> np.ndarray:
    """Up to ``count`` frames with ``salience >= min_change``, greedily by decreasing salience
    (ties: earlier), none closer than ``gap`` frames to an earlier pick. Sorted int64."""
    candidates = np.flatnonzero(salience >= min_change)
    order = candidates[np.argsort(-salience[candidates], kind="stable")]
    blocked = np.zeros(salience.shape[0], dtype=bool)
    picks: list[int] = []
    for f in order.tolist():
        if blocked[f]:
            continue
        picks.append(f)
        if len(picks) == count:
            break
        blocked[max(f - gap + 1, 0) : f + gap] = True
    return np.sort(np.asarray(picks, dtype=np.int64))


def fill_spread(picks: np.ndarray, count: int, num_frames: int) -> np.ndarray:
    """``picks`` plus middle frames of the longest runs without a pick, until ``count``
    (at most ``num_frames``). The run before the first pick starts at frame 0 (frame 0 is a
    candidate there); ties go to the earlier run. Sorted int64."""
    taken = [int(p) for p in picks]
    while len(taken) < min(count, num_frames):
        bounds = np.asarray([-1, *taken, num_frames])
        free = np.diff(bounds) - 1  # frames strictly between two bounds
        j = int(np.argmax(free))
        taken.insert(j, int(bounds[j] + bounds[j + 1]) // 2)
    return np.asarray(taken, dtype=np.int64)
