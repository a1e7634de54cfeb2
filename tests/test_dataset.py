"""HyperframeDataset and loader over a real store built from real (PyAV-encoded) videos."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from _media import identify, make_class_folder, write_video
from hyperframes import ConfigError, DataError, StoreError
from hyperframes._core._layouts import KeyframeWindow
from hyperframes.build import BuildOptions, build_store
from hyperframes.data import HyperframeBatch, HyperframeDataset, loader
from hyperframes.data.transforms import Compose, RandomHorizontalFlip, RandomResizedCrop, Window
from hyperframes.store import open_store


@pytest.fixture(scope="module")
def store(class_folder, tmp_path_factory):
    out = tmp_path_factory.mktemp("ds") / "store"
    build_store(class_folder, out, BuildOptions(size="none"), progress=False)
    return open_store(out)


def test_sample_is_traceable_to_exact_frames(store):
    ds = HyperframeDataset(store, sampler="random", frames=8, seed=3, sampler_options={"stride": 2})
    assert len(ds) == 6
    for i in range(len(ds)):
        h = ds[i]
        assert tuple(h.frames.shape) == (8, 3, 48, 64) and h.frames.dtype == torch.uint8
        rec = store.videos[h.meta["video_id"]]
        assert h.label == rec.label_id and h.meta["video"] == rec.path
        got = [identify(f, rec.num_frames) for f in h.frames.numpy()]
        assert got == list(h.meta["frame_indices"])
        assert np.all(np.diff(h.meta["frame_indices"]) == 2)
        np.testing.assert_allclose(h.meta["pts_seconds"], np.asarray(got) / 20)
        assert h.meta["frames"] == 8 and h.meta["seed"] == 3 and bool(h.mask.all())
    assert "Hyperframe(frames=(8, 3, 48, 64) uint8" in repr(ds[0])


def test_video_ids_choose_the_videos(store):
    full = HyperframeDataset(store, sampler="uniform", frames=4, sampler_options={"clips": 1})
    chosen = [4, 1]
    ds = HyperframeDataset(
        store, sampler="uniform", frames=4, sampler_options={"clips": 1}, video_ids=chosen
    )
    assert len(ds) == 2 and ds.video_ids.tolist() == chosen
    assert [ds[i].meta["video_id"] for i in range(2)] == chosen
    for i, vid in enumerate(chosen):  # the same window as in the whole-store dataset
        assert torch.equal(ds[i].frames, full[vid].frames)
    with pytest.raises(DataError, match=r"video_ids \[6\] are not videos"):
        HyperframeDataset(store, frames=4, video_ids=[0, 6])
    with pytest.raises(DataError, match="repeat"):
        HyperframeDataset(store, frames=4, video_ids=[1, 1])
    with pytest.raises(DataError, match="empty"):
        HyperframeDataset(store, frames=4, video_ids=[])
    with pytest.raises(ConfigError, match="integers"):
        HyperframeDataset(store, frames=4, video_ids=["a"])
    with pytest.raises(ConfigError, match="not both"):
        HyperframeDataset(store, frames=4, video_ids=[0], split="train")


def test_same_seed_same_samples_epoch_changes_them(store):
    a = HyperframeDataset(store, frames=4, seed=1)
    b = HyperframeDataset(store, frames=4, seed=1)
    assert all(
        np.array_equal(a[i].meta["frame_indices"], b[i].meta["frame_indices"]) for i in range(6)
    )
    b.set_epoch(1)
    assert any(
        not np.array_equal(a[i].meta["frame_indices"], b[i].meta["frame_indices"]) for i in range(6)
    )
    # (epoch, item) keys carry the epoch explicitly
    assert np.array_equal(b[(0, 2)].meta["frame_indices"], a[2].meta["frame_indices"])


def test_uniform_batch_is_one_buffer_without_a_second_copy(store):
    ds = HyperframeDataset(store, frames=4, seed=1, layout="conv3d")
    b = next(iter(loader(ds, batch_size=3, workers=0)))
    assert tuple(b.frames.shape) == (3, 3, 4, 48, 64)
    for k in range(3):  # each sample is a view of the batch buffer, equal to a fresh read
        assert torch.equal(b.frames[k], ds[b.meta[k]["item"]].frames)
    assert b.frames.untyped_storage().nbytes() == 3 * 4 * 3 * 48 * 64


def test_getitems_reads_a_batch_like_single_items(store):
    ds = HyperframeDataset(store, sampler="sliding", frames=5, sampler_options={"stride": 1})
    items = [0, 7, 3, 11]
    batch = ds.__getitems__(items)
    for i, h in zip(items, batch):
        assert torch.equal(h.frames, ds[i].frames)


@pytest.mark.parametrize(
    ("layout", "shape"),
    [("temporal", (4, 3, 48, 64)), ("channel", (12, 48, 64)), ("conv3d", (3, 4, 48, 64))],
)
def test_layouts(store, layout, shape):
    ds = HyperframeDataset(store, frames=4, layout=layout)
    t = HyperframeDataset(store, frames=4, layout="temporal")[0].frames
    x = ds[0].frames
    assert tuple(x.shape) == shape
    if layout == "channel":
        assert torch.equal(x[3 * 2 + 1], t[2, 1])  # channel 3f+c is frame f, channel c
    if layout == "conv3d":
        assert torch.equal(x[:, 2], t[2])


def test_keyframe_layout(store):
    ds = HyperframeDataset(store, frames=5, layout="keyframe")
    h = ds[1]
    assert isinstance(h.frames, KeyframeWindow)
    assert torch.equal(h.frames.key, h.frames.context[2])


@pytest.mark.parametrize("mode", ["threads", "processes"])
def test_loader_batches_same_for_any_worker_count(store, mode):
    ds = HyperframeDataset(store, frames=4, seed=7, dtype="float32")
    runs = []
    for workers in (0, 2):
        dl = loader(ds, batch_size=4, workers=workers, seed=7, mode=mode)
        batches = []
        for epoch in (0, 1):
            dl.set_epoch(epoch)
            batches += list(dl)
        runs.append(batches)
    assert len(runs[0]) == len(runs[1]) == 4
    for a, b in zip(*runs):
        assert isinstance(a, HyperframeBatch)
        assert torch.equal(a.frames, b.frames) and torch.equal(a.labels, b.labels)
        assert [m["item"] for m in a.meta] == [m["item"] for m in b.meta]
        assert a.frames.dtype == torch.float32 and tuple(a.mask.shape) == (len(a), 4)
    # the two epochs differ
    assert not torch.equal(runs[0][0].frames, runs[0][2].frames)


def test_loader_resumes_mid_epoch(store):
    ds = HyperframeDataset(store, frames=4, seed=2)
    dl = loader(ds, batch_size=2, workers=0)
    dl.set_epoch(3)
    full = [m["item"] for b in dl for m in b.meta]
    dl.set_epoch(3, start=2)
    assert [m["item"] for b in dl for m in b.meta] == full[2:]


def test_distributed_ranks_cover_the_epoch(store):
    ds = HyperframeDataset(store, frames=4, seed=2)
    seen = []
    for rank in (0, 1):
        dl = loader(ds, batch_size=2, workers=0, rank=rank, world_size=2)
        seen += [m["item"] for b in dl for m in b.meta]
    assert sorted(seen) == list(range(6))


def test_balanced_loader_evens_out_classes(tmp_path):
    root = make_class_folder(tmp_path / "d", classes=("a",), per_class=5, frames=8)
    make_class_folder(root, classes=("b",), per_class=1, frames=8)
    build_store(root, tmp_path / "s", BuildOptions(size="none"), progress=False)
    ds = HyperframeDataset(tmp_path / "s", frames=4, seed=0)
    labels = []
    dl = loader(ds, batch_size=6, workers=0, balanced=True)
    for epoch in range(20):
        dl.set_epoch(epoch)
        labels += [int(x) for b in dl for x in b.labels]
    share_b = np.mean(np.asarray(labels) == 1)
    assert 0.35 < share_b < 0.65  # 1 video in 6, drawn about half the time


def test_mixed_sizes_need_a_transform(tmp_path):
    write_video(tmp_path / "d" / "x" / "a.mp4", frames=10, width=64, height=48)
    write_video(tmp_path / "d" / "x" / "b.mp4", frames=10, width=48, height=48)
    build_store(tmp_path / "d", tmp_path / "s", BuildOptions(size="none"), progress=False)
    ds = HyperframeDataset(tmp_path / "s", frames=4)
    with pytest.raises(DataError, match=r"different sizes .*RandomResizedCrop"):
        next(iter(loader(ds, batch_size=2, workers=0, shuffle=False)))
    aug = Compose([RandomResizedCrop(32), RandomHorizontalFlip()])
    ds = HyperframeDataset(tmp_path / "s", frames=4, transform=aug)
    b = next(iter(loader(ds, batch_size=2, workers=0)))
    assert tuple(b.frames.shape) == (2, 4, 3, 32, 32)


def test_augmentation_is_seeded_per_sample(store):
    aug = Compose([RandomResizedCrop(24), RandomHorizontalFlip()])
    a = HyperframeDataset(store, frames=4, seed=5, transform=aug)
    b = HyperframeDataset(store, frames=4, seed=5, transform=aug)
    c = HyperframeDataset(store, frames=4, seed=6, transform=aug)
    assert torch.equal(a[2].frames, b[2].frames)
    assert not torch.equal(a[2].frames, c[2].frames)


def test_memory_ram_equals_disk(store):
    disk = HyperframeDataset(store, frames=6, seed=4)
    ram = HyperframeDataset(store, frames=6, seed=4, memory="ram")
    for i in range(len(disk)):
        assert torch.equal(disk[i].frames, ram[i].frames)


def test_gpu_resident_mode(store):
    if not torch.cuda.is_available():
        pytest.skip("GPU-resident mode needs a CUDA GPU; none on this machine")
    disk = HyperframeDataset(store, frames=6, seed=4)
    gpu = HyperframeDataset(store, frames=6, seed=4, memory="cuda")
    assert gpu[0].frames.is_cuda
    assert torch.equal(disk[0].frames, gpu[0].frames.cpu())


def test_bad_requests_are_clear(store, tmp_path):
    with pytest.raises(ConfigError, match="unknown layout 'nope'"):
        HyperframeDataset(store, layout="nope")
    with pytest.raises(ConfigError, match="nope"):
        HyperframeDataset(store, sampler="nope")
    with pytest.raises(StoreError, match="no store here"):
        HyperframeDataset(tmp_path / "missing")
    with pytest.raises(DataError, match="frames"):
        HyperframeDataset(store, frames=500, sampler_options={"short": "error"})[0]

    def drop_one(frames, indices, mask, generator=None):
        return Window(frames[1:], indices[1:], mask[1:])

    ds = HyperframeDataset(store, frames=4, transform=drop_one)
    with pytest.raises(DataError, match="changed the number of frames from 4 to 3"):
        ds[0]


def test_dataset_is_built_from_index_columns_not_per_video_records(store, monkeypatch):
    """No sampler needs a VideoRecord per video: a 300k-video store gives its dataset in well
    under a second (benchmarks/bench_open.py)."""
    from hyperframes.store._records import VideoList

    def no_records(self, i):
        raise AssertionError(f"a per-video record was made (video {i})")

    monkeypatch.setattr(VideoList, "__getitem__", no_records)
    for name, options in (
        ("random", {}),
        ("sliding", {}),
        ("segments", {}),
        ("duration", {"seconds": 0.5}),
        ("keyframes", {}),
    ):
        ds = HyperframeDataset(store, sampler=name, frames=4, sampler_options=options)
        h = ds[len(ds) - 1]
        plan = ds.plan(len(ds) - 1)
        assert plan.video == h.meta["video_id"]
        assert plan.frame_indices.tolist() == h.meta["stored_indices"].tolist()


def test_dataset_plan_names_store_videos(store):
    ds = HyperframeDataset(
        store, sampler="uniform", frames=4, video_ids=[5, 2], sampler_options={"clips": 1}
    )
    p = ds.plan((3, 1))  # (epoch, item): the clip of the second chosen video
    assert p.video == 2 and len(p.frame_indices) == 4
    assert p == ds.plan(1)  # uniform clips do not depend on the epoch
    with pytest.raises(IndexError, match="out of range"):
        ds.plan(len(ds))


def test_split_is_chosen_from_the_index_column(class_folder, tmp_path):
    videos = sorted(p.relative_to(class_folder) for p in class_folder.rglob("*.mp4"))
    rows = [f"{v},{v.parent},{'val' if k % 3 == 0 else 'train'}" for k, v in enumerate(videos)]
    listing = class_folder / "listing.csv"
    listing.write_text("path,label,split\n" + "\n".join(rows) + "\n")
    try:
        build_store(listing, tmp_path / "s", BuildOptions(size="none"), progress=False)
    finally:
        listing.unlink()
    s = open_store(tmp_path / "s")
    val = HyperframeDataset(s, frames=4, split="val")
    assert val.video_ids.tolist() == [i for i in range(len(s)) if s.videos[i].split == "val"]
    assert len(val) == 2
    with pytest.raises(DataError, match=r"no video of split 'test'.*\['train', 'val'\]"):
        HyperframeDataset(s, frames=4, split="test")
