"""Every transform a batch operation (issue 36): windows/s of the standard augmentation
(``RandomResizedCrop(112)`` + ``RandomHorizontalFlip()``) with and without ``RandomAffine()``
and with and without hue jitter (``ColorJitter(hue=0.1)``), side by side in one run.

Store (Python API, ``build_store``, codec raw, ``size="128"``: the short side 128, mixed
shapes), from copies of the real clips of ../shared/videos (as ``bench_pipeline.py``).

Loader: ``hyperframes.loader`` with 2 worker threads, batches of 32, windows of T=16 from the
``sliding`` sampler starting every 4th frame, shuffled; one torch intra-op thread and one
OpenCV thread; store in the page cache (one warm-up pass). Variants:

  rrc_flip                  the standard augmentation
  rrc_flip_affine           + ``RandomAffine()`` (10 degrees, 10% translation, 0.9-1.1 scale)
  rrc_flip_hue              + ``ColorJitter(hue=0.1)``

Variants run in interleaved rounds (each round runs every variant once, so all see the same
machine load); windows/s is the median over rounds and each ratio the median of the per-round
ratios. The target is >= 0.8x of ``rrc_flip`` with each op added. The machine is shared: the
ratios within one run are what this measures (the load average is recorded).

Run: .venv/bin/python benchmarks/bench_ops.py [--quick: a smoke run that writes nothing]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import write_result
from bench_pipeline import BATCH, FRAMES, SIZE, START_EVERY, build, interleaved, make_sources


def variants(store: str) -> dict:
    from hyperframes.data import HyperframeDataset
    from hyperframes.data import transforms as T

    def ds(extra: list):
        def make():
            steps = [T.RandomResizedCrop(SIZE), T.RandomHorizontalFlip(), *extra]
            return HyperframeDataset(
                store,
                "sliding",
                frames=FRAMES,
                seed=0,
                transform=T.Compose(steps),
                sampler_options={"window_stride": START_EVERY, "short": "pad"},
            )

        return make

    return {
        "rrc_flip": ds([]),
        "rrc_flip_affine": ds([T.RandomAffine()]),
        "rrc_flip_hue": ds([T.ColorJitter(hue=0.1)]),
    }


RATIOS = {
    "affine_vs_rrc_flip": ("rrc_flip_affine", "rrc_flip", 0.8),
    "hue_vs_rrc_flip": ("rrc_flip_hue", "rrc_flip", 0.8),
}


def measure(store: str, *, rounds: int, batches: int) -> dict:
    return interleaved(variants(store), RATIOS, rounds=rounds, batches=batches)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--batches", type=int, default=12, help="batches per variant and round")
    ap.add_argument("--quick", action="store_true", help="a smoke run; writes nothing")
    args = ap.parse_args()
    if args.quick:
        args.rounds, args.batches = 1, 2
    import cv2
    import torch

    torch.set_num_threads(1)
    cv2.setNumThreads(1)
    load = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        sources = make_sources(root / "data", copies=5)
        store = build(root / "data", root / "store", "128")
        load.append(os.getloadavg()[0])
        result = measure(store, rounds=args.rounds, batches=args.batches)
        load.append(os.getloadavg()[0])
    result = {
        "sources": sources,
        "setup": (
            f"loader, 2 worker threads, batches of {BATCH}, T={FRAMES}, {SIZE}x{SIZE} output, "
            f"sliding windows every {START_EVERY}th start, shuffled, one torch thread, OpenCV "
            "one thread, page cache"
        ),
        "load_average_1min": load,
        **result,
    }
    for name, r in result["ratios"].items():
        print(f"{name:24s} {r['ratio']:.2f}x (target {r['target']})")
    if not args.quick:
        write_result("ops", result)


if __name__ == "__main__":
    main()
