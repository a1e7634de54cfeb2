"""``keyframes``: the T frames with the most visual change, in temporal order."""

from __future__ import annotations

import numpy as np

from .._errors import DataError
from ._base import Sampler, finish
from ._meta import PerFrame, Plan, VideoTable
from ._registry import register_sampler

__all__ = ["KeyframesSampler"]


@register_sampler("keyframes")
class KeyframesSampler(Sampler):
    """The ``frames`` frames with the highest ``VideoMeta.change_score`` (ties: earlier frame),
    returned in temporal order. Deterministic: seed and epoch are ignored."""

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
        top = np.argsort(-scores, kind="stable")[: self.frames]
        return Plan(video, np.sort(top).astype(np.int64), np.ones(self.frames, dtype=bool))
