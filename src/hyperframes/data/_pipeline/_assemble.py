"""The batch pipeline's assemble stage: a batch's meta columns and its record
(:class:`~hyperframes.data.HyperframeBatch`) from the frames and tracks the stages made."""

from __future__ import annotations

import numpy as np
import torch

from .._record import BatchMeta, HyperframeBatch
from ._plan import BatchPlan

__all__ = ["batch_record", "meta_columns"]


def meta_columns(
    store, plan: BatchPlan, seed: int, segment_rows, registered: str | None
) -> BatchMeta:
    """The meta columns of ``plan``'s windows from ``store``: each window's video, stored and
    source frame indices, pts, fps, seed, epoch, item, clip, segment (its row in the store's
    segments, from ``segment_rows``; -1 when none) and ``registered`` (the registration
    mode)."""
    videos, b = store.videos, len(plan)
    rows = np.asarray(videos.frame_start)[plan.videos][:, None] + plan.index
    segments = np.full(b, -1, np.int64)
    has = plan.segments >= 0
    segments[has] = np.asarray(segment_rows)[plan.segments[has]]
    columns = {
        "video": [videos.paths[v] for v in plan.videos.tolist()],
        "video_id": plan.videos.copy(),
        "frame_indices": videos.source_index_all[rows],
        "stored_indices": plan.index.copy(),
        "pts_seconds": videos.pts_seconds_all[rows],
        "fps": np.asarray(videos.fps, np.float64)[plan.videos],
        "frames": np.full(b, plan.index.shape[1], np.int64),
        "seed": np.full(b, seed, np.int64),
        "epoch": plan.epochs.copy(),
        "item": plan.items.copy(),
        "clip": plan.clips.copy(),
        "segment": segments,
        "registered": [registered] * b,
    }
    return BatchMeta(columns, b)


def batch_record(
    window,
    labels: torch.Tensor,
    plan: BatchPlan,
    meta: BatchMeta,
    target: torch.Tensor | None,
    tracks: dict,
) -> HyperframeBatch:
    """The batch record of the laid-out ``window`` with its ``labels``, mask (``plan``'s),
    ``meta``, ``target`` and ``tracks`` (audio, audio mask, flow)."""
    return HyperframeBatch(
        window,
        labels,
        torch.from_numpy(plan.mask.copy()),
        meta,
        target,
        tracks.get("audio"),
        tracks.get("audio_mask"),
        tracks.get("flow"),
    )
