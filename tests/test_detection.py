"""Detection (``train.task: detection``): the key frame's boxes as the target, frames and boxes
transformed together, variable box counts batched, FCOS on the channel layout with its first
conv inflated (repeat / T), COCO mAP and the flicker rate; one tiny detector trained once."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest
import torch

from hyperframes import ConfigError, open_store
from hyperframes import models as M
from hyperframes.build import BuildOptions, build_store
from hyperframes.data._collate import collate_targets
from hyperframes.demo import make_detection_dataset
from hyperframes.demo._detection import make_detection_frames
from hyperframes.infer import export_onnx, predict_video
from hyperframes.train import (
    coco_map,
    evaluate,
    flicker_rate,
    list_tasks,
    load_checkpoint,
    load_config,
    run_training,
)
from hyperframes.train._tasks._detection import DetectionDataset, crop_boxes


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    data = tmp_path_factory.mktemp("det") / "data"
    make_detection_dataset(data, videos=4, frames=10, size=32, fps=8, seed=4)
    out = data.parent / "store"
    build_store(data, out, BuildOptions(size="none", boxes=str(data / "boxes.csv")), progress=False)
    return out


def _config(store, **data) -> dict:
    return {
        "data": {
            "store": str(store),
            "frames": 4,
            "batch_size": 4,
            "workers": 0,
            "sampler": "sliding",
            "sampler_options": {"window_stride": 2},
            "val_sampler_options": {"clips": 2},
            **data,
        },
        "model": {"name": "fcos_channel"},
        "train": {"epochs": 1, "optimizer": "adamw", "lr": 0.003},
    }


@pytest.fixture(scope="module")
def run(store, tmp_path_factory):
    """One tiny detector, trained once for the module."""
    out = tmp_path_factory.mktemp("det_run") / "run"
    summary = run_training(load_config(_config(store)), out, progress=False)
    return out, summary


def test_the_task_and_its_model_are_registered():
    assert "detection" in list_tasks()
    assert M.get_spec("fcos_channel").task == "detection"
    assert M.list(task="detection") == ["fcos_channel"]
    assert M.get_spec("fcos_channel").layout == "channel"


def test_first_conv_is_the_single_frame_conv_repeated_over_t():
    torch.manual_seed(0)
    one = M.create("fcos_channel", num_classes=2, frames=1).eval()
    torch.manual_seed(0)
    four = M.create("fcos_channel", num_classes=2, frames=4).eval()
    w1 = one.detector.backbone.stem[0].weight
    w4 = four.detector.backbone.stem[0].weight
    torch.testing.assert_close(w4, w1.repeat(1, 4, 1, 1) / 4)
    frame = torch.randn(2, 3, 32, 32)
    with torch.no_grad():  # T identical frames: the single-frame detector's answer
        torch.testing.assert_close(four(frame.repeat(1, 4, 1, 1)), one(frame), atol=1e-5, rtol=1e-4)


def test_the_target_is_the_middle_frames_boxes(store):
    st = open_store(store)
    ds = DetectionDataset(st, np.arange(len(st.videos)), frames=4, sampler="sliding")
    for i in range(0, len(ds), 3):
        s = ds[i]
        key = int(np.asarray(s.meta["frame_indices"])[2])  # T // 2
        vid = int(s.meta["video_id"])
        want = st.videos[vid].source_frame_indices.tolist().index(key)
        xyxy, ids = st.index.annotations.boxes_of(vid, want)
        assert s.target.shape == (len(ids), 5)
        torch.testing.assert_close(s.target[:, :4], torch.from_numpy(xyxy))
        assert s.target[:, 4].tolist() == ids.astype(float).tolist()
    st.close()


def test_a_flip_moves_frames_and_boxes_together(store):
    st = open_store(store)
    ids = np.arange(len(st.videos))
    plain = DetectionDataset(st, ids, frames=4, sampler="sliding")
    flipped = DetectionDataset(st, ids, frames=4, sampler="sliding", hflip=1.0)
    a, b = plain[1], flipped[1]
    assert torch.equal(b.frames, a.frames.flip(-1))
    want = a.target.clone()
    want[:, [0, 2]] = 1 - a.target[:, [2, 0]]
    torch.testing.assert_close(b.target, want)
    st.close()


def test_a_crop_scales_frames_and_clips_or_drops_boxes(store):
    boxes = torch.tensor([[0.1, 0.1, 0.3, 0.3, 0.0], [0.4, 0.4, 0.6, 0.6, 1.0]])
    # the crop is the frame's right half: the first box leaves it, the second is cut in two
    got = crop_boxes(boxes, 0.5, 0.0, 0.5, 1.0)
    torch.testing.assert_close(got, torch.tensor([[0.0, 0.4, 0.2, 0.6, 1.0]]))
    assert len(crop_boxes(boxes, 0.56, 0.0, 0.44, 1.0)) == 0  # a fifth inside: dropped
    st = open_store(store)
    ds = DetectionDataset(st, np.arange(len(st.videos)), frames=4, sampler="sliding", size=24)
    for i in range(4):
        s = ds[i]
        assert s.frames.shape[-2:] == (24, 24)
        assert ((s.target[:, :4] >= 0) & (s.target[:, :4] <= 1)).all()
        assert (s.target[:, 2] > s.target[:, 0]).all() and (s.target[:, 3] > s.target[:, 1]).all()
    st.close()


def test_variable_box_counts_are_padded_with_class_minus_one():
    t = collate_targets([torch.ones(2, 5), torch.zeros(0, 5), torch.ones(1, 5)])
    assert t.shape == (3, 2, 5)
    assert (t[1] == -1).all() and (t[2, 1] == -1).all() and (t[0] == 1).all()


def test_coco_map_of_known_cases():
    gt = [np.array([[0.1, 0.1, 0.3, 0.3, 0], [0.5, 0.5, 0.9, 0.9, 1]])]
    perfect = [np.array([[0.1, 0.1, 0.3, 0.3, 0.9, 0], [0.5, 0.5, 0.9, 0.9, 0.8, 1]])]
    m = coco_map(perfect, gt, 2)
    assert m["map"] == pytest.approx(1.0) and m["map50"] == pytest.approx(1.0)
    # class 1's box taller, at IoU 0.58: found at 0.50 and 0.55 only
    shifted = [np.array([[0.1, 0.1, 0.3, 0.3, 0.9, 0], [0.5, 0.5, 0.9, 0.0, 0.8, 1]])]
    shifted[0][1, 3] = 0.5 + 0.16 / (0.4 * 0.58)  # IoU = 0.16 / (0.4 * height) = 0.58
    m = coco_map(shifted, gt, 2)
    assert m["map50"] == pytest.approx(1.0)
    assert m["map"] == pytest.approx((1.0 + 2 / 10) / 2)
    # a false positive scored above the true one: precision 1/2 at recall 1
    fp = [np.array([[0.6, 0.1, 0.8, 0.3, 0.95, 0], [0.1, 0.1, 0.3, 0.3, 0.9, 0]])]
    assert coco_map(fp, [gt[0][:1]], 1)["map50"] == pytest.approx(0.5)


def test_flicker_counts_an_object_gone_for_less_than_a_second():
    box = np.array([[0.2, 0.2, 0.4, 0.4, 0]])
    truths = [box] * 12
    seen = np.array([[0.2, 0.2, 0.4, 0.4, 0.9, 0]])
    none = np.zeros((0, 6))
    times = np.arange(12) / 4  # 4 fps
    steady = flicker_rate([seen] * 12, truths, times=times)
    assert steady["flickers"] == 0 and steady["object_seconds"] == 3
    blink = [seen] * 4 + [none] * 2 + [seen] * 6  # there, gone 0.5 s, there again
    assert flicker_rate(blink, truths, times=times)["flickers"] == 1
    assert flicker_rate(blink, truths, times=times)["flicker"] == pytest.approx(1 / 3)
    gone_long = [seen] * 3 + [none] * 5 + [seen] * 4  # gone 1.25 s: not a flicker
    assert flicker_rate(gone_long, truths, times=times)["flickers"] == 0


def test_training_reports_map_and_eval_reports_map_and_flicker(run, store, tmp_path):
    out, summary = run
    assert summary["task"] == "detection"
    assert summary["best"]["metric"] == "val_map"
    m = summary["val_metrics"]
    assert 0 <= m["map"] <= m["map50"] <= 1
    ckpt = load_checkpoint(out / "best.pt")
    assert ckpt["classes"] == ["disc", "square"] or ckpt.get("task") == "detection"
    result = evaluate(out / "best.pt", store, out=tmp_path / "eval.json", clips=2)
    assert 0 <= result["map"] <= result["map50"] <= 1
    assert "flicker" in result


def test_predict_writes_boxes_per_frame_with_ema_and_draws_them(run, store, tmp_path):
    out, _ = run
    video = sorted((store.parent / "data").glob("*.mp4"))[0]
    plain = predict_video(out / "best.pt", video, out=tmp_path / "p0", ema=0.0, annotate=True)
    smooth = predict_video(out / "best.pt", video, out=tmp_path / "p1", ema=0.8)
    assert tmp_path / "p0" / "annotated.mp4" in plain.outputs
    with open(tmp_path / "p0" / "boxes.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0]) == ["frame", "time", "x1", "y1", "x2", "y2", "label", "score"]
    frames = sorted({int(r["frame"]) for r in rows})
    assert frames[0] == 0  # mirror-padded windows give the first T // 2 frames boxes too
    for r in rows:
        assert 0 <= float(r["x1"]) < float(r["x2"]) <= 1 and r["label"] in ("disc", "square")
    assert json.loads((tmp_path / "p0" / "boxes.json").read_text())[0] == {
        k: (int(v) if k == "frame" else v if k == "label" else float(v)) for k, v in rows[0].items()
    }
    first = [r for r in rows if int(r["frame"]) == frames[0]]
    with open(tmp_path / "p1" / "boxes.csv", newline="") as f:
        smoothed = list(csv.DictReader(f))
    # the first window has nothing before it: the same boxes; later ones are smoothed
    assert [r for r in smoothed if int(r["frame"]) == frames[0]] == first
    assert smoothed != rows
    assert smooth.windows == plain.windows


def test_a_detector_exports_to_onnx(run, tmp_path):
    pytest.importorskip("onnxruntime")
    out, _ = run
    report = export_onnx(out / "best.pt", tmp_path / "det.onnx")
    assert report.max_abs_diff is not None and report.max_abs_diff < 1e-4
    assert report.output_shape[-1] == 2 + 9


def test_the_demo_clips_hide_objects_that_keep_their_boxes():
    frames, boxes = make_detection_frames(frames=24, size=48, rng=np.random.default_rng(0))
    hidden = 0
    for t, frame_boxes in enumerate(boxes):
        assert frame_boxes  # every frame has its objects' boxes, seen or not
        for x1, y1, x2, y2, _ in frame_boxes:
            patch = frames[t, int(y1) + 1 : int(y2) - 1, int(x1) + 1 : int(x2) - 1].astype(int)
            hidden += int(patch.std() < 2)  # one flat grey: behind the occluder
    assert hidden >= 2  # there, gone for frames, there again


def test_demo_takes_the_detection_task():
    from hyperframes.cli._parser import build_parser

    args = build_parser().parse_args(["demo", "--task", "detection", "--quick"])
    assert args.task == "detection"


def test_augmentation_the_boxes_do_not_follow_is_refused(store):
    cfg = _config(store, augmentation={"color_jitter": 0.2})
    with pytest.raises(ConfigError, match=r"data.augmentation.color_jitter: not applied to detec"):
        load_config(cfg)


def test_the_detection_demo_runs_end_to_end_and_scores_both_detectors(tmp_path):
    """The demo's story at its smallest: T=1 and T=4 trained, every held-out frame predicted
    and scored (the numbers themselves are the benchmark's, not asserted here)."""
    from hyperframes.demo import run_detection_demo

    report = run_detection_demo(tmp_path, videos=2, epochs=1, seeds=2)
    assert [r["frames"] for r in report["rows"]] == [1, 4]
    for row in report["rows"]:
        assert 0.0 <= row["map"] <= row["map50"] <= 1.0
        assert row["frames_scored"] > 0 and row["object_seconds"] > 0
        # each T trained once per seed, the row the seeds' mean
        assert [r["seed"] for r in row["seeds"]] == [0, 1]
        assert row["map"] == pytest.approx(np.mean([r["map"] for r in row["seeds"]]))
        assert row["map_std"] == pytest.approx(np.std([r["map"] for r in row["seeds"]]))
        # each detector scored again with predict's EMA on the class scores
        for seed in row["seeds"]:
            assert 0.0 <= seed["ema"]["map"] <= seed["ema"]["map50"] <= 1.0
        assert row["ema_map"] == pytest.approx(np.mean([r["ema"]["map"] for r in row["seeds"]]))
        assert row["ema_flicker"] >= 0.0
    smoothed = json.loads(
        (tmp_path / "detection" / "predict_t4_seed0_ema" / "det_000" / "timeline.json").read_text()
    )
    assert smoothed["meta"]["ema"] == 0.7
    saved = json.loads((tmp_path / "detection" / "report.json").read_text())
    assert saved["rows"] == report["rows"] and saved["setup"]["train_clips"] == 2
    mtimes = {
        t: (tmp_path / "detection" / f"run_t{t}" / "last.pt").stat().st_mtime_ns for t in (1, 4)
    }
    # a second call (a second `make demo`) keeps both finished runs and scores them the same
    again = run_detection_demo(tmp_path, videos=2, epochs=1, seeds=2)
    assert again["rows"] == report["rows"]
    for t in (1, 4):
        assert (tmp_path / "detection" / f"run_t{t}" / "last.pt").stat().st_mtime_ns == mtimes[t]
