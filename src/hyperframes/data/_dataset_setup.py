"""What :class:`~hyperframes.data.HyperframeDataset`'s constructor resolves before it reads
anything, once its options are checked (:mod:`._options`): the store (a path, a URL or an
opened store), the sampler, the chosen videos and the sampler's table of them. Each check raises the error the dataset's
users see, naming the bad value and what is allowed."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from .._core._errors import ConfigError, DataError
from .._core._layouts import PAD_LEAKS
from ..sampling import PerFrame, VideoTable, create_sampler
from ..store import change_score, open_store
from ._targets import store_segments

__all__ = [
    "choose_videos",
    "open_dataset_store",
    "resolve_sampler",
    "video_table",
]


def open_dataset_store(store, cache_dir=None, cache_limit: int | None = None):
    """``store`` opened (a path or URL, with its node-local cache), or as given (opened)."""
    if isinstance(store, str | os.PathLike):
        return open_store(store, cache_dir=cache_dir, cache_limit=cache_limit)
    if cache_dir is not None or cache_limit is not None:
        raise ConfigError(
            "cache_dir/cache_limit: given with an opened store; pass them to open_store, or "
            "give the dataset the store's URL"
        )
    return store


def resolve_sampler(
    sampler: Any, frames: int, options: dict | None, layout: str, clips_per_video: int
):
    """The sampler object: made from a registered name with ``options``, or as given; checked
    against ``frames`` and ``layout``; drawing ``clips_per_video`` windows per item."""
    if isinstance(sampler, str):
        sampler = create_sampler(sampler, frames=frames, **(options or {}))
    elif options:
        raise ConfigError("sampler_options apply to a sampler given by name only")
    if sampler.frames != frames:
        raise ConfigError(f"the sampler plans {sampler.frames} frames but frames={frames}")
    if layout in PAD_LEAKS and getattr(sampler, "short", None) == "pad":
        raise ConfigError(
            f"short='pad' with layout {layout!r}: {PAD_LEAKS[layout]}, so the model would "
            "learn from the padding; allowed: short='error' or 'drop' (or the temporal "
            "layout, whose models read the mask)"
        )
    if clips_per_video != 1:  # that many windows of each of the sampler's items
        sampler = sampler.with_clips_per_video(clips_per_video)
    return sampler


def choose_videos(store, split: str | None, video_ids, exclude_damaged: bool) -> np.ndarray:
    """The store video ids the dataset reads (int64): all, those of ``split``, or exactly
    ``video_ids``; less the damaged ones with ``exclude_damaged``."""
    videos = store.videos
    if split is not None and video_ids is not None:
        raise ConfigError("give split= or video_ids=, not both")
    if split is not None:
        names = list(videos.splits)
        which = names.index(split) if split in names else -2
        ids = np.flatnonzero(np.asarray(videos.split_ids) == which)
        if not ids.size:
            have = sorted(n for n in names if n)
            raise DataError(f"no video of split {split!r} in the store; splits: {have}")
    elif video_ids is not None:
        ids = _check_video_ids(video_ids, len(videos), store)
    else:
        ids = np.arange(len(videos))
    ids = np.asarray(ids, np.int64)
    if exclude_damaged:
        ids = ids[np.asarray(videos.decode_errors)[ids] == 0]
        if not ids.size:
            raise DataError(
                "exclude_damaged=True leaves no video: every chosen video was stored with "
                "decoder errors (see `hyperframes info`)"
            )
    return ids


def _check_video_ids(video_ids, count: int, store) -> np.ndarray:
    """``video_ids`` (integers: :class:`~hyperframes.data.SamplingOptions` checked them) as
    int64, every one a video of ``store``, none repeated, at least one."""
    ids = np.asarray(video_ids, np.int64)
    if not ids.size:
        raise DataError("video_ids is empty: the dataset would have no video")
    bad = ids[(ids < 0) | (ids >= count)]
    if bad.size:
        raise DataError(
            f"video_ids {bad[:5].tolist()} are not videos of {getattr(store, 'path', store)} "
            f"(it holds ids 0..{count - 1})"
        )
    uniq, counts = np.unique(ids, return_counts=True)
    if (counts > 1).any():
        raise DataError(f"video_ids repeat {uniq[counts > 1][:5].tolist()}")
    return ids.astype(np.int64)


def video_table(store, videos, ids: np.ndarray, sampler) -> tuple[VideoTable, np.ndarray]:
    """The sampler's view of videos ``ids``, built from the index's columns (no object per
    video: a 300k-video store gives its table in milliseconds), and the store's segment row
    of each of its segments. Per-frame times and change and flow scores are
    :class:`PerFrame` columns over the index's per-frame arrays."""
    nf = np.asarray(videos.num_frames)[ids]
    starts = np.asarray(videos.frame_start)[ids]
    pts = PerFrame(videos.pts_seconds_all, starts, nf, name="pts_seconds", ids=ids)
    scores: Sequence[np.ndarray | None] | PerFrame | None = None
    motion: PerFrame | None = None
    if sampler.name in ("keyframes", "motion"):  # samplers that read motion scores
        flow = getattr(videos, "flow_score_all", None)
        if flow is not None:  # a --flow build's scores: what score="auto" prefers
            motion = PerFrame(flow, starts, nf, name="flow_score", ids=ids)
        column = getattr(videos, "change_score_all", None)
        if column is not None:
            scores = PerFrame(column, starts, nf, name="change_score", ids=ids)
        elif motion is None or getattr(sampler, "score", "auto") == "change":
            # stores built before scores were recorded: computed from the frames now
            scores = [_change_scores(store, int(i), int(nf[k])) for k, i in enumerate(ids)]
    segments, segment_rows = store_segments(videos, ids)
    table = VideoTable.from_arrays(
        nf,
        np.asarray(videos.fps)[ids],
        labels=np.asarray(videos.label_ids)[ids],
        pts_seconds=pts,
        change_score=scores,
        segments=segments,
        flow_score=motion,
    )
    return table, segment_rows


def _change_scores(store, video: int, num_frames: int) -> np.ndarray:
    """The change scores the build recorded, or computed now from every stored frame (stores
    built before they were recorded, and other store-like objects)."""
    cached = getattr(store, "change_scores", None)
    scores = cached(video) if cached is not None else None
    if scores is None:
        scores = change_score(store.read_numpy(video, np.arange(num_frames)))
    return scores
