"""Deterministic window samplers: ``sliding`` (every window) and ``uniform`` (K clips/video)."""

from __future__ import annotations

import numpy as np

from ._base import Sampler, ShortPolicy, _positive_int, finish
from ._meta import Plan, VideoTable
from ._registry import register_sampler

__all__ = ["SlidingSampler", "UniformSampler"]


class _StridedSampler(Sampler):
    """A window of ``frames`` frames, ``stride`` frames apart: it spans (frames-1)*stride+1."""

    def __init__(self, *, frames: int, stride: int = 1, short: ShortPolicy = "error") -> None:
        super().__init__(frames=frames, short=short)
        self.stride = _positive_int("stride", stride, self.name)

    def _need(self) -> int:
        return (self.frames - 1) * self.stride + 1

    def _need_text(self) -> str:
        return (
            f"{self._need()} frames ((frames-1)×stride+1 with frames={self.frames}, "
            f"stride={self.stride})"
        )

    def _window(self, start: int, num_frames: int) -> tuple[np.ndarray, np.ndarray]:
        return finish(start + np.arange(self.frames, dtype=np.int64) * self.stride, num_frames)


@register_sampler("sliding")
class SlidingSampler(_StridedSampler):
    """Every window of every video: windows start ``window_stride`` frames apart (default
    ``frames*stride``, i.e. back to back); frames at the end that do not fill a window are not
    used. One item per window; a short video padded under ``short="pad"`` gives one window."""

    def __init__(
        self,
        *,
        frames: int,
        stride: int = 1,
        window_stride: int | None = None,
        short: ShortPolicy = "error",
    ) -> None:
        super().__init__(frames=frames, stride=stride, short=short)
        ws = self.frames * self.stride if window_stride is None else window_stride
        self.window_stride = _positive_int("window_stride", ws, self.name)

    def _counts(self, table: VideoTable, short: np.ndarray) -> np.ndarray:
        full = (table.num_frames - self._need()) // self.window_stride + 1
        return np.where(short, 1, full)

    def _plan(self, table, video, local, is_short, item, seed, epoch) -> Plan:
        idx, mask = self._window(local * self.window_stride, int(table.num_frames[video]))
        return Plan(video, idx, mask)

    def plan_columns(self, videos, items, epochs, *, seed: int = 0) -> tuple[np.ndarray, ...]:
        """:meth:`Sampler.plan_columns` at once: windows are index arithmetic."""
        index = self._index(videos)
        video, local = self._positions(index, items)
        idx = (local * self.window_stride)[:, None] + np.arange(self.frames) * self.stride
        n = index.table.num_frames[video].astype(np.int64)[:, None]
        mask = idx < n
        if not mask.all():  # past the end: the last real index repeated, as finish() does
            last = np.where(mask, idx, -1).max(1, keepdims=True)
            idx = np.where(mask, idx, np.where(last >= 0, last, n - 1))
        zeros = np.zeros(len(video), np.int64)
        return video, idx, mask, zeros, zeros - 1


@register_sampler("uniform")
class UniformSampler(_StridedSampler):
    """``clips`` evenly spaced windows per video for multi-clip testing; item ``i`` is clip
    ``i % clips`` of the ``i // clips``-th usable video. Clip k starts at
    ``round(k * (num_frames - span) / (clips - 1))`` (one clip: the centre window). A short video
    padded under ``short="pad"`` gives ``clips`` identical padded windows."""

    def __init__(
        self, *, frames: int, clips: int = 10, stride: int = 1, short: ShortPolicy = "error"
    ) -> None:
        super().__init__(frames=frames, stride=stride, short=short)
        self.clips = _positive_int("clips", clips, self.name)

    def _counts(self, table: VideoTable, short: np.ndarray) -> np.ndarray:
        return np.full(len(table), self.clips, dtype=np.int64)

    def _plan(self, table, video, local, is_short, item, seed, epoch) -> Plan:
        num_frames = int(table.num_frames[video])
        room = max(num_frames - self._need(), 0)
        if self.clips == 1:
            start = room // 2
        else:
            start = int(np.rint(local * room / (self.clips - 1)))
        idx, mask = self._window(start, num_frames)
        return Plan(video, idx, mask, clip=local)
