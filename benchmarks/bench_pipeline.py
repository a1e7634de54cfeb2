"""The batch pipeline (issue 20): windows/s of real training input through the loader, side by
side in one run, against a memcpy of the same output bytes through the same loader.

Stores (Python API, ``build_store``, codec raw, 2 build workers), from the real clips of
../shared/videos (test.mp4 340x256, test.avi 320x240, nasa_13013.mp4 320x180, av1_video.mkv
640x360, part_0.mp4 340x256: aspect ratios 4:3, 4:3, 16:9, 16:9, 4:3), copies to 13 files:

  mixed    ``size="128"``: the short side 128, the long side 170-228 (mixed shapes)
  uniform  ``size="112x112"``: every frame 112x112

Loader: ``hyperframes.loader`` with 2 worker threads, batches of 32, windows of T=16 from the
``sliding`` sampler starting every 4th frame, shuffled; one torch intra-op thread (as the
track benchmark does: torch's default of a thread per core contends on this shared 2-core
box); stores in the page cache (one warm-up pass). Variants:

  mixed/memcpy             32x16x3x112x112 bytes copied from RAM into a batch buffer, through
                           the same loader (the anchor of the mixed store's ratios)
  mixed/center             ``CenterCrop(112)``
  mixed/rrc_flip           ``RandomResizedCrop(112)`` + ``RandomHorizontalFlip()``
  mixed/rrc_flip_jitter    the same + ``ColorJitter(0.4, 0.4, 0.4)``
  uniform/memcpy           the uniform store's output bytes copied as above
  uniform/none             the uniform store, no transform

Variants are measured in interleaved rounds (each round runs every variant once over the
same batches, so all see the same machine load); windows/s is the median over rounds and each
ratio the median of the per-round ratios. The machine is shared with other jobs: the ratios
within one run are what this measures, the absolute numbers move with the load (the load
average is recorded).

Run: .venv/bin/python benchmarks/bench_pipeline.py [--quick: a smoke run that writes nothing]
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

from _common import REAL_CLIP, write_result

BATCH, FRAMES, SIZE, START_EVERY = 32, 16, 112, 4
CLIPS = ["test.mp4", "test.avi", "nasa_13013.mp4", "av1_video.mkv", "part_0.mp4"]


def make_sources(root: Path, copies: int = 13) -> str:
    videos = REAL_CLIP.parent
    for i in range(copies):
        name = CLIPS[i % len(CLIPS)]
        dst = root / ("a" if i % 2 else "b") / f"clip_{i:02d}{Path(name).suffix}"
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(videos / name, dst)
    return f"{copies} copies of {', '.join(CLIPS)} (real clips of ../shared/videos)"


class MemcpyDataset:
    """Batches of ``shape`` bytes copied from a RAM array at shifting offsets into a pooled
    batch buffer: what a read at memory speed costs through the same loader."""

    def __init__(self, n: int, window_shape: tuple[int, ...], *, seed: int = 0):
        from hyperframes.data._buffers import BatchBuffers

        self.n, self.window_shape, self.seed, self.epoch = n, window_shape, seed, 0
        per = int(np.prod(window_shape))
        self.src = np.random.default_rng(0).integers(0, 255, 64 * per, dtype=np.uint8)
        self._buffers = BatchBuffers()

    def __len__(self) -> int:
        return self.n

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __getitems__(self, keys):
        out = self._buffers.take((len(keys), *self.window_shape), np.uint8)
        flat = out.numpy().reshape(len(keys), -1)
        per = flat.shape[1]
        for k, (_, item) in enumerate(keys):
            at = (int(item) % 63) * per
            np.copyto(flat[k], self.src[at : at + per])
        return out


def _ident(batch):
    return batch


def loader_rate(make, batches: int, *, seconds: float | None = None) -> float:
    """Windows/s of ``batches`` batches of a fresh loader over ``make()`` (as many epochs as
    that takes: a measurement of a second or more, where one epoch of ~20 batches was ~40 ms
    for the memcpy anchor and moved 1.5x from round to round); with ``seconds``, fewer
    batches (at least 2) once that much time has passed. A dataset that is not a
    ``HyperframeDataset`` returns whole batches (``__getitems__``): collated as they come."""
    from hyperframes.data import HyperframeDataset, loader

    ds = make()
    kw = {} if isinstance(ds, HyperframeDataset) else {"collate_fn": _ident}
    dl = loader(ds, batch_size=BATCH, workers=2, shuffle=True, mode="threads", **kw)
    n, k, epoch, t0 = 0, 0, 0, time.perf_counter()
    done = False
    while not done:  # epoch after epoch (a store's epoch is ~20 batches) until enough
        dl.set_epoch(epoch)
        batches_of = iter(dl)
        for b in batches_of:
            n, k = n + len(b), k + 1
            late = seconds is not None and k >= 2 and time.perf_counter() - t0 >= seconds
            if done := k >= batches or late:
                break
        batches_of.close()  # batches not started are cancelled; wait for those being read,
        if getattr(dl, "_pool", None) is not None:  # so they do not run into what is next
            dl._pool.shutdown(wait=True)
            dl._pool = None
        epoch += 1
    return n / (time.perf_counter() - t0)


def variants(mixed: str, uniform: str) -> dict:
    from hyperframes.data import HyperframeDataset
    from hyperframes.data import transforms as T

    def ds(path, transform=None):
        def make():
            return HyperframeDataset(
                path,
                "sliding",
                frames=FRAMES,
                seed=0,
                transform=transform,
                sampler_options={"window_stride": START_EVERY, "short": "pad"},
            )

        return make

    def aug(jitter: bool):
        steps = [T.RandomResizedCrop(SIZE), T.RandomHorizontalFlip()]
        return T.Compose(steps + ([T.ColorJitter(0.4, 0.4, 0.4)] if jitter else []))

    n_mixed = len(ds(mixed)())
    n_uniform = len(ds(uniform)())
    shape = (FRAMES, 3, SIZE, SIZE)
    return {
        "mixed/memcpy": lambda: MemcpyDataset(n_mixed, shape),
        "mixed/center": ds(mixed, T.CenterCrop(SIZE)),
        "mixed/rrc_flip": ds(mixed, aug(False)),
        "mixed/rrc_flip_jitter": ds(mixed, aug(True)),
        "uniform/memcpy": lambda: MemcpyDataset(n_uniform, shape),
        "uniform/none": ds(uniform),
    }


RATIOS = {
    "center_vs_memcpy": ("mixed/center", "mixed/memcpy", 0.5),
    "rrc_flip_vs_center": ("mixed/rrc_flip", "mixed/center", 0.7),
    "rrc_flip_jitter_vs_center": ("mixed/rrc_flip_jitter", "mixed/center", 0.5),
    "uniform_none_vs_memcpy": ("uniform/none", "uniform/memcpy", 0.8),
}


def measure(mixed: str, uniform: str, *, rounds: int, batches: int) -> dict:
    return interleaved(variants(mixed, uniform), RATIOS, rounds=rounds, batches=batches)


def interleaved(vs: dict, ratios: dict, *, rounds: int, batches: int) -> dict:
    """Loader windows/s of each variant of ``vs`` (name -> dataset maker) in interleaved
    rounds (each round runs every variant once, so all see the same load), their medians,
    and the median per-round ratio of each of ``ratios`` (name -> (variant, anchor, target
    or None))."""
    for make in vs.values():  # warm-up: page cache, buffers, OpenCV's first calls
        loader_rate(make, 2)
    rates: dict[str, list[float]] = {k: [] for k in vs}
    for r in range(rounds):
        for k, make in vs.items():
            rates[k].append(loader_rate(make, batches))
        print(f"round {r + 1}/{rounds}:", {k: round(v[-1]) for k, v in rates.items()}, flush=True)
    out: dict = {
        "windows_per_s": {k: statistics.median(v) for k, v in rates.items()},
        "rounds": rates,
        "ratios": {},
    }
    for name, (a, b, target) in ratios.items():
        ratio = statistics.median(x / y for x, y in zip(rates[a], rates[b]))
        out["ratios"][name] = {
            "ratio": ratio,
            "target": target,
            "met": None if target is None else ratio >= target,
        }
    return out


def build(data: Path, out: Path, size: str) -> str:
    from hyperframes.build import BuildOptions, build_store

    build_store(data, out, BuildOptions(size=size, workers=2), progress=False)
    return str(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--batches", type=int, default=80, help="batches per variant and round")
    ap.add_argument("--quick", action="store_true", help="a smoke run; writes nothing")
    args = ap.parse_args()
    if args.quick:
        args.rounds, args.batches = 1, 3
    import cv2
    import torch

    torch.set_num_threads(1)
    cv2.setNumThreads(1)
    load = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        sources = make_sources(root / "data", copies=5 if args.quick else 13)
        mixed = build(root / "data", root / "mixed", "128")
        uniform = build(root / "data", root / "uniform", f"{SIZE}x{SIZE}")
        load.append(os.getloadavg()[0])
        result = measure(mixed, uniform, rounds=args.rounds, batches=args.batches)
        load.append(os.getloadavg()[0])
    result = {
        "sources": sources,
        "setup": (
            f"loader, 2 worker threads, batches of {BATCH}, T={FRAMES}, sliding windows every "
            f"{START_EVERY}th start, shuffled, one torch thread, OpenCV one thread, page cache"
        ),
        "load_average_1min": load,
        **result,
    }
    for name, r in result["ratios"].items():
        print(f"{name:32s} {r['ratio']:.2f}x (target {r['target']})")
    if not args.quick:
        write_result("pipeline", result)


if __name__ == "__main__":
    main()
