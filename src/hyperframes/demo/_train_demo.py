"""The training showcase: hyperframes against single frames, on tasks that live in the motion.

:func:`run_training_demo` makes both synthetic sets (:mod:`hyperframes.demo._synthetic`),
builds their stores (``size="none"``), and trains four runs with
:func:`hyperframes.train.run_training`, each in ``DIR/runs/<name>`` (config, logs, plots,
checkpoints):

* ``hyperframe_t8`` -- a channel-hyperframe model (``channel_resnet18``: the T=8 frames
  stacked on the channel axis, (3*8, H, W), through a 2D ResNet-18) on the motion set, whose
  four classes (left, right, up, down) differ only by the direction of motion;
* ``single_frame_t1`` -- the same model and recipe on single frames (T=1): every frame of every
  class has the same distribution, so it can only guess (chance is 1/4);
* ``keyframe_segmentation`` -- the keyframe + aggregator segmenter (``keyframe_unet``: the
  aggregator G reads the T=8 frames around the key frame K_t, the UNet F segments K_t with
  G's map) on the moving-object set, where moving discs are the foreground and their still
  look-alikes background;
* ``single_frame_segmentation`` -- the same network given K_t alone (T=1: G sees only K_t);
* ``six_classes_t8`` -- the channel model on all six classes of the motion set (the four
  translations and the two spins), frames only;
* ``six_classes_flow_t8`` -- the same run with the store's optical flow (``build --flow dis``)
  appended to the channel hyperframe: (3*8 + 2*7, H, W).

It prints a table and writes ``DIR/report.json`` (``{"runs": {name: {accuracy | miou,
train_seconds, data_wait_share, run_dir, ...}}}``) and ``DIR/summary.png``. Accuracy and mIoU
are those of the last epoch on held-out videos (a stratified per-video split, see
:mod:`hyperframes.train`); ``best_*`` is the best epoch's.

Why these four classes and this look: early fusion mixes the T frames *linearly* in its first
convolution, so it sees motion as signed frame differences. The motion set draws a light
disc over a darker background (:mod:`._synthetic`), so those differences have the same sign
pattern in every video, and the ResNet-18 learns the direction within a few epochs. The two
spinning classes of the set (``clockwise``/``anticlockwise``) are left out of the first two
runs: telling them apart needs the local motion related to the disc's centre, which the
channel model did not learn from frames at this scale (it memorised the training videos
instead), whereas a (2+1)D network (``r2plus1d_tiny``, temporal convolutions at every stage)
does. The last two runs ask whether flow planes, which give the motion per pixel with its
sign, let the same early-fusion model separate all six classes.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

from .._core._errors import HyperframesError
from .._core._plots import plot_bars
from ..build import BuildOptions, build_store
from ..train import load_config, run_training
from ._synthetic import MOTION_CLASSES, make_motion_dataset, make_segmentation_dataset

__all__ = ["DEMO_CLASSES", "demo_configs", "run_training_demo"]

#: the motion classes the first two classification runs use (see the module doc)
DEMO_CLASSES = ("left", "right", "up", "down")

#: sizes of the full demo (a few minutes on 2 CPU cores) and of the quick one (tests)
FULL = {
    "videos_per_class": 40,
    "motion_frames": 28,
    "motion_size": 64,
    "cls_epochs": 12,
    "six_videos_per_class": 30,
    "seg_videos": 32,
    "seg_frames": 32,
    "seg_size": 64,
    "seg_epochs": 10,
}
QUICK = {
    "videos_per_class": 4,
    "motion_frames": 20,
    "motion_size": 32,
    "cls_epochs": 2,
    "six_videos_per_class": 3,
    "seg_videos": 6,
    "seg_frames": 16,
    "seg_size": 32,
    "seg_epochs": 2,
}


def _say(msg: str, enabled: bool = True) -> None:
    if enabled:
        print(msg, flush=True)


def demo_configs(
    motion_store: str, seg_store: str, six_store: str | None = None, *, quick: bool = False
) -> dict[str, dict]:
    """The run configs (plain dicts, see ``configs/demo.yaml``); the six-class runs only when
    ``six_store`` (a store of all six motion classes built with ``--flow``) is given."""
    p = QUICK if quick else FULL
    stats = {"mean": [0.5, 0.5, 0.5], "std": [0.25, 0.25, 0.25]}

    def classifier(frames: int, store: str = motion_store, flow: bool = False) -> dict:
        stride = 2  # frames 2 apart: more motion per step, the model picks it up sooner
        return {
            "data": {
                "store": store,
                **({"flow": True} if flow else {}),
                "sampler": "random",
                "sampler_options": {"stride": stride},
                "val_sampler": "uniform",
                "val_sampler_options": {"clips": 1, "stride": stride},
                "frames": frames,
                "batch_size": 4,  # small batches: more steps in the same time
                "val_batch_size": 32,
                **stats,
            },
            "model": {"name": "channel_resnet18"},
            "train": {
                "optimizer": "adamw",
                "lr": 0.002,
                "weight_decay": 0.01,
                "epochs": p["cls_epochs"],
                "warmup_epochs": 1 if not quick else 0,
                "seed": 0,
            },
        }

    def segmenter(frames: int) -> dict:
        return {
            "data": {
                "store": seg_store,
                "sampler": "sliding",
                "sampler_options": {"stride": 1, "window_stride": 2, "short": "pad"},
                "val_sampler": "uniform",
                "val_sampler_options": {"clips": 4, "short": "pad"},
                "frames": frames,
                "batch_size": 16,
                "val_batch_size": 32,
                "augmentation": {"hflip": 0.5},
                **stats,
            },
            "model": {"name": "keyframe_unet", "options": {"base_width": 8}},
            "train": {
                "optimizer": "adamw",
                "lr": 0.005,
                "weight_decay": 0.01,
                "epochs": p["seg_epochs"],
                "warmup_epochs": 0.5 if not quick else 0,
                "class_weights": [1.0, 4.0],  # moving discs cover a few % of the pixels
                "aux_weight": 1.0 if frames > 1 else 0.0,
                "seed": 0,
            },
        }

    runs = {
        "hyperframe_t8": classifier(8),
        "single_frame_t1": classifier(1),
        "keyframe_segmentation": segmenter(8),
        "single_frame_segmentation": segmenter(1),
    }
    if six_store is not None:
        for name, flow in (("six_classes_t8", False), ("six_classes_flow_t8", True)):
            runs[name] = classifier(8, six_store, flow=flow)
            # two spinning discs of one class can be as alike as re-encodes to the 64-bit
            # perceptual signatures (plain discs turning in place over smooth backgrounds);
            # the set is generated, every video drawn on its own: no copy to leak
            runs[name]["data"]["allow_leakage"] = True
    return runs


def _build(data: Path, store: Path, show: bool, **options) -> None:
    report = build_store(
        data, store, BuildOptions(size="none", workers=1, **options), progress=show
    )
    if report.failed:
        raise RuntimeError(report.summary())


def _generate(target: Path, say: str, make, show: bool) -> None:
    """Write a synthetic set into ``target`` all or nothing, saying ``say`` first: a set
    interrupted half-way is left under a ``.partial`` name (and redone next time), never
    where a complete one is expected."""
    if target.exists():
        return
    _say(say, show)
    partial = target.with_name(target.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    make(partial)
    partial.rename(target)


def _data(out: Path, p: dict, show: bool) -> tuple[Path, Path, Path]:
    motion, seg, six = out / "motion", out / "segmentation", out / "motion_six"

    def motion_set(classes, videos_per_class: int, seed: int):
        return lambda d: make_motion_dataset(
            d,
            classes=classes,
            videos_per_class=videos_per_class,
            frames=p["motion_frames"],
            size=p["motion_size"],
            seed=seed,
        )

    def seg_set(d):
        return make_segmentation_dataset(
            d, videos=p["seg_videos"], frames=p["seg_frames"], size=p["seg_size"], seed=0
        )

    say = f"[1/4] generating the motion dataset in {motion} ..."
    _generate(motion, say, motion_set(DEMO_CLASSES, p["videos_per_class"], 0), show)
    _generate(seg, f"      generating the segmentation dataset in {seg} ...", seg_set, show)
    say = f"      generating the six-class motion dataset in {six} ..."
    _generate(six, say, motion_set(MOTION_CLASSES, p["six_videos_per_class"], 1), show)
    _say("[2/4] building the stores (each video decoded once) ...", show)
    _build(motion, out / "motion_store", show)
    _build(seg, out / "segmentation_store", show)
    _build(six, out / "motion_six_store", show, flow="dis")
    return out / "motion_store", out / "segmentation_store", out / "motion_six_store"


def finished_run(cfg: dict, run_dir: Path) -> dict | None:
    """The summary of a run that an earlier call finished in ``run_dir`` with the same config
    (training is seeded, so it would end the same), or None: no summary, one that does not
    read, a run that stopped early or was trained from another config."""
    try:
        summary = json.loads((run_dir / "summary.json").read_text())
        same = load_config(run_dir / "config.yaml") == load_config(cfg)
    except (OSError, ValueError, HyperframesError):
        return None
    if not same or not isinstance(summary, dict) or summary.get("stopped", True):
        return None
    return summary


def _result(name: str, summary: dict) -> dict:
    r = {
        "run_dir": summary["run_dir"],
        "model": summary["model"],
        "frames": summary["frames"],
        "train_seconds": summary["train_seconds"],
        "data_wait_share": summary["data_wait_share"],
        "samples_per_s": summary["samples_per_s"],
        "epochs": summary["epochs"],
        "val_videos": summary["split"]["val_videos"],
        "train_videos": summary["split"]["train_videos"],
    }
    final = summary["final"]
    if summary["task"] == "classification":
        r["accuracy"] = final["val_top1"]  # the last epoch's: no choice made on validation
        r["best_accuracy"] = summary["accuracy"]
        r["chance"] = 1.0 / len(summary["classes"])
    else:
        r["miou"] = final["val_miou"]
        r["best_miou"] = summary["miou"]
    return r


def format_report(runs: dict) -> str:
    lines = [
        f"{'run':<28}{'model':<16}{'T':>3}{'metric':>16}{'train s':>9}{'data wait':>11}",
    ]
    for name, r in runs.items():
        metric = f"acc {r['accuracy']:.3f}" if "accuracy" in r else f"mIoU {r['miou']:.3f}"
        lines.append(
            f"{name:<28}{r['model']:<16}{r['frames']:>3}{metric:>16}"
            f"{r['train_seconds']:>9.1f}{r['data_wait_share']:>10.1%}"
        )
    return "\n".join(lines)


def run_training_demo(
    out_dir: str | os.PathLike = "demo_out", quick: bool = False, *, progress: bool = True
) -> dict:
    """Train the runs described in the module docstring; returns the report dict."""

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    p = QUICK if quick else FULL
    t0 = time.perf_counter()
    motion_store, seg_store, six_store = _data(out, p, progress)
    configs = demo_configs(
        str(motion_store.absolute()),
        str(seg_store.absolute()),
        str(six_store.absolute()),
        quick=quick,
    )
    runs: dict[str, dict] = {}
    _say("[3/4] training (held-out videos measure every run) ...", progress)
    for name, cfg in configs.items():
        run_dir = out / "runs" / name
        summary = finished_run(cfg, run_dir)
        if summary is not None:
            _say(
                f"--- {name}: finished by an earlier call, kept (delete {run_dir} to train it again)",
                progress,
            )
        else:
            shutil.rmtree(run_dir, ignore_errors=True)
            _say(f"--- {name}", progress)
            summary = run_training(cfg, run_dir, progress=progress)
        runs[name] = _result(name, summary)
    report = {
        "runs": runs,
        "quick": quick,
        "seconds": time.perf_counter() - t0,
        "motion_store": str(motion_store),
        "segmentation_store": str(seg_store),
        "six_class_store": str(six_store),
    }
    _say("[4/4] results", progress)
    _say(format_report(runs), True)
    plot_bars(
        # every run has one of the two (_result)
        {n: r["accuracy"] if "accuracy" in r else r["miou"] for n, r in runs.items()},
        out / "summary.png",
        title="held-out accuracy (classification) / mIoU (segmentation)",
        ylabel="accuracy / mIoU",
    )
    report["summary_png"] = str(out / "summary.png")
    (out / "report.json").write_text(json.dumps(report, indent=1, default=float) + "\n")
    _say(
        f"wrote {out / 'report.json'} and {out / 'summary.png'} in {report['seconds']:.0f} s", True
    )
    return report
