"""MosaicML Streaming's side of ``bench_peers.py``, run by the python of ``.venv-peers`` (``make
bench-peers``: Streaming 0.13 pins numpy<2.2, xxhash<4, transformers<5, which conflict with the
project's lock), on the same machine, in the same run, from the same S3 server.

Input: an ``.npy`` of the plan's decoded windows (N, T, C, H, W uint8) in plan order. Writes
them as MDS shards (uncompressed: the pixels as the other readers serve them) locally and at
the URL, reads every window back in plan order (``StreamingDataset[i]``), checked against the
input: local, cold (shards downloaded into a fresh local folder as they are needed) and warm (a
second dataset on that folder). Prints one JSON line: windows/s and the bytes stored.
Run: .venv-peers/bin/python benchmarks/_peer_streaming.py WINDOWS.npy WORKDIR s3://bucket/prefix
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import numpy as np


def _rate(ds, want: np.ndarray) -> float:
    t0 = time.perf_counter()
    got = [ds[i]["frames"] for i in range(len(want))]
    rate = len(want) / (time.perf_counter() - t0)
    assert all(np.array_equal(g, w) for g, w in zip(got, want)), "Streaming read other pixels"
    return rate


def main() -> None:
    from streaming import MDSWriter, StreamingDataset
    from streaming.base.util import clean_stale_shared_memory

    windows, work, url = np.load(sys.argv[1]), Path(sys.argv[2]), sys.argv[3].rstrip("/")
    os.environ.setdefault("S3_ENDPOINT_URL", os.environ.get("AWS_ENDPOINT_URL", ""))
    shape = ",".join(str(n) for n in windows.shape[1:])
    local = work / "mds"
    columns = {"frames": f"ndarray:uint8:{shape}"}
    with MDSWriter(out=(str(local), url), columns=columns, keep_local=True) as out:
        for w in windows:
            out.write({"frames": w})
    stored = sum(f.stat().st_size for f in local.rglob("*") if f.is_file())
    rates = {"local": _rate(StreamingDataset(local=str(local), shuffle=False), windows)}
    clean_stale_shared_memory()
    cache = work / "mds-cache"
    rates["cold"] = _rate(StreamingDataset(remote=url, local=str(cache), shuffle=False), windows)
    clean_stale_shared_memory()
    rates["warm"] = _rate(StreamingDataset(remote=url, local=str(cache), shuffle=False), windows)
    print(json.dumps({"windows_per_s": rates, "bytes_stored": stored}))


if __name__ == "__main__":
    main()
