"""Frame-rate resampling while frames stream by (pure: timestamps in, choices out; no decoding).

Targets are ``t_k = p0 + k / fps`` for ``k < floor(duration * fps + 1e-6)``, where ``p0`` is the
first frame's pts and ``duration = last_pts - p0 + last frame's duration`` (the last interval
between frames, or ``1 / native_fps`` for a single frame). Each target takes the frame whose pts
is nearest (ties: the earlier frame); a frame may be taken several times, or not at all.

Use from a loop that holds one decoded frame at a time::

    resampler = FpsResampler(15)
    for frame in decoder.frames(path):
        for kept in resampler.push(frame):
            store(kept.frame, kept.source_index, kept.pts_seconds)
    for kept in resampler.finish():
        store(...)

Whether the last target before a frame exists depends on where the video ends, so the resampler
holds back at most two frames: the one chosen for that target, and the latest frame (the
candidate for the next target).
"""

from __future__ import annotations

import math
import numbers
from typing import Any, NamedTuple

from .._core._errors import ConfigError, InputError

_EPS = 1e-9  # seconds: timestamps closer than this are equal (ties go to the earlier frame)


class Resampled(NamedTuple):
    """A frame kept for one target time: the frame, its index among pushed frames, its pts."""

    frame: Any
    source_index: int
    pts_seconds: float


class FpsResampler:
    """Streams the frames to keep for ``fps`` (``None``: keep every frame as it is)."""

    def __init__(self, fps: float | None, *, native_fps: float | None = None):
        for name, value in (("fps", fps), ("native_fps", native_fps)):
            if value is not None and not (
                isinstance(value, numbers.Real)
                and not isinstance(value, bool)
                and math.isfinite(value)
                and value > 0
            ):
                raise ConfigError(f"{name} must be None or a positive number, got {value!r}")
        self.fps = None if fps is None else float(fps)
        self.native_fps = None if native_fps is None else float(native_fps)
        self._count = 0  # frames pushed
        self._p0: float | None = None
        self._prev_pts: float | None = None
        self._latest: Resampled | None = None  # the last frame pushed
        self._pending: Resampled | None = None  # chosen for target _next - 1, not yet sure to exist
        self._next = 0  # the next target index to decide

    def _target(self, k: int) -> float:
        assert self._p0 is not None and self.fps is not None  # only called once both are set
        return self._p0 + k / self.fps

    def push(self, frame: Any, pts_seconds: float | None = None) -> list[Resampled]:
        """Add the next frame (pts from ``frame.pts_seconds`` unless given); return frames kept."""
        pts = float(frame.pts_seconds if pts_seconds is None else pts_seconds)
        if not math.isfinite(pts):
            raise InputError(f"frame {self._count} has no finite timestamp ({pts})")
        latest = self._latest
        if latest is not None and pts <= latest.pts_seconds:
            raise InputError(
                f"timestamps must increase: frame {self._count} is at {pts} s, "
                f"after frame {latest.source_index} at {latest.pts_seconds} s"
            )
        current = Resampled(frame, self._count, pts)
        self._count += 1
        if self.fps is None:
            self._latest = current
            return [current]
        if self._p0 is None:
            self._p0 = pts
        out = []
        while self._target(self._next) <= pts + _EPS:
            t = self._target(self._next)
            if latest is not None and t - latest.pts_seconds <= pts - t + _EPS:
                chosen = latest
            else:
                chosen = current
            if self._pending is not None:  # a later target was reached: the pending one exists
                out.append(self._pending)
            self._pending = chosen
            self._next += 1
        self._prev_pts = latest.pts_seconds if latest is not None else None
        self._latest = current
        return out

    def finish(self) -> list[Resampled]:
        """Frames kept for the targets after the last frame pushed; ``InputError`` if none at all."""
        if self._latest is None:
            raise InputError("no frames to resample")
        if self.fps is None:
            return []
        last = self._latest.pts_seconds
        if self._prev_pts is not None:
            last_duration = last - self._prev_pts
        else:
            last_duration = 1.0 / (self.native_fps or self.fps)
        assert self._p0 is not None  # set by the first push when fps is not None
        duration = last - self._p0 + last_duration
        total = math.floor(duration * self.fps + 1e-6)
        if total == 0:
            raise InputError(
                f"is {duration:.3g} s long, shorter than one frame at {self.fps:g} fps"
            )
        out = []
        if self._pending is not None and self._next - 1 < total:
            out.append(self._pending)
        out += [self._latest] * max(0, total - self._next)
        self._pending = None
        return out
