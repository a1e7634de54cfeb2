"""One batch pipeline: the task datasets (segmentation, frame tasks, detection) contribute
target stages instead of finishing samples themselves, so their batches are read on the batch
path (the per-sample code made to raise), with the targets a reference computed straight from
the store gives; and ``ds[i]`` is the batch's sample i."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import numpy as np
import pytest
import torch
import torchvision.transforms.v2.functional as TF
from torchvision.transforms import InterpolationMode

import hyperframes
from _media import make_translating_video, write_video
from _per_sample import per_sample
from hyperframes import ConfigError, DataError
from hyperframes.build import BuildOptions, build_store
from hyperframes.data import (
    HyperframeBatch,
    HyperframeDataset,
    _record,
    collate_hyperframes,
    loader,
)
from hyperframes.data._pipeline import batch_audio, batch_tracks, plan_batch
from hyperframes.data.transforms import (
    Compose,
    RandomHorizontalFlip,
    RandomResizedCrop,
    Resize,
    transform_generator,
)
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


def _stored(store, video: int, index) -> torch.Tensor:
    return torch.from_numpy(np.asarray(store.read_numpy(video, np.asarray(index))))


def test_no_task_dataset_finishes_samples_itself():
    for cls in TASK_DATASETS:
        assert "_finish" not in vars(cls), cls.__name__


def test_segmentation_batches_take_the_batch_path_with_the_stores_masks(seg_store):
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
def test_frame_task_batches_take_the_batch_path_with_truth_and_baseline(tiny_motion_store, kind):
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


def test_detection_batches_take_the_batch_path_with_the_stores_boxes(det_store):
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


# -- one path for every store and reader (issue 36 item 1) ------------------------------------
AUG = Compose([RandomResizedCrop(24, scale=(0.3, 0.8)), RandomHorizontalFlip()])
NO_GPU = "frames held on a GPU need a CUDA GPU; none on this machine"


@pytest.fixture(scope="module")
def half_store(tmp_path_factory):
    """A float16 store (frames normalised at build time) of two 40x32 clips."""
    tmp = tmp_path_factory.mktemp("one_half")
    for name in ("a", "b"):
        write_video(tmp / "d" / "x" / f"{name}.mp4", frames=6, width=40, height=32)
    build_store(tmp / "d", tmp / "s", BuildOptions(size="none", dtype="float16"), progress=False)
    return open_store(tmp / "s")


@pytest.fixture(scope="module")
def flow_store(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("one_flow")
    make_translating_video(tmp / "src" / "move.mkv", 2.0, 1.0, frames=8, size=48)
    build_store(tmp / "src", tmp / "s", BuildOptions(size="none", flow="dis"), progress=False)
    return open_store(tmp / "s")


def test_no_finish_method_or_attribute_anywhere_under_src():
    """No class under src defines ``_finish`` and nothing reaches for one (the per-sample
    hook is gone; the trainer's module-level ``_finish(loop, stopped)`` is not a hook)."""
    root = Path(hyperframes.__file__).parent
    found = []
    for path in root.rglob("*.py"):
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                found += [
                    f"{path.name}:{f.lineno}"
                    for f in node.body
                    if isinstance(f, ast.FunctionDef) and f.name == "_finish"
                ]
            if isinstance(node, ast.Attribute) and node.attr == "_finish":
                found.append(f"{path.name}:{node.lineno}")
    assert not found
    assert not hasattr(HyperframeDataset, "_finish")


def test_a_float16_store_is_read_by_the_batch_pipeline_as_torch_would(half_store):
    """A float16 store's batch: each window read whole, its box cropped and resized with
    torch's antialiased bilinear (in float32) and flipped, per sample, equals the batch
    within float16's rounding (2 ulp at the largest normalised value, ~2.6)."""
    opts = {"stride": 1, "window_stride": 1}
    ds = HyperframeDataset(
        half_store, "sliding", frames=4, seed=2, transform=AUG, sampler_options=opts
    )
    batch = ds.read_batch(list(range(len(ds))))
    assert isinstance(batch, HyperframeBatch) and batch.frames.dtype == torch.float16
    plan = ds.batch_plan(list(range(len(ds))))
    for k in range(len(ds)):
        g = transform_generator(2, 0, k)
        whole = _stored(half_store, int(plan.videos[k]), plan.index[k]).float()
        top, left, h, w = AUG.transforms[0].box(32, 40, g)
        want = torch.nn.functional.interpolate(
            whole[..., top : top + h, left : left + w],
            size=(24, 24),
            mode="bilinear",
            antialias=True,
        )
        if AUG.transforms[1].draw(g, tuple(want.shape)):
            want = want.flip(-1)
        torch.testing.assert_close(batch.frames[k].float(), want, atol=4e-3, rtol=0)
    assert torch.equal(ds[3].frames, batch.frames[3])  # ds[i]: a batch of one
    # held in RAM (as float32): the same read step on the reader's frames
    ram = HyperframeDataset(
        half_store, "sliding", frames=4, seed=2, transform=AUG, sampler_options=opts, memory="ram"
    )
    held = ram.read_batch(list(range(len(ds))))
    assert held.frames.dtype == torch.float32
    torch.testing.assert_close(held.frames, batch.frames.float(), atol=4e-3, rtol=0)


def test_the_torch_read_step_equals_torch_per_window_on_uint8(seg_store):
    """The read's torch form (what frames on a GPU take) on a uint8 store on the CPU: each
    box cropped and resized by torch, rounded back to uint8, within one level of torch's
    resize of each window read whole."""
    from hyperframes.data._pipeline import read_boxes_torch  # not on main: its own failure

    ds = HyperframeDataset(seg_store, "sliding", frames=4, seed=3, transform=AUG)
    items = list(range(len(ds)))
    plan = ds.batch_plan(items)
    shapes = np.asarray(seg_store.videos.shapes)[plan.videos][:, 1:]
    drawn = ds.recipe.draw(3, plan, shapes)
    out = torch.empty(len(items), 4, 3, 24, 24, dtype=torch.uint8)
    read_boxes_torch(seg_store, plan, drawn, out)
    for k in items:
        top, left, h, w = drawn.boxes[k].tolist()
        whole = _stored(seg_store, int(plan.videos[k]), plan.index[k]).float()
        want = torch.nn.functional.interpolate(
            whole[..., top : top + h, left : left + w],
            size=(24, 24),
            mode="bilinear",
            antialias=True,
        )
        want = want.flip(-1) if drawn.flips[k] else want
        assert (out[k].float() - want.round()).abs().max() <= 1
    # one box for the whole batch (a fixed resize): resized in one call, the same pixels
    fixed = HyperframeDataset(seg_store, "sliding", frames=4, transform=Resize((20, 20)))
    drawn = fixed.recipe.draw(0, plan, shapes)
    out = read_boxes_torch(seg_store, plan, drawn, torch.empty(len(items), 4, 3, 20, 20))
    for k in items:
        whole = _stored(seg_store, int(plan.videos[k]), plan.index[k]).float()
        want = torch.nn.functional.interpolate(
            whole, size=(20, 20), mode="bilinear", antialias=True
        )
        assert (out[k] - want.round()).abs().max() <= 1


class _KeyMean:
    """A read stage that leaves the frames where they are: the key frame's mean as target."""

    at = "read"

    def targets(self, batch):
        key = batch.plan.index.shape[1] // 2
        return batch.frames, batch.frames[:, key].float().mean(dim=(1, 2, 3))


class _Mirror(_KeyMean):
    """A read stage that flips every window (moves pixels)."""

    def targets(self, batch):
        return batch.frames.flip(-1), None


def test_a_read_stage_with_flow_takes_the_batch_path(flow_store):
    """A task's read stage beside flow: the batch reads whole, the flow is the batch
    pipeline's (the same as without the stage, which moves no pixel), the target the
    stage's; a stage that moves pixels is refused clearly, the flow cannot follow it."""

    def ds(stage=None):
        kw = {"stage": stage} if stage is not None else {}
        opts = {"window_stride": 1}
        return HyperframeDataset(
            flow_store,
            "sliding",
            frames=4,
            seed=1,
            transform=AUG,
            flow=True,
            sampler_options=opts,
            **kw,
        )

    items = list(range(len(ds())))
    got = ds(_KeyMean()).read_batch(items)
    plain = ds().read_batch(items)
    assert got is not None and got.flow.shape == (len(items), 3, 2, 24, 24)
    assert torch.equal(got.flow, plain.flow) and torch.equal(got.frames, plain.frames)
    key = plain.frames[:, 2].float().mean(dim=(1, 2, 3))
    assert torch.equal(got.target, key)
    with pytest.raises(ConfigError, match="flow cannot follow"):
        ds(_Mirror()).read_batch(items)


@pytest.mark.parametrize("mode", ["homography", "flow"])
def test_a_read_stage_moves_the_registered_frames(flow_store, mode):
    """register= beside a read stage that moves pixels: the windows are registered as read,
    then the stage moves them, so a mirroring stage gives the registered batch mirrored."""
    kw = {"frames": 4, "seed": 1, "register": mode, "sampler_options": {"window_stride": 1}}
    items = [0, 1, 2]
    plain = HyperframeDataset(flow_store, "sliding", **kw).__getitems__(items)
    mirrored = HyperframeDataset(flow_store, "sliding", stage=_Mirror(), **kw).__getitems__(items)
    assert torch.equal(mirrored.frames, plain.frames.flip(-1))


@pytest.mark.skipif(not torch.cuda.is_available(), reason=NO_GPU)
@pytest.mark.parametrize("store", ["half_store", "seg_store"])
def test_frames_held_on_a_gpu_take_the_batch_path(store, request):
    """memory="cuda": the batch is read by the read step's torch form on the GPU and equals,
    within the resize's rounding, the CPU batch of a float store (the same torch form) or the
    per-sample reference of a uint8 one."""
    s = request.getfixturevalue(store)
    kw = {"frames": 4, "seed": 2, "transform": AUG}
    gpu = HyperframeDataset(s, "sliding", memory="cuda", **kw)
    items = list(range(len(gpu)))
    got = gpu.read_batch(items)
    assert got.frames.device.type == "cuda"
    if store == "half_store":
        want = HyperframeDataset(s, "sliding", **kw).read_batch(items).frames.float()
        torch.testing.assert_close(got.frames.cpu().float(), want, atol=4e-3, rtol=0)
    else:
        want = per_sample(HyperframeDataset(s, "sliding", **kw), items).frames
        assert (got.frames.cpu().int() - want.int()).abs().max() <= 1


def _layout_callers(root: Path) -> set[str]:
    """Every ``module:Function`` under ``root`` that calls a layout function
    (``model_frames``, ``to_layout``), found in the source's syntax tree."""
    found: set[str] = set()

    def walk(node, where: str, path: Path) -> None:
        for child in ast.iter_child_nodes(node):
            inner = where
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                inner = f"{where}.{child.name}" if where else child.name
            if isinstance(child, ast.Call):
                f = child.func
                name = f.id if isinstance(f, ast.Name) else getattr(f, "attr", "")
                if name.lstrip("_") in ("model_frames", "to_layout"):
                    found.add(f"{path.relative_to(root).as_posix()}:{where}")
            walk(child, inner, path)

    for path in root.rglob("*.py"):
        walk(ast.parse(path.read_text(), str(path)), "", path)
    return found


def test_frames_are_laid_out_by_one_function_which_prepare_and_the_dataset_share():
    """The layout (dtype, arrangement, flow planes) is applied by ``model_frames`` alone: the
    input contract's ``prepare`` calls it, and the dataset's output calls it once per batch
    (for a dataset asked for another layout than temporal); nothing else under src lays
    frames out for a model (``to_layout`` elsewhere: the models' public wrapper and the random
    example inputs of models and export)."""
    callers = _layout_callers(Path(hyperframes.__file__).parent)
    assert callers == {
        "_core/_contract.py:model_frames",  # the one function: it arranges (to_layout)
        "_core/_contract.py:InputContract.prepare",
        "data/_dataset.py:HyperframeDataset._assemble",
        "models/_base.py:to_layout",  # public wrapper of _core._layouts.to_layout
        "models/_base.py:VideoModel.example_input",  # random input, not frames
        "infer/_export.py:_inputs",  # random example input for tracing
    }
