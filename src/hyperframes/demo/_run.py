"""``hyperframes demo``: the end-to-end showcase on synthetic data the project makes itself.

1. generate a labelled motion dataset (real H.264 files; classes differ only by motion),
2. build a store from it (decode once, with progress),
3. print ``info``,
4. measure random-window reads/s from the store against decoding the same windows on the fly,
5. write a PNG of one window, and ``store_report.json`` with the numbers,
6. train and compare (in ``OUT/training``): a channel-hyperframe model (T=8) against the same
   model on single frames (T=1), and the keyframe-aggregator segmenter against a single-frame
   segmenter, and the channel model on all six motion classes from frames only and with optical
   flow planes (a store built with ``flow="dis"``); ``OUT/report.json`` holds the six runs (see
   ``_train_demo``),
7. (the full run, not ``--quick``) detection behind occluders: a single-frame detector (T=1)
   against a hyperframe detector (T=4), mAP and flicker on held-out clips (each also with
   EMA on the class scores), at the size
   measured in ``benchmarks/results/detection_demo.json`` (16 clips, 6 epochs, 3 seeds); under
   ``report.json``'s ``detection`` key (see ``_detection_demo``).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import numpy as np

from .._core._pictures import window_png
from ..bench import plan_windows, time_onthefly, time_store
from ..build import BuildOptions, build_store
from ..store import describe_store, format_store_info, open_store
from ._detection_demo import run_detection_demo
from ._synthetic import make_motion_dataset
from ._train_demo import run_training_demo


def _say(msg: str) -> None:
    print(msg, flush=True)


def measure_reads(store, *, windows: int, frames: int, seed: int = 0) -> dict:
    """Random windows of ``frames`` frames: reads/s from the store vs decoding the same windows
    on the fly with PyAV (the measurements of ``hyperframes bench``, on one plan)."""
    plan = plan_windows(store, windows=windows, frames=frames, seed=seed)
    store_rate = time_store(store, plan, batch=8, repeats=1)
    fly_rate = time_onthefly("pyav", store, plan[: max(4, windows // 16)], budget_seconds=10.0)[
        "windows_per_s"
    ]
    return {
        "window_frames": frames,
        "store_windows_per_s": store_rate,
        "pyav_windows_per_s": fly_rate,
        "speedup": store_rate / fly_rate,
    }


def run_demo(out: str | os.PathLike = "demo_out", *, quick: bool = False) -> int:
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    t_start = time.perf_counter()
    data = out / "motion"
    per_class = 3 if quick else 12
    steps = 6 if quick else 7
    _say(f"[1/{steps}] generating the synthetic motion dataset in {data} ...")
    make_motion_dataset(
        data, videos_per_class=per_class, frames=32, size=64, seed=0, overwrite=False
    )
    _say(f"[2/{steps}] building the store (each video decoded once) ...")
    store_dir = out / "store"
    report = build_store(
        data,
        store_dir,
        BuildOptions(size="none", codec="raw", workers=min(2, os.cpu_count() or 1)),
        progress=True,
    )
    _say(report.summary())
    store = open_store(store_dir)
    _say(f"[3/{steps}] hyperframes info")
    _say(format_store_info(describe_store(store)))
    _say(f"[4/{steps}] random 16-frame windows: store reads vs decoding on the fly (PyAV)")
    reads = measure_reads(store, windows=64 if quick else 512, frames=16)
    _say(
        f"  store   {reads['store_windows_per_s']:10.0f} windows/s\n"
        f"  PyAV    {reads['pyav_windows_per_s']:10.1f} windows/s\n"
        f"  speedup {reads['speedup']:10.0f}x"
    )
    _say(f"[5/{steps}] writing a window of frames as a PNG")
    rec = store.videos[0]
    idx = np.arange(min(8, rec.num_frames))
    png = window_png(
        store.read_numpy(rec, idx),
        out / "window.png",
        captions=[f"{rec.pts_seconds[i]:.2f}s" for i in idx],
        title=f"{Path(rec.path).name} [{rec.label}]",
    )
    result = {
        "store": str(store_dir),
        "build": {
            "videos": report.videos,
            "frames": report.frames,
            "seconds": report.seconds,
            "failed": report.failed,
        },
        "reads": reads,
        "window_png": png,
        "seconds": time.perf_counter() - t_start,
    }
    (out / "store_report.json").write_text(json.dumps(result, indent=1) + "\n")
    _say(f"wrote {png} and {out / 'store_report.json'}")
    _say(
        f"[6/{steps}] training: hyperframes (T=8) vs single frames, keyframe+aggregator vs one "
        "frame, six classes with and without flow"
    )

    training = run_training_demo(out / "training", quick=quick, progress=True)
    report = {**training, "store": result}
    if not quick:
        _say("[7/7] detection behind occluders: T=1 against T=4 on held-out clips")
        report["detection"] = run_detection_demo(out)
    (out / "report.json").write_text(json.dumps(report, indent=1, default=str) + "\n")
    _say(f"wrote {out / 'report.json'} in {time.perf_counter() - t_start:.0f} s")
    return 0
