"""Crop during decode (issue 34 item 1): frames/s of a jpeg store serving crops through the
batch pipeline, against decoding the same frames' JPEGs whole, side by side in one run.

Store (Python API, ``build_store``, codec jpeg q90, ``size="128"``: the short side 128, the
long side 170-228) from the real clips of ../shared/videos (test.mp4 340x256, test.avi
320x240, nasa_13013.mp4 320x180, av1_video.mkv 640x360, part_0.mp4 340x256: aspect ratios 4:3
and 16:9). Batches of 32 windows of T=16 from the ``sliding`` sampler (a window every 4th
frame), shuffled, read by ``HyperframeDataset.read_batch`` (the batch pipeline) in one thread;
OpenCV and torch one thread each. Variants:

  anchor            the same frames' JPEGs (those the ``center`` batches read) decoded whole
                    by libjpeg-turbo (simplejpeg, into one reused buffer), one thread
  center            ``CenterCrop(112)``: each frame decoded over its box only
  rrc_flip          ``RandomResizedCrop(112)`` + ``RandomHorizontalFlip()``, the same
  center_whole      ``CenterCrop(112)`` with ``HYPERFRAMES_JPEG_CROP=0``: whole frames
                    decoded, then cropped (the path before this change)
  rrc_flip_whole    the same for ``RandomResizedCrop`` + flip

Variants run in interleaved rounds of one batch each (512 frames, a fraction of a second per
variant, so all see the same machine load); frames/s is the median over rounds, each ratio the
median of the per-round ratios. The machine
is shared with other jobs: the ratios within one run are what this measures.

Run: .venv/bin/python benchmarks/bench_jpeg_crop.py [--quick: a smoke run that writes nothing]
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
from bench_pipeline import make_sources

BATCH, FRAMES, SIZE, START_EVERY = 32, 16, 112, 4
ENV = "HYPERFRAMES_JPEG_CROP"

RATIOS = {  # name: (variant, over, target)
    "center_vs_anchor": ("center", "anchor", 1.3),
    "rrc_flip_vs_anchor": ("rrc_flip", "anchor", 1.0),
    "center_vs_whole": ("center", "center_whole", None),
    "rrc_flip_vs_whole": ("rrc_flip", "rrc_flip_whole", None),
}


def dataset(store: str, transform):
    from hyperframes.data import HyperframeDataset

    return HyperframeDataset(
        store,
        "sliding",
        frames=FRAMES,
        seed=0,
        transform=transform,
        sampler_options={"window_stride": START_EVERY, "short": "pad"},
    )


def batches_of(n: int, count: int) -> list[list[int]]:
    order = np.random.default_rng(0).permutation(n)
    return [order[(k * BATCH) % n :][:BATCH].tolist() for k in range(count)]


def read_rate(ds, batches, *, whole: bool) -> float:
    """Frames/s of ``ds.read_batch`` over ``batches`` in this thread."""
    os.environ[ENV] = "0" if whole else "1"
    try:
        frames, t0 = 0, time.perf_counter()
        for b in batches:
            frames += ds.read_batch(b).frames[:, :, 0, 0, 0].numel()
        return frames / (time.perf_counter() - t0)
    finally:
        os.environ.pop(ENV, None)


def anchor_jpegs(ds, batches) -> list:
    """The stored JPEGs of every frame ``batches`` of ``ds`` read (views of the store)."""
    st, datas = ds.store, []
    for b in batches:
        plan = ds.batch_plan(b)
        for v, idx in zip(plan.videos.tolist(), plan.index):
            datas.extend(st.encoded_frames(v, idx))
    return datas


def anchor_rate(datas: list) -> float:
    import simplejpeg

    buf = np.empty(1 << 22, np.uint8)  # one reused buffer (a frame up to 4 MB)
    t0 = time.perf_counter()
    for d in datas:
        h, w = simplejpeg.decode_jpeg_header(d)[:2]
        simplejpeg.decode_jpeg(d, colorspace="RGB", buffer=buf[: h * w * 3].reshape(h, w, 3))
    return len(datas) / (time.perf_counter() - t0)


def measure(store: str, *, rounds: int, batches: int) -> dict:
    from hyperframes.data import transforms as T

    center = dataset(store, T.CenterCrop(SIZE))
    rrc = dataset(store, T.Compose([T.RandomResizedCrop(SIZE), T.RandomHorizontalFlip()]))
    plan = batches_of(len(center), batches)
    datas = [anchor_jpegs(center, [b]) for b in plan]
    variants = {
        "anchor": lambda b: anchor_rate(datas[b]),
        "center": lambda b: read_rate(center, [plan[b]], whole=False),
        "rrc_flip": lambda b: read_rate(rrc, [plan[b]], whole=False),
        "center_whole": lambda b: read_rate(center, [plan[b]], whole=True),
        "rrc_flip_whole": lambda b: read_rate(rrc, [plan[b]], whole=True),
    }
    for run in variants.values():  # warm-up: page cache, buffers, OpenCV's first calls
        run(0)
    # a round: one batch, every variant in turn (a fraction of a second each, so all see the
    # same load), the round's ratios taken within it
    rates: dict[str, list[float]] = {k: [] for k in variants}
    for r in range(rounds):
        for k, run in variants.items():
            rates[k].append(run(r % len(plan)))
        if (r + 1) % 10 == 0:
            print(
                f"{r + 1}/{rounds} rounds:",
                {k: round(statistics.median(v)) for k, v in rates.items()},
                flush=True,
            )
    out: dict = {
        "frames_per_s": {k: statistics.median(v) for k, v in rates.items()},
        "us_per_frame": {k: 1e6 / statistics.median(v) for k, v in rates.items()},
        "rounds": rates,
        "frames_per_round": len(datas[0]),
        "ratios": {},
    }
    for name, (a, b, target) in RATIOS.items():
        ratio = statistics.median(x / y for x, y in zip(rates[a], rates[b]))
        met = None if target is None else ratio >= target
        out["ratios"][name] = {"ratio": ratio, "target": target, "met": met}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=60, help="rounds of one batch per variant")
    ap.add_argument("--batches", type=int, default=12, help="distinct batches, taken in turn")
    ap.add_argument("--quick", action="store_true", help="a smoke run; writes nothing")
    ap.add_argument("--store", help="an existing jpeg store to read (default: build one)")
    args = ap.parse_args()
    if args.quick:
        args.rounds, args.batches = 2, 2
    import cv2
    import torch

    from hyperframes.build import BuildOptions, build_store
    from hyperframes.store._jpeg_crop import partial_decoder

    torch.set_num_threads(1)
    cv2.setNumThreads(1)
    if partial_decoder() is None:
        sys.exit("the C extension hyperframes.store._jpegcrop is not built: `make setup`")
    load = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        sources = "an existing store"
        store = args.store
        if store is None:
            sources = make_sources(root / "data", copies=5)
            store = str(root / "jpeg")
            options = BuildOptions(size="128", codec="jpeg", workers=2)
            build_store(root / "data", store, options, progress=False)
        load.append(os.getloadavg()[0])
        result = measure(store, rounds=args.rounds, batches=args.batches)
        load.append(os.getloadavg()[0])
    result = {
        "sources": sources,
        "setup": (
            f"jpeg store q90, short side 128; HyperframeDataset.read_batch in one thread, "
            f"batches of {BATCH}, T={FRAMES}, sliding windows every {START_EVERY}th start, "
            "shuffled; the anchor decodes the center batches' frames whole with simplejpeg "
            "(libjpeg-turbo); OpenCV and torch one thread"
        ),
        "load_average_1min": load,
        **result,
    }
    for name, r in result["ratios"].items():
        print(f"{name:22s} {r['ratio']:.2f}x (target {r['target']})")
    if not args.quick:
        write_result("jpeg_crop", result)


if __name__ == "__main__":
    main()
