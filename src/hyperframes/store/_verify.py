"""Recompute every checksum of a store and name each file that does not match."""

from __future__ import annotations

import os
from pathlib import Path

from .._errors import StoreError
from ._format import MANIFEST, SHARDS_DIR
from ._reader import _load_json
from ._shard import checksum_file


def verify_store(path: str | os.PathLike) -> list[str]:
    """Problems found (empty when the store is intact). Reads every byte once."""
    store = Path(path)
    if not (store / MANIFEST).exists():
        raise StoreError(f"{store}: no store here ({MANIFEST} is missing)")
    m = _load_json(store / MANIFEST)
    rows = [(store / r["name"], r) for r in m["index"]]
    rows += [(store / SHARDS_DIR / r["name"], r) for r in m["shards"]]
    problems = []
    for f, row in rows:
        if not f.exists():
            problems.append(f"{f}: missing")
            continue
        size = f.stat().st_size
        if size != row["bytes"]:
            problems.append(f"{f}: {size} bytes, expected {row['bytes']} (truncated or damaged)")
            continue
        got = checksum_file(f)
        if got != row["checksum"]:
            problems.append(
                f"{f}: checksum {got} does not match the manifest's {row['checksum']} "
                f"({m.get('checksum_algorithm')})"
            )
    return problems
