"""Training, evaluation, prediction and export say what they did, in names nobody has to guess:
eval's splits, frame rates and output files, resuming, the predict timeline's frame numbers, one
ONNX file that carries its contract, top-k and plot ticks. Each check runs the command line
(``hyperframes.cli.main``) on a tiny store and a one-epoch run."""

from __future__ import annotations

import csv
import itertools
import json
import shutil

import numpy as np
import pytest
import yaml

from _stores import tiny_train_config
from hyperframes.build import BuildOptions, build_store
from hyperframes.checkpoint._checkpoint import rebuild_model
from hyperframes.cli import main
from hyperframes.demo import make_motion_dataset
from hyperframes.demo._synthetic import make_motion_frames, write_h264
from hyperframes.store import open_store
from hyperframes.train import load_checkpoint
from hyperframes.train._config._data import make_dataset
from hyperframes.train._config._load import config_from_dict
from hyperframes.train._loop._schedule import lr_at
from hyperframes.train._tasks._metrics import classification_metrics

CLASSES = ("left", "right", "up")
STEPS_PER_EPOCH = 3  # 6 training videos (the generated split), batch 2


@pytest.fixture(scope="module")
def motion_data(tmp_path_factory):
    root = tmp_path_factory.mktemp("honest") / "motion"
    make_motion_dataset(root, classes=CLASSES, videos_per_class=3, frames=12, size=32, seed=1)
    return root  # 15 fps videos


@pytest.fixture(scope="module")
def store15(motion_data, tmp_path_factory):
    out = tmp_path_factory.mktemp("honest") / "store15"
    build_store(motion_data, out, BuildOptions(fps=15, size="none"), progress=False)
    return out


@pytest.fixture(scope="module")
def store30(tmp_path_factory):
    """The same kind of videos, filmed at 30 fps and stored at their own rate."""
    data = tmp_path_factory.mktemp("honest") / "motion30"
    make_motion_dataset(
        data, classes=CLASSES, videos_per_class=3, frames=24, size=32, seed=2, fps=30
    )
    out = tmp_path_factory.mktemp("honest") / "store30"
    build_store(data, out, BuildOptions(size="none"), progress=False)
    return out


def _config(store, **train) -> dict:
    return tiny_train_config(store, **{"epochs": 1, **train})


def _train(tmp_path, config: dict, run, *extra) -> int:
    path = tmp_path / f"{run.name}.yaml"
    path.write_text(yaml.safe_dump(config))
    return main(["train", str(path), "--out", str(run), "--quiet", *map(str, extra)])


@pytest.fixture(scope="module")
def run(store15, tmp_path_factory):
    """A finished one-epoch run on the 15 fps store (cosine schedule down to lr 0)."""
    tmp = tmp_path_factory.mktemp("honest")
    run = tmp / "run"
    assert _train(tmp, _config(store15), run) == 0
    return run


def _rows(path) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


# -- 4. eval: splits, frame rates, where the metrics go --------------------------------------
def test_eval_refuses_an_unknown_split_and_lists_the_known_ones(run, capsys):
    code = main(["eval", str(run / "best.pt"), "--split", "tset", "--clips", "1", "--crops", "1"])
    err = capsys.readouterr().err
    assert code == 1, err
    assert "hyperframes eval: error: --split 'tset' is not a split of" in err
    assert "allowed: train, val (the store records no split names, so these are the " in err
    assert "splits the run generated" in err and "or all for every video" in err
    assert not (run / "eval").exists()


def test_eval_on_a_store_at_another_rate_warns_and_plans_windows_at_the_model_rate(
    run, store15, store30, capsys
):
    args = ["--clips", "1", "--crops", "1", "--split", "all"]
    assert main(["eval", str(run / "best.pt"), "--store", str(store15), *args]) == 0
    assert "warning" not in capsys.readouterr().err  # the model's own rate: nothing to say
    assert main(["eval", str(run / "best.pt"), "--store", str(store30), *args]) == 0
    err = capsys.readouterr().err
    assert "hyperframes eval: warning: the model was trained at 15 fps" in err
    assert "9 of the 9 videos in" in err and "are at 30 fps" in err
    assert "windows are planned at 15 fps by the frames' timestamps" in err
    m = json.loads(
        (run / "eval" / "store30" / "all" / "best_1clips_1crops" / "metrics.json").read_text()
    )
    assert m["sampler"] == "duration" and m["model_fps"] == 15.0 and m["store_fps"] == [30.0]
    assert m["notes"] and "trained at 15 fps" in m["notes"][0]
    # the windows eval reads: T frames 2 model frames (2/15 s) apart, each the stored frame
    # nearest its time (within half a frame of the 30 fps store): 4 frames apart, not 2
    from hyperframes.train._eval._eval import _passes

    ck = load_checkpoint(run / "best.pt")
    cfg = config_from_dict(
        {**ck["config"], "data": {**ck["config"]["data"], "store": str(store30)}}
    )
    _, contract = rebuild_model(ck)
    ((sampler, options, _),) = _passes(cfg, 1, contract, resample=True)
    st = open_store(store30)
    ds = make_dataset(cfg, st, np.arange(9), train=False, sampler=sampler, sampler_options=options)
    for item in range(len(ds)):
        sample = ds[item]
        gaps = np.diff(sample.meta["pts_seconds"])
        assert gaps == pytest.approx([2 / 15] * 3, abs=1 / 30 + 1e-6)
        assert set(np.diff(sample.meta["stored_indices"]).tolist()) <= {3, 4, 5}


def test_eval_writes_per_store_and_split_with_a_per_video_csv(run, store15, tmp_path, capsys):
    best = str(run / "best.pt")
    for split in ("val", "train"):
        assert main(["eval", best, "--split", split, "--clips", "2", "--crops", "1"]) == 0
    out = capsys.readouterr().out
    assert "per-video predictions:" in out
    assert not (run / "metrics.json").exists()  # nothing overwritten beside the checkpoint
    st = open_store(store15)
    for split, videos in (("val", 3), ("train", 6)):
        folder = run / "eval" / "store15" / split / "best_2clips_1crops"
        m = json.loads((folder / "metrics.json").read_text())
        assert (m["split"], m["store"], m["videos"]) == (split, str(store15), videos)
        assert m["predictions_csv"] == str(folder / "predictions.csv")
        rows = _rows(folder / "predictions.csv")
        assert list(rows[0]) == ["path", "label", "prediction", "score"]
        assert len(rows) == videos
        assert {r["path"] for r in rows} <= set(st.videos.paths)
        assert all(r["label"] in CLASSES and r["prediction"] in CLASSES for r in rows)
        assert all(1 / 3 <= float(r["score"]) <= 1 for r in rows)
        right = np.mean([r["label"] == r["prediction"] for r in rows])
        assert right == pytest.approx(m["video_level"]["top1"])
    # another store of the same name is kept apart
    other = tmp_path / "elsewhere" / "store15"
    shutil.copytree(store15, other)
    assert main(["eval", best, "--store", str(other), "--clips", "1", "--crops", "1"]) == 0
    (folder,) = [p for p in (run / "eval").iterdir() if p.name.startswith("store15-")]
    saved = folder / "val" / "best_1clips_1crops" / "metrics.json"
    assert json.loads(saved.read_text())["store"] == str(other)
    m = json.loads(
        (run / "eval" / "store15" / "val" / "best_2clips_1crops" / "metrics.json").read_text()
    )
    assert m["store"] == str(store15)
    # --out names the file; the CSV goes beside it
    args = ["--clips", "1", "--crops", "1", "--out", str(tmp_path / "m.json")]
    assert main(["eval", best, *args]) == 0
    assert (tmp_path / "m_predictions.csv").is_file()


def test_eval_keeps_each_checkpoint_and_setting_apart_and_says_where(run, capsys):
    """Issue 35: best.pt, best.pt at --frames 2 and recalibrated_T2.pt each keep their own
    metrics.json (the recalibration comparison), each path printed; on a store without splits,
    --split val is the run's generated subset, said on stderr and in the notes."""
    from hyperframes.train import recalibrate

    recal = recalibrate(run, frames=2, batches=1, batch_size=2, device="cpu").path
    views = ["--clips", "1", "--crops", "1"]
    wrote = {}
    for name, ck, extra in (
        ("best_1clips_1crops", run / "best.pt", []),
        ("best_T2_1clips_1crops", run / "best.pt", ["--frames", "2"]),
        ("recalibrated_T2_1clips_1crops", recal, []),
    ):
        assert main(["eval", str(ck), *views, *extra]) == 0
        said = capsys.readouterr()
        path = run / "eval" / "store15" / "val" / name / "metrics.json"
        assert f"metrics: {path}" in said.out
        assert "records no splits: val is the subset the run generated" in said.err
        assert "3 of its 9 videos; --split all evaluates every video" in said.err
        wrote[name] = json.loads(path.read_text())
    assert [m["frames"] for m in wrote.values()] == [4, 2, 2]
    assert wrote["recalibrated_T2_1clips_1crops"]["calibration"]["frames"] == 2
    assert all(any("the run generated" in n for n in m["notes"]) for m in wrote.values())


def test_eval_takes_its_views_from_the_runs_eval_section(run, tmp_path, capsys):
    """Issue 35: without --clips/--crops, eval uses the views the run's eval: section asked
    for (the end-of-run evaluation's), each flag overriding its own."""
    import torch

    from hyperframes.checkpoint._checkpoint import save_checkpoint

    state = torch.load(run / "best.pt", weights_only=True)
    state["config"]["eval"] = {"clips": 3, "crops": 1}
    ck = save_checkpoint(tmp_path / "best.pt", state)
    assert main(["eval", str(ck), "--split", "all"]) == 0
    err = capsys.readouterr().err
    assert "3 clips x 1 crops per video, the run's eval: section (clips 3, crops 1)" in err
    folder = tmp_path / "eval" / "store15" / "all"
    m = json.loads((folder / "best_3clips_1crops" / "metrics.json").read_text())
    assert (m["clips"], m["crops"], m["views"]) == (3, 1, 9 * 3)
    assert main(["eval", str(ck), "--split", "all", "--crops", "3"]) == 0
    m = json.loads((folder / "best_3clips_3crops" / "metrics.json").read_text())
    assert (m["clips"], m["crops"]) == (3, 3)


# -- 7. resuming -------------------------------------------------------------------------------
def test_resuming_a_finished_run_says_it_is_complete_and_how_to_train_longer(
    run, store15, tmp_path, capsys
):
    before = (run / "last.pt").read_bytes()
    assert _train(tmp_path, _config(store15), run, "--resume") == 0
    err = capsys.readouterr().err
    assert f"{run} is complete: 1/1 epochs" in err and "nothing to train" in err
    # cosine down to lr 0: continuing is pointless, so the way is a new run from its weights
    assert f"override model.pretrained={run / 'best.pt'} in a new out folder" in err
    assert (run / "last.pt").read_bytes() == before
    # and asking for more epochs says why not, instead of restarting the schedule
    assert _train(tmp_path, _config(store15), run, "--resume", "--set", "train.epochs=3") == 1
    err = capsys.readouterr().err
    assert "error: --resume: train.epochs 1 -> 3, but" in err
    assert "has finished its cosine schedule" in err
    assert "jump the rate back to its peak" in err and "model.pretrained=" in err
    assert (run / "last.pt").read_bytes() == before
    # a constant schedule simply continues: the message says how
    flat = tmp_path / "flat"
    assert _train(tmp_path, _config(store15, schedule="constant"), flat) == 0
    capsys.readouterr()
    config = _config(store15, schedule="constant")
    assert _train(tmp_path, config, flat, "--resume") == 0
    assert "resume with more epochs: override train.epochs=2" in capsys.readouterr().err
    assert _train(tmp_path, config, flat, "--resume", "--set", "train.epochs=2") == 0
    assert load_checkpoint(flat / "last.pt")["epoch"] == 2


def _step_lrs(run) -> dict[int, float]:
    lines = (run / "log.jsonl").read_text().splitlines()
    return {r["step"]: r["lr"] for r in map(json.loads, lines) if r["kind"] == "step"}


def test_raising_epochs_on_resume_continues_the_cosine_schedule(store15, tmp_path, capsys):
    from hyperframes.train import run_training

    run = tmp_path / "run"
    config = _config(store15, epochs=2)
    part = run_training(config, run, progress=False, stop_after_steps=STEPS_PER_EPOCH + 1)
    assert part["stopped"] and part["steps"] == STEPS_PER_EPOCH + 1
    s0 = STEPS_PER_EPOCH + 1  # the next step, 0-based
    assert _train(tmp_path, config, run, "--resume", "--set", "train.epochs=4") == 0
    lrs = _step_lrs(run)
    old = lr_at(s0, 2 * STEPS_PER_EPOCH, peak=0.003)
    # the step after the pause takes the rate the 2-epoch schedule had there (not a restart)
    assert lrs[s0 + 1] == pytest.approx(old)
    assert lrs[s0 + 1] < lr_at(s0, 4 * STEPS_PER_EPOCH, peak=0.003)
    after = [lrs[s] for s in sorted(lrs) if s > s0]
    assert len(after) == 4 * STEPS_PER_EPOCH - s0
    assert all(a >= b for a, b in itertools.pairwise(after))  # decays, never jumps up
    assert after[-1] < 0.1 * old
    ck = load_checkpoint(run / "last.pt")
    assert ck["epoch"] == 4 and ck["resumed_at"] == [s0, pytest.approx(old)]
    # resumed again (same epochs), the curve stays the one planned
    assert _train(tmp_path, config, run, "--resume", "--set", "train.epochs=4") == 0
    assert "is complete: 4/4 epochs" in capsys.readouterr().err
    # fewer epochs than trained: refused
    code = _train(tmp_path, config, run, "--resume", "--set", "train.epochs=3")
    assert code == 1
    assert "train.epochs=3 but" in capsys.readouterr().err


# -- 8. predict: source frame numbers and seconds ----------------------------------------------
def test_predict_timeline_names_source_frames_and_seconds(run, tmp_path, capsys):
    clip = make_motion_frames("right", frames=30, size=32, rng=np.random.default_rng(0))
    video = write_h264(tmp_path / "clip30.mp4", clip, fps=30)  # the model runs at 15 fps
    out = tmp_path / "pred"
    code = main(["predict", str(run / "best.pt"), str(video), "--out", str(out), "--quiet"])
    assert code == 0, capsys.readouterr().err
    rows = _rows(out / "timeline.csv")
    assert list(rows[0])[:7] == [
        "window",
        "first_source_frame",
        "last_source_frame",
        "key_source_frame",
        "start_seconds",
        "end_seconds",
        "key_seconds",
    ]
    # window 1 starts at the model's frame 1: source frame 2 of the 30 fps video, 1/15 s;
    # T=4 frames 2 model frames apart: source frames 2, 6, 10, 14
    r = rows[1]
    assert (r["first_source_frame"], r["last_source_frame"], r["key_source_frame"]) == (
        "2",
        "14",
        "10",
    )
    assert float(r["start_seconds"]) == pytest.approx(2 / 30, abs=1e-4)
    assert float(r["key_seconds"]) == pytest.approx(10 / 30, abs=1e-4)
    assert float(r["end_seconds"]) == pytest.approx(16 / 30, abs=1e-4)
    data = json.loads((out / "timeline.json").read_text())
    assert data["windows"][1]["source_frames"] == [2, 6, 10, 14]
    columns = data["meta"]["columns"]
    assert "source video's frame number" in columns["first_source_frame"]
    assert "[start_seconds, end_seconds)" in columns["end_seconds"]


# -- 9. export: one file, the contract in its metadata ----------------------------------------
def test_export_writes_one_onnx_file_that_carries_its_contract(run, tmp_path, capsys, monkeypatch):
    pytest.importorskip("onnxscript")
    ort = pytest.importorskip("onnxruntime")
    out = tmp_path / "onnx"
    assert main(["export", str(run / "best.pt"), "--onnx", str(out / "m.onnx")]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["m.onnx", "m.onnx.json"]
    session = ort.InferenceSession(str(out / "m.onnx"), providers=["CPUExecutionProvider"])
    meta = session.get_modelmeta().custom_metadata_map
    contract = load_checkpoint(run / "best.pt")["contract"]
    assert json.loads(meta["hyperframes.contract"]) == contract
    assert json.loads(meta["classes"]) == list(CLASSES)
    assert (meta["layout"], meta["task"]) == ("conv3d", "classification")
    assert (json.loads(meta["frames"]), json.loads(meta["frame_stride"])) == (4, 2)
    assert json.loads(meta["fps"]) == 15.0
    assert json.loads(meta["mean"]) == contract["mean"]
    assert json.loads(meta["std"]) == contract["std"]
    # weights too large for one protobuf go beside it, and the summary says so
    from hyperframes.infer import _export

    monkeypatch.setattr(_export, "EXTERNAL_DATA_BYTES", 0)
    capsys.readouterr()
    assert main(["export", str(run / "best.pt"), "--onnx", str(tmp_path / "big" / "m.onnx")]) == 0
    assert f"wrote {tmp_path / 'big' / 'm.onnx.data'} (the weights" in capsys.readouterr().out
    assert (tmp_path / "big" / "m.onnx.data").is_file()
    big = ort.InferenceSession(str(tmp_path / "big" / "m.onnx"), providers=["CPUExecutionProvider"])
    assert json.loads(big.get_modelmeta().custom_metadata_map["classes"]) == list(CLASSES)


# -- 10. top-k and plots -----------------------------------------------------------------------
def test_top5_is_reported_only_with_more_than_five_classes(run, capsys):
    rows = _rows(run / "epochs.csv")
    assert "val_top1" in rows[0] and "val_top5" not in rows[0]
    assert main(["eval", str(run / "best.pt"), "--clips", "1", "--crops", "1"]) == 0
    out = capsys.readouterr().out
    assert "top-1" in out and "top-5" not in out
    m = json.loads(
        (run / "eval" / "store15" / "val" / "best_1clips_1crops" / "metrics.json").read_text()
    )
    assert "top5" not in m["clip_level"] and "top5" not in m["video_level"]
    scores = np.random.default_rng(0).random((12, 6))
    assert "top5" in classification_metrics(scores, np.arange(12) % 6)
    assert "top5" not in classification_metrics(scores[:, :5], np.arange(12) % 5)


def test_curves_mark_whole_epochs_only():
    from hyperframes._core._plots import _curves_figure

    history = [
        {"epoch": e, "train_loss": 1.0 / e, "val_loss": 1.2 / e, "val_top1": 0.3 * e}
        for e in (1, 2, 3)
    ]
    fig = _curves_figure(history, (("val_top1", "val top-1"),), "accuracy")
    fig.canvas.draw()
    for ax in fig.axes:
        ticks = [t for t in ax.get_xticks() if ax.get_xlim()[0] <= t <= ax.get_xlim()[1]]
        assert ticks and all(float(t).is_integer() for t in ticks), ticks
