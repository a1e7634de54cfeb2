"""Serving speed: random 16-frame windows of 3x112x112 frames in batches of 32, store in page
cache, against (a) a plain memcpy of the same bytes and (b) decoding the same windows on the fly
with every installed decoder (PyAV, torchcodec, decord, OpenCV) — open, seek, decode, resize.

Targets (issue: serve hyperframes at memory speed):
  raw store  >= 0.5x memcpy and >= 300x the fastest on-the-fly decoder
  jpeg store >= 30x the fastest decoder, with the store <= 2x the source video bytes
  a DataLoader with 2 workers is not slower than reading in the main process
Also measured: the cost of ``open_store(path, check="video")``, which verifies each video's
payload checksum on its first read (a ratio to the same first reads without the check; later
reads cost the same as without it).

Sources: copies of the real Kinetics-style clip ../shared/videos/test.mp4 (H.264 340x256,
30 fps, 300 frames, keyframes at 0 and 235), or synthetic H.264 with x264's default keyframe
interval when that folder is absent.
Run: .venv/bin/python benchmarks/bench_read.py
"""

from __future__ import annotations

import argparse
import gc
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import make_sources, write_result
from hyperframes.bench import format_bench, run_bench
from hyperframes.data import HyperframeDataset, loader
from hyperframes.store import open_store


def loader_rate(
    store, *, workers: int, frames: int, batch: int, batches: int, mode: str = "threads"
) -> float:
    # every window of the store (a window every 4 frames), in a shuffled order: random windows
    ds = HyperframeDataset(
        store, sampler="sliding", frames=frames, seed=0, sampler_options={"window_stride": 4}
    )
    dl = loader(ds, batch_size=batch, workers=workers, drop_last=True, mode=mode)
    rates = []
    for epoch in range(3):
        dl.set_epoch(epoch)
        it = iter(dl)
        next(it)  # warm-up: workers started, first batch in flight
        t0, n = time.perf_counter(), 0
        for b in it:
            n += len(b)
            if n >= batches * batch:
                break
        rates.append(n / (time.perf_counter() - t0))
    return statistics.median(rates)


def check_video_cost(path: Path, *, frames: int = 16, windows: int = 1024, repeats: int = 5):
    """What ``check="video"`` costs, store in the page cache, medians of ``repeats``:

    - ``first_read``: one window from every video of a freshly opened store (every read is a
      first read, so every video's payload is hashed), checked over plain;
    - ``windows``: ``windows`` random windows from a freshly opened store (the first read of
      each video pays its check, later ones nothing): an epoch's worth, checked over plain;
    - ``verify_gb_per_s``: payload bytes hashed per second of extra time.
    """
    store = open_store(path)
    n = store.videos.num_frames
    payload = int(store.videos._v["nbytes"].sum())
    rng = np.random.default_rng(0)
    vids = rng.integers(0, len(store), windows)
    starts = (rng.random(windows) * (n[vids] - frames + 1)).astype(np.int64)
    plans = {
        "first_read": [(v, np.arange(frames)) for v in range(len(store))],
        "windows": [(int(v), s + np.arange(frames)) for v, s in zip(vids, starts)],
    }

    def seconds(check, plan) -> float:
        s = open_store(path, check=check)
        t0 = time.perf_counter()
        for v, idx in plan:
            s.read_numpy(v, idx)
        dt = time.perf_counter() - t0
        s.close()
        gc.collect()
        return dt

    out = {"videos": len(store), "payload_bytes": payload}
    for name, plan in plans.items():
        seconds(None, plan)  # warm-up: page cache
        plain = statistics.median(seconds(None, plan) for _ in range(repeats))
        checked = statistics.median(seconds("video", plan) for _ in range(repeats))
        out[name] = {
            "reads": len(plan),
            "seconds_plain": plain,
            "seconds_check_video": checked,
            "check_video_over_plain": checked / plain,
        }
        if name == "first_read":
            out["verify_gb_per_s"] = payload / max(checked - plain, 1e-9) / 1e9
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--copies", type=int, default=12)
    ap.add_argument("--windows", type=int, default=1024)
    ap.add_argument("--budget", type=float, default=15.0, help="seconds per on-the-fly decoder")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="hf-bench-read-"))
    try:
        sources = make_sources(tmp / "data", args.copies)
        result = run_bench(
            tmp / "data",
            frames=16,
            batch=32,
            windows=args.windows,
            size="112x112",
            codecs=("raw", "lz4", "zstd", "jpeg"),
            budget_seconds=args.budget,
            workdir=tmp / "stores",
        )
        print(format_bench(result))
        raw = open_store(tmp / "stores" / "store-raw")
        main_rate = loader_rate(raw, workers=0, frames=16, batch=32, batches=24)
        two_rate = loader_rate(raw, workers=2, frames=16, batch=32, batches=24)
        proc_rate = loader_rate(raw, workers=2, frames=16, batch=32, batches=24, mode="processes")
        check_cost = {
            codec: check_video_cost(tmp / "stores" / f"store-{codec}", windows=args.windows)
            for codec in ("raw", "jpeg")
        }
        rows = result["rows"]
        checks = {
            "raw_vs_memcpy": (rows["store:raw"]["vs_memcpy"], 0.5),
            "raw_vs_fastest_decoder": (rows["store:raw"]["vs_fastest_decoder"], 300),
            "jpeg_vs_fastest_decoder": (rows["store:jpeg"]["vs_fastest_decoder"], 30),
            "jpeg_store_over_source_bytes_at_most": (
                rows["store:jpeg"]["store_over_source_bytes"],
                2.0,
            ),
            "loader_2_workers_vs_main_process": (two_rate / main_rate, 1.0),
        }
        summary = {
            k: {
                "value": v,
                "target": t,
                "met": (v <= t) if k.endswith("_at_most") else (v >= t),
            }
            for k, (v, t) in checks.items()
        }
        write_result(
            "read",
            {
                "sources": sources,
                "loader_windows_per_s": {
                    "main_process": main_rate,
                    "workers_2_threads": two_rate,
                    "workers_2_processes": proc_rate,
                },
                "targets": summary,
                "check_video_cost": check_cost,
                **result,
            },
        )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
