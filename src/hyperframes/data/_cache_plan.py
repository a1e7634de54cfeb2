"""Which videos a memory cache holds when the store does not fit its byte budget.

A dataset with ``memory="ram"`` or ``"cuda"`` and ``memory_budget=N`` holds only the videos
:func:`plan_cache` picks; the others are read from the store as on disk (and moved to the
cache's device). The plan is pure arithmetic on the index, made once:

* a video's **bytes** in the cache: its frames x C x H x W x the cache's item size (a float16
  store is held as float32: converted once at load, not per batch);
* its **reads per epoch**: the items the sampler draws from it (a ``per_segment`` video with
  many labelled segments is drawn often), each class weighted to an equal share under
  class-balanced sampling (``priority="balanced"``: a rare class's videos are drawn more);
* videos go in by reads per byte, highest first (ties: store order), each taken while it fits:
  the budget holds the most reads it can.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .._core._errors import ConfigError

__all__ = ["PRIORITIES", "CachePlan", "plan_cache"]

PRIORITIES = ("reads", "balanced")


@dataclasses.dataclass(frozen=True)
class CachePlan:
    """``videos``: the store ids held, in the order they were taken; ``bytes``: what they
    take; ``budget``; ``total_bytes``: every candidate video's; ``read_share``: the share of
    an epoch's reads the held videos serve."""

    videos: np.ndarray
    bytes: int
    budget: int | None
    total_bytes: int
    read_share: float

    def describe(self) -> str:
        return (
            f"memory cache: {len(self.videos)} videos, {self.bytes / 2**20:.1f} of "
            f"{self.total_bytes / 2**20:.1f} MiB (budget "
            f"{'none' if self.budget is None else f'{self.budget / 2**20:.1f} MiB'}), "
            f"{100 * self.read_share:.0f}% of an epoch's reads"
        )


def plan_cache(
    video_ids,
    video_bytes,
    reads,
    labels=None,
    *,
    budget: int | None,
    priority: str = "reads",
) -> CachePlan:
    """The :class:`CachePlan` of videos ``video_ids`` (store ids) of ``video_bytes`` bytes
    each in the cache, drawn ``reads`` times an epoch (``labels``: their classes, for
    ``priority="balanced"``), within ``budget`` bytes (None: every video)."""
    ids = np.asarray(video_ids, np.int64)
    size = np.asarray(video_bytes, np.float64)
    heat = np.asarray(reads, np.float64)
    if not ids.shape == size.shape == heat.shape:
        raise ConfigError("plan_cache: video_ids, video_bytes and reads need one value a video")
    if priority not in PRIORITIES:
        raise ConfigError(f"memory priority {priority!r}: allowed: {', '.join(PRIORITIES)}")
    if budget is not None and (isinstance(budget, bool) or int(budget) < 0):
        raise ConfigError(f"memory_budget: {budget!r}; allowed: bytes >= 0, or None")
    if priority == "balanced" and labels is not None and ids.size:
        lab = np.asarray(labels)
        classes, inverse = np.unique(lab, return_inverse=True)
        per_class = np.bincount(inverse, weights=heat, minlength=len(classes))
        heat = heat / np.maximum(per_class[inverse], 1e-12) * heat.sum() / len(classes)
    total = int(size.sum())
    if budget is None:
        return CachePlan(ids.copy(), total, None, total, 1.0 if ids.size else 0.0)
    density = heat / np.maximum(size, 1.0)
    order = np.lexsort((ids, -density))  # reads per byte, highest first; then store order
    taken, used = [], 0
    for k in order:
        if used + size[k] <= budget:
            taken.append(int(k))
            used += int(size[k])
    held = np.asarray(taken, np.int64)
    share = float(heat[held].sum() / heat.sum()) if heat.sum() > 0 else 0.0
    return CachePlan(ids[held], used, int(budget), total, share)
