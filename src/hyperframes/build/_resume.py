"""What a rerun of a build keeps: the parameters it must share with the store it resumes
(:func:`check_params`), the videos stored already whose payload is still intact
(:func:`live_records`), and the number of its run (:func:`next_run`)."""

from __future__ import annotations

import json
import mmap
from pathlib import Path

import xxhash

from .._core._errors import StoreError
from ..inputs import Source, source_stat, sources_named
from ..store.format import BUILD_PARAMS, RECORDS_SUFFIX, SHARD_SUFFIX, SHARDS_DIR
from ._journal import JournalRecord, load_records
from ._options import BuildOptions

__all__ = ["check_params", "finished_shards", "live_records", "next_run"]


def _said(params: dict, key: str) -> str:
    """A build parameter as the refusal shows it: its value, ``none`` (given as none), or
    ``not given`` (left out: the option was not used, e.g. no --fps-max)."""
    if key not in params:
        return f"not given (no --{key.replace('_', '-')})"
    value = params[key]
    return "none" if value is None else repr(value)


def check_params(store: Path, options: BuildOptions) -> None:
    """Refuse to resume ``store`` with other content parameters than it was begun with."""
    path = store / BUILD_PARAMS
    if not path.exists():
        return
    old = json.loads(path.read_text())["content"]
    old.setdefault("on_damaged", "keep")  # stores begun before the option existed
    if old.get("fps") is not None:
        old.setdefault("max_gap", None)  # begun before gaps were bounded: they were filled
    new = options.content()
    diff = {k for k in set(old) | set(new) if old.get(k) != new.get(k)}
    if diff:
        parts = ", ".join(
            f"{k}: stored {_said(old, k)}, asked {_said(new, k)}" for k in sorted(diff)
        )
        raise StoreError(
            f"store {store} was built with other parameters ({parts}); "
            "use another out folder, or the same parameters to resume"
        )


def finished_shards(store: Path) -> dict[str, tuple[list[JournalRecord], dict]]:
    """{shard name: (its records, its summary line)} of the finished shards of ``store``."""
    out = {}
    for p in sorted((store / SHARDS_DIR).glob(f"*{RECORDS_SUFFIX}")):
        name = p.name[: -len(RECORDS_SUFFIX)]
        out[name] = load_records(store / SHARDS_DIR, name)
    return out


def live_records(
    store: Path,
    sources: list[Source],
    *,
    trusted: frozenset[str] = frozenset(),
    suspect: set[str] | None = None,
    need: tuple[str, ...] = (),
) -> dict[str, tuple[str, JournalRecord]]:
    """{source path: (shard, record)} for sources stored already, unchanged since, and whose
    payload is on disk intact.

    What is kept is decided from the disk, not from the records: the shard file must hold the
    record's byte range and those bytes must match the record's ``payload_xxh3_64``. A record
    that fails (shard missing, truncated or damaged; a record without a checksum, from an older
    build) is not kept, so its video is decoded again. Shards in ``trusted`` (written by this
    very run) skip the checksum, not the size check. Shards holding a record that failed are
    added to ``suspect``. The same holds for each track payload the record lists (audio, flow,
    homographies: a damaged track decodes the video again), and a record lacking one of the
    record keys ``need`` (the tracks this build asks for) is not kept.
    """
    shards = finished_shards(store)
    # the sources of the paths recorded (ten million sources are not each made, nor a lookup
    # of every path built, for a store of a few)
    wanted = sources_named(sources, {r.path for records, _ in shards.values() for r in records})
    stats: dict[str, tuple[int, int] | None] = {}
    live: dict[str, tuple[str, JournalRecord]] = {}
    for shard, (records, _) in shards.items():
        payload = _Payload(store / SHARDS_DIR / f"{shard}{SHARD_SUFFIX}", shard in trusted)
        try:
            for rec in records:
                s = wanted.get(rec.path)
                if s is None or (rec.label, rec.split) != (s.label, s.split):
                    continue
                if s.path not in stats:
                    try:
                        stats[s.path] = source_stat(s)
                    except OSError:
                        stats[s.path] = None
                if stats[s.path] != (rec.source_bytes, rec.source_mtime_ns):
                    continue
                if any(key not in rec.tracks for key in need):
                    continue
                if payload.holds(rec):
                    live[s.path] = (shard, rec)  # later shards win (sorted names: later runs)
                elif suspect is not None:
                    suspect.add(shard)
        finally:
            payload.close()
    return live


class _Payload:
    """A finished shard's payload file, memory-mapped on demand to check records against."""

    def __init__(self, path: Path, trusted: bool):
        self.path, self.trusted = path, trusted
        self._map: mmap.mmap | None = None
        try:
            self.size = path.stat().st_size
        except OSError:
            self.size = -1

    def holds(self, rec: JournalRecord) -> bool:
        """Every payload the record lists (frames, tracks) is in the file, intact."""
        try:
            ranges = rec.payload_ranges()
        except (KeyError, TypeError, ValueError):
            return False
        return all(self._holds(off, n, want) for _, off, n, want in ranges)

    def _holds(self, off: int, n: int, want: int | None) -> bool:
        if off < 0 or n < 0 or off + n > self.size:
            return False
        if self.trusted:
            return True
        if want is None:
            return False
        if n == 0:
            return xxhash.xxh3_64_intdigest(b"") == want
        if self._map is None:
            with open(self.path, "rb") as f:
                self._map = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        with memoryview(self._map)[off : off + n] as view:
            return xxhash.xxh3_64_intdigest(view) == want

    def close(self) -> None:
        if self._map is not None:
            self._map.close()
            self._map = None


def next_run(store: Path) -> int:
    """The number of the next build run of ``store`` (one past its shards' highest)."""
    runs = [int(p.name[1:4]) for p in (store / SHARDS_DIR).glob("r*-w*") if p.name[1:4].isdigit()]
    return max(runs, default=-1) + 1
