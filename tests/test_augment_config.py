"""Temporal augmentation from the config (reverse, drop / duplicate a frame, per-frame colour
jitter, affine, Gaussian noise) on windows read from a real store, and the samplers the seeds
name: K candidate clips per video with one drawn per epoch, N frames anywhere in the video."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from hyperframes import ConfigError
from hyperframes.build import BuildOptions, build_store
from hyperframes.data import HyperframeDataset
from hyperframes.data.transforms import (
    ColorJitter,
    DropFrame,
    DuplicateFrame,
    GaussianNoise,
    RandomAffine,
    Reverse,
)
from hyperframes.demo import make_motion_dataset
from hyperframes.sampling import VideoMeta, create_sampler
from hyperframes.store import open_store
from hyperframes.train import load_config
from hyperframes.train._config._data import make_dataset, train_transform


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    root = tmp_path_factory.mktemp("aug") / "motion"
    make_motion_dataset(root, classes=("left", "right"), videos_per_class=2, frames=12, size=32)
    out = tmp_path_factory.mktemp("aug") / "store"
    build_store(root, out, BuildOptions(size="none"), progress=False)
    s = open_store(out)
    yield s
    s.close()


def _cfg(store, **aug):
    return load_config(
        {
            "data": {"store": str(store.path), "frames": 4, "augmentation": aug},
            "model": {"name": "r2plus1d_tiny"},
        }
    )


def test_every_augmentation_key_builds_its_transform_in_order(store):
    cfg = _cfg(
        store,
        affine={"degrees": 5, "translate": [0.1, 0.1]},
        color_jitter=0.3,
        color_jitter_per_frame=True,
        noise=0.05,
        reverse=0.5,
        drop_frame=0.2,
        duplicate_frame=0.2,
    )
    steps = train_transform(cfg.data.augmentation).transforms
    assert [type(t) for t in steps] == [
        RandomAffine,
        ColorJitter,
        GaussianNoise,
        Reverse,
        DropFrame,
        DuplicateFrame,
    ]
    assert steps[1].per_frame and steps[0].degrees == (-5.0, 5.0)
    assert (steps[3].p, steps[4].p, steps[5].p) == (0.5, 0.2, 0.2)


def test_reverse_moves_indices_with_frames_on_stored_windows(store):
    plain = make_dataset(_cfg(store), store, np.arange(len(store.videos)), train=True)
    rev = make_dataset(_cfg(store, reverse=1.0), store, np.arange(len(store.videos)), train=True)
    a, b = plain[0], rev[0]
    assert torch.equal(b.frames, a.frames.flip(0))
    assert b.meta["stored_indices"].tolist() == a.meta["stored_indices"].tolist()[::-1]


def test_drop_and_duplicate_repeat_a_stored_frame(store):
    ids = np.arange(len(store.videos))
    for key in ("drop_frame", "duplicate_frame"):
        ds = make_dataset(_cfg(store, **{key: 1.0}), store, ids, train=True)
        s = ds[1]
        idx = list(s.meta["stored_indices"])
        assert len(idx) == 4 and len(set(idx)) == 3, (key, idx)
        i = next(k for k in range(1, 4) if idx[k] == idx[k - 1])
        assert torch.equal(s.frames[i], s.frames[i - 1])


def test_noise_and_per_frame_jitter_are_seeded_and_frame_independent(store):
    ids = np.arange(len(store.videos))
    clean = make_dataset(_cfg(store), store, ids, train=True)[0].frames.float()
    noisy_ds = make_dataset(_cfg(store, noise=0.1), store, ids, train=True)
    noisy = noisy_ds[0].frames.float()
    assert torch.equal(noisy, noisy_ds[0].frames.float())  # same seed, epoch, item
    diff = noisy - clean
    assert 15 < float(diff.std()) < 35  # std 0.1 of 255, less what clipping removes
    assert not torch.equal(diff[0], diff[1])  # drawn per frame
    jit = make_dataset(
        _cfg(store, color_jitter=0.5, color_jitter_per_frame=True), store, ids, train=True
    )[0].frames.float()
    ratios = [float(jit[t].mean() / clean[t].mean()) for t in range(4)]
    assert max(ratios) - min(ratios) > 0.02  # frames got different factors


def test_bad_augmentation_is_a_config_error_naming_the_key(store):
    with pytest.raises(ConfigError, match=r"data\.augmentation\.affine: .*allowed keys"):
        _cfg(store, affine={"rotate": 5})
    with pytest.raises(ConfigError, match=r"data\.augmentation.*RandomAffine: scale"):
        _cfg(store, affine={"scale": [-1, 2]})
    with pytest.raises(ConfigError, match=r"data\.augmentation\.noise"):
        _cfg(store, noise=2.0)
    with pytest.raises(ConfigError, match=r"data\.augmentation\.reverse: not applied to seg"):
        load_config(
            {
                "data": {"store": str(store.path), "augmentation": {"reverse": 0.5}},
                "model": {"name": "keyframe_unet"},
            }
        )


def test_candidates_draws_one_of_k_fixed_clips_per_epoch():
    videos = [VideoMeta(num_frames=40, fps=25.0), VideoMeta(num_frames=25, fps=25.0)]
    cand = create_sampler("candidates", frames=8, clips=3, stride=2)
    uni = create_sampler("uniform", frames=8, clips=3, stride=2)
    assert cand.random and cand.num_items(videos) == 2
    for v in range(2):
        fixed = {int(uni.plan(videos, 3 * v + k).frame_indices[0]) for k in range(3)}
        seen = {int(cand.plan(videos, v, seed=0, epoch=e).frame_indices[0]) for e in range(40)}
        assert seen == fixed  # every candidate drawn, nothing else
    a = [cand.plan(videos, 0, seed=1, epoch=e).clip for e in range(20)]
    assert a == [cand.plan(videos, 0, seed=1, epoch=e).clip for e in range(20)]
    assert a != [cand.plan(videos, 0, seed=2, epoch=e).clip for e in range(20)]


def test_scattered_draws_distinct_sorted_frames_over_the_whole_video():
    videos = [VideoMeta(num_frames=100, fps=25.0)]
    s = create_sampler("scattered", frames=6)
    plans = [s.plan(videos, 0, seed=0, epoch=e) for e in range(30)]
    for p in plans:
        idx = p.frame_indices
        assert len(set(idx.tolist())) == 6 and np.all(np.diff(idx) > 0) and p.mask.all()
    every = np.concatenate([p.frame_indices for p in plans])
    assert every.min() < 10 and every.max() > 90  # the whole video, not one window
    short = create_sampler("scattered", frames=6, short="pad").plan(
        [VideoMeta(num_frames=4, fps=25.0)], 0
    )
    assert short.mask.tolist() == [True] * 4 + [False] * 2


def test_samplers_from_a_config_read_real_windows(store):
    ds = HyperframeDataset(
        store, sampler="candidates", frames=4, seed=0, sampler_options={"clips": 2, "stride": 2}
    )
    starts = {int(ds[(e, 0)].meta["stored_indices"][0]) for e in range(12)}
    assert len(starts) == 2
    cfg = load_config(
        {
            "data": {"store": str(store.path), "frames": 4, "sampler": "scattered"},
            "model": {"name": "r2plus1d_tiny"},
        }
    )
    s = make_dataset(cfg, store, np.arange(len(store.videos)), train=True)[0]
    assert s.frames.shape[0] == 4 and np.all(np.diff(s.meta["stored_indices"]) > 0)
