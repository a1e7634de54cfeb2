"""Every transform is a batch operation (issue 36): its ``draw`` per sample from the sample's
own generator and its ``batch_apply`` over the whole batch give what the transform gives sample
by sample with the same generators (exactly, or within the stated tolerance where OpenCV's
arithmetic stands in for torchvision's); a dataset whose transform holds an affine warp, hue
jitter or a user's callable stays on the batch path, the same for any worker count."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from _media import smooth_texture
from _per_sample import per_sample
from hyperframes import ConfigError, DataError
from hyperframes._core._contract import InputContract
from hyperframes._core._kernels import pixels
from hyperframes.data import HyperframeDataset, collate_hyperframes, loader
from hyperframes.data._pipeline import Recipe, run_steps
from hyperframes.data.transforms import (
    CenterCrop,
    ColorJitter,
    Compose,
    ContractCrop,
    DropFrame,
    DuplicateFrame,
    GaussianNoise,
    Normalize,
    PerSample,
    RandomAffine,
    RandomCrop,
    RandomHorizontalFlip,
    RandomResizedCrop,
    Resize,
    Reverse,
    Shuffle,
    ToFloat,
    Window,
    transform_generator,
)
from hyperframes.data.transforms._base import apply_batch
from test_flow_channels import moving_store  # noqa: F401 (the flow store fixture)

B, T, H, W = 3, 4, 24, 32


def _batch(dtype=torch.uint8) -> Window:
    """(B, T, 3, H, W) colour frames of smooth textures, each sample its own."""
    planes = [smooth_texture(H + T, W + T, seed=s, blur=2.0) for s in range(B * 3)]
    frames = np.empty((B, T, 3, H, W), np.uint8)
    for b in range(B):
        for c in range(3):
            for t in range(T):  # drifting a pixel a frame
                frames[b, t, c] = planes[b * 3 + c][t : t + H, t : t + W]
    x = torch.from_numpy(frames)
    if dtype != torch.uint8:
        x = x.to(dtype) / 255.0
    index = torch.arange(T).repeat(B, 1) * 2 + 10
    mask = torch.ones(B, T, dtype=torch.bool)
    mask[0, -1] = False
    return Window(x, index, mask)


def _gens():
    return [transform_generator(7, 1, k) for k in range(B)]


def _flip_rows(frames):
    return frames.flip(-2)


def _user_transform(frames, indices, mask, generator=None):
    shift = int(torch.randint(0, 3, (), generator=generator))
    return Window(frames.roll(shift, -1), indices, mask)


EXACT = [
    CenterCrop(16),
    RandomCrop((16, 20)),
    RandomResizedCrop(16),
    Resize((20, 20)),
    Resize(16),
    ContractCrop(InputContract(frames=T, layout="temporal", crop=16)),
    RandomHorizontalFlip(),
    GaussianNoise(0.05),
    Reverse(p=1.0),
    DropFrame(p=1.0),
    DuplicateFrame(p=1.0),
    Shuffle(),
    ToFloat(),
    Normalize([0.4, 0.5, 0.6], [0.2, 0.25, 0.3]),
    PerSample(_flip_rows),
    _user_transform,  # a plain callable: wrapped in PerSample
    Compose([RandomHorizontalFlip(0.7), Reverse(p=0.5), GaussianNoise(0.1, p=0.5)]),
]

#: transform, max mean |difference|, max 99th percentile, max |difference| (grey levels)
CLOSE = [
    (ColorJitter(0.4, 0.4, 0.4), 0.6, 2, 4),
    (ColorJitter(hue=0.3), 0.05, 1, 1),
    (ColorJitter(0.4, 0.4, 0.4, 0.2, per_frame=True), 0.6, 2, 4),
    # bilinear in the C kernel's 1/16384 fixed point (OpenCV's 1/32 pixel without it)
    (
        RandomAffine(degrees=15, translate=(0.1, 0.1), scale=(0.9, 1.1), shear=5.0),
        0.05,
        1,
        1 if pixels is not None else 2,
    ),
]


def _both(transform, dtype=torch.uint8):
    batch = _batch(dtype)
    steps = Recipe.of(transform).steps
    fast, _ = run_steps(steps, Window(batch.frames.clone(), *batch[1:]), _gens())
    slow = apply_batch(
        PerSample(transform) if not hasattr(transform, "apply") else transform,
        batch.frames.clone(),
        batch.indices,
        batch.mask,
        generators=_gens(),
    )
    return fast, slow


@pytest.mark.parametrize("transform", EXACT, ids=lambda t: type(t).__name__)
def test_the_batch_form_equals_the_transform_sample_by_sample(transform):
    fast, slow = _both(transform)
    assert fast.frames.shape == slow.frames.shape and fast.frames.dtype == slow.frames.dtype
    assert torch.equal(fast.frames, slow.frames)
    assert torch.equal(fast.indices, slow.indices) and torch.equal(fast.mask, slow.mask)


@pytest.mark.parametrize("transform,mean,p99,most", CLOSE, ids=lambda t: type(t).__name__)
def test_the_batch_form_is_within_its_tolerance_of_torchvision(transform, mean, p99, most):
    fast, slow = _both(transform)
    diff = (fast.frames.int() - slow.frames.int()).abs().numpy()
    assert diff.mean() <= mean and np.percentile(diff, 99) <= p99 and diff.max() <= most
    assert (fast.frames != _batch().frames).any()  # it did something


@pytest.mark.parametrize(
    "transform", [CLOSE[0][0], CLOSE[1][0], CLOSE[3][0]], ids=["jitter", "hue", "affine"]
)
def test_float_frames_run_torchvision_on_the_batch_exactly(transform):
    fast, slow = _both(transform, torch.float32)
    assert torch.allclose(fast.frames, slow.frames, atol=1e-6)


AUG = [RandomResizedCrop(24, scale=(0.5, 1.0)), RandomHorizontalFlip()]
HEAVY = Compose(
    [
        *AUG,
        RandomAffine(degrees=10.0),
        ColorJitter(0.3, 0.3, 0.3, 0.1),
        ColorJitter(0.2, per_frame=True, p=0.5),
        lambda frames: frames.flip(-2),
        Reverse(p=0.5),
        GaussianNoise(0.02, p=0.5),
    ]
)


def _ds(store, transform):
    return HyperframeDataset(store, "random", frames=T, seed=3, transform=transform)


def test_affine_hue_noise_temporal_and_a_lambda_stay_on_the_batch_path(tiny_motion_store):
    slow = per_sample(_ds(tiny_motion_store, HEAVY), list(range(6)))  # the reference
    ds = _ds(tiny_motion_store, HEAVY)
    samples = ds.__getitems__(list(range(6)))
    fast = collate_hyperframes(samples)
    assert fast.frames.shape == slow.frames.shape == (6, T, 3, 24, 24)
    # the same draws: the same frames in the same order, pixels up to the filters
    assert np.array_equal(fast.meta["stored_indices"], np.stack(slow.meta["stored_indices"]))
    assert torch.equal(fast.mask, slow.mask)
    diff = (fast.frames.int() - slow.frames.int()).abs().float()
    assert diff.mean() < 12 and diff.median() <= 6  # resize filters, then warped and jittered
    one = ds[4]  # ds[i] too
    assert torch.equal(one.frames, fast.frames[4])


def _module_flip(frames):
    return frames.flip(-1)


WORKERS_AUG = Compose(
    [
        *AUG,
        RandomAffine(degrees=10.0),
        ColorJitter(0.3, 0.3, 0.3, 0.1),
        _module_flip,
        DropFrame(p=0.5),
    ]
)


def _all(dl) -> dict:
    return {int(m["item"]): b.frames[k].clone() for b in dl for k, m in enumerate(b.meta)}


@pytest.mark.parametrize("mode", ["threads", "processes"])
def test_same_seed_same_samples_with_0_and_2_workers(tiny_motion_store, mode):
    want = _all(loader(_ds(tiny_motion_store, WORKERS_AUG), batch_size=4, workers=0))
    got = _all(loader(_ds(tiny_motion_store, WORKERS_AUG), batch_size=3, workers=2, mode=mode))
    assert sorted(got) == sorted(want)
    for item, frames in want.items():
        assert torch.equal(got[item], frames), item


def test_the_recipe_reads_the_steps_geometry_not_their_classes():
    r = Recipe.of(Compose([RandomResizedCrop(16), RandomHorizontalFlip(), _flip_rows]))
    assert r.crop is r.steps[0] and r.filter == "linear"
    assert [type(s).__name__ for s in r.rest] == ["PerSample"]
    assert Recipe.of(lambda frames: frames).crop is None
    assert Recipe.of(None).steps == ()


def test_a_callable_that_returns_something_else_is_refused_clearly():
    batch = _batch()
    step = PerSample(lambda frames: frames.numpy())
    with pytest.raises(DataError, match="must return frames"):
        run_steps([step], batch, _gens())
    with pytest.raises(ConfigError, match="PerSample needs a callable"):
        PerSample(3)


def test_flow_follows_an_affine_on_the_batch_path_as_per_sample(moving_store):  # noqa: F811
    """flow=True with a RandomAffine after the read: the flow is warped with the same
    parameters and its vectors turned into the output's pixels, as the per-sample path's
    follow_geometry does; a step that reorders frames is refused on either path."""
    from test_flow_channels import T as FT
    from test_flow_channels import interior_mean

    aug = Compose(
        [
            RandomResizedCrop(48, scale=(0.3, 0.6)),
            RandomHorizontalFlip(),
            RandomAffine(degrees=20.0, translate=(0.05, 0.05), scale=(1.0, 1.0)),
        ]
    )

    def batch(pipeline: bool, transform=aug):
        ds = HyperframeDataset(
            moving_store,
            "sliding",
            frames=FT,
            transform=transform,
            flow=True,
            seed=4,
            sampler_options={"window_stride": 1},
        )
        if not pipeline:
            return per_sample(ds, list(range(len(ds))))
        return ds.__getitems__(list(range(len(ds))))

    fast, slow = batch(True), batch(False)
    assert fast.flow.shape == slow.flow.shape == (len(fast), FT - 1, 2, 48, 48)
    for k in range(len(fast)):
        want, got = interior_mean(slow.flow[k], 8), interior_mean(fast.flow[k], 8)
        torch.testing.assert_close(got, want, atol=0.25, rtol=0.1)
    with pytest.raises(ConfigError, match="reorders or drops frames"):
        batch(True, Compose([RandomResizedCrop(48), Reverse(p=1.0)]))
