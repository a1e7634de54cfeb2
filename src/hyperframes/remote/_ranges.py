"""Which byte ranges of its shard a read needs: a pure planner over the index (no I/O).

Raw: one range per run of consecutive frames wanted; a chunked codec (lz4, zstd, jpeg): the
chunks holding the frames wanted. A store at a URL plans a whole ``read_batch`` with it and
fetches every range at once (``_source.RemoteShards.prefetch``)."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise

import numpy as np

__all__ = ["BatchPlanner", "frame_runs", "read_ranges"]


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


class BatchPlanner:
    """Plans a whole batch of reads in one numpy step over the index tables (what
    ``read_ranges`` plans one window at a time): ``plan(vids, idx)`` gives
    ``[(shard, offsets, nbytes)]``, one entry per shard, for the frames ``idx[j]`` of videos
    ``vids[j]``.

    Every frame of the store gets a place on one line: video ``v``'s frames start at
    ``base[v]``. Chunked: each chunk row's key is its video's base plus its first frame, so one
    ``searchsorted`` finds the chunk of every frame wanted; raw: the frames wanted are put in
    order on that line (with a gap between videos, so no run crosses one) and cut into runs of
    consecutive frames. ``usable`` is False for an index whose chunk rows are not laid out
    video after video from frame 0 (a plan then goes window by window)."""

    def __init__(self, videos: np.ndarray, chunks: np.ndarray | None, itemsize: int, chunked: bool):
        self.chunked = chunked
        self.shard = videos["shard"].astype(np.int64)
        self.frames = nf = videos["num_frames"].astype(np.int64)
        self.usable = True
        if not chunked:
            self.base = np.concatenate([[0], np.cumsum(nf + 1)[:-1]]).astype(np.int64)
            self.offset = videos["offset"].astype(np.int64)
            self.frame_bytes = (
                videos["channels"].astype(np.int64)
                * videos["height"].astype(np.int64)
                * videos["width"].astype(np.int64)
                * itemsize
            )
            return
        cs = videos["chunk_start"].astype(np.int64)
        nc = videos["num_chunks"].astype(np.int64)
        order = np.argsort(cs, kind="stable")
        starts = np.concatenate([[0], np.cumsum(nc[order])[:-1]]).astype(np.int64)
        n_rows = 0 if chunks is None else len(chunks)
        if chunks is None or int(nc.sum()) != n_rows or not np.array_equal(cs[order], starts):
            self.usable = False
            return
        base = np.empty(len(nf), np.int64)
        base[order] = np.concatenate([[0], np.cumsum(nf[order])[:-1]])
        owner = np.repeat(order, nc[order])
        first = chunks["first_frame"].astype(np.int64)
        self.keys = base[owner] + first
        heads = cs[nc > 0]
        if (
            (first[heads] != 0).any()
            or (first >= nf[owner]).any()
            or (np.diff(self.keys) <= 0).any()
        ):
            self.usable = False
            return
        self.base = base
        self.row_shard = self.shard[owner]
        self.row_offset = chunks["offset"].astype(np.int64)
        self.row_nbytes = chunks["nbytes"].astype(np.int64)

    def plan(self, vids: Sequence[int] | np.ndarray, idx: list[np.ndarray]) -> list:
        lengths = np.fromiter((len(ix) for ix in idx), np.int64, len(idx))
        if not lengths.sum():
            return []
        v = np.repeat(np.asarray(vids, np.int64), lengths)
        f = np.concatenate(idx).astype(np.int64, copy=False)
        ok = (f >= 0) & (f < self.frames[v])  # (a read checks its frames: none planned)
        if not ok.all():
            v, f = v[ok], f[ok]
        if self.chunked:
            rows = np.unique(np.searchsorted(self.keys, self.base[v] + f, side="right") - 1)
            return _by_shard(self.row_shard[rows], self.row_offset[rows], self.row_nbytes[rows])
        at = np.unique(self.base[v] + f)
        new = np.ones(len(at), bool)
        new[1:] = np.diff(at) != 1
        first = np.flatnonzero(new)
        runs = np.diff(np.append(first, len(at)))
        owner = np.searchsorted(self.base, at[first], side="right") - 1
        fb = self.frame_bytes[owner]
        offs = self.offset[owner] + (at[first] - self.base[owner]) * fb
        return _by_shard(self.shard[owner], offs, runs * fb)


def _by_shard(shard: np.ndarray, offsets: np.ndarray, nbytes: np.ndarray) -> list:
    if len(shard) and (shard == shard[0]).all():  # (the usual batch: one shard, no sort)
        return [(int(shard[0]), offsets, nbytes)]
    order = np.argsort(shard, kind="stable")
    shard, offsets, nbytes = shard[order], offsets[order], nbytes[order]
    cut = np.concatenate([[0], np.flatnonzero(np.diff(shard)) + 1, [len(shard)]]).tolist()
    return [(int(shard[a]), offsets[a:z], nbytes[a:z]) for a, z in pairwise(cut)]
