"""Masked video pretraining's wait for data with repeated sampling (issue 24, second result).

The same ``video_mae`` pretraining step (T=8 frames 2 apart, 112x112 crops, 90% tube masking,
a 2-block ViT encoder, batches of 4 videos x ``--repeats`` 4 windows = 16 windows) fed

  (a) from a raw store: ``data.repeats: 4``, i.e. :class:`~hyperframes.data._repeats.
      RepeatedWindows` over the random sampler -- 4 independently drawn windows (and
      RandomResizedCrop + flip) of each video, read in one batch by ``hyperframes.loader``
      (worker threads); and
  (b) decoded on the fly with PyAV (``_decoders.pyav_window``: one thread, keyframe seek,
      decoder-side resize) in a ``torch.utils.data.DataLoader`` with the same number of
      worker processes, VideoMAE's way: each item decodes one window of its video once and
      gives 4 augmentations (RandomResizedCrop + flip) of those frames.

Per path: windows/s over the measured steps and the share of step time spent waiting for the
next batch (time blocked in ``next(loader)``; warm-up steps excluded). Both run in the same
process, one after the other, on the same sources.
Run: .venv/bin/python benchmarks/bench_pretrain_wait.py [--steps 12 --warmup 3 --device cpu]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _decoders
from _common import make_sources, write_result

FRAMES, STRIDE, STORED, CROP, VIDEOS, REPEATS = 8, 2, 128, 112, 4, 4
MODEL = {"image_size": CROP, "patch_size": 16, "dim": 96, "depth": 2, "heads": 4}


def augmentation():
    from hyperframes.data.transforms import Compose, RandomHorizontalFlip, RandomResizedCrop

    return Compose([RandomResizedCrop(CROP, scale=(0.5, 1.0)), RandomHorizontalFlip(0.5)])


class DecodeOnceRepeat:
    """VideoMAE's repeated sampling without a store: item i decodes one random window of its
    video with PyAV and returns ``repeats`` augmentations of it, (K, T, C, H, W) uint8."""

    def __init__(self, store_path: Path, repeats: int, items: int, seed: int = 0) -> None:
        from hyperframes.store import open_store

        store = open_store(store_path)
        self.repeats, self.transform, self.items = repeats, augmentation(), []
        rng = np.random.default_rng(seed)
        span = (FRAMES - 1) * STRIDE + 1
        for i in range(items):
            rec = store.videos[i % len(store)]
            s = int(rng.integers(0, rec.num_frames - span + 1))
            idx = np.arange(s, s + span, STRIDE)
            pts, src = rec.pts_seconds[idx], rec.source_frame_indices[idx]
            self.items.append((rec.path, pts, src, rec.stream, tuple(rec.shape[1:])))
        store.close()

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, i):
        import torch

        frames = torch.from_numpy(_decoders.pyav_window(*self.items[i]))
        idx = torch.arange(FRAMES)
        mask = torch.ones(FRAMES, dtype=torch.bool)
        g = torch.Generator().manual_seed(i)
        views = [self.transform(frames, idx, mask, generator=g).frames for _ in range(self.repeats)]
        return torch.stack(views)


def pretrain(batches, *, steps: int, warmup: int, device: str) -> dict:
    """``warmup + steps`` masked-video steps on ``batches`` (uint8 (B, T, C, H, W)); the last
    ``steps`` timed."""
    import torch

    from hyperframes import models
    from hyperframes.train._tasks._masked import MaskedVideoTask

    torch.manual_seed(0)
    net = models.create("video_mae", num_classes=1, frames=FRAMES, **MODEL).to(device)
    opt = torch.optim.AdamW(net.parameters(), lr=1e-3)
    task = MaskedVideoTask(["pixels"])
    mean = torch.tensor([0.45, 0.45, 0.45], device=device).view(1, 1, 3, 1, 1)
    std = torch.tensor([0.225, 0.225, 0.225], device=device).view(1, 1, 3, 1, 1)
    it = iter(batches)
    wait = busy = 0.0
    windows = 0
    for step in range(warmup + steps):
        t0 = time.perf_counter()
        frames = next(it)
        t1 = time.perf_counter()
        frames = frames.to(device, non_blocking=True)
        x = (frames.float().div_(255) - mean) / std
        loss = task.loss(net(x), frames)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        t2 = time.perf_counter()
        if step >= warmup:
            wait += t1 - t0
            busy += t2 - t1
            windows += frames.shape[0]
    return {
        "steps": steps,
        "windows_per_step": windows // steps,
        "windows_per_s": windows / (wait + busy),
        "data_wait_share": wait / (wait + busy),
        "step_seconds": (wait + busy) / steps,
    }


def _store_batches(store: Path, workers: int, seed: int = 0):
    from hyperframes.data import HyperframeDataset, loader
    from hyperframes.data._repeats import RepeatedWindows

    inner = HyperframeDataset(
        store,
        "random",
        FRAMES,
        seed=seed,
        transform=augmentation(),
        sampler_options={"stride": STRIDE},
        clips_per_video=8 * REPEATS,  # 8 items of 4 windows per video an epoch
    )
    ds = RepeatedWindows(inner, REPEATS)
    dl = loader(ds, batch_size=VIDEOS, workers=workers, drop_last=True, seed=seed)
    epoch = 0
    while True:
        dl.set_epoch(epoch)
        for b in dl:
            yield b.frames
        epoch += 1


def _fly_batches(store: Path, workers: int, device: str, items: int):
    import torch.utils.data

    ds = DecodeOnceRepeat(store, REPEATS, items)
    dl = torch.utils.data.DataLoader(
        ds,
        batch_size=VIDEOS,
        shuffle=True,
        num_workers=workers,
        drop_last=True,
        persistent_workers=workers > 0,
        pin_memory=device.startswith("cuda"),
    )
    while True:
        for b in dl:
            yield b.flatten(0, 1)  # (videos, K, T, C, H, W) -> (videos*K, ...)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--copies", type=int, default=12)
    ap.add_argument("--out", default="pretrain_wait", help="results/NAME.json")
    args = ap.parse_args()
    import torch

    from hyperframes.build import BuildOptions, build_store

    tmp = Path(tempfile.mkdtemp(prefix="hf-bench-pretrain-"))
    load = [os.getloadavg()[0]]
    try:
        sources = make_sources(tmp / "data", args.copies)
        store = tmp / "store"
        opts = BuildOptions(size=str(STORED), codec="raw", workers=args.workers)
        build_store(tmp / "data", store, opts, progress=False)
        runs = {}
        need = (args.steps + args.warmup) * VIDEOS
        feeds = {
            f"store:repeats_{REPEATS}": _store_batches(store, args.workers),
            f"decode:pyav_once_x{REPEATS}": _fly_batches(store, args.workers, args.device, need),
        }
        for name, feed in feeds.items():
            runs[name] = pretrain(feed, steps=args.steps, warmup=args.warmup, device=args.device)
            print(name, runs[name], flush=True)
            load.append(os.getloadavg()[0])
        a, b = runs[f"store:repeats_{REPEATS}"], runs[f"decode:pyav_once_x{REPEATS}"]
        write_result(
            args.out,
            {
                "sources": sources,
                "model": "video_mae",
                "model_options": MODEL,
                "frames": FRAMES,
                "frame_stride": STRIDE,
                "stored_short_side": STORED,
                "crop": CROP,
                "videos_per_batch": VIDEOS,
                "repeats": REPEATS,
                "workers": args.workers,
                "device": args.device,
                "torch_threads": torch.get_num_threads(),
                "load_average_1min": load,
                "runs": runs,
                "store_over_decode_windows_per_s": a["windows_per_s"] / b["windows_per_s"],
            },
        )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
