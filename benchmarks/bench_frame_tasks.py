"""Frame interpolation and super-resolution on generated clips: PSNR / SSIM of the two tiny
registry models against their baselines, on held-out clips.

Clips: the demo's synthetic motion set (:func:`hyperframes.demo.make_motion_dataset`: a
textured disc translating or spinning over a textured background, real H.264), 64 x 64. The
models train on one generated set (seed 0) and are scored on another (seed 1: other
backgrounds, discs, positions and speeds), stores built at native size.

* interpolation: ``frame_unet`` (U-Net, widths 16/32/64), T = 3 (frames t - 1, t + 1 -> t);
  baseline: the linear blend of the two neighbours.
* super-resolution: ``frame_sr`` (sliding window T = 3, 4 conv layers of 32 channels, pixel
  shuffle), 4x (64 -> 16 px by antialiased bicubic at load, back to 64); baseline: bicubic
  upscaling. Training windows come from the ``motion`` sampler (change score >= its median
  over the training videos' windows); the held-out score is over all evaluated windows.

Both train with AdamW (lr 0.004, cosine) from their zero-initialised corrections (an untrained model is its
baseline) for ``--epochs`` epochs of 20 steps of 16 windows; each held-out video gives 8
evenly spaced windows (``hyperframes eval --clips 8 --crops 1``). PSNR is per frame, averaged
(dB); SSIM with an 11 x 11 Gaussian window (``hyperframes.train._tasks._frame_tasks``).
Run: .venv/bin/python benchmarks/bench_frame_tasks.py [--epochs 6]   (the recorded run: 198 s of
interpolation and 121 s of super-resolution training on 2 shared cores, about 6 minutes in all)
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import write_result

CLASSES = ("left", "right", "up", "down", "clockwise", "anticlockwise")


def _stores(root: Path) -> tuple[Path, Path]:
    from hyperframes.build import BuildOptions, build_store
    from hyperframes.demo import make_motion_dataset

    out = []
    for name, seed, per_class in (("train", 0, 4), ("heldout", 1, 2)):
        videos = root / f"{name}_videos"
        make_motion_dataset(videos, videos_per_class=per_class, frames=24, size=64, seed=seed)
        store = root / f"{name}_store"
        build_store(videos, store, BuildOptions(size="none"), progress=False)
        out.append(store)
    return out[0], out[1]


def _median_motion(store: Path, frames: int) -> float:
    """The median change score of the store's windows of ``frames`` frames."""
    from hyperframes.sampling import create_sampler
    from hyperframes.store import open_store

    st = open_store(store)
    sampler = create_sampler("motion", frames=frames, min_motion=0.0, score="change")
    from hyperframes.sampling import VideoMeta

    metas = [
        VideoMeta(num_frames=v.num_frames, fps=v.fps, change_score=st.change_scores(v))
        for v in st.videos
    ]
    table = sampler._index(metas).table
    return float(
        np.median(np.concatenate([sampler.window_motion(table, v) for v in range(len(metas))]))
    )


def _config(store: Path, task: str, epochs: int, min_motion: float) -> dict:
    data: dict = {
        "store": str(store),
        "frames": 3,
        "batch_size": 16,
        "clips_per_video": "auto",
        "val_sampler_options": {"clips": 2},
        "augmentation": {"hflip": 0.5},
        "workers": 0,
    }
    if task == "interpolation":
        model = {"name": "frame_unet", "options": {"base_width": 16, "depth": 3}}
    else:
        model = {"name": "frame_sr", "options": {"width": 32, "blocks": 3}}
        data["downscale"] = {"factor": 4, "filter": "bicubic"}
        data["sampler"] = "motion"
        data["sampler_options"] = {"min_motion": min_motion, "score": "change"}
    return {
        "data": data,
        "model": model,
        "train": {
            "task": task,
            "epochs": epochs,
            "optimizer": "adamw",
            "lr": 0.004,
            "weight_decay": 0.0,
            "seed": 0,
            "device": "cpu",
        },
        "eval": {"crops": 1},
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epochs", type=int, default=6)
    args = ap.parse_args()
    import torch

    from hyperframes.train import evaluate, run_training

    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    results: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        train_store, heldout = _stores(root)
        min_motion = _median_motion(train_store, 3)
        for task in ("interpolation", "super_resolution"):
            t0 = time.perf_counter()
            run = root / f"run_{task}"
            summary = run_training(
                _config(train_store, task, args.epochs, min_motion), run, progress=False
            )
            seconds = time.perf_counter() - t0
            m = evaluate(
                run / "best.pt",
                heldout,
                split="all",
                clips=8,
                crops=1,
                verbose=False,
                out=root / f"{task}.json",
            )
            results[task] = {
                "model": m["model"],
                "heldout_videos": m["videos"],
                "heldout_windows": m["windows"],
                "psnr": round(m["psnr"], 3),
                "baseline_psnr": round(m["baseline_psnr"], 3),
                "psnr_gain_db": round(m["psnr_gain"], 3),
                "ssim": round(m["ssim"], 4),
                "baseline_ssim": round(m["baseline_ssim"], 4),
                "baseline": m["baseline"],
                "train_steps": summary.get("steps"),
                "train_seconds": round(seconds, 1),
            }
            if task == "super_resolution":
                results[task]["factor"] = 4
                results[task]["min_motion"] = round(min_motion, 4)
            print(task, results[task], flush=True)
    write_result(
        "frame_tasks",
        {
            "clips": "synthetic motion set, 64x64 H.264: train 24 videos (seed 0), held-out "
            "12 videos (seed 1), 24 +- 4 frames each",
            "epochs": args.epochs,
            "torch_threads": torch.get_num_threads(),
            **results,
        },
    )


if __name__ == "__main__":
    main()
