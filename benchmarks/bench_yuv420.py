"""The yuv420 store (issue 34 item 2) against the raw store, in one run: bytes on disk and
windows/s of training input through the loader, and what lz4 would add on top of the planes.

Stores: ``build_store`` at short side 128 (mixed shapes, 170-228 wide), codec raw and codec
yuv420, from 13 copies of the real clips bench_pipeline uses (test.mp4, test.avi,
nasa_13013.mp4, av1_video.mkv, part_0.mp4: 4:3 and 16:9). Loader as bench_pipeline measures
it (2 worker threads, batches of 32, T=16 sliding windows every 4th start, shuffled, one torch
and one OpenCV thread, page cache warm). Variants, in interleaved rounds (median windows/s;
each ratio the median of the per-round ratios):

  raw/rrc_flip, yuv420/rrc_flip   ``RandomResizedCrop(112)`` + ``RandomHorizontalFlip()``
  raw/center, yuv420/center       ``CenterCrop(112)``

Frame error: the mean absolute difference of every stored frame of the yuv420 store against
the raw store's (uint8 levels), per clip.

Box reads in one thread: ``read_boxes`` of RandomResizedCrop-like boxes (half to all of each
side) of 16-frame windows into 112x112, microseconds per frame, raw against yuv420 (median of
3 interleaved runs): what the loader's ratio comes from.

lz4 on the planes: each yuv420 chunk compressed with lz4 (block, default level), the bytes
saved and the time to decompress a frame (one thread), against the box read's time per
frame: the measurement that decides whether a ``yuv420-lz4`` codec pays.

Run: .venv/bin/python benchmarks/bench_yuv420.py [--quick: a smoke run that writes nothing]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import write_result
from bench_pipeline import BATCH, FRAMES, SIZE, START_EVERY, loader_rate, make_sources

CODECS = ("raw", "yuv420")


def shard_bytes(store: str) -> int:
    return sum(p.stat().st_size for p in (Path(store) / "shards").glob("*.bin"))


def variants(stores: dict) -> dict:
    from hyperframes.data import HyperframeDataset
    from hyperframes.data import transforms as T

    def ds(path, transform):
        return lambda: HyperframeDataset(
            path,
            "sliding",
            frames=FRAMES,
            seed=0,
            transform=transform,
            sampler_options={"window_stride": START_EVERY, "short": "pad"},
        )

    rrc = T.Compose([T.RandomResizedCrop(SIZE), T.RandomHorizontalFlip()])
    out = {}
    for codec, path in stores.items():
        out[f"{codec}/rrc_flip"] = ds(path, rrc)
        out[f"{codec}/center"] = ds(path, T.CenterCrop(SIZE))
    return out


def frame_error(stores: dict) -> dict:
    from hyperframes.store import open_store

    errors = {}
    with open_store(stores["raw"]) as raw, open_store(stores["yuv420"]) as yuv:
        for i in range(len(raw)):
            n = raw.videos.num_frames[i]
            a, b = raw.read_numpy(i, np.arange(n)), yuv.read_numpy(i, np.arange(n))
            name = Path(raw.videos.paths[i]).name
            errors[name] = float(np.abs(a.astype(np.int16) - b).mean())
    return errors


def lz4_on_planes(store: str, frames: int = 400) -> dict:
    import lz4.block

    from hyperframes.store import open_store

    with open_store(store) as s:
        chunks = []
        for i in range(len(s)):
            n = min(s.videos.num_frames[i], frames // len(s) + 1)
            chunks += [bytes(c) for c in s.frame_chunks(i, np.arange(n))]
    packed = [lz4.block.compress(c, store_size=False) for c in chunks]
    t0 = time.perf_counter()
    for c, p in zip(chunks, packed):
        lz4.block.decompress(p, uncompressed_size=len(c))
    per_frame = (time.perf_counter() - t0) / len(chunks)
    return {
        "frames": len(chunks),
        "bytes_ratio": sum(map(len, packed)) / sum(map(len, chunks)),
        "decompress_us_per_frame": per_frame * 1e6,
    }


def box_read_us_per_frame(store: str, windows: int = 200) -> float:
    """One thread: the store's RandomResizedCrop-like box reads, per frame."""
    from hyperframes.store import open_store

    rng = np.random.default_rng(0)
    with open_store(store) as s:
        out = np.empty((1, FRAMES, 3, SIZE, SIZE), np.uint8)
        reqs = []
        for _ in range(windows):
            i = int(rng.integers(len(s)))
            _, h, w = s.videos.shapes[i]
            n = s.videos.num_frames[i]
            bh, bw = int(rng.integers(h // 2, h + 1)), int(rng.integers(w // 2, w + 1))
            box = (int(rng.integers(0, h - bh + 1)), int(rng.integers(0, w - bw + 1)), bh, bw)
            start = int(rng.integers(0, max(n - FRAMES, 0) + 1))
            reqs.append((i, np.minimum(np.arange(start, start + FRAMES), n - 1), box))
        from hyperframes.store._crop import read_boxes

        t0 = time.perf_counter()
        for i, idx, box in reqs:
            read_boxes(s, [(i, idx)], np.asarray([box]), out, filter="linear")
        return (time.perf_counter() - t0) / (windows * FRAMES) * 1e6


def measure(stores: dict, *, rounds: int, batches: int) -> dict:
    vs = variants(stores)
    for make in vs.values():
        loader_rate(make, 2)
    rates: dict[str, list[float]] = {k: [] for k in vs}
    for r in range(rounds):
        for k, make in vs.items():
            rates[k].append(loader_rate(make, batches))
        print(f"round {r + 1}/{rounds}:", {k: round(v[-1]) for k, v in rates.items()}, flush=True)

    def ratio(a, b):
        return statistics.median(x / y for x, y in zip(rates[a], rates[b]))

    return {
        "windows_per_s": {k: statistics.median(v) for k, v in rates.items()},
        "rounds": rates,
        "ratios": {
            "yuv420_rrc_flip_vs_raw": {
                "ratio": ratio("yuv420/rrc_flip", "raw/rrc_flip"),
                "target": 1.0,
            },
            "yuv420_center_vs_raw": {
                "ratio": ratio("yuv420/center", "raw/center"),
                "target": None,
            },
        },
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--batches", type=int, default=60, help="batches per variant and round")
    ap.add_argument("--quick", action="store_true", help="a smoke run; writes nothing")
    args = ap.parse_args()
    if args.quick:
        args.rounds, args.batches = 1, 3
    import cv2
    import torch

    from hyperframes.build import BuildOptions, build_store

    torch.set_num_threads(1)
    cv2.setNumThreads(1)
    load = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        sources = make_sources(root / "data", copies=5 if args.quick else 13)
        stores, build_s = {}, {}
        for codec in CODECS:
            t0 = time.perf_counter()
            opts = BuildOptions(size="128", codec=codec, workers=2)
            build_store(root / "data", root / codec, opts, progress=False)
            build_s[codec] = time.perf_counter() - t0
            stores[codec] = str(root / codec)
        nbytes = {c: shard_bytes(p) for c, p in stores.items()}
        errors = frame_error(stores)
        lz4 = lz4_on_planes(stores["yuv420"])
        one_thread = {c: [] for c in CODECS}  # interleaved, the median of 3
        for _ in range(3):
            for c in CODECS:
                one_thread[c].append(box_read_us_per_frame(stores[c]))
        box_us = {c: statistics.median(v) for c, v in one_thread.items()}
        load.append(os.getloadavg()[0])
        result = measure(stores, rounds=args.rounds, batches=args.batches)
        load.append(os.getloadavg()[0])
    result = {
        "sources": sources,
        "setup": (
            f"loader, 2 worker threads, batches of {BATCH}, T={FRAMES}, sliding windows every "
            f"{START_EVERY}th start, shuffled, one torch thread, OpenCV one thread, page cache; "
            "stores at short side 128"
        ),
        "load_average_1min": load,
        "shard_bytes": nbytes,
        "bytes_vs_raw": {"ratio": nbytes["yuv420"] / nbytes["raw"], "target": 0.55},
        "build_seconds": build_s,
        "mean_abs_error_vs_raw": errors,
        "box_read_us_per_frame_one_thread": box_us,
        "lz4_on_yuv420_chunks": lz4,
        **result,
    }
    print("bytes yuv420/raw", round(result["bytes_vs_raw"]["ratio"], 3))
    for name, r in result["ratios"].items():
        print(f"{name:28s} {r['ratio']:.2f}x (target {r['target']})")
    print("errors", {k: round(v, 2) for k, v in errors.items()}, "lz4", lz4, "box", box_us)
    if not args.quick:
        write_result("yuv420", result)


if __name__ == "__main__":
    main()
