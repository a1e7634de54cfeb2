"""``hyperframes demo --task detection``: the channel-fusion article's story, measured.

Objects pass behind occluders (:mod:`~hyperframes.demo._detection`): while hidden they are
still there, and their boxes say so. The same detector (``fcos_channel``, tiny backbone) is
trained twice on the same store: on single frames (T=1) and on hyperframes of T=4 frames (the
target is the middle frame's boxes). Both then predict every frame of held-out clips (drawn
from another seed, never stored) through ``predict``'s path, and are scored against the
clips' boxes: COCO mAP@[.5:.95] and mAP@0.5, and the flicker rate (an object seen, lost for
less than a second, seen again; per tracked object-second), each predicted twice: as the
model gives it, and with ``predict``'s moving average of the class scores (``EMA``, the seed's
smoothing of the outputs). ``OUT/report.json`` holds both rows and the setup; the numbers are
whatever the run gives.

``make demo``'s last step (16 clips, 6 epochs, 3 training seeds; skipped by ``demo
--quick``): it trains six detectors, about a minute on two cores; ``quick`` is a smaller run
for tests.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import time
from pathlib import Path

import numpy as np

from .._core._errors import ConfigError
from ..build import BuildOptions, build_store
from ..infer import predict_video
from ..train import coco_map, flicker_rate, run_training
from ._detection import BOXES_CSV, DETECTION_CLASSES, make_detection_dataset
from ._train_demo import finished_run

__all__ = ["run_detection_demo"]

SIZE, FPS, FRAMES = 48, 8, 24
#: the frames scored for both detectors: those a T=4 window has as its key frame (T // 2 = 2
#: to the last window's), so the two are compared on the same frames
SCORED = range(2, FRAMES - 1)
#: the second scoring of each detector: ``predict``'s moving average of the class scores
#: with this weight of the past (the value the inference docs show; not tuned here)
EMA = 0.7


def _say(msg: str) -> None:
    print(msg, flush=True)


def _truths(folder: Path) -> dict[str, dict[int, np.ndarray]]:
    """The held-out clips' boxes: {video name: {frame: (M, 5)}} from their ``boxes.csv``."""
    out: dict[str, dict[int, list]] = {}
    with open(folder / BOXES_CSV, newline="") as f:
        for r in csv.DictReader(f):
            k = DETECTION_CLASSES.index(r["label"])
            frame = round(float(r["time"]) * FPS)
            row = [float(r[c]) for c in ("x1", "y1", "x2", "y2")] + [k]
            out.setdefault(r["path"], {}).setdefault(frame, []).append(row)
    return {v: {f: np.asarray(b, np.float64) for f, b in d.items()} for v, d in out.items()}


def _score(run: Path, clips: list[Path], truths, out: Path, ema: float = 0.0) -> dict:
    """mAP and flicker of the run's best checkpoint over every predicted frame of ``clips``,
    predicted with ``ema`` (the weight of the past in the class scores' moving average)."""
    dets_all, gts_all = [], []
    flickers, seconds = 0.0, 0.0
    for clip in clips:
        predict_video(run / "best.pt", clip, out=out / clip.stem, stride=1, ema=ema)
        rows: dict[int, list] = {}
        with open(out / clip.stem / "boxes.csv", newline="") as f:
            for r in csv.DictReader(f):
                box = [float(r[c]) for c in ("x1", "y1", "x2", "y2", "score")]
                rows.setdefault(int(r["frame"]), []).append(
                    [*box, DETECTION_CLASSES.index(r["label"])]
                )
        gt = truths[clip.name]
        frames = [f for f in SCORED if f in gt]
        dets = [
            np.asarray(rows.get(f, np.zeros((0, 6))), np.float64).reshape(-1, 6) for f in frames
        ]
        gts = [gt[f] for f in frames]
        dets_all += dets
        gts_all += gts
        fl = flicker_rate(dets, gts, times=np.asarray(frames, np.float64) / FPS)
        flickers += fl["flickers"]
        seconds += fl["object_seconds"]
    m = coco_map(dets_all, gts_all, len(DETECTION_CLASSES))
    return {
        "map": m["map"],
        "map50": m["map50"],
        "flicker": flickers / seconds if seconds else float("nan"),
        "flickers": flickers,
        "object_seconds": seconds,
        "frames_scored": len(gts_all),
    }


def _mean_scores(per_seed: list[dict]) -> dict:
    """The seeds' mean of each score, and the spread (population std) of mAP; the same of the
    scores with EMA as ``ema_*``."""
    keys = ("map", "map50", "flicker", "flickers", "train_seconds")
    mean = {k: float(np.mean([r[k] for r in per_seed])) for k in keys}
    mean["map_std"] = float(np.std([r["map"] for r in per_seed]))
    for k in ("map", "map50", "flicker"):
        mean[f"ema_{k}"] = float(np.mean([r["ema"][k] for r in per_seed]))
    mean["ema_map_std"] = float(np.std([r["ema"]["map"] for r in per_seed]))
    first = per_seed[0]
    return {
        **mean,
        "object_seconds": first["object_seconds"],
        "frames_scored": first["frames_scored"],
    }


def run_detection_demo(
    out: str | os.PathLike = "demo_out",
    *,
    quick: bool = False,
    videos: int | None = None,
    epochs: int | None = None,
    seeds: int | None = None,
) -> dict:
    """Train the T=1 and T=4 detectors and score both on held-out clips (module doc), each
    with ``seeds`` training seeds (1 when ``quick``, else 3: one run of a tiny detector on a
    few clips is mostly its seed); writes and returns ``OUT/detection/report.json``'s
    content: a row per T with the mean over seeds and each seed's scores."""
    t0 = time.perf_counter()
    out = Path(out) / "detection"
    n = videos or (4 if quick else 16)
    epochs = epochs or (1 if quick else 6)
    seeds = seeds or (1 if quick else 3)
    if seeds < 1:
        raise ConfigError(f"seeds must be at least 1, got {seeds}")
    _say(f"[1/4] {n} training clips and {max(2, n // 4)} held-out clips with occluders in {out}")
    make_detection_dataset(out / "train", videos=n, frames=FRAMES, size=SIZE, fps=FPS, seed=0)
    held = make_detection_dataset(
        out / "heldout", videos=max(2, n // 4), frames=FRAMES, size=SIZE, fps=FPS, seed=1
    )
    _say("[2/4] building the store with its boxes")
    store = out / "store"
    boxes = str(out / "train" / BOXES_CSV)
    build_store(out / "train", store, BuildOptions(size="none", boxes=boxes), progress=False)
    truths = _truths(out / "heldout")
    rows = []
    for t in (1, 4):
        _say(f"[3/4] training fcos_channel at T={t} ({epochs} epochs, {seeds} seeds)")
        per_seed = []
        for seed in range(seeds):
            cfg = {
                "data": {
                    "store": str(store),
                    "frames": t,
                    "batch_size": 8,
                    "workers": 0,
                    "sampler": "sliding",
                    "sampler_options": {"window_stride": 1},
                    "val_sampler_options": {"clips": 2},
                    "val_fraction": 0.2,
                    "augmentation": {"hflip": 0.5},
                },
                "model": {"name": "fcos_channel"},
                "train": {"epochs": epochs, "optimizer": "adamw", "lr": 0.003, "seed": seed},
            }
            run = out / (f"run_t{t}" if seed == 0 else f"run_t{t}_seed{seed}")
            summary = finished_run(cfg, run)
            if summary is None:
                shutil.rmtree(run, ignore_errors=True)
                summary = run_training(cfg, run, progress=False)
            else:
                _say(f"  finished by an earlier call, kept (delete {run} to train it again)")
            scores = _score(run, held, truths, out / f"predict_t{t}_seed{seed}")
            smoothed = _score(run, held, truths, out / f"predict_t{t}_seed{seed}_ema", EMA)
            per_seed.append(
                {"seed": seed, "train_seconds": summary["train_seconds"], **scores, "ema": smoothed}
            )
        _say(f"[4/4] predicted every frame of the held-out clips at T={t}")
        row = {"frames": t, **_mean_scores(per_seed), "seeds": per_seed}
        rows.append(row)
        _say(
            f"  T={t}: mAP {row['map']:.3f}  mAP@0.5 {row['map50']:.3f}  flicker "
            f"{row['flicker']:.3f} per object-second (mean of {seeds} seeds); with EMA "
            f"{EMA}: mAP {row['ema_map']:.3f}  flicker {row['ema_flicker']:.3f}"
        )
    report = {
        "setup": {
            "train_clips": n,
            "heldout_clips": len(held),
            "frames_per_clip": FRAMES,
            "size": SIZE,
            "fps": FPS,
            "epochs": epochs,
            "seeds": seeds,
            "model": "fcos_channel (tiny backbone)",
            "scored": "every predicted frame of the held-out clips (stride 1), without EMA "
            f"and, as the ema_* scores, with EMA {EMA} on the class scores",
            "ema": EMA,
        },
        "rows": rows,
        "seconds": time.perf_counter() - t0,
    }
    (out / "report.json").write_text(json.dumps(report, indent=1) + "\n")
    _say(f"wrote {out / 'report.json'} in {report['seconds']:.0f} s")
    return report
