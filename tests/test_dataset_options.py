"""HyperframeDataset's options: a short signature, four validated groups, the old keywords
still taken (and the same samples), unknown ones refused, and the config building the groups."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import numpy as np
import pytest
import torch

from hyperframes import ConfigError
from hyperframes.data import (
    DatasetOptions,
    DeliveryOptions,
    HyperframeDataset,
    OrderOptions,
    OutputOptions,
    ReadOptions,
    SamplingOptions,
    TrackOptions,
    loader,
)
from hyperframes.data import transforms as T
from hyperframes.data._options import OPTION_GROUP
from hyperframes.store import open_store
from hyperframes.train._config._data import dataset_options, make_dataset
from hyperframes.train._config._load import load_config


@pytest.fixture(scope="module")
def store(tiny_motion_store):
    s = open_store(tiny_motion_store)
    yield s
    s.close()


def _same_samples(a: HyperframeDataset, b: HyperframeDataset) -> None:
    assert len(a) == len(b)
    for i in range(0, len(a), 3):
        x, y = a[i], b[i]
        assert torch.equal(x.frames, y.frames)
        assert x.label == y.label and torch.equal(x.mask, y.mask)
        assert x.meta["frame_indices"].tolist() == y.meta["frame_indices"].tolist()
        assert x.meta["seed"] == y.meta["seed"]


def test_the_constructor_takes_at_most_ten_parameters():
    params = inspect.signature(HyperframeDataset.__init__).parameters
    assert len(params) <= 10, list(params)
    assert list(params)[:5] == ["self", "store", "sampler", "frames", "transform"]


@pytest.mark.parametrize(
    "model, values, match",
    [
        (OutputOptions, {"layout": "nchw"}, r"unknown layout 'nchw'; choose one of temporal"),
        (OutputOptions, {"dtype": "int8"}, r"unknown dtype 'int8'; choose one of uint8"),
        (OutputOptions, {"targets": "multihot"}, r"unknown targets='multihot'; choose None"),
        (ReadOptions, {"memory": "tape"}, r"unknown memory='tape'; choose disk, ram or cuda"),
        (ReadOptions, {"memory_budget": 10}, r"memory_budget sizes a memory cache"),
        (
            ReadOptions,
            {"cache_limit": 0},
            r"cache_limit: out of range: 0; allowed: an integer >= 1",
        ),
        (ReadOptions, {"memory": "ram", "decode_device": "cuda"}, r"decode_device='cuda' decodes"),
        (SamplingOptions, {"seed": -1}, r"seed: out of range: -1; allowed: an integer >= 0"),
        (SamplingOptions, {"clips_per_video": 0}, r"clips_per_video: out of range: 0"),
        (SamplingOptions, {"video_ids": ["a"]}, r"video_ids must be a sequence of integers"),
        (SamplingOptions, {"split": "val", "video_ids": [1]}, r"give split= or video_ids="),
        (SamplingOptions, {"exclude_damaged": "yes"}, r"exclude_damaged: expected true or false"),
        (
            TrackOptions,
            {"register": "affine"},
            r"register='affine': allowed: None, 'homography', 'flow'",
        ),
        (TrackOptions, {"audio": "wav"}, r"audio='wav': allowed: None, 'logmel'"),
        (TrackOptions, {"audio_missing": "skip"}, r"audio_missing='skip': allowed: zeros, error"),
        (TrackOptions, {"flow": 1}, r"flow=1: allowed: True or False"),
    ],
)
def test_each_group_refuses_a_bad_value_naming_it(model, values, match):
    with pytest.raises(ConfigError, match=match):
        model(**values)


def test_a_bad_value_given_to_the_dataset_is_refused_the_same_way(store):
    with pytest.raises(ConfigError, match=r"unknown layout 'nchw'"):
        HyperframeDataset(store, frames=4, layout="nchw")
    with pytest.raises(ConfigError, match=r"seed: out of range: -1"):
        HyperframeDataset(store, frames=4, sampling={"seed": -1})
    with pytest.raises(ConfigError, match=r"reading=3: expected a ReadOptions or a mapping"):
        HyperframeDataset(store, frames=4, reading=3)


def test_the_old_keywords_give_the_same_samples_as_the_groups(store):
    aug = T.Compose([T.RandomResizedCrop(24), T.RandomHorizontalFlip()])
    ids = [0, 2, 4, 5, 7]
    old = HyperframeDataset(
        store.path,
        sampler="random",
        frames=4,
        seed=3,
        layout="channel",
        transform=aug,
        video_ids=np.asarray(ids),
        dtype="float32",
        sampler_options={"stride": 2, "short": "drop"},
        clips_per_video=2,
        memory="ram",
        memory_budget=10**9,
    )
    new = HyperframeDataset(
        store.path,
        sampler="random",
        frames=4,
        transform=aug,
        sampling=SamplingOptions(
            seed=3,
            video_ids=ids,
            sampler_options={"stride": 2, "short": "drop"},
            clips_per_video=2,
        ),
        output=OutputOptions(layout="channel", dtype="float32"),
        reading={"memory": "ram", "memory_budget": 10**9},  # a mapping of the fields
    )
    assert old.options == new.options
    assert old.options.sampling.video_ids == tuple(ids)
    assert old.layout == "channel" and old.seed == 3 and len(old) == 2 * len(ids)
    _same_samples(old, new)
    assert old[1].frames.shape == (4 * 3, 24, 24) and old[1].frames.dtype == torch.float32


def test_a_keyword_beside_its_group_replaces_that_field(store):
    base = SamplingOptions(seed=1, video_ids=[0, 1, 2])
    ds = HyperframeDataset(store, frames=4, sampling=base, seed=5)
    assert ds.options.sampling == base.replace(seed=5)
    assert ds.seed == 5 and ds.video_ids.tolist() == [0, 1, 2]


def test_an_unknown_keyword_is_refused_with_the_allowed_ones(store):
    with pytest.raises(ConfigError) as err:
        HyperframeDataset(store, frames=4, sede=1)
    text = str(err.value)
    assert text.startswith("unknown option 'sede'; did you mean seed?")
    assert "tracks, sampling, output, reading" in text
    for name in ("seed", "layout", "memory", "flow", "video_ids", "cache_dir"):
        assert name in text
    assert set(OPTION_GROUP) == {
        *TrackOptions.model_fields,
        *SamplingOptions.model_fields,
        *OutputOptions.model_fields,
        *ReadOptions.model_fields,
    }


def test_the_seed_given_fourth_by_position_still_seeds_with_a_warning(store):
    with pytest.warns(DeprecationWarning, match=r"4th positional argument is the transform"):
        old = HyperframeDataset(store, "random", 4, 7)
    assert old.seed == 7 and old.transform is None
    _same_samples(old, HyperframeDataset(store, "random", 4, seed=7))


def _config(store, seed: int = 0, model: str = "r2plus1d_tiny", **data):
    return load_config(
        {
            "data": {"store": str(store.path), "frames": 4, **data},
            "model": {"name": model},
            "train": {"seed": seed},
        }
    )


def test_the_config_builds_the_same_option_groups(store):
    cfg = _config(
        store,
        seed=9,
        model="channel_resnet18",  # a model that takes flow planes
        memory="ram",
        memory_budget=12345,
        audio="logmel",
        audio_options={"n_mels": 32},
        audio_missing="error",
        flow=True,
        register="flow",
        sampler_options={"stride": 2},
    )
    got = dataset_options(cfg, train=True, sampler_options=cfg.data.sampler_options)
    assert got == DatasetOptions(
        tracks=TrackOptions(
            audio={"n_mels": 32},
            audio_missing="error",
            flow=True,
            register="flow",
            register_onto="first",  # the run's model (channel_resnet18) is not a keyframe one
        ),
        sampling=SamplingOptions(seed=9, sampler_options={"stride": 2}),
        output=OutputOptions(layout="temporal"),
        reading=ReadOptions(memory="ram", memory_budget=12345),
    )
    # the fields the config's data section shares with the groups mean the same there
    shared = set(OPTION_GROUP) & set(type(cfg.data).model_fields)
    assert shared >= {"memory", "memory_budget", "decode_device", "flow", "register"}


def test_a_dataset_made_from_the_config_holds_those_groups(store):
    cfg = _config(store, sampler="random", sampler_options={"short": "drop"}, memory="ram")
    ids = np.arange(len(store.videos))
    ds = make_dataset(cfg, store, ids, train=True, transform=None)
    want = dataset_options(cfg, train=True, sampler_options={"short": "drop"})
    assert ds.options == want.model_copy(update={"sampling": want.sampling.replace(video_ids=ids)})
    same = HyperframeDataset(
        store, "random", 4, seed=0, sampler_options={"short": "drop"}, memory="ram"
    )
    _same_samples(ds, same)


def test_the_concept_page_lists_every_option_in_its_group():
    page = (Path(__file__).resolve().parents[1] / "docs/concepts/windows.md").read_text()
    table = page.split("## The dataset's options", 1)[1]
    rows = re.findall(r"^\| \*\*`(\w+)=\w+`\*\*|^\| `(\w+)` \|", table, flags=re.M)
    group, listed = None, {}
    for head, name in rows:
        group = head or group
        if name:
            listed[name] = group
    assert listed == OPTION_GROUP


# -- the loader ----------------------------------------------------------------------------------


def test_the_loader_takes_at_most_ten_parameters():
    assert len(inspect.signature(loader).parameters) <= 10


@pytest.mark.parametrize(
    "model, values, match",
    [
        (DeliveryOptions, {"mode": "fibers"}, r"unknown loader mode 'fibers'; choose threads"),
        (DeliveryOptions, {"read_ahead": -1}, r"read_ahead=-1: allowed: bytes, an integer >= 0"),
        (DeliveryOptions, {"prefetch_factor": 0}, r"prefetch_factor: out of range: 0"),
        (OrderOptions, {"world_size": 0}, r"world_size: out of range: 0"),
        (OrderOptions, {"balanced": "yes"}, r"balanced: expected true or false"),
    ],
)
def test_each_loader_group_refuses_a_bad_value_naming_it(model, values, match):
    with pytest.raises(ConfigError, match=match):
        model(**values)


def test_the_loaders_old_keywords_give_the_same_batches_as_its_groups(store):
    ds = HyperframeDataset(store, "random", 4, seed=2)
    old = loader(ds, 3, workers=0, seed=5, drop_last=True, rank=1, world_size=2, pin_memory=False)
    new = loader(
        ds,
        3,
        workers=0,
        order=OrderOptions(seed=5, drop_last=True, rank=1, world_size=2),
        delivery={"pin_memory": False},
    )
    a, b = list(old), list(new)
    assert len(a) == len(b) == len(ds) // 2 // 3
    for x, y in zip(a, b):
        assert (
            torch.equal(x.frames, y.frames) and x.meta["item"].tolist() == y.meta["item"].tolist()
        )
    with pytest.raises(ConfigError, match=r"unknown option 'sede'; did you mean seed\?"):
        loader(ds, 3, sede=5)
