"""``data.clips_per_video`` (windows drawn per video per epoch, each its own seeded item),
``data.workers: auto`` and the example configs on a small store of a user's own: 3 classes,
12 videos. (The warning for an epoch of few steps: test_train_run.py's first run.)"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from _media import make_class_folder
from _stores import tiny_train_config
from hyperframes import ConfigError
from hyperframes.build import BuildOptions, build_store
from hyperframes.data import HyperframeDataset, loader
from hyperframes.sampling import VideoMeta, create_sampler
from hyperframes.store import open_store
from hyperframes.train import load_config
from hyperframes.train._config._config import AUTO_STEPS
from hyperframes.train._config._data import build_data, loader_workers

CONFIGS = sorted((Path(__file__).resolve().parents[1] / "configs").glob("*.yaml"))


@pytest.fixture(scope="module")
def small_store(tmp_path_factory) -> Path:
    """3 classes x 4 videos of 24-27 frames, 16x12 pixels: what a new user tries first."""
    root = tmp_path_factory.mktemp("small")
    data = make_class_folder(root / "data", per_class=4, frames=24, width=16, height=12)
    build_store(data, root / "store", BuildOptions(size="none"), progress=False)
    return root / "store"


# -- the sampler -----------------------------------------------------------------------------
def test_clips_per_video_draws_that_many_seeded_windows_of_each_video():
    videos = [VideoMeta(num_frames=n, fps=10.0, label=i % 2) for i, n in enumerate((40, 60, 25))]
    once = create_sampler("random", frames=4, stride=2)
    three = once.with_clips_per_video(3)
    assert (once.num_items(videos), three.num_items(videos)) == (3, 9)
    assert three.item_videos(videos).tolist() == [0, 0, 0, 1, 1, 1, 2, 2, 2]
    assert three.item_labels(videos).tolist() == [0, 0, 0, 1, 1, 1, 0, 0, 0]
    plans = [three.plan(videos, i, seed=5, epoch=2) for i in range(9)]
    assert [p.video for p in plans] == [0, 0, 0, 1, 1, 1, 2, 2, 2]
    starts = [int(p.frame_indices[0]) for p in plans]
    assert len(set(starts[:3])) > 1 and len(set(starts[3:6])) > 1  # each its own draw
    # item i is seeded by (seed, epoch, i): the same plan however it is asked for
    again = create_sampler("random", frames=4, stride=2).with_clips_per_video(3)
    assert [again.plan(videos, i, seed=5, epoch=2).frame_indices.tolist() for i in (8, 4)] == [
        plans[8].frame_indices.tolist(),
        plans[4].frame_indices.tolist(),
    ]
    assert three.plan(videos, 4, seed=5, epoch=3).frame_indices.tolist() != starts  # new epoch
    assert once.clips_per_video == 1  # a copy: the sampler it came from is unchanged

    with pytest.raises(
        ConfigError, match="the sliding sampler's windows do not depend on the seed"
    ):
        create_sampler("sliding", frames=4).with_clips_per_video(2)
    with pytest.raises(ConfigError, match="clips_per_video must be an integer >= 1"):
        once.with_clips_per_video(0)


def test_the_dataset_gives_clips_per_video_items_the_same_for_any_worker_count(small_store):
    store = open_store(small_store)
    ds = HyperframeDataset(store, frames=4, seed=3, clips_per_video=5)
    assert len(ds) == 5 * len(store.videos) == 60
    seen = {}
    for workers in (0, 3):
        dl = loader(ds, batch_size=7, workers=workers, seed=3)
        dl.set_epoch(1)
        seen[workers] = [
            (m["video_id"], m["item"], tuple(m["stored_indices"].tolist()))
            for b in dl
            for m in b.meta
        ]
    assert seen[0] == seen[3] and len(seen[0]) == 60
    assert sorted(item for _, item, _ in seen[0]) == list(range(60))
    per_video = np.bincount([v for v, _, _ in seen[0]])
    assert per_video.tolist() == [5] * 12


# -- the config ------------------------------------------------------------------------------
def test_config_clips_per_video_and_workers_auto(small_store):
    cfg = load_config({"data": {"store": str(small_store)}})
    assert cfg.data.workers == "auto" and loader_workers(cfg) is None
    assert cfg.data.clips_per_video == 1
    assert loader_workers(load_config({"data": {"store": "s", "workers": 2}})) == 2
    for bad, message in (
        (
            {"workers": "many"},
            r"data\.workers: not an allowed value: 'many'; allowed: an integer "
            r">= 0 and <= 256, or auto",
        ),
        ({"workers": None}, r"data\.workers: not an allowed value: None"),
        (
            {"clips_per_video": 0},
            r"data\.clips_per_video: out of range: 0; allowed: an integer "
            r">= 1 and <= 1024, or auto",
        ),
        (
            {"clips_per_video": 3, "sampler": "sliding", "sampler_options": {}},
            r"data\.clips_per_video: .*the sliding sampler's windows do not depend on the seed",
        ),
    ):
        with pytest.raises(ConfigError, match=message):
            load_config({"data": {"store": "s", **bad}})

    store = open_store(small_store)
    raw = tiny_train_config(small_store)
    raw["data"]["clips_per_video"] = 4
    b = build_data(load_config(raw), store)
    assert len(b.train) == 4 * len(b.train_ids) and len(b.val) == len(b.val_ids)
    raw["data"]["clips_per_video"] = "auto"
    b = build_data(load_config(raw), store)
    steps = len(b.train) // raw["data"]["batch_size"]
    assert steps >= AUTO_STEPS and len(b.train) % len(b.train_ids) == 0


@pytest.mark.parametrize("path", CONFIGS, ids=[p.name for p in CONFIGS])
def test_every_example_config_trains_a_small_store_with_enough_steps(path, small_store):
    cfg = load_config(path, overrides=[f"data.store={small_store}"])
    b = build_data(cfg, open_store(small_store))
    assert len(b.train_ids) == 9  # 12 videos, a quarter of each class held out
    steps = len(b.train) // (cfg.data.batch_size // cfg.data.repeats)  # repeats: K per item
    assert steps >= AUTO_STEPS, f"{path.name}: {steps} steps an epoch on 9 training videos"
    assert cfg.data.workers == "auto" or cfg.data.workers > 0
