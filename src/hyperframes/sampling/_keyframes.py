"""``keyframes``: the frames where the content changes, spread apart, in temporal order.

A plan is made from one per-frame score of the video, ``score[i]`` being how much changed from
frame ``i - 1`` to ``i``. Which one is the ``score`` option's choice:

- ``"flow"``: the flow score a ``--flow`` store build records (``VideoMeta.flow_score``,
  ``Store.flow_scores``): the mean length, in stored-frame pixels, of the optical flow from
  frame ``i - 1`` to ``i``. Steady motion scores its speed every frame; a cut, where nothing
  of the last frame is found in the next, gives flow of arbitrary length, several times the
  usual; a codec's I-frame moves nothing. ``min_change`` is then in pixels (default
  ``MIN_FLOW``).
- ``"change"``: the change score (:func:`hyperframes.store.change_score`), how much the
  coarse picture changed, as a fraction of the video's contrast; robust to compression noise
  but blind to what moved. ``min_change`` is then that fraction (default ``MIN_CHANGE``).
- ``"auto"`` (the default): per video, the flow score when it has one, else the change score.
  :meth:`KeyframesSampler.scores_used` says which each video's plan uses.

On that score:

1. **Salience**: ``score[i]`` minus the median score of frames ``i - 4 .. i + 4``, so steady
   motion, which changes every frame a little, does not count; a cut stands out of it. Frame 0
   has no predecessor: its score is taken as 0 whatever the metadata says.
2. **Changes, spread**: frames whose salience is at least ``min_change`` are taken by
   decreasing salience (ties: earlier frame), each at least ``min_gap`` frames from those
   already taken (non-maximum suppression), until T are taken.
3. **The rest, spread**: while fewer than T are taken, the longest run of frames without one
   gets its middle frame. This fill never looks at scores, so the small bumps that a codec's
   I-frames and compression noise leave are not picked.

``min_gap`` defaults to ``num_frames // (2 T)`` (at least 1), a gap the fill also keeps; a larger
``min_gap`` binds the changes, and the fill when the video has room. A video without changes
gets frames spread evenly; frame 0 only when the fill reaches it. The plan is made from the
scores alone (metadata: no frame is read). Deterministic: seed and epoch are ignored.
"""

from __future__ import annotations

import numpy as np

from .._core._errors import ConfigError, DataError
from ._base import Sampler, ShortPolicy, _positive_int, finish
from ._meta import PerFrame, Plan, VideoTable, as_video_table
from ._registry import register_sampler

__all__ = ["MIN_CHANGE", "MIN_FLOW", "SCORES", "KeyframesSampler"]

#: the ``score`` option's values
SCORES = ("auto", "flow", "change")
#: default ``min_change`` on the change score: half the video's coarse contrast (a cut between
#: unrelated scenes scores about 1)
MIN_CHANGE = 0.5
#: default ``min_change`` on the flow score, in stored-frame pixels of mean flow length above
#: the running median: on a 192x144 x264 test clip at a low quality, cuts score 10-13, a
#: forced I-frame at most about 1, compression noise about 0.5 (the flow of a pixel's
#: length grows with the frame size: raise it for large stored frames)
MIN_FLOW = 2.0


@register_sampler("keyframes")
class KeyframesSampler(Sampler):
    """T frames of each video: its content changes (cuts) first, at least ``min_gap`` frames
    apart, then the middles of the longest stretches without a pick (see the module doc).

    ``score``: which per-frame score measures change: ``"auto"`` (default: the flow score
    where the video has one, else the change score), ``"flow"`` or ``"change"`` (every video
    must then have that one).
    ``min_gap``: fewest frames between two picks (default ``num_frames // (2 T)``, at least 1).
    ``min_change``: the salience a frame needs to count as a change, in the score's unit
    (default None: ``MIN_FLOW`` = 2 pixels on the flow score, ``MIN_CHANGE`` = 0.5, half the
    video's coarse contrast, on the change score).
    """

    def __init__(
        self,
        *,
        frames: int,
        min_gap: int | None = None,
        min_change: float | None = None,
        score: str = "auto",
        short: ShortPolicy = "error",
    ) -> None:
        super().__init__(frames=frames, short=short)
        self.min_gap = None if min_gap is None else _positive_int("min_gap", min_gap, self.name)
        if min_change is not None and (
            isinstance(min_change, bool)
            or not isinstance(min_change, int | float | np.floating | np.integer)
            or not 0 < min_change < float("inf")
        ):
            raise ConfigError(
                f"keyframes sampler: min_change must be a number > 0, got {min_change!r} (the "
                f"salience a frame needs to count as a content change: pixels of flow on the "
                f"flow score, default {MIN_FLOW}; a fraction of the video's coarse contrast on "
                f"the change score, default {MIN_CHANGE}); or None for those defaults"
            )
        self.min_change = None if min_change is None else float(min_change)
        if score not in SCORES:
            raise ConfigError(
                f"keyframes sampler: score must be one of {', '.join(SCORES)}, got {score!r} "
                f"(auto: the flow score where the store recorded one, else the change score)"
            )
        self.score = score

    def scores_used(self, videos) -> list[str]:
        """Which score (``"flow"`` or ``"change"``) the plan of each video of ``videos`` (a
        :class:`VideoTable` or list of ``VideoMeta``) is made from."""
        table = as_video_table(videos)
        self._validate(table)
        return [self._kind(table, v) for v in range(len(table))]

    def _kind(self, table: VideoTable, video: int) -> str:
        if self.score != "auto":
            return self.score
        return "flow" if _has(table.flow_score, video) else "change"

    def _validate(self, table: VideoTable) -> None:
        has_flow = _present(table.flow_score, len(table))
        has_change = _present(table.change_score, len(table))
        need = {"flow": has_flow, "change": has_change, "auto": has_flow | has_change}
        missing = np.flatnonzero(~need[self.score])
        if missing.shape[0] == 0:
            return
        first, count = int(missing[0]), missing.shape[0]
        if self.score == "flow":
            raise DataError(
                f"the keyframes sampler with score='flow' needs a flow score for every video, "
                f"but video {first} has none ({count} videos without); build the store with "
                f"--flow dis|farneback, or use score='auto' (the change score where there is "
                f"no flow)"
            )
        raise DataError(
            f"the keyframes sampler needs a change score for every video"
            f"{'' if self.score == 'change' else ' without a flow score'}, but video {first} "
            f"has none ({count} videos without); compute it with "
            f"hyperframes.store.change_score(frames) from the stored (F, C, H, W) frames "
            f"and pass it as VideoMeta(change_score=...)"
        )

    def _plan(self, table, video, local, is_short, item, seed, epoch) -> Plan:
        kind = self._kind(table, video)
        scores = (table.flow_score if kind == "flow" else table.change_score)[video]
        num_frames = scores.shape[0]
        if is_short:
            idx, mask = finish(np.arange(self.frames, dtype=np.int64), num_frames)
            return Plan(video, idx, mask)
        gap = self.min_gap or max(num_frames // (2 * self.frames), 1)
        threshold = self.min_change
        if threshold is None:
            threshold = MIN_FLOW if kind == "flow" else MIN_CHANGE
        picks = pick_changes(salience(scores), self.frames, gap=gap, min_change=threshold)
        picks = fill_spread(picks, self.frames, num_frames)
        return Plan(video, picks, np.ones(self.frames, dtype=bool))


def _has(column, video: int) -> bool:
    """Whether ``column`` (a table's per-frame scores: None, a list, a PerFrame) has values
    for ``video``."""
    if column is None:
        return False
    if isinstance(column, PerFrame):  # a column holds every video's scores
        return True
    return column[video] is not None


def _present(column, n: int) -> np.ndarray:
    """Which of ``n`` videos ``column`` (None, a list, a PerFrame) has values for."""
    if column is None:
        return np.zeros(n, bool)
    if isinstance(column, PerFrame):
        return np.ones(n, bool)
    return np.fromiter((s is not None for s in column), bool, count=n)


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
