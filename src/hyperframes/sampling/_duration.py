"""``duration``: windows defined in seconds, the same time span whatever the source frame rate."""

from __future__ import annotations

import math

import numpy as np

from .._core._errors import ConfigError
from ._base import Sampler, ShortPolicy, _positive_int
from ._meta import PerFrame, Plan, VideoTable
from ._registry import register_sampler

__all__ = ["DurationSampler", "nearest_frames"]

_TOL = 1e-6


def nearest_frames(pts: np.ndarray, times: np.ndarray) -> np.ndarray:
    """Index of the frame whose time in sorted ``pts`` is nearest each of ``times`` (ties: earlier)."""
    n = pts.shape[0]
    if n == 1:
        return np.zeros(times.shape, dtype=np.int64)
    right = np.clip(np.searchsorted(pts, times), 1, n - 1)
    left = right - 1
    take_left = (times - pts[left]) <= (pts[right] - times)
    return np.where(take_left, left, right).astype(np.int64)


def _positive_float(name: str, value) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        v = math.nan
    if not (math.isfinite(v) and v > 0):
        raise ConfigError(f"duration sampler: {name} must be a number > 0, got {value!r}")
    return v


@register_sampler("duration")
class DurationSampler(Sampler):
    """``frames`` frames sampled ``1/rate`` seconds apart, so the window covers
    ``seconds = frames / rate`` (give ``seconds`` or ``rate``, or both if they agree).

    Each target time maps to the nearest stored frame, using the video's ``pts_seconds`` when it
    has them, else frame ``i`` at ``i / fps``; frames repeat when the source rate is below
    ``rate``. The window starts at a random time when ``train=True`` (new every epoch), else it
    is centred; with ``clips`` > 1, each video gives ``clips`` windows (item ``i`` is clip
    ``i % clips`` of its video): random ones when training, else evenly spread from the first
    frame's time to the last window that fits, as ``uniform`` spreads them. The start is then
    moved to the nearest frame's time (never so late that the window passes the last frame),
    so target times fall on frames and a 30 fps video sampled at 7.5/s gives steps of exactly
    4 frames, not a 4, 4, 5 from times halfway between two frames. A video is short when its
    first-to-last frame time is under ``(frames - 1) / rate``; padded positions are those past
    the last frame's time.
    """

    def __init__(
        self,
        *,
        frames: int,
        seconds: float | None = None,
        rate: float | None = None,
        train: bool = True,
        clips: int = 1,
        short: ShortPolicy = "error",
    ) -> None:
        super().__init__(frames=frames, short=short)
        self.clips = _positive_int("clips", clips, self.name)
        if seconds is None and rate is None:
            raise ConfigError(
                "duration sampler: give seconds= (the window length) or rate= (target frames "
                "per second); frames / rate = seconds"
            )
        if seconds is not None:
            seconds = _positive_float("seconds", seconds)
        if rate is not None:
            rate = _positive_float("rate", rate)
        if seconds is None:
            assert rate is not None  # one of the two is given (checked above)
            seconds = self.frames / rate
        elif rate is None:
            rate = self.frames / seconds
        elif abs(seconds * rate - self.frames) > 1e-6 * self.frames:
            raise ConfigError(
                f"duration sampler: seconds × rate must equal frames, got {seconds} × {rate} = "
                f"{seconds * rate:g} for frames={self.frames}; give only one of seconds / rate"
            )
        self.seconds = seconds
        self.rate = rate
        self.train = bool(train)

    @property
    def random(self) -> bool:  # type: ignore[override]
        return self.train

    @property
    def _span(self) -> float:
        return (self.frames - 1) / self.rate

    def _need_text(self) -> str:
        return (
            f"{self._span:.6g} s from first to last frame ((frames-1)/rate with "
            f"frames={self.frames}, rate={self.rate:g}/s)"
        )

    @staticmethod
    def _range(table: VideoTable, video: int) -> tuple[float, float]:
        n = int(table.num_frames[video])
        pts = None if table.pts_seconds is None else table.pts_seconds[video]
        if pts is not None and n:
            return float(pts[0]), float(pts[-1])
        return 0.0, max(n - 1, 0) / float(table.fps[video])

    def _describe(self, table: VideoTable, video: int) -> str:
        first, last = self._range(table, video)
        return f" spanning {last - first:.6g} s"

    def _short(self, table: VideoTable) -> np.ndarray:
        length = np.maximum(table.num_frames - 1, 0) / table.fps
        if isinstance(table.pts_seconds, PerFrame):  # a column: first and last, vectorised
            first, last = table.pts_seconds.ends()
            has = table.pts_seconds.counts > 0
            length[has] = last[has] - first[has]
        elif table.pts_seconds is not None:
            for v, pts in enumerate(table.pts_seconds):
                if pts is not None and pts.shape[0]:
                    length[v] = pts[-1] - pts[0]
        return (table.num_frames == 0) | (length < self._span - _TOL * max(1.0, self._span))

    def _counts(self, table: VideoTable, short: np.ndarray) -> np.ndarray:
        return np.full(len(table), self.clips, dtype=np.int64)

    def _plan(self, table, video, local, is_short, item, seed, epoch) -> Plan:
        first, last = self._range(table, video)
        room = max(last - first - self._span, 0.0)
        if self.train:
            start = first + room * float(self._rng(seed, epoch, item).random())
        elif self.clips > 1:
            start = first + room * local / (self.clips - 1)
        else:
            start = first + room / 2
        num_frames = int(table.num_frames[video])
        pts = None if table.pts_seconds is None else table.pts_seconds[video]
        start = self._snap(start, first + room, pts, float(table.fps[video]))
        times = start + np.arange(self.frames, dtype=np.float64) / self.rate
        if pts is not None:
            idx = nearest_frames(pts, times)
        else:
            idx = np.clip(np.rint(times * table.fps[video]), 0, num_frames - 1).astype(np.int64)
        mask = times <= last + _TOL * max(1.0, abs(last))
        if not mask.all():
            idx = np.where(mask, idx, idx[mask][-1])
        return Plan(video, idx, mask, clip=local)

    @staticmethod
    def _snap(start: float, latest: float, pts: np.ndarray | None, fps: float) -> float:
        """``start`` moved to the nearest frame's time (``pts``, else the ``1/fps`` grid from 0),
        or to the frame before it when the nearest is after ``latest`` (the window would then
        pass the last frame)."""
        latest += _TOL * max(1.0, abs(latest))
        if pts is None:
            k = float(np.rint(start * fps))
            return k / fps if k / fps <= latest else (k - 1) / fps
        if pts.shape[0] == 0:
            return start
        j = int(nearest_frames(pts, np.array([start]))[0])
        return float(pts[j - 1] if j > 0 and pts[j] > latest else pts[j])
