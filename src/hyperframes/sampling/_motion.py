"""The ``motion`` sampler: random windows among those that move enough (a motion filter).

Super-resolution and interpolation learn little from still windows, so a training run may keep
only windows whose stored motion is above a threshold. A window's motion is the mean, over its
frames after the first, of a per-frame score the store keeps (score ``i``: from frame ``i - 1``
to ``i``, so the mean covers exactly the steps inside the window):

- ``score="flow"``: the flow score of a ``--flow`` build (mean flow length in pixels,
  ``Store.flow_scores``);
- ``score="change"``: the change score every build records
  (:func:`hyperframes.store.change_score`, a fraction of the video's coarse contrast);
- ``score="auto"`` (default): the flow score where the store has one, else the change score.

Each video with at least one window at or above ``min_motion`` gives one item per epoch, a
window drawn at random among its qualifying ones (``[seed, epoch, item]`` generator, like
``random``); a video with none gives no item (:meth:`MotionSampler.kept_starts` lists them).
"""

from __future__ import annotations

import math

import numpy as np

from .._core._errors import ConfigError, DataError
from ._base import ShortPolicy
from ._keyframes import _has, _present
from ._meta import Plan, VideoTable
from ._registry import register_sampler
from ._windows import _StridedSampler

__all__ = ["MotionSampler"]

SCORES = ("auto", "flow", "change")


@register_sampler("motion")
class MotionSampler(_StridedSampler):
    """A random window per video per epoch among those whose mean motion score is at least
    ``min_motion`` (module doc); ``stride`` frames apart."""

    random = True

    def __init__(
        self,
        *,
        frames: int,
        min_motion: float,
        score: str = "auto",
        stride: int = 1,
        short: ShortPolicy = "drop",
    ) -> None:
        super().__init__(frames=frames, stride=stride, short=short)
        if (
            isinstance(min_motion, bool)
            or not isinstance(min_motion, int | float)
            or not math.isfinite(min_motion)
            or min_motion < 0
        ):
            raise ConfigError(
                f"motion sampler: min_motion must be a number >= 0, got {min_motion!r} (the "
                "mean per-frame score a window needs: pixels of flow, or a fraction of the "
                "video's contrast on the change score)"
            )
        if score not in SCORES:
            raise ConfigError(
                f"motion sampler: score must be one of {', '.join(SCORES)}, got {score!r}"
            )
        self.min_motion = float(min_motion)
        self.score = score

    def _kind(self, table: VideoTable, video: int) -> str:
        if self.score != "auto":
            return self.score
        return "flow" if _has(table.flow_score, video) else "change"

    def _validate(self, table: VideoTable) -> None:
        has = {"flow": _present(table.flow_score, len(table))}
        has["change"] = _present(table.change_score, len(table))
        has["auto"] = has["flow"] | has["change"]
        missing = np.flatnonzero(~has[self.score])
        if missing.shape[0]:
            what = "a flow score (build with --flow)" if self.score == "flow" else "motion scores"
            raise DataError(
                f"the motion sampler with score={self.score!r} needs {what} for every video, "
                f"but video {int(missing[0])} has none ({missing.shape[0]} videos without)"
            )

    def window_motion(self, table: VideoTable, video: int) -> np.ndarray:
        """The motion of every full window of ``video``, by its first frame (float64)."""
        kind = self._kind(table, video)
        column = table.flow_score if kind == "flow" else table.change_score
        assert column is not None  # _validate: every video has its score
        scores = np.asarray(column[video])
        scores = scores.astype(np.float64)
        span, n = self._need(), int(table.num_frames[video])
        if n < span:
            return np.zeros(0)
        if span == 1:
            return scores[:n].copy()
        steps = np.concatenate([[0.0], np.cumsum(scores[1:n])])  # steps[j]: sum of 1..j
        starts = np.arange(n - span + 1)
        return (steps[starts + span - 1] - steps[starts]) / (span - 1)

    def kept_starts(self, table: VideoTable, video: int) -> np.ndarray:
        """The first frames of the windows of ``video`` the filter keeps."""
        return np.flatnonzero(self.window_motion(table, video) >= self.min_motion)

    def _counts(self, table: VideoTable, short: np.ndarray) -> np.ndarray:
        counts = [
            0 if short[v] else int(self.kept_starts(table, v).shape[0] > 0)
            for v in range(len(table))
        ]
        return np.asarray(counts, dtype=np.int64)

    def _plan(self, table, video, local, is_short, item, seed, epoch) -> Plan:
        starts = self.kept_starts(table, video)
        start = int(starts[self._rng(seed, epoch, item).integers(0, starts.shape[0])])
        idx, mask = self._window(start, int(table.num_frames[video]))
        return Plan(video, idx, mask)
