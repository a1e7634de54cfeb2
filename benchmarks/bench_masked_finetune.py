"""Fine-tuning from masked video pretraining with few labels (issue 24, first result).

The demo's motion set (four classes, left/right/up/down: the answer is in the motion) of
``--per-class`` videos each. A tiny ViT (``video_vit_tiny``: patch 8, dim 64, 2 blocks) is
trained as a classifier on the labels of only ``--labelled`` videos per class, and tested on
all the others (video level, one centred window per video), two ways with the same config:

  (a) from scratch, and
  (b) fine-tuned from ``video_mae`` pretraining (``train.task: masked_video``, tube masking,
      ``data.repeats: 4``) on **all** the videos, their labels unused (``model.pretrained:
      RUN/best.pt`` maps the encoder into the classifier).

``--seeds`` seeds each (the seed of the fine-tuning runs and of the from-scratch runs; one
pretraining). Reported: the held-out accuracy per seed and its mean, for both. A benchmark
(minutes on 2 CPU cores), not a test.
Run: .venv/bin/python benchmarks/bench_masked_finetune.py [--seeds 0 1 2]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import write_result

CLASSES = ("left", "right", "up", "down")
VIT = {"image_size": 32, "patch_size": 8, "dim": 64, "depth": 2, "heads": 4}
#: video_mae's own options in both benchmarks (``--options`` adds to them)
PRETRAIN = {"mask_ratio": 0.75}
STATS = {"mean": [0.5, 0.5, 0.5], "std": [0.25, 0.25, 0.25]}
WINDOWS = {
    "frames": 8,
    "sampler": "random",
    "sampler_options": {"stride": 2},
    "val_sampler": "uniform",
    "val_sampler_options": {"clips": 1, "stride": 2},
    "workers": 0,
}


def _csv(path: Path, rows: list[tuple[str, ...]], header: str) -> Path:
    path.write_text(header + "\n" + "\n".join(",".join(r) for r in rows) + "\n")
    return path


def motion_videos(data: Path, per_class: int, seed: int, scene: str) -> list[Path]:
    """The benchmarks' motion set (24 frames, 32x32) written under ``data``, sorted."""
    from hyperframes.demo import make_motion_dataset

    make_motion_dataset(
        data, classes=CLASSES, videos_per_class=per_class, frames=24, size=32, seed=seed,
        scene=scene,
    )  # fmt: skip
    return sorted(data.rglob("*.mp4"))


def stores(
    root: Path, per_class: int, labelled: int, seed: int, scene: str = "disc"
) -> tuple[Path, Path]:
    """``(unlabelled store of every video, store with a train split of `labelled` videos per
    class and a val split of the rest)``, the same videos in both."""
    from hyperframes.build import BuildOptions, build_store

    videos = motion_videos(root / "motion", per_class, seed, scene)
    every = _csv(root / "all.csv", [(str(v), "all") for v in videos], "path,split")
    rows, seen = [], dict.fromkeys(CLASSES, 0)
    for v in videos:
        label = v.parent.name
        rows.append((str(v), label, "train" if seen[label] < labelled else "val"))
        seen[label] += 1
    few = _csv(root / "few.csv", rows, "path,label,split")
    out = {}
    for name, csv in (("all", every), ("few", few)):
        out[name] = root / f"store_{name}"
        build_store(csv, out[name], BuildOptions(size="none"), progress=False)
    return out["all"], out["few"]


def parse_options(text: str) -> dict:
    """``--options`` ``k=v,k=v``: each value an int, a float, else the text."""

    def value(v: str) -> int | float | str:
        for kind in (int, float):
            try:
                return kind(v)
            except ValueError:
                pass
        return v

    return {k: value(v) for k, v in (kv.split("=") for kv in text.split(",") if kv)}


def pretrain_config(store: Path, epochs: int, options: dict | None = None) -> dict:
    return {
        "data": {
            "store": str(store),
            **WINDOWS,
            "train_split": "all",
            "val_split": "all",  # no labels to leak: reconstruction of the same videos
            "check_leakage": False,
            "repeats": 4,
            "batch_size": 16,
            "clips_per_video": 2,
            "augmentation": {"hflip": 0.0},
            **STATS,
        },
        "model": {"name": "video_mae", "options": {**VIT, **PRETRAIN, **(options or {})}},
        "train": {
            "task": "masked_video",
            "optimizer": "adamw",
            "lr": 0.002,
            "weight_decay": 0.05,
            "epochs": epochs,
            "warmup_epochs": 1,
            "seed": 0,
        },
    }


def classifier_config(
    store: Path, epochs: int, seed: int, pretrained: Path | None, tubelet: int = 1
) -> dict:
    return {
        "data": {
            "store": str(store),
            **WINDOWS,
            "batch_size": 8,
            "clips_per_video": "auto",
            **STATS,
        },
        "model": {
            "name": "video_vit_tiny",
            "pretrained": str(pretrained) if pretrained else None,
            "options": {**VIT, "tubelet": tubelet},
        },
        "train": {
            "optimizer": "adamw",
            "lr": 0.001,
            "weight_decay": 0.05,
            "epochs": epochs,
            "warmup_epochs": 1,
            "seed": seed,
        },
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--per-class", type=int, default=12)
    ap.add_argument("--labelled", type=int, default=4)
    ap.add_argument("--pretrain-epochs", type=int, default=20)
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--options", default="", help="video_mae options over PRETRAIN, k=v,k=v")
    ap.add_argument("--scene", default="disc", choices=("disc", "pan"), help="what moves")
    ap.add_argument("--out", default="masked_finetune", help="results/NAME.json")
    args = ap.parse_args()
    options = {**PRETRAIN, **parse_options(args.options)}
    tubelet = int(options.get("tubelet", 1))
    import torch

    from hyperframes.train import evaluate, run_training

    tmp = Path(tempfile.mkdtemp(prefix="hf-bench-mae-"))
    try:
        every, few = stores(tmp, args.per_class, args.labelled, seed=0, scene=args.scene)
        t0 = time.perf_counter()
        pre = run_training(
            pretrain_config(every, args.pretrain_epochs, options), tmp / "pre", progress=False
        )
        pre_s = time.perf_counter() - t0
        best = tmp / "pre" / "best.pt"
        print(f"pretrained: val masked loss {pre['masked_loss']:.3f} in {pre_s:.0f} s", flush=True)
        runs: dict[str, list] = {"scratch": [], "pretrained": []}
        for seed in args.seeds:
            for name, init in (("scratch", None), ("pretrained", best)):
                cfg = classifier_config(few, args.epochs, seed, init, tubelet)
                out = tmp / f"{name}_{seed}"
                t0 = time.perf_counter()
                run_training(cfg, out, progress=False)
                r = evaluate(out / "last.pt", clips=1, crops=1, verbose=False)
                runs[name].append(
                    {
                        "seed": seed,
                        "held_out_accuracy": r["accuracy"],
                        "seconds": time.perf_counter() - t0,
                    }
                )
                print(name, seed, runs[name][-1], flush=True)
        mean = {k: float(np.mean([r["held_out_accuracy"] for r in v])) for k, v in runs.items()}
        write_result(
            args.out,
            {
                "data": f"demo motion set (scene {args.scene!r}), classes {', '.join(CLASSES)}, {args.per_class} videos "
                "per class (24 frames, 32x32, H.264)",
                "labelled_per_class": args.labelled,
                "held_out_videos": (args.per_class - args.labelled) * len(CLASSES),
                "model": "video_vit_tiny",
                "model_options": {**VIT, "tubelet": tubelet},
                "pretraining": {
                    "videos": args.per_class * len(CLASSES),
                    "epochs": args.pretrain_epochs,
                    "video_mae_options": options,
                    "repeats": 4,
                    "seconds": pre_s,
                    "val_masked_loss": pre["masked_loss"],
                    "val_psnr": pre["val_metrics"].get("psnr"),
                },
                "fine_tune_epochs": args.epochs,
                "evaluated": "last.pt, one centred window per held-out video",
                "torch_threads": torch.get_num_threads(),
                "runs": runs,
                "mean_held_out_accuracy": mean,
                "chance": 1 / len(CLASSES),
            },
        )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
