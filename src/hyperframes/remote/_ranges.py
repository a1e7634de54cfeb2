"""Which byte ranges of its shard a read needs: a pure planner over the index (no I/O).

Raw: one range per run of consecutive frames wanted; a chunked codec (lz4, zstd, jpeg): the
chunks holding the frames wanted. A store at a URL plans a whole ``read_batch`` with it and
fetches every range at once (``_source.RemoteShards.prefetch``)."""

from __future__ import annotations

import numpy as np

__all__ = ["frame_runs", "read_ranges"]


def frame_runs(idx: np.ndarray):
    """``(frames, inverse, first, run, lengths)``: the distinct frames wanted in order, where
    each wanted index lies among them, the first of each run of consecutive frames, the run of
    each distinct frame, and each run's length."""
    frames, inverse = np.unique(idx, return_inverse=True)
    new = np.ones(len(frames), bool)
    new[1:] = np.diff(frames) != 1
    first = np.flatnonzero(new)
    run = np.cumsum(new) - 1
    lengths = np.diff(np.append(first, len(frames)))
    return frames, inverse.reshape(-1), first, run, lengths


def read_ranges(geom, chunks: np.ndarray, idx: np.ndarray, *, frame_bytes: int, chunked: bool):
    """``(offsets, nbytes)`` in the video's shard of the bytes that frames ``idx`` of the video
    with geometry ``geom`` (``Store._geom``: shard, offset, nbytes, F, C, H, W, chunk_start,
    num_chunks) need."""
    if not len(idx):
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    if not chunked:
        frames, _, first, _, lengths = frame_runs(idx)
        return geom[1] + frames[first] * frame_bytes, lengths * frame_bytes
    rows = chunks[geom[7] : geom[7] + geom[8]]
    which = np.unique(np.searchsorted(rows["first_frame"], idx, side="right") - 1)
    used = rows[which]
    return used["offset"].astype(np.int64), used["nbytes"].astype(np.int64)
