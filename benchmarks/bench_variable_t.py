"""Train at T=16, evaluate at T=8 (seed 001 section 6.4): accuracy before and after
``hyperframes recalibrate``, beside the seed's other remedies.

On a small demo set (``hyperframes.demo.make_motion_dataset``: moving squares, 3 classes, a
store at 32x32), the 3D CNN ``r2plus1d_tiny`` (BatchNorm) is trained at T=16 and evaluated on
the held-out videos (video-level top-1, ``clips`` windows per video, one crop):

  * at T=16 (the anchor: its own T), at T=8 as it is (``eval --frames 8``: the running
    statistics of 16-frame clips), and at T=8 after re-calibration (``recalibrate --frames 8``);
  * the same network with ``model.norm: group`` (no running statistics) at T=16 and T=8;
  * trained with ``data.frames: [8, 16]`` (T drawn per batch) at T=16 and T=8.

The numbers are what they are, on a set this small they move with the seed: ``--seeds`` runs
several and reports each. Results: benchmarks/results/variable_t.json.
Run: .venv/bin/python benchmarks/bench_variable_t.py [--seeds 0 --epochs 8]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import write_result

CLASSES = ("left", "right", "up")


def _config(store: str, frames, seed: int, epochs: int, norm: str | None) -> dict:
    model: dict = {"name": "r2plus1d_tiny", "options": {"base_width": 8}}
    if norm is not None:
        model["norm"] = norm
    return {
        "data": {
            "store": store,
            "frames": frames,
            "batch_size": 8,
            "workers": 0,
            "val_fraction": 0.34,
            "clips_per_video": 4,
            "val_sampler_options": {"clips": 1},
        },
        "model": model,
        "train": {"epochs": epochs, "optimizer": "adamw", "lr": 0.003, "seed": seed},
    }


def _top1(run: Path | str, frames: int, clips: int) -> float:
    from hyperframes.train import evaluate

    r = evaluate(run, split="val", clips=clips, crops=1, frames=frames, verbose=False)
    return round(float(r["video_level"]["top1"]), 4)


def one_seed(store: str, work: Path, seed: int, epochs: int, clips: int) -> dict:
    from hyperframes.train import recalibrate, run_training

    out: dict = {"seed": seed}
    t0 = time.perf_counter()
    bn = work / f"bn_{seed}"
    run_training(_config(store, 16, seed, epochs, None), bn, progress=False)
    out["batch_norm"] = {"T16": _top1(bn, 16, clips), "T8": _top1(bn, 8, clips)}
    rc = recalibrate(bn, frames=8, batches=40, device="cpu")
    out["batch_norm"]["T8_recalibrated"] = _top1(rc.path, 8, clips)
    gn = work / f"gn_{seed}"
    run_training(_config(store, 16, seed, epochs, "group"), gn, progress=False)
    out["group_norm"] = {"T16": _top1(gn, 16, clips), "T8": _top1(gn, 8, clips)}
    mixed = work / f"mixed_{seed}"
    run_training(_config(store, [8, 16], seed, epochs, None), mixed, progress=False)
    out["frames_8_16"] = {"T16": _top1(mixed, 16, clips), "T8": _top1(mixed, 8, clips)}
    out["seconds"] = round(time.perf_counter() - t0, 1)
    print(out, flush=True)
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, nargs="+", default=[0])
    p.add_argument("--epochs", type=int, default=8)
    p.add_argument("--videos", type=int, default=12, help="videos per class")
    p.add_argument("--clips", type=int, default=4, help="windows per video at evaluation")
    args = p.parse_args()
    from hyperframes.build import BuildOptions, build_store
    from hyperframes.demo import make_motion_dataset

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        make_motion_dataset(
            work / "videos", classes=CLASSES, videos_per_class=args.videos, frames=32, size=32
        )
        build_store(work / "videos", work / "store", BuildOptions(size="none"), progress=False)
        runs = [one_seed(str(work / "store"), work, s, args.epochs, args.clips) for s in args.seeds]
    write_result(
        "variable_t",
        {
            "what": "r2plus1d_tiny trained at T=16 on a 3-class motion demo set (32x32, "
            f"{args.videos} videos per class, a third held out), video-level top-1 on the "
            f"held-out videos ({args.clips} clips, 1 crop) at T=16 and T=8; T8_recalibrated: "
            "after hyperframes recalibrate --frames 8 (40 batches of the training split)",
            "epochs": args.epochs,
            "runs": runs,
        },
    )


if __name__ == "__main__":
    main()
