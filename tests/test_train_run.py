"""Training runs end to end on a tiny store: outputs, checkpoints, resume, determinism across
worker counts, leakage refusal, multi-clip evaluation and the command lines."""

from __future__ import annotations

import csv
import json
import shutil

import pytest
import torch
import yaml

from _stores import tiny_train_config
from hyperframes import ConfigError, DataError, InputError
from hyperframes.build import BuildOptions, build_store
from hyperframes.cli import main
from hyperframes.demo import make_motion_dataset
from hyperframes.infer import load_inference_model
from hyperframes.train import evaluate, load_checkpoint, run_training
from hyperframes.train._config._splits import split_videos

CLASSES = ("left", "right", "up")
TIMING = ("samples_per_s", "data_wait_share", "epoch_seconds", "elapsed_seconds")


@pytest.fixture(scope="module")
def motion_data(tmp_path_factory):
    root = tmp_path_factory.mktemp("train") / "motion"
    make_motion_dataset(root, classes=CLASSES, videos_per_class=3, frames=12, size=32, seed=1)
    return root


@pytest.fixture(scope="module")
def motion_store(motion_data, tmp_path_factory):
    out = tmp_path_factory.mktemp("train") / "store"
    build_store(motion_data, out, BuildOptions(size="none"), progress=False)
    return out


def _config(store, **train) -> dict:
    return tiny_train_config(store, **train)


def _metrics(history: list[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if k not in TIMING} for r in history]


def _csv(path) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def _same_weights(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_a_run_writes_logs_plots_and_checkpoints(motion_store, tmp_path, capfd):
    cfg = _config(motion_store)
    cfg["model"] = {"name": "channel_resnet18"}
    run = tmp_path / "run"
    s = run_training(cfg, run, progress=False)
    # 6 training videos in batches of 2: 3 steps an epoch, said with the key that gives more
    err = capfd.readouterr().err
    assert "warning: an epoch is only 3 optimizer step(s): 6 training items (6 videos" in err
    assert "set data.clips_per_video: 7 (windows drawn per video per epoch" in err
    assert yaml.safe_load((run / "config.yaml").read_text())["data"]["workers"] == "auto"
    for name in (
        "config.yaml",
        "log.jsonl",
        "epochs.csv",
        "curves.png",
        "confusion.png",
        "last.pt",
        "best.pt",
        "split.json",
        "summary.json",
    ):
        assert (run / name).is_file(), name
    assert not list(run.glob(".*.tmp"))  # atomic writes leave no temp files
    # checkpoints hold tensors and plain values only
    raw = torch.load(run / "last.pt", weights_only=True)
    assert raw["format"] == "hyperframes-checkpoint" and raw["epoch"] == 2
    assert raw["classes"] == sorted(CLASSES) and raw["config"]["data"]["frames"] == 4
    assert isinstance(raw["model"]["backbone.conv1.weight"], torch.Tensor)
    # AdamW takes the fused step on a CPU (one kernel over every tensor, not a loop over them)
    assert [g["fused"] for g in raw["optimizer"]["param_groups"]] == [True, True]
    # the input contract travels with the model: predict needs no store
    assert raw["contract"]["size"] is None and raw["contract"]["fps"] is None
    assert raw["contract"]["layout"] == "channel" and raw["contract"]["frames"] == 4
    assert raw["contract"]["frame_stride"] == 2 and raw["contract"]["classes"] == sorted(CLASSES)
    moved = motion_store.with_name("store_moved")
    motion_store.rename(moved)
    try:
        loaded = load_inference_model(run / "best.pt")
    finally:
        moved.rename(motion_store)
    assert loaded.contract.source == "checkpoint contract"
    assert loaded.contract.size is None and loaded.contract.fps is None
    # summary: the numbers the demo reports
    assert 0.0 <= s["accuracy"] <= 1.0
    assert s["train_seconds"] > 0 and 0.0 <= s["data_wait_share"] < 1.0
    assert s["split"] == {"source": "generated", "train_videos": 6, "val_videos": 3}
    assert json.loads((run / "summary.json").read_text())["best"] == s["best"]
    # logs: one CSV row per epoch, JSONL with step and epoch records
    rows = _csv(run / "epochs.csv")
    assert [r["epoch"] for r in rows] == ["1", "2"]
    assert {"train_loss", "val_top1", "lr", "data_wait_share"} <= set(rows[0])
    assert "val_top5" not in rows[0]  # 3 classes: every target is in the top 5
    kinds = [json.loads(line)["kind"] for line in (run / "log.jsonl").read_text().splitlines()]
    assert kinds.count("epoch") == 2 and "step" in kinds
    split = json.loads((run / "split.json").read_text())
    assert len(split["train"]) == 6 and not set(split["train"]) & set(split["val"])
    # TensorBoard gets the same scalars as the JSONL
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(run / "tb"))
    events.Reload()
    tags = set(events.Tags()["scalars"])
    assert {"step/loss", "epoch/train_loss", "epoch/val_top1", "epoch/lr"} <= tags, tags
    top1 = events.Scalars("epoch/val_top1")
    assert [e.step for e in top1] == [int(r["step"]) for r in rows]
    assert [e.value for e in top1] == pytest.approx([float(r["val_top1"]) for r in rows])
    # the resolved config holds every key, paths absolute
    text = (run / "config.yaml").read_text()
    assert "allow_leakage: false" in text and str(motion_store) in text


def test_a_second_run_in_the_same_folder_needs_resume(motion_store, tmp_path):
    cfg = _config(motion_store, epochs=1)
    run_training(cfg, tmp_path / "run", progress=False)
    with pytest.raises(
        ConfigError,
        match=r"already holds a run \(last\.pt\); resume to continue it, or choose another out",
    ):
        run_training(cfg, tmp_path / "run", progress=False)
    changed = _config(motion_store, epochs=1, lr=0.1)
    with pytest.raises(ConfigError, match=r"config differs.*train\.lr: 0\.003 -> 0\.1"):
        run_training(changed, tmp_path / "run", resume=True, progress=False)


def test_a_run_that_fails_before_training_leaves_no_folder(motion_store, tmp_path):
    """Windows longer than the videos: refused at setup, after the folder was made. The
    folder this call made goes; a folder that was there before stays, with what it held."""
    cfg = _config(motion_store, epochs=1)
    cfg["data"]["frames"] = 16  # 31 frames at stride 2; the videos have 12
    with pytest.raises(DataError, match=r"has 12 frames but the random sampler needs 31"):
        run_training(cfg, tmp_path / "runs" / "r", progress=False)
    assert not (tmp_path / "runs" / "r").exists()
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("kept")
    with pytest.raises(DataError):
        run_training(cfg, tmp_path / "mine", progress=False)
    assert (tmp_path / "mine" / "notes.txt").read_text() == "kept"


@pytest.mark.parametrize("stop", [3, 4], ids=["epoch-boundary", "mid-epoch"])
def test_resume_continues_as_if_never_stopped(motion_store, tmp_path, stop):
    # 6 train videos, batch 2 -> 3 steps per epoch; stop after step 3 (end of epoch 1) or 4
    cfg = _config(motion_store, warmup_epochs=0.5)
    straight = run_training(cfg, tmp_path / "a", progress=False)
    part = run_training(cfg, tmp_path / "b", progress=False, stop_after_steps=stop)
    assert part["stopped"] and part["steps"] == stop
    resumed = run_training(cfg, tmp_path / "b", resume=True, progress=False)
    assert not resumed["stopped"] and resumed["steps"] == straight["steps"] == 6
    a, b = load_checkpoint(tmp_path / "a" / "last.pt"), load_checkpoint(tmp_path / "b" / "last.pt")
    assert _same_weights(a["model"], b["model"])
    assert _metrics(a["history"]) == _metrics(b["history"])
    assert straight["best"] == resumed["best"]
    # the logs read as one run
    rows = _csv(tmp_path / "b" / "epochs.csv")
    assert [r["epoch"] for r in rows] == ["1", "2"]
    steps = [
        json.loads(line)["step"]
        for line in (tmp_path / "b" / "log.jsonl").read_text().splitlines()
        if json.loads(line)["kind"] == "step"
    ]
    assert steps == sorted(set(steps))


def test_the_worker_count_does_not_change_the_results(motion_store, tmp_path):
    cfg = _config(motion_store, epochs=1)
    cfg["data"]["augmentation"] = {"size": 28, "color_jitter": 0.2}
    results = []
    for workers in (0, 2):
        cfg["data"]["workers"] = workers
        run_training(cfg, tmp_path / f"w{workers}", progress=False)
        results.append(load_checkpoint(tmp_path / f"w{workers}" / "last.pt"))
    assert _same_weights(results[0]["model"], results[1]["model"])
    assert _metrics(results[0]["history"]) == _metrics(results[1]["history"])


def test_every_training_option_runs(motion_store, tmp_path):
    cfg = _config(
        motion_store,
        epochs=1,
        amp=True,
        accumulate=2,
        mixup=0.2,
        cutmix=1.0,
        label_smoothing=0.1,
        balanced=True,
        checkpointing=True,
        clip_grad=1.0,
        base_batch_size=8,
        optimizer="sgd",
        nesterov=True,
        save_every=1,
    )
    cfg["data"]["augmentation"] = {"size": 24, "scale": [0.5, 1.0], "hflip": 0.5}
    cfg["data"]["memory"] = "ram"
    cfg["eval"] = {"clips": 2, "crops": 3}
    s = run_training(cfg, tmp_path / "run", progress=False)
    assert s["global_batch"] == 4 and s["lr"] == pytest.approx(0.003 * 4 / 8)
    assert s["video_level"]["clips"] == 2 and s["video_level"]["views"] == 3 * 2 * 3
    assert (tmp_path / "run" / "eval_metrics.json").is_file()
    groups = load_checkpoint(tmp_path / "run" / "last.pt")["optimizer"]["param_groups"]
    assert [g["fused"] for g in groups] == [True, True]  # SGD's step fused too


def test_evaluate_multi_clip_multi_crop(motion_store, tmp_path, capsys):
    run = tmp_path / "run"
    run_training(_config(motion_store, epochs=1), run, progress=False)
    capsys.readouterr()
    m = evaluate(run / "best.pt", clips=3, crops=3)
    out = capsys.readouterr().out
    assert "top-1" in out and "video" in out and "per" not in out.split("\n")[0]
    assert m["videos"] == 3 and m["views"] == 3 * 3 * 3
    assert m["video_level"]["samples"] == 3 and m["clip_level"]["samples"] == 27
    saved = run / "eval" / "store" / "val" / "best_3clips_3crops" / "metrics.json"
    assert m["metrics_json"] == str(saved)
    saved = json.loads(saved.read_text())
    assert saved["video_level"]["top1"] == m["video_level"]["top1"]
    assert m["accuracy"] == m["video_level"]["top1"]
    # every video, on the store given explicitly
    m = evaluate(
        run / "best.pt",
        motion_store,
        split="all",
        clips=1,
        crops=1,
        verbose=False,
        out=tmp_path / "all.json",
    )
    assert m["videos"] == 9 and (tmp_path / "all.json").is_file()
    # a run folder means its best.pt (as for predict and export)
    m = evaluate(run, clips=1, crops=1, verbose=False, out=tmp_path / "folder.json")
    assert m["checkpoint"] == str(run / "best.pt")
    with pytest.raises(InputError, match=r"nothing\.pt: no such file"):
        evaluate(tmp_path / "nothing.pt")


def test_command_lines(motion_store, tmp_path, capsys):
    path = tmp_path / "c.json.yaml"
    import yaml

    path.write_text(yaml.safe_dump(_config(motion_store, epochs=3)))
    run = tmp_path / "run"
    code = main(["train", str(path), "--set", "train.epochs=1", "--out", str(run), "--quiet"])
    assert code == 0 and (run / "best.pt").is_file()
    assert "epochs: 1" in (run / "config.yaml").read_text()
    code = main(["eval", str(run / "best.pt"), "--clips", "2", "--crops", "1"])
    assert code == 0 and "top-1" in capsys.readouterr().out
    code = main(["train", str(path), "--set", "train.epocs=1", "--out", str(tmp_path / "x")])
    assert code == 1 and "did you mean train.epochs" in capsys.readouterr().err


def test_duplicated_video_is_leakage(motion_data, tmp_path):
    data = tmp_path / "data"
    shutil.copytree(motion_data, data)
    # the same file under two labels
    shutil.copy(data / "left" / "left_000.mp4", data / "up" / "up_copy.mp4")
    store = tmp_path / "store"
    build_store(data, store, BuildOptions(size="none"), progress=False)
    cfg = _config(store, epochs=1)
    with pytest.raises(
        DataError, match=r"(?s)leakage.*more than one label.*left_000\.mp4.*up_copy\.mp4"
    ):
        run_training(cfg, tmp_path / "run", progress=False)
    cfg["data"]["allow_leakage"] = True
    run_training(cfg, tmp_path / "run2", progress=False)
    report = json.loads((tmp_path / "run2" / "leakage.json").read_text())
    assert len(report["cross_label"]) == 1


def test_duplicate_across_splits_is_leakage(motion_data, tmp_path):
    rows = ["path,label,split"]
    for label in CLASSES:
        for i in range(3):
            rows.append(
                f"{motion_data}/{label}/{label}_{i:03d}.mp4,{label},{'val' if i == 0 else 'train'}"
            )
    # the same video, listed under train and val, same label
    copy = tmp_path / "copy.mp4"
    shutil.copy(motion_data / "left" / "left_001.mp4", copy)
    rows.append(f"{copy},left,val")
    (tmp_path / "ann.csv").write_text("\n".join(rows) + "\n")
    store = tmp_path / "store"
    build_store(
        tmp_path / "ann.csv",
        store,
        BuildOptions(size="none", allow_outside_root=True),
        progress=False,
    )
    cfg = _config(store, epochs=1)
    with pytest.raises(DataError, match=r"1 source video\(s\) appear in more than one split"):
        run_training(cfg, tmp_path / "run", progress=False)
    # the store's own splits are used; an unknown split name is explained
    cfg["data"]["check_leakage"] = False
    s = run_training(cfg, tmp_path / "run2", progress=False)
    assert s["split"] == {"source": "store", "train_videos": 6, "val_videos": 4}
    cfg["data"]["val_split"] = "test"
    with pytest.raises(
        DataError, match=r"(?s)data\.val_split: no video of split 'test'.*train, val"
    ):
        run_training(cfg, tmp_path / "run3", progress=False)


def test_generated_split_is_stratified_and_deterministic(motion_store):
    from hyperframes.store import open_store

    store = open_store(motion_store)
    a = split_videos(store, 0.34, seed=3)
    assert split_videos(store, 0.34, seed=3)["val"].tolist() == a["val"].tolist()
    labels = store.videos.label_ids
    assert sorted(labels[a["val"]].tolist()) == [0, 1, 2]  # one per class
    assert len(a["train"]) + len(a["val"]) == 9
    assert not set(a["train"].tolist()) & set(a["val"].tolist())


def test_segment_sampled_runs_are_tested_with_segment_samplings(motion_store, tmp_path):
    cfg = _config(motion_store, epochs=1)
    cfg["data"].update(
        sampler="segments",
        sampler_options={"train": True},
        val_sampler="segments",
        val_sampler_options={"train": False},
    )
    run_training(cfg, tmp_path / "run", progress=False)
    m = evaluate(tmp_path / "run" / "best.pt", clips=2, crops=1, verbose=False)
    assert m["views"] == 3 * 2 and m["video_level"]["samples"] == 3
