"""The keyframe model's training recipe on the demo's segmentation set: held-out mIoU of each.

The demo's ``keyframe_segmentation`` run (``keyframe_unet``, T=8, 32 generated videos of
moving discs, 64x64, 10 epochs, auxiliary K_t - K_{t-1} loss; ``hyperframes.demo``) on a store
built with ``--flow dis``, trained four ways from the same seed:

* ``joint``: G and F together from the start (the demo's run, the anchor);
* ``two_phase``: ``train.f_first_epochs: 5``, F alone on a frozen G for half the epochs, then
  both (the seed's schedule);
* ``flow_pretrain``: ``train.flow_pretrain_epochs: 3``, G pre-trained on the stored flow at
  the key frame, then joint;
* ``flow_pretrain_two_phase``: both.

Per run: the last epoch's and the best epoch's validation mIoU, and the training seconds.
One seed, one run each: read differences of a few hundredths as noise. Results:
benchmarks/results/keyframe_recipe.json.

Run: .venv/bin/python benchmarks/bench_keyframe_recipe.py [--epochs 10]
"""

from __future__ import annotations

import argparse
import copy
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import write_result

RUNS = {
    "joint": {},
    "two_phase": {"f_first_epochs": 0.5},
    "flow_pretrain": {"flow_pretrain_epochs": 3},
    "flow_pretrain_two_phase": {"f_first_epochs": 0.5, "flow_pretrain_epochs": 3},
}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=10)
    args = p.parse_args()
    from hyperframes.build import BuildOptions, build_store
    from hyperframes.demo import make_segmentation_dataset
    from hyperframes.demo._train_demo import FULL, demo_configs
    from hyperframes.train import run_training

    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        make_segmentation_dataset(
            root / "seg",
            videos=FULL["seg_videos"],
            frames=FULL["seg_frames"],
            size=FULL["seg_size"],
            seed=0,
        )
        store = root / "store"
        build_store(root / "seg", store, BuildOptions(size="none", flow="dis"), progress=False)
        base = demo_configs(str(root / "m"), str(store))["keyframe_segmentation"]
        base["train"]["epochs"] = args.epochs
        for name, recipe in RUNS.items():
            cfg = copy.deepcopy(base)
            for key, value in recipe.items():
                cfg["train"][key] = int(value * args.epochs) if key == "f_first_epochs" else value
            summary = run_training(cfg, root / name, progress=False)
            rows[name] = {
                "train": {k: cfg["train"][k] for k in recipe},
                "miou": round(summary["final"]["val_miou"], 4),
                "best_miou": round(summary["miou"], 4),
                "train_seconds": round(summary["train_seconds"], 1),
            }
            print(name, rows[name], flush=True)
    anchor = rows["joint"]["miou"]
    for r in rows.values():
        r["miou_vs_joint"] = round(r["miou"] - anchor, 4)
    write_result(
        "keyframe_recipe",
        {
            "model": "keyframe_unet base_width 8, T=8",
            "data": f"{FULL['seg_videos']} generated segmentation videos, "
            f"{FULL['seg_frames']} frames, {FULL['seg_size']}x{FULL['seg_size']}, flow dis",
            "epochs": args.epochs,
            "runs": rows,
        },
    )


if __name__ == "__main__":
    main()
