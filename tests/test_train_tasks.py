"""Tasks own targets, loss, metrics and the best-model key; the trainer only asks its task.
Typed targets travel on the records (``Hyperframe.target``, ``HyperframeBatch.target``) and
``loader(collate_fn=...)`` batches custom samples."""

from __future__ import annotations

import csv
import dataclasses
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from hyperframes import ConfigError, DataError, models
from hyperframes.build import BuildOptions, build_store
from hyperframes.data import Hyperframe, HyperframeBatch, HyperframeDataset, loader
from hyperframes.data._loader import collate_hyperframes
from hyperframes.demo import make_motion_dataset
from hyperframes.train import Task, create_task, list_tasks, register_task, run_training
from hyperframes.train._tasks._base import _TASKS, ClassificationTask, SegmentationTask, get_task
from hyperframes.train._tasks._metrics import classification_metrics, segmentation_metrics
from hyperframes.train._tasks._multilabel import MultilabelTask

B, C, H, W = 4, 3, 5, 6


def _batch(target=None, labels=(0, 1, 2, 1)) -> HyperframeBatch:
    meta = [{"item": i, "video_id": i // 2} for i in range(len(labels))]
    frames = torch.zeros(len(labels), 2, 3, H, W, dtype=torch.uint8)
    mask = torch.ones(len(labels), 2, dtype=torch.bool)
    return HyperframeBatch(frames, torch.tensor(labels), mask, meta, target)


def _example(name: str):
    """``(task, logits, batch)`` of each registered task: a new task gets an entry here."""
    g = torch.Generator().manual_seed(0)
    if name == "classification":
        return ClassificationTask(["a", "b", "c"]), torch.randn(B, C, generator=g), _batch()
    if name == "segmentation":
        masks = torch.randint(0, 2, (B, H, W), generator=g)
        return SegmentationTask(["bg", "fg"]), torch.randn(B, 2, H, W, generator=g), _batch(masks)
    if name == "multilabel":
        hot = torch.tensor([[1, 0, 1], [0, 1, 0], [1, 1, 0], [0, 0, 1]], dtype=torch.float32)
        return MultilabelTask(["a", "b", "c"]), torch.randn(B, C, generator=g), _batch(hot)
    if name in ("interpolation", "super_resolution"):  # the true frame and its baseline
        target = torch.rand(B, 2, 3, H, W, generator=g)
        return (
            create_task(name, ["r", "g", "b"]),
            torch.rand(B, 3, H, W, generator=g),
            _batch(target),
        )
    if name == "masked_video":  # 2 frames of 4x4, patches of 2: 8 tokens of 12 values + mask
        frames = torch.randint(0, 256, (B, 2, 3, 4, 4), generator=g, dtype=torch.uint8)
        out = torch.randn(B, 8, 13, generator=g)
        out[..., -1] = (torch.arange(8) % 2).float()  # every other patch masked
        meta = [{"item": i, "video_id": i // 2} for i in range(B)]
        labels, mask = torch.zeros(B, dtype=torch.int64), torch.ones(B, 2, dtype=torch.bool)
        batch = HyperframeBatch(frames, labels, mask, meta)
        return create_task(name, ["pixels"]), out, batch
    if name == "detection":  # a real detector's output on 2 stacked 32x32 frames
        from hyperframes import models

        frames = torch.randint(0, 256, (B, 2, 3, 32, 32), generator=g, dtype=torch.uint8)
        torch.manual_seed(0)
        net = models.create("fcos_channel", num_classes=2, frames=2).eval()
        with torch.no_grad():
            out = net(frames.flatten(1, 2).float() / 255)
        boxes = torch.full((B, 2, 5), -1.0)  # x1, y1, x2, y2, class; -1 pads
        boxes[:, 0] = torch.tensor([0.1, 0.2, 0.6, 0.7, 1.0])
        boxes[0, 1] = torch.tensor([0.5, 0.5, 0.9, 0.8, 0.0])
        labels, mask = torch.zeros(B, dtype=torch.int64), torch.ones(B, 2, dtype=torch.bool)
        meta = [{"item": i, "video_id": i // 2} for i in range(B)]
        batch = HyperframeBatch(frames, labels, mask, meta, target=boxes)
        return create_task(name, ["person", "car"]), out, batch
    raise AssertionError(f"add an example of the task {name!r} to _example")


def test_every_model_task_is_registered():
    tasks = {models.get_spec(name).task for name in models.list()}
    assert tasks <= set(list_tasks()) and {"classification", "segmentation"} <= tasks


@pytest.mark.parametrize("name", list_tasks())
def test_a_registered_task_keeps_the_contract(name):
    task, logits, batch = _example(name)
    assert get_task(name) is type(task) and task.name == name
    target = task.targets(batch)
    x, mixed = task.mix(batch.frames.float(), target, rank=0, step=0)
    assert mixed is None and torch.equal(x, batch.frames.float())  # no mixing asked
    loss = task.loss(logits, target)
    assert loss.ndim == 0 and math.isfinite(float(loss))
    # the train metric summed over items: a share per item, or a PSNR in dB (masked_video)
    per_item = 100.0 if name == "masked_video" else 1.0
    assert 0 <= float(task.correct(logits, target)) <= per_item * len(batch)
    # per-item predictions: the empty ones have the same fields, dtypes and trailing shapes
    pred = task.predictions(logits, target)
    empty = task.empty_predictions()
    assert pred.keys() == empty.keys() and "losses" in pred
    for k, v in pred.items():
        assert v.shape[0] == len(batch) and v.shape[1:] == empty[k].shape[1:], k
        assert v.dtype.kind == empty[k].dtype.kind, k
    # metrics feed the epoch record, the best-model key and the summary
    record = task.epoch_record(task.metrics(pred))
    assert set(record) == {f"val_{k}" for k in task.val_metrics}
    assert task.best_key in record
    assert task.improved(record[task.best_key], task.worst)
    assert task.headline[0] in task.summary(task.metrics(pred))
    assert math.isnan(task.summary({})[task.headline[0]])  # before any validation
    assert math.isnan(task.metrics(empty)["loss"])
    # curves and the epoch line read keys of the epoch record
    keys = set(record) | {task.train_metric}
    assert {k for k, _ in task.curves} <= keys and {k for k, _ in task.shown} <= keys
    # hyperframes eval: one pass of views, each item a view
    views = task.evaluate_views(
        [
            {
                **pred,
                "items": np.arange(len(batch)),
                "video_ids": [0] * 4,
                "key_seconds": np.arange(len(batch)) / 10,
            }
        ]
    )
    assert views


def test_classification_loss_and_metrics_are_the_standard_ones():
    task, logits, batch = _example("classification")
    target = task.targets(batch)
    weighted = ClassificationTask(
        ["a", "b", "c"], class_weights=[1.0, 2.0, 0.5], label_smoothing=0.1
    )
    want = F.cross_entropy(
        logits, target, weight=torch.tensor([1.0, 2.0, 0.5]), label_smoothing=0.1
    )
    assert torch.equal(weighted.loss(logits, target), want)
    assert float(task.correct(logits, target)) == float((logits.argmax(1) == target).sum())
    pred = task.predictions(logits, target)
    m = task.metrics(pred)
    assert m["top1"] == classification_metrics(logits, target, ["a", "b", "c"])["top1"]
    assert m["loss"] == pytest.approx(float(F.cross_entropy(logits, target)))
    assert (task.best_key, task.higher_is_better, task.headline) == (
        "val_top1",
        True,
        ("accuracy", "top1"),
    )


def test_classification_mixes_into_soft_targets():
    task = ClassificationTask(["a", "b", "c"], mixup=0.4, cutmix=1.0, seed=3)
    x = torch.rand(B, 2, 3, H, W)
    target = torch.tensor([0, 1, 2, 1])
    mixed_x, soft = task.mix(x, target, rank=0, step=5)
    again_x, again = task.mix(x, target, rank=0, step=5)
    assert torch.equal(mixed_x, again_x) and torch.equal(soft, again)  # seeded by the step
    assert soft.shape == (B, 3) and torch.allclose(soft.sum(1), torch.ones(B))
    logits = torch.randn(B, 3)
    want = -(soft * F.log_softmax(logits, 1)).sum(1).mean()
    assert torch.allclose(task.loss(logits, target, mixed=soft), want)


def test_segmentation_reads_masks_from_the_typed_target():
    task, logits, batch = _example("segmentation")
    assert torch.equal(task.targets(batch), batch.target)
    pred = task.predictions(logits, batch.target)
    assert pred["confusion"].shape == (B, 2, 2) and pred["confusion"].sum() == B * H * W
    m = task.metrics(pred)
    assert m["miou"] == segmentation_metrics(pred["confusion"].sum(0), ["bg", "fg"])["miou"]
    views = task.evaluate_views([{**pred, "items": np.arange(B)}] * 2)
    assert views["windows"] == 2 * B and views["pixels"] == 2 * B * H * W
    with pytest.raises(DataError, match=r"segmentation task needs masks in batch\.target"):
        task.targets(_batch())


def test_video_level_averages_the_views_of_each_video():
    task = ClassificationTask(["a", "b"])
    # video 0 (label 0): one confident right view, one hesitant wrong one
    view = {
        "scores": np.array([[4.0, 0.0], [0.0, 0.5]], np.float32),
        "labels": np.array([0, 0]),
        "video_ids": np.array([0, 0]),
        "items": np.array([0, 1]),
    }
    r = task.evaluate_views([view])
    assert r["views"] == 2 and r["clip_level"]["top1"] == 0.5
    assert r["video_level"]["top1"] == r["accuracy"] == 1.0


def test_tasks_refuse_what_they_cannot_honour():
    with pytest.raises(ConfigError, match=r"train\.mixup: 0\.2 but the segmentation task"):
        SegmentationTask(["bg", "fg"], mixup=0.2)
    with pytest.raises(ConfigError, match=r"train\.class_weights: 3 weights for 2 classes \(bg"):
        create_task("segmentation", ["bg", "fg"], class_weights=[1.0, 1.0, 1.0])
    with pytest.raises(
        ConfigError,
        match=r"unknown task 'multi_label'; known: classification, .*register one with .*"
        r"; did you mean multilabel",
    ):
        get_task("multi_label")
    with pytest.raises(ValueError, match="task 'classification' is already registered"):
        register_task(type("Again", (ClassificationTask,), {}))
    with pytest.raises(TypeError, match="register_task takes a Task subclass"):
        register_task(object)
    with pytest.raises(TypeError, match="abstract"):
        Task(["a"])


# -- typed targets and custom collation ------------------------------------------------------
def _sample(target) -> Hyperframe:
    return Hyperframe(torch.zeros(2, 3, H, W), 1, torch.ones(2, dtype=torch.bool), {}, target)


def test_targets_are_typed_and_collated():
    masks = [torch.full((H, W), i) for i in range(3)]
    h = _sample(masks[0])
    assert f"target=({H}, {W}) int64" in repr(h)
    batch = collate_hyperframes([_sample(m) for m in masks])
    assert torch.equal(batch.target, torch.stack(masks))
    assert f"target=(3, {H}, {W})" in repr(batch)
    assert batch.to("cpu").target is not None
    assert collate_hyperframes([_sample(None)] * 2).target is None
    with pytest.raises(DataError, match=r"samples \[1\] have no target but others have one"):
        collate_hyperframes([_sample(masks[0]), _sample(None)])
    with pytest.raises(ValueError, match=r"target must be a torch\.Tensor or None, got list"):
        _sample([[0]])


@dataclasses.dataclass
class Clip:
    """A custom sample: frames and where they came from, no Hyperframe."""

    frames: torch.Tensor
    video_id: int


class ClipDataset(HyperframeDataset):
    def __getitems__(self, indices):
        return [Clip(h.frames, h.meta["video_id"]) for h in super().__getitems__(indices)]


def collate_clips(samples: list[Clip]) -> dict:
    return {
        "frames": torch.stack([s.frames for s in samples]),
        "video_ids": [s.video_id for s in samples],
    }


@pytest.mark.parametrize(("mode", "workers"), [("threads", 0), ("threads", 2), ("processes", 2)])
def test_loader_batches_custom_samples_with_collate_fn(class_folder, tmp_path, mode, workers):
    build_store(class_folder, tmp_path / "s", BuildOptions(size="none"), progress=False)
    ds = ClipDataset(tmp_path / "s", frames=4, seed=1)
    plain = HyperframeDataset(tmp_path / "s", frames=4, seed=1)
    dl = loader(ds, batch_size=4, workers=workers, mode=mode, collate_fn=collate_clips)
    want = list(loader(plain, batch_size=4, workers=0))
    got = list(dl)
    assert [type(b) for b in got] == [dict, dict]
    for g, w in zip(got, want):
        assert torch.equal(g["frames"], w.frames)
        assert g["video_ids"] == [m["video_id"] for m in w.meta]


# -- the trainer asks its task -------------------------------------------------------------
class LowestLoss(ClassificationTask):
    """A classification task whose best model has the lowest validation loss."""

    best_key = "val_loss"
    higher_is_better = False
    headline = ("best_val_loss", "loss")
    shown = (("val_loss", "val loss"),)
    curves = (("val_loss", "val loss"),)
    curves_title = "loss"


def test_the_trainer_follows_its_task(tmp_path, monkeypatch, capsys):
    make_motion_dataset(
        tmp_path / "m", classes=("left", "right"), videos_per_class=3, frames=10, size=32
    )
    build_store(tmp_path / "m", tmp_path / "s", BuildOptions(size="none"), progress=False)
    monkeypatch.setitem(_TASKS, "classification", LowestLoss)
    cfg = {
        "data": {"store": str(tmp_path / "s"), "frames": 2, "batch_size": 2},
        "model": {"name": "r2plus1d_tiny", "options": {"base_width": 4}},
        "train": {"epochs": 3, "optimizer": "adamw", "lr": 0.01},
    }
    s = run_training(cfg, tmp_path / "run", progress=True)
    losses = [r["val_loss"] for r in _val_history(tmp_path / "run")]
    assert s["best"]["metric"] == "val_loss"
    assert s["best"]["epoch"] == 1 + int(np.argmin(losses))
    assert s["best"]["value"] == min(losses) and s["best_val_loss"] == min(losses)
    assert "accuracy" not in s
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("epoch ")]
    assert len(lines) == 3 and all("val loss" in line and "val top1" not in line for line in lines)


def _val_history(run) -> list[dict]:
    with open(run / "epochs.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    return [{k: float(v) for k, v in r.items() if k.startswith("val_")} for r in rows]
