"""What storing at half the source's frame rate costs (docs/guides/practical.md): make demo's
motion set stored at its own 15 fps and at ``--fps 7.5``; the demo's ``hyperframe_t8`` run
trained on each with the same time span per window (stride 2 at 15 fps, stride 1 at 7.5).
Writes benchmarks/results/fps_half.json: each store's frames and bytes, held-out accuracy.
About 20 minutes on 2 busy cores (two 12-epoch trainings); ``--out`` keeps the work (rerun to
resume a run a time limit stopped)."""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from _common import write_result
from hyperframes.build import BuildOptions, build_store
from hyperframes.demo import make_motion_dataset
from hyperframes.demo._train_demo import DEMO_CLASSES, FULL, demo_configs
from hyperframes.train import run_training


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, default=Path(tempfile.gettempdir()) / "bench_fps")
    out = p.parse_args().out
    data = out / "motion"
    if not data.exists():
        make_motion_dataset(
            data,
            classes=DEMO_CLASSES,
            videos_per_class=FULL["videos_per_class"],
            frames=FULL["motion_frames"],
            size=FULL["motion_size"],
            seed=0,
        )
    runs = {}
    for name, fps, stride in (("full_15fps", None, 2), ("half_7.5fps", 7.5, 1)):
        store = out / f"store_{name}"
        opts = {"size": "none", "workers": 1, **({"fps": fps} if fps else {})}
        build_store(data, store, BuildOptions(**opts), progress=False)
        manifest = json.loads((store / "manifest.json").read_text())
        config = demo_configs(str(store), str(store))["hyperframe_t8"]
        config["data"]["sampler_options"]["stride"] = stride
        config["data"]["val_sampler_options"]["stride"] = stride
        run = out / f"run_{name}"
        summary = run_training(config, run, resume=(run / "last.pt").exists(), progress=False)
        runs[name] = {
            "fps": fps,
            "stride": stride,
            "store_bytes": manifest["store_bytes"],
            "num_frames": manifest["num_frames"],
            "accuracy": summary["accuracy"],
        }
    write_result(
        "fps_half",
        {
            "data": "make demo's motion set: 4 classes x 40 generated videos, 28 frames at 15 "
            "fps, 64x64",
            "run": "hyperframe_t8 (channel_resnet18, T=8, 12 epochs, seed 0), held-out "
            "accuracy at the last epoch",
            "runs": runs,
            "bytes_half_over_full": runs["half_7.5fps"]["store_bytes"]
            / runs["full_15fps"]["store_bytes"],
        },
    )


if __name__ == "__main__":
    main()
