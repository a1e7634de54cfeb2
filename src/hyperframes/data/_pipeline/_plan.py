"""The batch pipeline's plan stage: a batch's per-item plans as (B, T) columns."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

import numpy as np

from ..._core._errors import DataError
from ...sampling import Plan

__all__ = ["BatchPlan", "plan_batch"]


@dataclasses.dataclass(frozen=True)
class BatchPlan:
    """A batch's plans as columns: ``epochs``/``items`` (B,), ``videos`` (B,) store ids,
    ``index`` (B, T) stored frame indices, ``mask`` (B, T), ``clips`` and ``segments`` (B,)
    (the sampler's segment number, -1 when none)."""

    epochs: np.ndarray
    items: np.ndarray
    videos: np.ndarray
    index: np.ndarray
    mask: np.ndarray
    clips: np.ndarray
    segments: np.ndarray

    def __len__(self) -> int:
        return len(self.items)


def plan_batch(
    keys: Sequence[tuple[int, int]],
    sampler,
    table,
    video_ids: np.ndarray,
    seed: int,
    *,
    plan: Callable[[tuple[int, int]], Plan] | None = None,
) -> BatchPlan:
    """Plan every (epoch, item) of ``keys``: ``sampler``'s
    :meth:`~hyperframes.sampling.Sampler.plan_columns` over ``table`` (its videos the store's
    ``video_ids``), all items at once, seeded by ``seed``; or, given ``plan`` (a dataset that
    plans its own way), ``plan(key)`` item by item (a :class:`~hyperframes.sampling.Plan`
    naming the store's video)."""
    epochs = np.asarray([k[0] for k in keys], np.int64)
    items = np.asarray([k[1] for k in keys], np.int64)
    if plan is None:
        video, index, mask, clip, segment = sampler.plan_columns(table, items, epochs, seed=seed)
        ids = np.asarray(video_ids, np.int64)[video]
        return BatchPlan(epochs, items, ids, index, mask, clip, segment)
    plans = [plan(k) for k in keys]
    lengths = {len(p.frame_indices) for p in plans}
    if len(lengths) > 1:
        raise DataError(
            f"cannot batch windows of different lengths {sorted(lengths)}; the sampler's "
            "short='pad' keeps T fixed"
        )
    return BatchPlan(
        epochs,
        items,
        np.asarray([p.video for p in plans], np.int64),
        np.stack([np.asarray(p.frame_indices, np.int64) for p in plans]),
        np.stack([np.asarray(p.mask, bool) for p in plans]),
        np.asarray([p.clip for p in plans], np.int64),
        np.asarray([p.segment for p in plans], np.int64),
    )
