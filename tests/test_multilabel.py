"""Multi-label end to end: multi-hot targets from the store, ``train.task: multilabel``
(BCE-with-logits, sigmoid), mAP and per-class F1, evaluation and prediction by class name."""

from __future__ import annotations

import csv
import math

import numpy as np
import pytest
import torch

from _stores import tiny_train_config
from hyperframes import ConfigError
from hyperframes.build import BuildOptions, build_store
from hyperframes.demo import make_motion_dataset
from hyperframes.infer import Predictor, predict_video
from hyperframes.store import open_store
from hyperframes.train import evaluate, load_checkpoint, load_config, run_training
from hyperframes.train._eval._eval import format_metrics
from hyperframes.train._tasks._multilabel import average_precision, multilabel_metrics

MOTIONS = ("left", "right", "up")


def test_average_precision_is_the_area_under_precision_recall():
    assert average_precision([0.9, 0.8, 0.7, 0.6], [1, 0, 1, 0]) == pytest.approx((1 + 2 / 3) / 2)
    assert average_precision([0.5, 0.5], [1, 0]) == pytest.approx(0.5)  # ties count together
    assert average_precision([0.1, 0.9], [1, 1]) == pytest.approx(1.0)
    assert math.isnan(average_precision([0.3, 0.2], [0, 0]))  # no positive: undefined


def test_multilabel_metrics_per_class_and_means():
    probs = np.array([[0.9, 0.2, 0.1], [0.6, 0.7, 0.2], [0.1, 0.8, 0.3], [0.4, 0.1, 0.2]])
    target = np.array([[1, 0, 0], [1, 1, 0], [0, 1, 0], [1, 0, 0]])
    m = multilabel_metrics(probs, target, ["a", "b", "c"])
    a, b, c = (m["per_class"][k] for k in "abc")
    assert a["ap"] == pytest.approx(1.0) and b["ap"] == pytest.approx(1.0)
    assert math.isnan(c["ap"]) and c["support"] == 0  # no positive: left out of the means
    assert m["map"] == pytest.approx(1.0)
    assert a["precision"] == 1.0 and a["recall"] == pytest.approx(2 / 3)
    assert a["f1"] == pytest.approx(0.8) and b["f1"] == pytest.approx(1.0)
    assert m["macro_f1"] == pytest.approx(0.9) and m["threshold"] == 0.5


@pytest.fixture(scope="module")
def multilabel_store(tmp_path_factory):
    """Motion clips with two classes each: their motion, and ``horizontal`` for left/right,
    listed as segments over the whole clip (the annotation's end is past it: clamped)."""
    root = tmp_path_factory.mktemp("ml")
    make_motion_dataset(
        root / "motion", classes=MOTIONS, videos_per_class=3, frames=12, size=32, seed=2
    )
    rows = ["path,label,split,start,end"]
    for motion in MOTIONS:
        for i in range(3):
            path = root / "motion" / motion / f"{motion}_{i:03d}.mp4"
            split = "val" if i == 0 else "train"
            labels = [motion] + (["horizontal"] if motion != "up" else [])
            rows += [f"{path},{label},{split},0,60" for label in labels]
    (root / "ann.csv").write_text("\n".join(rows) + "\n")
    out = root / "store"
    build_store(root / "ann.csv", out, BuildOptions(size="none"), progress=False)
    return out


def _config(store, **train) -> dict:
    return tiny_train_config(store, **{"task": "multilabel", **train})


def test_a_store_of_multi_label_videos(multilabel_store):
    s = open_store(multilabel_store)
    assert s.classes == ["horizontal", "left", "right", "up"]
    left = s.videos.paths.index(next(p for p in s.videos.paths if p.endswith("left_001.mp4")))
    assert [s.classes[i] for i in s.videos.annotations.video_label_ids(left)] == [
        "horizontal",
        "left",
    ]


def test_a_small_multilabel_run_reports_map_and_predicts_by_name(
    multilabel_store, tmp_path, capsys
):
    run = tmp_path / "run"
    s = run_training(_config(multilabel_store), run, progress=False)
    assert s["task"] == "multilabel" and s["best"]["metric"] == "val_map"
    assert 0.0 <= s["map"] <= 1.0 and s["val_metrics"]["per_class"]["horizontal"]["support"] == 2
    print(f"\nsmall multilabel run: val mAP {s['map']:.3f}, per class AP", end=" ")
    print({k: round(v["ap"], 3) for k, v in s["val_metrics"]["per_class"].items()})
    with open(run / "epochs.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 2 and {"val_map", "val_macro_f1", "train_f1"} <= set(rows[0])
    ck = load_checkpoint(run / "best.pt")
    assert ck["task"] == "multilabel" and ck["classes"] == ["horizontal", "left", "right", "up"]
    # hyperframes eval: mAP at clip and video level, names in the table and the CSV
    r = evaluate(run / "best.pt", clips=1, crops=1, verbose=False)
    assert r["task"] == "multilabel" and math.isfinite(r["map"])
    table = format_metrics(r)
    assert "mAP" in table and "horizontal" in table
    with open(r["predictions_csv"], newline="") as f:
        labels = {row["label"] for row in csv.DictReader(f)}
    assert labels == {"horizontal;left", "horizontal;right", "up"}
    # prediction: independent sigmoid probabilities, by class name
    video = next(p for p in open_store(multilabel_store).videos.paths if "up_000" in p)
    report = predict_video(run / "best.pt", video, stride=2, out=tmp_path / "pred")
    assert {name for name, _ in report.top} <= set(ck["classes"])
    assert "mean probability over the windows: " in report.summary()
    with open(tmp_path / "pred" / "timeline.csv", newline="") as f:
        header = next(csv.reader(f))
    assert [h for h in header if h.startswith("prob:")] == [
        "prob:horizontal",
        "prob:left",
        "prob:right",
        "prob:up",
    ]
    p = Predictor.from_checkpoint(run / "best.pt", stride=2)
    assert p.task == "multilabel"
    rgb = np.zeros((32, 32, 3), np.uint8)
    preds = [q for i in range(8) for q in p.push(rgb + 20 * i, i / 10)] + p.flush()
    got = preds[0]
    want = torch.sigmoid(torch.from_numpy(got.smoothed)).numpy()
    assert np.allclose(got.probs, want, atol=1e-6)


@pytest.mark.parametrize(
    ("train", "model", "message"),
    [
        ({"task": "multi"}, None, r"train\.task: unknown task 'multi'; allowed: null \(the "),
        (
            {"task": "multilabel"},
            {"name": "keyframe_unet"},
            r"train\.task: 'multilabel' does not fit model 'keyframe_unet', whose outputs are "
            r"for segmentation; allowed: null or segmentation",
        ),
        (
            {"task": "multilabel", "mixup": 0.2},
            None,
            r"train\.mixup: 0\.2 but train\.task multilabel does not use it; allowed: 0",
        ),
        ({"task": "multilabel", "balanced": True}, None, r"train\.balanced: class-balanced"),
    ],
)
def test_train_task_is_validated(multilabel_store, train, model, message):
    cfg = _config(multilabel_store)
    cfg["train"] = {k: v for k, v in cfg["train"].items() if k != "task"} | train
    if model is not None:
        cfg["model"] = model
    with pytest.raises(ConfigError, match=message):
        load_config(cfg)
