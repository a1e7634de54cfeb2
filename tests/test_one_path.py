"""One batch pipeline: the task datasets (segmentation, frame tasks, detection) contribute
target stages instead of finishing samples themselves, so their batches are read on the batch
path (the per-sample code made to raise), with the targets a reference computed straight from
the store gives; and ``ds[i]`` is the batch's sample i."""

from __future__ import annotations

import inspect

import numpy as np
import pytest
import torch
import torchvision.transforms.v2.functional as TF
from torchvision.transforms import InterpolationMode

from _media import write_video
from hyperframes import DataError
from hyperframes.build import BuildOptions, build_store
from hyperframes.data import (
    HyperframeBatch,
    HyperframeDataset,
    _record,
    collate_hyperframes,
    loader,
)
from hyperframes.data._pipeline import batch_audio, batch_tracks, plan_batch
from hyperframes.data.transforms import RandomResizedCrop, transform_generator
from hyperframes.demo import make_detection_dataset, make_segmentation_dataset
from hyperframes.store import open_store
from hyperframes.train import DetectionDataset, SegmentationDataset
from hyperframes.train._tasks._frame_data import FrameTaskDataset

TASK_DATASETS = (SegmentationDataset, FrameTaskDataset, DetectionDataset)


@pytest.fixture(scope="module")
def seg_store(tmp_path_factory):
    root = tmp_path_factory.mktemp("one_seg") / "videos"
    root.mkdir()
    make_segmentation_dataset(root, videos=2, frames=8, size=32, seed=3)
    out = root.parent / "store"
    build_store(root, out, BuildOptions(size="none"), progress=False)
    return open_store(out)


@pytest.fixture(scope="module")
def det_store(tmp_path_factory):
    data = tmp_path_factory.mktemp("one_det") / "data"
    make_detection_dataset(data, videos=2, frames=8, size=32, fps=8, seed=5)
    out = data.parent / "store"
    build_store(data, out, BuildOptions(size="none", boxes=str(data / "boxes.csv")), progress=False)
    return open_store(out)


@pytest.fixture
def no_per_sample(monkeypatch):
    """The per-sample code made to raise: a batch must come whole from the batch path."""

    def refuse(*args, **kwargs):
        raise AssertionError("the per-sample path was taken")

    monkeypatch.setattr(HyperframeDataset, "_finish", refuse, raising=False)


def _stored(store, video: int, index) -> torch.Tensor:
    return torch.from_numpy(np.asarray(store.read_numpy(video, np.asarray(index))))


def test_no_task_dataset_finishes_samples_itself():
    for cls in TASK_DATASETS:
        assert "_finish" not in vars(cls), cls.__name__


def test_segmentation_batches_take_the_batch_path_with_the_stores_masks(seg_store, no_per_sample):
    kw = dict(sampler="sliding", frames=3, layout="temporal", seed=7)
    ds = SegmentationDataset(seg_store, [0, 1], size=16, scale=(0.3, 0.7), hflip=0.5, **kw)
    n = len(ds)
    batch = ds.__getitems__(list(range(n)))
    crop = RandomResizedCrop(16, scale=(0.3, 0.7))
    flipped = 0
    for i in range(n):
        plan = ds.plan(i)
        frames = _stored(seg_store, plan.video, plan.frame_indices)
        rec = seg_store.videos[plan.video]
        source = int(rec.source_frame_indices[plan.frame_indices[len(plan.frame_indices) // 2]])
        with np.load(rec.path.rsplit(".", 1)[0] + ".npz") as f:
            mask = torch.from_numpy(f["masks"][source].astype(np.int64))
        g = transform_generator(7, 0, i)
        top, left, h, w = crop.box(*frames.shape[-2:], g)
        frames = TF.resized_crop(frames, top, left, h, w, [16, 16], antialias=True)
        mask = TF.resized_crop(
            mask[None], top, left, h, w, [16, 16], interpolation=InterpolationMode.NEAREST
        )[0]
        if float(torch.rand((), generator=g)) < 0.5:
            frames, mask, flipped = frames.flip(-1), mask.flip(-1), flipped + 1
        assert torch.equal(batch.frames[i], frames), i
        assert torch.equal(batch.target[i], mask), i
    assert 0 < flipped < n  # the flip is drawn per sample


@pytest.mark.parametrize("kind", ["interpolation", "super_resolution"])
def test_frame_task_batches_take_the_batch_path_with_truth_and_baseline(
    tiny_motion_store, no_per_sample, kind
):
    store = open_store(tiny_motion_store)
    ds = FrameTaskDataset(
        store,
        [0, 1],
        kind=kind,
        factor=2,
        filter="area",
        hflip=0.5,
        sampler="sliding",
        frames=3,
        seed=2,
    )
    n = len(ds)
    batch = ds.__getitems__(list(range(n)))
    for i in range(n):
        plan = ds.plan(i)
        frames = _stored(store, plan.video, plan.frame_indices)
        if float(torch.rand((), generator=transform_generator(2, 0, i))) < 0.5:
            frames = frames.flip(-1)
        truth = frames[1].float() / 255
        if kind == "interpolation":
            base = (frames[0].float() / 255 + frames[2].float() / 255) / 2
            inputs = frames.clone()
            inputs[1] = 0
        else:
            inputs = torch.nn.functional.avg_pool2d(frames.float(), 2).round().to(torch.uint8)
            low = inputs[1:2].float() / 255
            base = torch.nn.functional.interpolate(low, scale_factor=2, mode="bicubic")[0]
            base = base.clamp(0, 1)
        assert torch.equal(batch.frames[i], inputs), i
        assert torch.allclose(batch.target[i, 0], truth), i
        assert torch.allclose(batch.target[i, 1], base, atol=1e-6), i


def test_detection_batches_take_the_batch_path_with_the_stores_boxes(det_store, no_per_sample):
    ds = DetectionDataset(det_store, [0, 1], sampler="sliding", frames=4, hflip=1.0)
    n = len(ds)
    batch = ds.__getitems__(list(range(n)))
    ann = det_store.index.annotations
    counts = []
    for i in range(n):
        plan = ds.plan(i)
        frames = _stored(det_store, plan.video, plan.frame_indices).flip(-1)
        xyxy, ids = ann.boxes_of(plan.video, int(plan.frame_indices[2]))
        boxes = np.concatenate([xyxy, ids[:, None].astype(np.float32)], 1)
        boxes[:, [0, 2]] = 1 - boxes[:, [2, 0]]
        assert torch.equal(batch.frames[i], frames), i
        got = batch.target[i]
        assert np.allclose(got[got[:, 4] >= 0].numpy(), boxes), i
        assert (got[len(boxes) :] == -1).all()  # padded with rows of -1
        counts.append(len(boxes))
    assert batch.target.shape[1] == max(counts)


def _same(a, b) -> None:
    assert torch.equal(a.frames, b.frames)
    assert a.label == b.label and torch.equal(a.mask, b.mask)
    target = b.target
    if target.dim() == 2 and target.shape[-1] == 5:  # a batch's boxes: padded with rows of -1
        target = target[target[:, 4] >= 0]
    assert torch.equal(a.target, target)
    assert a.meta["stored_indices"].tolist() == b.meta["stored_indices"].tolist()


def test_an_item_is_the_batchs_sample(seg_store, det_store, tiny_motion_store):
    motion = open_store(tiny_motion_store)
    for ds in (
        SegmentationDataset(seg_store, [0, 1], sampler="sliding", frames=2, size=16, hflip=0.5),
        FrameTaskDataset(motion, [0], kind="interpolation", hflip=0.5, sampler="sliding", frames=3),
        DetectionDataset(det_store, [0, 1], sampler="sliding", frames=4, size=24, hflip=0.5),
    ):
        items = list(range(min(len(ds), 6)))
        batch = ds.__getitems__(items)
        for i in items:
            _same(ds[i], batch.sample(i))


def test_a_batch_reaches_the_loaders_collate_as_it_is(tiny_motion_store):
    assert not hasattr(_record, "BatchSamples")  # no wrapper for collate to unwrap
    ds = HyperframeDataset(tiny_motion_store, "sliding", frames=4, seed=1)
    batch = ds.__getitems__([0, 1, 2])
    assert isinstance(batch, HyperframeBatch) and collate_hyperframes(batch) is batch
    assert [h.meta["item"] for h in batch] == [0, 1, 2]  # and the sequence of its samples
    got = next(iter(loader(ds, 3, shuffle=False, workers=0)))
    assert torch.equal(got.frames, batch.frames)


def test_the_plan_of_a_batch_takes_what_it_needs_not_the_dataset(tiny_motion_store):
    for fn in (plan_batch, batch_tracks, batch_audio):
        assert "dataset" not in inspect.signature(fn).parameters, fn.__name__
    ds = HyperframeDataset(tiny_motion_store, "sliding", frames=4, seed=1)
    plan = ds.batch_plan([0, 3])
    assert plan.index.tolist() == [
        ds.plan(0).frame_indices.tolist(),
        ds.plan(3).frame_indices.tolist(),
    ]


def test_windows_of_different_sizes_are_refused_at_batching_but_an_item_reads(tmp_path):
    write_video(tmp_path / "d" / "x" / "a.mp4", frames=6, width=40, height=32)
    write_video(tmp_path / "d" / "x" / "b.mp4", frames=6, width=32, height=32)
    build_store(tmp_path / "d", tmp_path / "s", BuildOptions(size="none"), progress=False)
    ds = HyperframeDataset(tmp_path / "s", "sliding", frames=4, seed=0)
    sizes = {tuple(ds[i].frames.shape[-2:]) for i in range(len(ds))}
    assert sizes == {(32, 40), (32, 32)}  # each item alone reads
    with pytest.raises(DataError, match=r"different sizes .*RandomResizedCrop"):
        ds.__getitems__(list(range(len(ds))))
