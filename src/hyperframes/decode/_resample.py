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

Gaps: with ``max_gap_seconds``, two frames further apart than that are not bridged. The frames
before the gap are resampled as a video of their own (it ends one frame interval after its last
frame, as a video does), and the frames from the gap on start a new grid ``t_k = p1 + k / fps``
at the first of them, so nothing is repeated to fill the gap. ``gaps`` lists each one as
``(pts_before, pts_after)``. Without ``fps`` the frames pass through; gaps are still listed.
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

    def __init__(
        self,
        fps: float | None,
        *,
        native_fps: float | None = None,
        max_gap_seconds: float | None = None,
    ):
        for name, value in (
            ("fps", fps),
            ("native_fps", native_fps),
            ("max_gap_seconds", max_gap_seconds),
        ):
            if value is not None and not (
                isinstance(value, numbers.Real)
                and not isinstance(value, bool)
                and math.isfinite(value)
                and value > 0
            ):
                raise ConfigError(f"{name} must be None or a positive number, got {value!r}")
        self.fps = None if fps is None else float(fps)
        self.native_fps = None if native_fps is None else float(native_fps)
        self.max_gap = None if max_gap_seconds is None else float(max_gap_seconds)
        self.gaps: list[tuple[float, float]] = []  # (pts before, pts after) of each gap skipped
        self._kept = 0  # targets kept in the segments before the current one
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
        out = []
        if (
            latest is not None
            and self.max_gap is not None
            and pts - latest.pts_seconds > self.max_gap
        ):
            self.gaps.append((latest.pts_seconds, pts))
            if self.fps is not None:  # the frames so far end a segment; a new grid starts here
                out = self._end_segment()
                self._p0 = self._prev_pts = self._pending = None
                self._next = 0
                latest = None
        if self.fps is None:
            self._latest = current
            return [current]
        if self._p0 is None:
            self._p0 = pts
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
        out = self._end_segment()
        if self._kept == 0:
            assert self._p0 is not None  # set by the first push when fps is not None
            duration = self._latest.pts_seconds - self._p0 + self._last_duration()
            raise InputError(
                f"is {duration:.3g} s long, shorter than one frame at {self.fps:g} fps"
            )
        return out

    def _last_duration(self) -> float:
        """How long the latest frame lasts: the last interval, else one native (or target)
        frame, never longer than a gap."""
        assert self._latest is not None and self.fps is not None
        if self._prev_pts is not None:
            return self._latest.pts_seconds - self._prev_pts
        one = 1.0 / (self.native_fps or self.fps)
        return one if self.max_gap is None else min(one, self.max_gap)

    def _end_segment(self) -> list[Resampled]:
        """The frames kept for the targets of the current segment not yet given out."""
        assert self._latest is not None and self._p0 is not None and self.fps is not None
        duration = self._latest.pts_seconds - self._p0 + self._last_duration()
        total = math.floor(duration * self.fps + 1e-6)
        out = []
        if self._pending is not None and self._next - 1 < total:
            out.append(self._pending)
        out += [self._latest] * max(0, total - self._next)
        self._pending = None
        self._kept += total
        return out
