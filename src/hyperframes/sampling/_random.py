"""Training samplers: ``random`` (a random window per epoch), ``segments`` (TSN),
``candidates`` (one of K fixed clips per epoch) and ``scattered`` (N frames anywhere)."""

from __future__ import annotations

import numpy as np

from ._base import Sampler, ShortPolicy, _positive_int, finish
from ._meta import Plan
from ._registry import register_sampler
from ._windows import _StridedSampler

__all__ = ["CandidatesSampler", "RandomSampler", "ScatteredSampler", "SegmentsSampler"]


@register_sampler("random")
class RandomSampler(_StridedSampler):
    """One window per video per epoch at a random start, ``stride`` frames apart.

    ``jitter=k`` moves every frame independently by a random offset in [-k, k]; indices are then
    clipped to the video and sorted, so they stay ordered and valid (they may repeat).
    """

    random = True

    def __init__(
        self, *, frames: int, stride: int = 1, jitter: int = 0, short: ShortPolicy = "error"
    ) -> None:
        super().__init__(frames=frames, stride=stride, short=short)
        self.jitter = _positive_int("jitter", jitter, self.name, minimum=0)

    def _plan(self, table, video, local, is_short, item, seed, epoch) -> Plan:
        rng = self._rng(seed, epoch, item)
        num_frames = int(table.num_frames[video])
        room = max(num_frames - self._need(), 0)
        start = int(rng.integers(0, room + 1))
        idx = start + np.arange(self.frames, dtype=np.int64) * self.stride
        if self.jitter:
            real = idx < num_frames
            moved = idx[real] + rng.integers(-self.jitter, self.jitter + 1, size=int(real.sum()))
            idx[real] = np.sort(np.clip(moved, 0, num_frames - 1))
        idx, mask = finish(idx, num_frames)
        return Plan(video, idx, mask)


@register_sampler("segments")
class SegmentsSampler(Sampler):
    """TSN sampling: split the video into ``frames`` equal segments and take one frame of each --
    a random one when ``train=True`` (new every epoch), the centre one otherwise."""

    def __init__(self, *, frames: int, train: bool = True, short: ShortPolicy = "error") -> None:
        super().__init__(frames=frames, short=short)
        self.train = bool(train)

    @property
    def random(self) -> bool:  # type: ignore[override]
        return self.train

    def _plan(self, table, video, local, is_short, item, seed, epoch) -> Plan:
        num_frames = int(table.num_frames[video])
        if is_short:
            idx, mask = finish(np.arange(self.frames, dtype=np.int64), num_frames)
            return Plan(video, idx, mask)
        edges = (np.arange(self.frames + 1, dtype=np.int64) * num_frames) // self.frames
        lengths = np.diff(edges)
        if self.train:
            offsets = (self._rng(seed, epoch, item).random(self.frames) * lengths).astype(np.int64)
        else:
            offsets = lengths // 2
        return Plan(video, edges[:-1] + offsets, np.ones(self.frames, dtype=bool))


@register_sampler("candidates")
class CandidatesSampler(_StridedSampler):
    """``clips`` candidate windows cut evenly over each video (where ``uniform`` puts its
    clips), one of them drawn per epoch: the windows a video gives stay few and fixed, so
    epochs see the same clips in a new mix (a steadier loss than a free random start)."""

    random = True

    def __init__(
        self, *, frames: int, clips: int = 4, stride: int = 1, short: ShortPolicy = "error"
    ) -> None:
        super().__init__(frames=frames, stride=stride, short=short)
        self.clips = _positive_int("clips", clips, self.name)

    def _plan(self, table, video, local, is_short, item, seed, epoch) -> Plan:
        num_frames = int(table.num_frames[video])
        room = max(num_frames - self._need(), 0)
        k = int(self._rng(seed, epoch, item).integers(0, self.clips))
        start = room // 2 if self.clips == 1 else int(np.rint(k * room / (self.clips - 1)))
        idx, mask = finish(start + np.arange(self.frames, dtype=np.int64) * self.stride, num_frames)
        return Plan(video, idx, mask, clip=k)


@register_sampler("scattered")
class ScatteredSampler(Sampler):
    """``frames`` distinct frames drawn at random over the whole video each epoch, in time
    order (the seeds' "fully random" sampling: wide coverage, noisy; a quick baseline)."""

    random = True

    def _plan(self, table, video, local, is_short, item, seed, epoch) -> Plan:
        num_frames = int(table.num_frames[video])
        if is_short:
            idx, mask = finish(np.arange(self.frames, dtype=np.int64), num_frames)
            return Plan(video, idx, mask)
        rng = self._rng(seed, epoch, item)
        idx = np.sort(rng.choice(num_frames, size=self.frames, replace=False)).astype(np.int64)
        return Plan(video, idx, np.ones(self.frames, dtype=bool))
