"""Byte sources: where a store reader gets the payload bytes of its shards.

The reader asks for byte ranges of a shard and gets back one buffer plus each range's offset
in it (``ranges``), or addresses for a codec that decodes between addresses (``addresses``):

- :class:`LocalShards`: a read-only memory map per shard, as the reader always had. ``ranges``
  returns the map itself with the offsets unchanged, so the zero-copy path costs one call.
- :class:`RemoteShards`: byte-range GETs of the shard objects at a URL. Ranges of one call are
  sorted and those that touch or overlap are coalesced into one request; the requests of a
  call go out concurrently (fsspec ``cat_ranges``). With a node-local
  :class:`~hyperframes.remote._cache.BlockCache`, ranges are served from fixed-size aligned blocks
  of the shards, each fetched once per node; a batch's ranges are then cut at block boundaries,
  so each is a view of one mapped block (no join). A batch whose ranges are all in the cache
  is served from the blocks' maps as they are, its plan never made (``expect``,
  ``BlockCache.resident``). The ranges of future batches can be fetched in the background
  (:mod:`~hyperframes.remote._ahead`), and a batch read takes them from there.

A source never reads a whole shard unless asked for every byte of it.
"""

from __future__ import annotations

import mmap
import os
import threading
from collections.abc import Callable
from pathlib import Path

import numpy as np

from ._ahead import ReadAhead

__all__ = ["LocalShards", "RemoteShards", "coalesce"]


class LocalShards:
    """Memory-mapped shard files (opened on first use, kept until ``close``)."""

    is_local = True

    def prefetch(self, plan) -> None:  # (a memory map needs none)
        pass

    def ahead(self, plan, budget: int) -> bool:  # (nor any read-ahead)
        return True

    def __init__(self, files: list[Path]):
        self.files = files
        self._maps: dict[int, np.ndarray] = {}

    def whole(self, k: int) -> np.ndarray:
        arr = self._maps.get(k)
        if arr is None:
            with open(self.files[k], "rb") as fh:
                if os.fstat(fh.fileno()).st_size == 0:  # (mmap refuses an empty file)
                    arr = np.zeros(0, np.uint8)
                else:
                    mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
                    arr = np.frombuffer(mm, dtype=np.uint8)
            self._maps[k] = arr
        return arr

    def ranges(self, k: int, offsets: np.ndarray, nbytes: np.ndarray):
        return self.whole(k), offsets

    def addresses(self, shard_of_row: np.ndarray, offsets: np.ndarray, nbytes: np.ndarray):
        """(buffers to hold while the addresses are used, address of each row's bytes)."""
        shards, where = np.unique(shard_of_row, return_inverse=True)
        maps = [self.whole(int(sh)) for sh in shards]
        src = np.array([mp.ctypes.data for mp in maps], np.int64)[where] + offsets
        return maps, src

    def close(self) -> None:
        self._maps.clear()


def coalesce(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Merge byte ranges that touch or overlap: ``(merged starts, merged ends, the merged range
    of each input range)``."""
    order = np.argsort(starts, kind="stable")
    s, e = starts[order], ends[order]
    reach = np.maximum.accumulate(e)
    new = np.ones(len(s), bool)
    new[1:] = s[1:] > reach[:-1]
    group_sorted = np.cumsum(new) - 1
    first = np.flatnonzero(new)
    last = np.append(first[1:], len(s)) - 1
    group = np.empty(len(s), np.int64)
    group[order] = group_sorted
    return s[first], reach[last], group


class RemoteShards:
    """Shard objects under a store URL, read by byte ranges (optionally through a node cache).

    ``files`` is a :class:`~hyperframes.remote._files.RemoteFiles`; ``sizes`` and ``etags``
    come from its listing at open. Every read is pinned to those ETags (``If-Match``, see
    ``RemoteFiles.read_many``): a shard replaced at its URL since is a StoreError saying the
    store changed, never its new bytes; the cache keys its blocks by URL, size and ETag, and
    fills them through the same pinned reads, so a block of one version never holds another's
    bytes. ``folder``: where the shards lie under the store URL (``shards``, or the
    generation's ``generations/G/shards``)."""

    is_local = False

    def __init__(
        self,
        files,
        names: list[str],
        sizes: list[int],
        etags: list[str],
        cache=None,
        *,
        folder: str = "shards",
    ):
        self.files = files
        self.names = names
        self.sizes = sizes
        self.etags = etags
        self.folder = folder
        self._pinned = {self._rel(k): etags[k] for k in range(len(names))}
        self.cache = cache
        self._cache_keys: dict[int, str] = {}
        self._local = threading.local()
        self._ahead: ReadAhead | None = None
        self._ahead_lock = threading.Lock()

    def _rel(self, k: int) -> str:
        return f"{self.folder}/{self.names[k]}"

    def fetch(self, k: int, starts: np.ndarray, ends: np.ndarray) -> list[bytes | memoryview]:
        """Bytes ``starts[j]:ends[j]`` of shard ``k`` (ranges already coalesced), of the
        version listed at open only."""
        rel, etag = self._rel(k), self.etags[k]
        if self.cache is None:
            return self.files.read_ranges(rel, starts.tolist(), ends.tolist(), etag=etag)
        return self.cache.read_ranges(
            key=self._cache_key(k),
            size=self.sizes[k],
            starts=starts.tolist(),
            ends=ends.tolist(),
            fetch=lambda s, e: self.files.read_ranges(rel, s, e, etag=etag),
        )

    def _merge(self, plan) -> dict:
        """``{shard: (starts, ends)}``: a batch plan's ranges (``[(shard, offsets, nbytes)]``)
        sorted and coalesced per shard."""
        by_shard: dict[int, tuple[list, list]] = {}
        for k, offs, nbs in plan:
            have = by_shard.setdefault(int(k), ([], []))
            have[0].append(np.asarray(offs, np.int64))
            have[1].append(np.asarray(nbs, np.int64))
        merged = {}
        for k, (offs, nbs) in by_shard.items():
            o, n = np.concatenate(offs), np.concatenate(nbs)
            if len(o):
                if self.cache is None:
                    ms, me, _ = coalesce(o, o + n)
                else:
                    ms, me = self._block_pieces(o, o + n)
                merged[k] = (ms, me)
        return merged

    def _block_pieces(self, starts: np.ndarray, ends: np.ndarray):
        """Through the cache: the ranges as pieces that each lie in one cache block, so every
        piece is served as a view of its block's map (no join), except a range that itself
        crosses a block boundary (a piece of its own, joined). Ranges that overlap are merged;
        the ranges inside one block are one piece, gaps and all (a view costs nothing more,
        and the cache serves the block from the first to the last byte wanted anyway)."""
        if len(starts) > 1 and (starts[1:] < starts[:-1]).any():
            order = np.argsort(starts, kind="stable")
            s, e = starts[order], ends[order]
        else:  # (a batch's plan: in order already)
            s, e = starts, ends
        reach = np.maximum.accumulate(e)
        new = np.ones(len(s), bool)
        new[1:] = s[1:] >= reach[:-1]  # (touching ranges stay apart here)
        first = np.flatnonzero(new)
        a_s, a_e = s[first], reach[np.append(first[1:], len(s)) - 1]
        bb = self.cache.block_bytes
        b0, b1 = a_s // bb, (a_e - 1) // bb
        one = b0 == b1
        cont = np.zeros(len(a_s), bool)
        cont[1:] = one[1:] & one[:-1] & (b0[1:] == b0[:-1])
        pf = np.flatnonzero(~cont)
        return a_s[pf], a_e[np.append(pf[1:], len(a_s)) - 1]

    def _fetch_merged(self, merged: dict) -> dict:
        """``{shard: [bytes of each range]}``: all requests at once (one ``cat_ranges``;
        through the cache, shard by shard)."""
        if self.cache is not None:
            return {k: self.fetch(k, ms, me) for k, (ms, me) in merged.items()}
        keys = [(k, j) for k, (ms, _) in merged.items() for j in range(len(ms))]
        flat = self.files.read_many(
            [(self._rel(k), int(merged[k][0][j]), int(merged[k][1][j])) for k, j in keys],
            pinned=self._pinned,
        )
        got: dict[int, list] = {k: [] for k in merged}
        for (k, _), data in zip(keys, flat):
            got[k].append(data)
        return got

    @property
    def read_ahead(self) -> ReadAhead:
        """This source's background fetches (:mod:`~hyperframes.remote._ahead`)."""
        if self._ahead is None:
            with self._ahead_lock:
                if self._ahead is None:
                    self._ahead = ReadAhead(self._fetch_merged)
        return self._ahead

    def ahead(self, plan, budget: int) -> bool:
        """Fetch a future batch's ranges in the background (False: over ``budget``)."""
        return self.read_ahead.offer(self._merge(plan), budget)

    def expect(self, make_plan: Callable[[], list]) -> None:
        """The next reads of this thread are one batch, whose plan ``make_plan()`` gives.
        Through the cache, a read whose ranges are all in it is served from it as they are
        (``BlockCache.resident``): the plan is never made; the first read that finds one
        missing fetches the whole batch then (``prefetch(make_plan())``). Without a cache,
        or while the read-ahead holds batches (``prefetch`` takes them), it is fetched now."""
        ahead = self._ahead
        if self.cache is None or (ahead is not None and ahead.holds()):
            self.prefetch(make_plan())
            return
        self._local.fetched = {}
        self._local.expected = make_plan

    def _fetch_expected(self) -> None:
        """``prefetch`` the batch ``expect`` was told of, if it was not fetched yet."""
        make_plan = getattr(self._local, "expected", None)
        if make_plan is not None:
            self.prefetch(make_plan())

    def prefetch(self, plan) -> None:
        """Fetch the ranges of a batch at once: ``plan`` is ``[(shard, offsets, nbytes)]``;
        every shard's ranges are coalesced and all requests go out together, or taken from
        the read-ahead when it fetched this batch already. Kept for this thread until its
        next prefetch: ``ranges`` serves what lies inside."""
        self._local.expected = None
        merged = self._merge(plan)
        got = self._ahead.take(merged) if self._ahead is not None else None
        if got is None:
            got = self._fetch_merged(merged)
        self._local.fetched = {
            k: (ms, me, [np.frombuffer(b, np.uint8) for b in got[k]])
            for k, (ms, me) in merged.items()
        }

    def _pieces(self, k: int, offsets: np.ndarray, nbytes: np.ndarray):
        """``(prefetched pieces of shard k, the piece of each range, that piece's start)``
        when every range lies in one, else None."""
        have = getattr(self._local, "fetched", {}).get(k)
        if have is None:
            return None
        ms, me, bufs = have
        g = np.searchsorted(ms, offsets, side="right") - 1
        if (g < 0).any() or (offsets + nbytes > me[np.maximum(g, 0)]).any():
            return None
        return bufs, g, ms[g]

    def _prefetched(self, k: int, offsets: np.ndarray, nbytes: np.ndarray):
        pieces = self._pieces(k, offsets, nbytes)
        if pieces is None:
            return None
        ms, me, bufs = self._local.fetched[k]
        g = pieces[1]
        used, local = np.unique(g, return_inverse=True)
        if len(used) == 1:  # one piece: its own buffer, no copy
            return bufs[int(used[0])], offsets - ms[g]
        lengths = (me - ms)[used]  # the pieces this read needs, joined
        base = np.concatenate([[0], np.cumsum(lengths)[:-1]])
        joined = np.concatenate([bufs[int(u)] for u in used])
        return joined, base[local.reshape(-1)] + (offsets - ms[g])

    def _cache_key(self, k: int) -> str:
        """The cache's key of shard ``k`` (its URL, size and ETag; made once)."""
        key = self._cache_keys.get(k)
        if key is None:
            assert self.cache is not None
            url = self.files.url_of(self._rel(k))
            key = self._cache_keys[k] = self.cache.key(url, self.sizes[k], self.etags[k])
        return key

    def _resident(self, parts, *, one_buffer: bool = False):
        """``BlockCache.resident`` of ranges of shards, ``parts`` as ``[(shard, offsets,
        nbytes)]`` (None without a cache)."""
        if self.cache is None:
            return None
        keyed = [(self._cache_key(k), self.sizes[k], offs, nbs) for k, offs, nbs in parts]
        return self.cache.resident(keyed, one_buffer=one_buffer)

    def ranges(self, k: int, offsets: np.ndarray, nbytes: np.ndarray):
        offsets = np.asarray(offsets, np.int64)
        nbytes = np.asarray(nbytes, np.int64)
        if not len(offsets):
            return np.zeros(0, np.uint8), offsets
        served = self._prefetched(k, offsets, nbytes)
        if served is not None:
            return served
        got = self._resident([(k, offsets, nbytes)], one_buffer=True)
        if got is not None:  # (in one block of the cache: a view of it)
            (block,), (where,) = got
            return block, where - block.ctypes.data
        self._fetch_expected()
        served = self._prefetched(k, offsets, nbytes)
        if served is not None:
            return served
        ms, me, group = coalesce(offsets, offsets + nbytes)
        pieces = self.fetch(k, ms, me)
        lengths = me - ms
        base = np.concatenate([[0], np.cumsum(lengths)[:-1]])
        buf = np.frombuffer(pieces[0] if len(pieces) == 1 else b"".join(pieces), np.uint8)
        return buf, base[group] + (offsets - ms[group])

    def _resident_addresses(self, shard_of_row, offsets, nbytes):
        """``addresses`` served from the cache when every range is in it, else None."""
        if len(offsets) and (shard_of_row == shard_of_row[0]).all():  # (the usual batch)
            got = self._resident([(int(shard_of_row[0]), offsets, nbytes)])
            return None if got is None else (got[0], got[1][0])
        shards = np.unique(shard_of_row).tolist()
        rows = [np.flatnonzero(shard_of_row == sh) for sh in shards]
        got = self._resident([(sh, offsets[r], nbytes[r]) for sh, r in zip(shards, rows)])
        if got is None:
            return None
        src = np.empty(len(offsets), np.int64)
        for r, where in zip(rows, got[1]):
            src[r] = where
        return got[0], src

    def addresses(self, shard_of_row: np.ndarray, offsets: np.ndarray, nbytes: np.ndarray):
        if self.cache is not None and not getattr(self._local, "fetched", None):
            got = self._resident_addresses(shard_of_row, offsets, nbytes)
            if got is not None:
                return got
        self._fetch_expected()
        src = np.empty(len(offsets), np.int64)
        held = []
        for sh in np.unique(shard_of_row).tolist():
            rows = np.flatnonzero(shard_of_row == sh)
            pieces = self._pieces(int(sh), offsets[rows], nbytes[rows])
            if pieces is not None:  # prefetched: addresses into its pieces, nothing joined
                bufs, g, start = pieces
                held.append(bufs)
                ptrs = np.array([b.ctypes.data for b in bufs], np.int64)
                src[rows] = ptrs[g] + (offsets[rows] - start)
                continue
            buf, offs = self.ranges(int(sh), offsets[rows], nbytes[rows])
            held.append(buf)
            src[rows] = buf.ctypes.data + offs
        return held, src

    def whole(self, k: int) -> np.ndarray:
        buf, _ = self.ranges(k, np.array([0]), np.array([self.sizes[k]]))
        return buf

    def close(self) -> None:
        if self._ahead is not None:
            self._ahead.close()
