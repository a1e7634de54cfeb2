"""The memory cache from a config: ``data.memory: ram | cuda``, a partial cache within
``data.memory_budget`` (the videos read most per byte first, the rest from disk), float16
stores held as float32 (converted once at load), ``data.decode_device`` for jpeg stores and
``data.check: video``. The planning runs on the CPU; the GPU tests skip with the reason."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
import torch

from _stores import tiny_train_config
from hyperframes import ConfigError, StoreError
from hyperframes.build import BuildOptions, build_store
from hyperframes.data import HyperframeDataset
from hyperframes.data._cache_plan import plan_cache
from hyperframes.demo import make_motion_dataset
from hyperframes.store import open_store
from hyperframes.train import load_config, run_training
from hyperframes.train._config._data import build_data

NO_GPU = "the GPU cache needs a CUDA GPU; none on this machine"


@pytest.fixture(scope="module")
def sources(tmp_path_factory):
    """Two classes of unequal size: 3 'left' videos, 1 'right'; 10-14 frames, 32x32."""
    root = tmp_path_factory.mktemp("cache") / "motion"
    make_motion_dataset(root, classes=("left", "right"), videos_per_class=3, frames=10, size=32)
    for extra in sorted((root / "right").iterdir())[1:]:
        extra.unlink()
    return root


@pytest.fixture(scope="module")
def store(sources, tmp_path_factory):
    out = tmp_path_factory.mktemp("cache") / "store"
    build_store(sources, out, BuildOptions(size="none"), progress=False)
    return out


def test_the_plan_takes_reads_per_byte_first_within_the_budget():
    ids = [10, 11, 12, 13]
    size = [100, 200, 100, 50]
    reads = [1, 6, 1, 1]  # video 11 is drawn 6 times an epoch: 3 reads per 100 bytes
    plan = plan_cache(ids, size, reads, budget=260)
    assert plan.videos.tolist() == [11, 13]  # 6/200, then 1/50; 10 and 12 do not fit after
    assert plan.bytes == 250 and plan.total_bytes == 450
    assert plan.read_share == pytest.approx(7 / 9)
    assert plan_cache(ids, size, reads, budget=None).videos.tolist() == ids
    assert plan_cache(ids, size, reads, budget=0).videos.tolist() == []
    # ties go in store order; a video larger than what is left is skipped, not the rest
    assert plan_cache(ids, [100] * 4, [1] * 4, budget=250).videos.tolist() == [10, 11]
    assert plan_cache(ids, [300, 100, 100, 100], [3, 1, 1, 1], budget=250).videos.tolist() == [
        11,
        12,
    ]


def test_class_balanced_draws_make_the_rare_class_hot():
    ids, size, reads = [0, 1, 2, 3], [100] * 4, [1] * 4
    labels = [0, 0, 0, 1]  # class 1 has one video: balanced sampling draws it 3x as often
    assert plan_cache(ids, size, reads, labels, budget=100).videos.tolist() == [0]
    hot = plan_cache(ids, size, reads, labels, budget=100, priority="balanced")
    assert hot.videos.tolist() == [3] and hot.read_share == pytest.approx(0.5)
    with pytest.raises(ConfigError, match="memory priority 'warm'"):
        plan_cache(ids, size, reads, budget=1, priority="warm")


def test_a_partial_ram_cache_holds_the_planned_videos_and_reads_the_same(store):
    disk = HyperframeDataset(store, frames=4, seed=3)
    assert disk.cache_plan is None
    per_video = [v.num_frames * int(np.prod(v.shape)) for v in disk.store.videos]
    budget = sorted(per_video)[0] + sorted(per_video)[1]  # the two smallest fit
    ram = HyperframeDataset(store, frames=4, seed=3, memory="ram", memory_budget=budget)
    plan = ram.cache_plan
    want = sorted(range(len(per_video)), key=lambda v: (per_video[v], v))[:2]
    assert plan.videos.tolist() == want and ram.reader.held == frozenset(want)
    assert ram.reader.nbytes == plan.bytes <= budget
    for i in range(len(disk)):  # held or not, the same windows
        assert torch.equal(disk[i].frames, ram[i].frames), i
    batch = ram.__getitems__(list(range(len(ram))))
    assert len(batch) == len(ram)
    whole = HyperframeDataset(store, frames=4, seed=3, memory="ram")
    assert whole.cache_plan.read_share == 1.0 and whole.reader.held is None


def test_a_float16_store_is_held_as_float32_converted_once(sources, tmp_path):
    out = tmp_path / "f16"
    build_store(sources, out, BuildOptions(size="none", dtype="float16"), progress=False)
    disk = HyperframeDataset(out, frames=4, seed=1)
    ram = HyperframeDataset(out, frames=4, seed=1, memory="ram")
    assert disk[0].frames.dtype == torch.float16
    assert ram.reader.dtype == np.float32 and ram[0].frames.dtype == torch.float32
    assert torch.equal(ram[0].frames, disk[0].frames.float())
    n = sum(v.num_frames * int(np.prod(v.shape)) for v in disk.store.videos)
    assert ram.reader.nbytes == 4 * n  # float32, held once
    part = HyperframeDataset(out, frames=4, seed=1, memory="ram", memory_budget=0)
    assert part[0].frames.dtype == torch.float32  # read from disk, converted the same way


def test_the_config_sets_the_cache_and_the_validation_split_gets_what_is_left(store):
    raw = tiny_train_config(store)
    raw["data"].update(memory="ram", memory_budget=40_000)
    cfg = load_config(raw)
    with open_store(store) as st:
        b = build_data(cfg, st)
        used = b.train.cache_plan.bytes + b.val.cache_plan.bytes
        assert b.train.cache_plan.bytes > 0 and used <= 40_000
        assert b.val.cache_plan.budget == 40_000 - b.train.cache_plan.bytes
    raw["train"]["balanced"] = True
    with open_store(store) as st:
        b = build_data(load_config(raw), st)
        rare = [v for v in b.train.video_ids if st.videos[int(v)].label == "right"]
        assert rare and int(b.train.cache_plan.videos[0]) == rare[0]


def test_bad_memory_settings_are_config_errors_naming_the_key(store):
    def cfg(**data):
        raw = tiny_train_config(store)
        raw["data"].update(data)
        return load_config(raw)

    with pytest.raises(ConfigError, match=r"data\.memory_budget: sizes a memory cache"):
        cfg(memory_budget=1000)
    with pytest.raises(ConfigError, match=r"data\.decode_device: cuda decodes a jpeg store"):
        cfg(memory="ram", decode_device="cuda")
    with pytest.raises(ConfigError, match=r"data\.memory: .*allowed: one of disk, ram, cuda"):
        cfg(memory="gpu")
    with pytest.raises(ConfigError, match=r"train\.device is cpu"):
        load_config(
            {**tiny_train_config(store), "train": {"device": "cpu"}}, overrides=["data.memory=cuda"]
        )
    if not torch.cuda.is_available():
        with open_store(store) as st, pytest.raises(ConfigError, match=r"data\.memory: cuda"):
            build_data(cfg(memory="cuda"), st)


def test_check_video_verifies_each_video_before_training_reads_it(store, tmp_path):
    damaged = shutil.copytree(store, tmp_path / "damaged")
    shard = next((damaged / "shards").glob("*.bin"))
    data = bytearray(shard.read_bytes())
    for k in range(1, 16):  # a byte in every video's frames
        data[k * len(data) // 16] ^= 0xFF
    shard.write_bytes(bytes(data))
    raw = tiny_train_config(damaged, epochs=1)
    raw["data"]["check"] = "video"
    with pytest.raises(StoreError, match=r"video \d+ .*its payload.* the shard is damaged"):
        run_training(load_config(raw), tmp_path / "run")
    unchecked = HyperframeDataset(damaged, frames=4)  # without the check: unseen
    assert all(unchecked[i].frames.shape[0] == 4 for i in range(len(unchecked)))


def test_jpeg_decode_on_the_cpu_path_from_the_config(sources, tmp_path):
    out = tmp_path / "jpeg"
    build_store(sources, out, BuildOptions(size="none", codec="jpeg"), progress=False)
    raw = tiny_train_config(out)
    raw["data"]["decode_device"] = "cpu"  # the nvJPEG path's code, on libjpeg
    with open_store(out) as st:
        b = build_data(load_config(raw), st)
        assert type(b.train.reader).__name__ == "CudaJpegReader"
        assert b.train[0].frames.dtype == torch.uint8


@pytest.mark.skipif(not torch.cuda.is_available(), reason=NO_GPU)
def test_gpu_partial_cache_from_the_config(store):
    raw = tiny_train_config(store)
    raw["data"].update(memory="cuda", memory_budget=40_000)
    with open_store(store) as st:
        b = build_data(load_config(raw), st)
        disk = HyperframeDataset(
            st, frames=4, seed=0, video_ids=b.train.video_ids, sampler_options={"stride": 2}
        )
        for i in range(len(b.train)):
            got = b.train[i].frames
            assert got.is_cuda
            assert torch.equal(got.cpu(), disk[i].frames)


@pytest.mark.skipif(not torch.cuda.is_available(), reason=NO_GPU)
def test_gpu_jpeg_decode_from_the_config(sources, tmp_path):
    out = tmp_path / "jpeg"
    build_store(sources, out, BuildOptions(size="none", codec="jpeg"), progress=False)
    raw = tiny_train_config(out)
    raw["data"]["decode_device"] = "cuda"
    with open_store(out) as st:
        b = build_data(load_config(raw), st)
        assert b.train[0].frames.is_cuda
