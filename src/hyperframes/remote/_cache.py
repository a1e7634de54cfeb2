"""A node-local cache of shard bytes for stores read from object storage.

Unit: fixed-size, aligned blocks of a shard object (``block_bytes``, 4 MiB by default): block
``b`` of a shard holds bytes ``b*B .. (b+1)*B`` (the last one is shorter). Blocks rather than
whole shards or the exact ranges a window asked for, because:

- a shard may be gigabytes while a window needs kilobytes: blocks cache the hot parts only;
- every reader maps a range to the same block names, whatever its window, so processes of a
  node share entries and never store overlapping copies;
- an entry has a bounded size, so the byte limit is met closely, and eviction frees a known
  amount; 4 MiB keeps the per-entry cost (one file, one request on a miss) small next to the
  payload while a miss fetches little more than a window of compressed frames needs.

Layout of ``cache_dir``::

    .lock            flock(LOCK_EX) while inserting or evicting (one writer at a time)
    blocks/KEY-B     an entry: the block's N bytes, then its seal (below)
    tmp/KEY-B.PID    an entry being written (under the lock: any found is a crash's, removed)

The seal: the xxh3-64 of each piece of ``PIECE_BYTES`` (64 KiB) of the block, 8 bytes each,
then N (8 bytes), then the xxh3-64 of those piece checksums and N (8 bytes). A process maps an
entry once (read-only ``mmap``: reads are views of the page cache, no copy) after checking its
seal, and checks each piece against its checksum the first time it serves it: a warm read costs
one ``stat`` per block, no copy and no hashing. Every read compares the file's inode, size,
mtime and ctime with those it was mapped with; any write to the entry changes them (Linux 6.13+
stamps a change after a check at a finer grain than the clock tick, so even a write right after
a read is seen), and the entry is then mapped and checked again: a byte changed in an entry,
even while a process has it open, is never served (as with a local store's memory map, a
write while a read is decoding the bytes it was just handed is the one thing not caught).

A batch is looked up at once (``resident``): its ranges are grouped by block with numpy, each
block used is checked as above (one ``stat`` for the batch), and the ranges come back as
addresses in the blocks' maps, so a warm batch costs no plan, no request and no copy (but for a
range across a block boundary, whose two parts are joined).

KEY hashes the shard's URL, size, ETag, the block size and the entry layout's version, so a
shard replaced at its URL never meets old blocks, and no name holds anything but a hash and
a number. The ETag is the one listed when the store was opened, and a missing block is
fetched with ``If-Match`` on it (``RemoteShards.fetch``): bytes of a newer object at the
same URL are refused, never stored under the old version's key.

Guarantees (tested in ``tests/test_s3.py``):

- the limit (bytes of entries plus the one being written) is never exceeded: an insert first
  evicts least recently used entries (by mtime, refreshed by a hit at most every
  ``TOUCH_SECONDS`` per process) and is skipped when that cannot free room;
- safe with several processes: no shared state but the files (mapped read-only) and flocks;
- an entry a process has mapped is never evicted: readers take ``LOCK_SH`` on it to check and
  map it, and the map keeps that lock (it holds the open file) until the process lets the map
  go (its LRU touch, or the entry found changed, maps it anew); eviction takes ``LOCK_EX |
  LOCK_NB`` and passes over a busy entry. An entry removed from outside after a process
  mapped it (by hand, a cleaner) is never served from that map again: the next read finds it
  gone, lets the map go (its disk space comes back) and fetches the block again;
- crashes: entries are written to ``tmp/``, fsynced and renamed into ``blocks/``, so a killed
  writer leaves at most a temp file (removed by the next insert), and no piece is served
  before its checksum and the seal check, so a damaged entry is dropped and fetched again;
- a cache that fails (its disk full, its folder removed, any OSError) never fails a read:
  the blocks are read from object storage directly, a ``CacheWarning`` says so once per
  cache object, and the cache is tried again ``RETRY_SECONDS`` later (its folders made
  anew if they were removed).
"""

from __future__ import annotations

import contextlib
import fcntl
import mmap
import os
import threading
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import xxhash

from .._core._errors import ConfigError

__all__ = ["BLOCK_BYTES", "PIECE_BYTES", "BlockCache", "CacheWarning", "entry_bytes"]

BLOCK_BYTES = 4 << 20
#: bytes per checksummed piece of an entry (what a read hashes at least)
PIECE_BYTES = 64 << 10
#: the entry layout's version, part of every key (entries of another layout are never read)
_LAYOUT = 2
#: seconds a failed cache is passed over before it is tried again
RETRY_SECONDS = 60.0
_FOOTER = 16
#: seconds between two refreshes of an entry's mtime by one process (its LRU age)
TOUCH_SECONDS = 5.0
#: what reads return: bytes fetched, or a view of bytes read from an entry (no copy)
Bytes = bytes | memoryview


class CacheWarning(RuntimeWarning):
    """The node cache failed (full disk, removed folder, ...): reads go to object storage."""


def _pieces(n: int) -> int:
    return -(-n // PIECE_BYTES)


def entry_bytes(n: int) -> int:
    """Bytes on disk of an entry holding ``n`` bytes of a block (its bytes and its seal)."""
    return n + 8 * _pieces(n) + _FOOTER


def _seal(data: bytes) -> bytes:
    sums = b"".join(
        xxhash.xxh3_64_digest(data[i : i + PIECE_BYTES]) for i in range(0, len(data), PIECE_BYTES)
    )
    n = len(data).to_bytes(8, "little")
    return sums + n + xxhash.xxh3_64_digest(sums + n)


class _Mapped:
    """An entry mapped in this process: its ``n`` bytes (``view``, and ``array`` at address
    ``addr``), its piece checksums, the stamp of the file it was mapped from, which pieces
    were checked against them."""

    __slots__ = ("addr", "array", "n", "ok", "stamp", "sums", "touched", "view")

    def __init__(self, view: memoryview, n: int, sums: bytes, stamp: tuple | None):
        self.view, self.n, self.sums, self.stamp = view, n, sums, stamp
        self.array = np.frombuffer(view, np.uint8)
        self.addr = self.array.ctypes.data
        self.ok = bytearray(_pieces(n))
        self.touched = time.monotonic()

    def check(self, first: int, last: int) -> bool:
        """Pieces ``first..last`` match their checksums (each hashed once per mapping)."""
        ok, sums, view = self.ok, self.sums, self.view
        if ok.find(0, first, last + 1) < 0:  # (all checked before: no loop over them)
            return True
        for j in range(first, last + 1):
            if ok[j]:
                continue
            a = j * PIECE_BYTES
            if xxhash.xxh3_64_digest(view[a : a + PIECE_BYTES]) != sums[8 * j : 8 * j + 8]:
                return False
            ok[j] = 1
        return True


class BlockCache:
    """Blocks of shard objects kept in ``folder``, at most ``limit`` bytes in all."""

    def __init__(self, folder: str | os.PathLike, limit: int, *, block_bytes: int = BLOCK_BYTES):
        if isinstance(limit, bool) or not isinstance(limit, int) or limit <= 0:
            raise ConfigError(
                f"cache_limit={limit!r}: the cache's size in bytes is required with cache_dir; "
                "allowed: a positive integer (e.g. 50_000_000_000)"
            )
        if isinstance(block_bytes, bool) or not isinstance(block_bytes, int) or block_bytes <= 0:
            raise ConfigError(f"cache block_bytes={block_bytes!r}: allowed: a positive integer")
        self.folder = Path(folder).expanduser()
        self.limit = limit
        self.block_bytes = block_bytes
        self.blocks = self.folder / "blocks"
        self.tmp = self.folder / "tmp"
        try:
            self.blocks.mkdir(parents=True, exist_ok=True)
            self.tmp.mkdir(exist_ok=True)
        except OSError as e:
            raise ConfigError(
                f"cache_dir {self.folder}: cannot be created ({e.strerror})"
            ) from None
        self._lock_path = self.folder / ".lock"
        self.hits = self.misses = self.skipped = 0
        #: blocks read from object storage directly because the cache failed
        self.bypassed = 0
        #: the last failure: (time.monotonic() when it happened, what it was)
        self.failure: tuple[float, str] | None = None
        self._warned = False
        self._seal_max = 8 * _pieces(block_bytes) + _FOOTER
        self._counts = threading.Lock()
        #: entries mapped by this process (a fork inherits them: the maps stay valid)
        self._maps: dict[str, _Mapped] = {}
        #: keys made by this object, by (url, size, etag): a read hashes none
        self._keys: dict[tuple[str, int, str], str] = {}
        #: the entry name of each block of the objects ``resident`` served, by key
        self._names: dict[str, list[str]] = {}
        self._blocks_dir = str(self.blocks) + os.sep

    def key(self, url: str, size: int, etag: str) -> str:
        got = self._keys.get((url, size, etag))
        if got is None:
            text = f"{url}\n{size}\n{etag}\n{self.block_bytes}\n{_LAYOUT}"
            got = self._keys[url, size, etag] = xxhash.xxh3_128_hexdigest(text.encode())
        return got

    # -- entries --------------------------------------------------------------------------
    def get(self, name: str, lo: int = 0, hi: int | None = None) -> Bytes | None:
        """Bytes ``lo:hi`` of the entry (a view of its memory map: no copy), or None when it
        is absent or damaged (a damaged one is removed). The seal is checked when the entry
        is mapped, each piece the first time a read serves it; a later read checks them again
        only when the entry's file changed since (its inode, size, mtime or ctime differ: one
        ``stat`` a read, see the module)."""
        m = self._entry(name)
        if m is None:
            return None
        hi = m.n if hi is None else min(hi, m.n)
        if hi <= lo:
            return b""
        if not self._serves(name, m, lo, hi):
            return None
        return m.view[lo:hi]

    def _entry(self, name: str) -> _Mapped | None:
        """The entry ``name`` as mapped in this process, mapped (again) when its file is new
        or changed since (one ``stat``); None when it is absent or its seal does not check (a
        damaged entry is removed)."""
        path = self._blocks_dir + name  # (a str: no Path object or join per read)
        try:
            st = os.stat(path)
        except FileNotFoundError:
            self._maps.pop(name, None)
            return None
        stamp = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
        m = self._maps.get(name)
        if m is None or m.stamp != stamp:
            m = self._map(path, stamp)
            if m is None:
                self._maps.pop(name, None)
                self._drop_damaged(path, st.st_ino)
                return None
            self._maps[name] = m
        return m

    def _serves(self, name: str, m: _Mapped, lo: int, hi: int) -> bool:
        """Bytes ``lo:hi`` (``lo < hi <= m.n``) of the entry ``m`` (just returned by
        ``_entry``) may be served: their pieces check (else the entry is removed, False).
        The entry's LRU age is refreshed at most every ``TOUCH_SECONDS``."""
        if not m.check(lo // PIECE_BYTES, (hi - 1) // PIECE_BYTES):
            self._maps.pop(name, None)
            assert m.stamp is not None  # (set by _entry; only a touch clears it, below)
            self._drop_damaged(self._blocks_dir + name, m.stamp[0])
            return False
        now = time.monotonic()
        if now - m.touched >= TOUCH_SECONDS:  # recently used: evicted last
            m.touched = now
            with contextlib.suppress(OSError):
                os.utime(self._blocks_dir + name)
            m.stamp = None  # (the touch changes its stamp: the next read maps it again)
        return True

    def resident(
        self,
        parts: Sequence[tuple[str, int, np.ndarray, np.ndarray]],
        *,
        one_buffer: bool = False,
    ) -> tuple[list[np.ndarray], list[np.ndarray]] | None:
        """Ranges of objects served from the blocks that hold them, when every one is in the
        cache: ``parts`` lists ``(key, size, offsets, nbytes)``, ranges ``offsets[j] :
        offsets[j] + nbytes[j]`` of the object of ``size`` bytes keyed ``key``. Returns
        ``(arrays, addresses)``: the buffers the ranges lie in (to hold while the addresses
        are in use) and, per part, the address of each range's first byte.

        Planned for all ranges of a part at once with numpy. Each block used is checked as
        ``get`` checks it, once for the call: one ``stat``, its stamp compared with its map's,
        its pieces from the first to the last byte wanted checked (each hashed once per map);
        a block not mapped yet, changed, damaged or due for its LRU touch goes through
        ``get``'s steps for that span. A range inside one block
        is a view of its map (no copy, no hashing once warm); one across a block boundary is
        its blocks' parts joined (as ``read_ranges`` serves it). None when a range is empty
        or spans more than two blocks, a block is missing or damaged, the cache failed, or
        (``one_buffer``) the ranges would not lie in one buffer: the caller reads them through
        ``read_ranges`` then."""
        if not self._usable():
            return None
        bb = self.block_bytes
        arrays: list[np.ndarray] = []
        addresses = []
        looked = 0
        now = time.monotonic()
        try:
            for key, size, offsets, nbytes in parts:
                if not len(offsets) or nbytes.min() <= 0:
                    return None
                block = offsets // bb
                rel = offsets - block * bb
                end = rel + nbytes  # (past the object's end: found in the loop, z > m.n)
                if end.max() > 2 * bb:  # (a range over more than two blocks)
                    return None
                cross = np.flatnonzero(end > bb)
                if len(cross):  # (these use the next block too, from its first byte)
                    gb = np.concatenate([block, block[cross] + 1])
                    glo = np.concatenate([rel, np.zeros(len(cross), np.int64)])
                    ghi = np.concatenate([np.minimum(end, bb), end[cross] - bb])
                else:
                    gb, glo, ghi = block, rel, end
                if (gb == gb[0]).all():  # (the usual part of a small store: one block)
                    used, lo, hi = gb[:1], glo.min(keepdims=True), ghi.max(keepdims=True)
                else:  # each block's span wanted, from its first to its last byte
                    order = np.argsort(gb, kind="stable")
                    gb = gb[order]
                    heads = np.flatnonzero(np.concatenate([[True], gb[1:] != gb[:-1]]))
                    used = gb[heads]
                    lo = np.minimum.reduceat(glo[order], heads)
                    hi = np.maximum.reduceat(ghi[order], heads)
                if one_buffer and (len(parts) != 1 or len(used) + len(cross) != 1):
                    return None
                names = self._names.get(key)
                if names is None:
                    names = self._names[key] = [f"{key}-{b}" for b in range(-(-size // bb))]
                if used[-1] >= len(names):  # (past the object's end)
                    return None
                maps = []
                for b, a, z in zip(used.tolist(), lo.tolist(), hi.tolist()):
                    name = names[b]
                    m = self._maps.get(name)
                    st = os.stat(self._blocks_dir + name)  # (FileNotFoundError: an OSError)
                    if (
                        m is None
                        or m.stamp != (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
                        or now - m.touched >= TOUCH_SECONDS
                        or z > m.n
                        or not m.check(a // PIECE_BYTES, (z - 1) // PIECE_BYTES)
                    ):  # (get's steps: mapped again, a damaged entry dropped, or touched)
                        m = self._served(name, a, z)
                        if m is None:
                            return None
                    maps.append(m)
                looked += len(maps)
                arrays += [m.array for m in maps]
                bases = np.array([m.addr for m in maps], np.int64)
                if len(maps) == 1:
                    where = bases[0] + rel
                else:
                    where = bases[used.searchsorted(block)] + rel
                for j, i in zip(cross.tolist(), used.searchsorted(block[cross]).tolist()):
                    a, z = int(rel[j]), int(end[j]) - bb  # (its two blocks' parts joined)
                    joined = b"".join((maps[i].view[a:], maps[i + 1].view[:z]))
                    arrays.append(np.frombuffer(joined, np.uint8))
                    where[j] = arrays[-1].ctypes.data
                addresses.append(where)
        except OSError:  # (a block gone; read_ranges meets anything else again: the module)
            return None
        with self._counts:
            self.hits += looked
        return arrays, addresses

    def _served(self, name: str, lo: int, hi: int) -> _Mapped | None:
        """The entry ``name`` when it holds bytes ``lo:hi`` (``lo < hi``) and they may be
        served (``_entry``, ``_serves``), else None."""
        m = self._entry(name)
        if m is None or hi > m.n or not self._serves(name, m, lo, hi):
            return None
        return m

    def _map(self, path: str, stamp: tuple) -> _Mapped | None:
        """The entry at ``path`` mapped, its seal checked (None when it does not check), under
        LOCK_SH so it is not evicted while being mapped (once mapped, an eviction unlinks the
        file and the map stays valid)."""
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_SH)
            st = os.fstat(fd)
            if (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns) != stamp:
                return None  # replaced meanwhile: read again on the next call
            size = st.st_size
            tail = os.pread(fd, min(size, self._seal_max), max(0, size - self._seal_max))
            if len(tail) < _FOOTER:
                return None
            n = int.from_bytes(tail[-16:-8], "little")
            k = _pieces(n)
            if size != entry_bytes(n) or 8 * k + _FOOTER > len(tail):
                return None
            sums = tail[len(tail) - _FOOTER - 8 * k : len(tail) - 8]
            if xxhash.xxh3_64_digest(sums) != tail[-8:]:
                return None
            mm = mmap.mmap(fd, 0, access=mmap.ACCESS_READ) if n else b""
            return _Mapped(memoryview(mm)[:n], n, sums, stamp)
        finally:
            os.close(fd)  # (releases the lock; the map holds the file)

    def _drop_damaged(self, path: str | Path, inode: int) -> None:
        with self._locked(), contextlib.suppress(OSError):
            if os.stat(path).st_ino == inode:  # not a good entry written since
                os.unlink(path)

    @contextlib.contextmanager
    def _locked(self):
        fd = os.open(self._lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def put(self, name: str, data: bytes) -> bool:
        """Store an entry if room can be made for it; False when it cannot (every entry that
        would have to go is in use, or the entry is larger than the limit). An OSError
        (disk full, folder removed) leaves no temp file behind and is raised."""
        need = entry_bytes(len(data))
        if need > self.limit:
            return False
        with self._locked():
            for stale in os.scandir(self.tmp):  # only writers holding the lock make these
                with contextlib.suppress(OSError):
                    os.unlink(stale.path)
            entries = []
            with os.scandir(self.blocks) as listing:  # closed on the early return too
                for e in listing:
                    if e.name == name:
                        return True  # another process put it meanwhile
                    with contextlib.suppress(OSError):
                        st = e.stat()
                        entries.append((st.st_mtime_ns, e.path, st.st_size))
            total = sum(size for _, _, size in entries)
            for _, path, size in sorted(entries):
                if total + need <= self.limit:
                    break
                if self._evict(path):
                    total -= size
                    self._maps.pop(os.path.basename(path), None)
            if total + need > self.limit:
                return False
            tmp = self.tmp / f"{name}.{os.getpid()}"
            try:
                with open(tmp, "wb") as f:
                    f.write(data)
                    f.write(_seal(data))
                    f.flush()
                    os.fsync(f.fileno())
                os.replace(tmp, self.blocks / name)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
                raise
            with contextlib.suppress(OSError):
                dfd = os.open(self.blocks, os.O_RDONLY)
                try:
                    os.fsync(dfd)
                finally:
                    os.close(dfd)
        return True

    @staticmethod
    def _evict(path: str) -> bool:
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False  # a reader holds it
        try:
            os.unlink(path)
        except FileNotFoundError:
            return False
        finally:
            os.close(fd)
        return True

    def used_bytes(self) -> int:
        """Bytes of entries and temp files now (what the limit bounds), counted under the
        writers' lock: unlocked, a scan could see an entry an insert then evicts and the temp
        file it writes next, one entry more than was ever on disk at once."""
        total = 0
        with self._locked():
            for folder in (self.blocks, self.tmp):
                for e in os.scandir(folder):
                    with contextlib.suppress(OSError):
                        total += e.stat().st_size
        return total

    # -- failures -------------------------------------------------------------------------
    def _failed(self, e: OSError) -> None:
        """Note a failure of the cache: it is passed over for ``RETRY_SECONDS``; the first
        one of this object warns."""
        what = f"{type(e).__name__}: {e}"
        with self._counts:
            self.failure = (time.monotonic(), what)
            warn, self._warned = not self._warned, True
        if warn:
            warnings.warn(
                f"the node cache {self.folder} failed ({what}); reading from object storage "
                f"directly, and trying the cache again every {RETRY_SECONDS:.0f} s; free its "
                "disk or fix the folder to cache again",
                CacheWarning,
                stacklevel=4,
            )

    def _usable(self) -> bool:
        f = self.failure
        return f is None or time.monotonic() - f[0] >= RETRY_SECONDS

    # -- ranges through blocks ------------------------------------------------------------
    def read_ranges(
        self,
        *,
        key: str,
        size: int,
        starts: Sequence[int],
        ends: Sequence[int],
        fetch: Callable[[list[int], list[int]], list[bytes]],
    ) -> list[Bytes]:
        """Bytes ``starts[j]:ends[j]`` of an object of ``size`` bytes, through its blocks: the
        blocks not cached are fetched at once (runs of adjacent blocks as one range), cached
        when room can be made, and used either way. When the cache fails (any OSError of
        its files), the ranges are fetched directly (see the module)."""
        if not self._usable():
            return self._bypass(starts, ends, fetch)
        try:
            if self.failure is not None:  # tried again: a removed folder is made anew
                self.blocks.mkdir(parents=True, exist_ok=True)
                self.tmp.mkdir(exist_ok=True)
            return self._through_blocks(key, size, starts, ends, fetch)
        except OSError as e:
            self._failed(e)
            return self._bypass(starts, ends, fetch)

    def _bypass(self, starts, ends, fetch) -> list[Bytes]:
        got = fetch(list(starts), list(ends))
        with self._counts:
            self.bypassed += len(got)
        return got

    def _through_blocks(self, key, size, starts, ends, fetch) -> list[Bytes]:
        bb = self.block_bytes
        span: dict[int, list[int]] = {}  # block -> [lo, hi] needed of it, block-relative
        for s, e in zip(starts, ends):
            if e <= s:
                continue
            b0, b1 = s // bb, (e - 1) // bb
            if b0 == b1:  # (the usual range: inside one block)
                lo, hi = s - b0 * bb, e - b0 * bb
                have = span.get(b0)
                if have is None:
                    span[b0] = [lo, hi]
                else:
                    have[0], have[1] = min(have[0], lo), max(have[1], hi)
                continue
            for b in range(b0, b1 + 1):
                lo, hi = max(s, b * bb) - b * bb, min(e, (b + 1) * bb) - b * bb
                have = span.setdefault(b, [lo, hi])
                have[0], have[1] = min(have[0], lo), max(have[1], hi)
        blocks: dict[int, tuple[int, Bytes]] = {}  # block -> (lo, its bytes lo:hi)
        missing = []
        for b, (lo, hi) in sorted(span.items()):
            data = self.get(f"{key}-{b}", lo, hi)
            if data is None or len(data) != hi - lo:
                missing.append(b)
            else:
                blocks[b] = (lo, data)
        with self._counts:
            self.hits += len(span) - len(missing)
            self.misses += len(missing)
        if missing:
            runs: list[list[int]] = []
            for b in missing:
                if runs and runs[-1][-1] == b - 1:
                    runs[-1].append(b)
                else:
                    runs.append([b])
            got = fetch([r[0] * bb for r in runs], [min((r[-1] + 1) * bb, size) for r in runs])
            failure = None
            for r, data in zip(runs, got):
                for j, b in enumerate(r):
                    block = data[j * bb : (j + 1) * bb]
                    blocks[b] = (0, block)
                    if failure is not None:
                        continue
                    try:
                        stored = self.put(f"{key}-{b}", block)
                    except OSError as err:  # fetched already: used, not cached
                        failure = err
                        continue
                    if not stored:
                        with self._counts:
                            self.skipped += 1
            if failure is not None:
                self._failed(failure)
        out: list[Bytes] = []
        for s, e in zip(starts, ends):
            b0 = s // bb
            if e > s and (e - 1) // bb == b0:  # (inside one block: a view of it)
                lo, data = blocks[b0]
                out.append(data[s - b0 * bb - lo : e - b0 * bb - lo])
                continue
            parts = []
            for b in range(s // bb, (e - 1) // bb + 1) if e > s else ():
                lo, data = blocks[b]
                a, z = max(s, b * bb) - b * bb - lo, min(e, (b + 1) * bb) - b * bb - lo
                parts.append(data[a:z])
            out.append(parts[0] if len(parts) == 1 else b"".join(parts))
        return out
