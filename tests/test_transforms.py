"""Transforms: one parameter set per window, explicit generators, indices travel with frames."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from hyperframes import ConfigError, DataError
from hyperframes._core._layouts import to_layout
from hyperframes.data.transforms import (
    CenterCrop,
    ColorJitter,
    Compose,
    DropFrame,
    DuplicateFrame,
    Normalize,
    RandomAffine,
    RandomCrop,
    RandomHorizontalFlip,
    RandomResizedCrop,
    Resize,
    Reverse,
    Shuffle,
    ToFloat,
    Transform,
    Window,
    transform_generator,
)
from hyperframes.data.transforms._base import apply_batch
from hyperframes.data.transforms._normalize import normalize

T = 6


def image(h=40, w=48, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, 256, (3, h, w), generator=g, dtype=torch.uint8)


def same_frames(t=T, **kw):
    return image(**kw).unsqueeze(0).repeat(t, 1, 1, 1)


def distinct_frames(t=T):
    return torch.stack([image(seed=i) for i in range(t)])


SPATIAL = [
    RandomResizedCrop(24),
    RandomCrop(20),
    RandomHorizontalFlip(p=1.0),
    RandomAffine(degrees=15, translate=(0.2, 0.2), scale=(0.8, 1.2), shear=5),
    ColorJitter(0.4, 0.4, 0.4, 0.1),
    Resize((30, 20)),
    CenterCrop(16),
]
AUG = Compose([RandomResizedCrop(24), RandomHorizontalFlip(), ColorJitter(0.4, 0.4, 0.4)])


@pytest.mark.parametrize("t", SPATIAL, ids=lambda t: type(t).__name__)
def test_identical_frames_stay_identical(t):
    out = t(same_frames(), generator=7).frames
    assert out.dtype == torch.uint8
    for f in out[1:]:
        assert torch.equal(f, out[0])


@pytest.mark.parametrize(
    "t",
    [RandomResizedCrop(24), RandomCrop(20), RandomAffine(degrees=10), RandomHorizontalFlip()],
    ids=lambda t: type(t).__name__,
)
def test_one_box_for_every_frame(t):
    # frame t = base + 10 t: with one set of parameters, out[t] - out[0] == 10 t everywhere
    base = image().float()
    x = torch.stack([base + 10 * i for i in range(T)])
    for seed in range(5):
        out = t(x, generator=seed).frames
        # pixels fully inside the frame after the transform (RandomAffine fills the rest)
        valid = t(torch.ones_like(x), generator=seed).frames[0] > 0.999
        assert valid.float().mean() > 0.5
        for i in range(T):
            diff = (out[i] - out[0])[valid]
            assert torch.allclose(diff, torch.full_like(diff, 10.0 * i), atol=1e-3)


def test_same_seed_same_output_different_seed_different():
    x = distinct_frames()
    a = AUG(x, generator=transform_generator(1, 0, 5)).frames
    b = AUG(x, generator=transform_generator(1, 0, 5)).frames
    assert torch.equal(a, b)
    others = [AUG(x, generator=transform_generator(1, e, 5)).frames for e in range(1, 6)]
    assert all(not torch.equal(a, o) for o in others)
    assert not torch.equal(a, AUG(x, generator=transform_generator(2, 0, 5)).frames)


def test_random_transforms_need_a_generator():
    with pytest.raises(ConfigError, match=r"RandomHorizontalFlip.* needs generator="):
        RandomHorizontalFlip()(same_frames())
    assert Resize(10)(same_frames()).frames.shape[-2:] == (10, 12)  # deterministic: no generator


def test_global_rng_is_not_touched():
    torch.manual_seed(0)
    before = torch.random.get_rng_state()
    AUG(distinct_frames(), generator=3)
    assert torch.equal(before, torch.random.get_rng_state())


def test_per_frame_color_jitter():
    x = same_frames()
    shared = ColorJitter(brightness=0.5)(x, generator=1).frames
    assert all(torch.equal(f, shared[0]) for f in shared)
    per = ColorJitter(brightness=0.5, per_frame=True)(x, generator=1).frames
    assert len({f.float().mean().item() for f in per}) == T


def test_crop_larger_than_frames_is_a_data_error():
    with pytest.raises(
        DataError, match=r"crop 64x64 is larger than the 40x48 frames; put a Resize"
    ):
        CenterCrop(64)(same_frames())


def test_bad_options():
    with pytest.raises(ConfigError, match="p must be a probability"):
        RandomHorizontalFlip(p=2)
    with pytest.raises(ConfigError, match="hue must lie within"):
        ColorJitter(hue=0.7)
    with pytest.raises(ConfigError, match="size must be an int or"):
        RandomResizedCrop((1, 2, 3))


# -- temporal -----------------------------------------------------------------------------------


def labelled(t=T):
    """Frame i is filled with value i, so frames can be matched to their indices."""
    return torch.arange(t, dtype=torch.uint8).reshape(t, 1, 1, 1).expand(t, 3, 4, 4).clone()


def test_reverse_moves_indices_and_mask():
    mask = torch.tensor([True] * 4 + [False] * 2)
    w = Reverse(p=1.0)(labelled(), torch.arange(10, 16), mask, generator=0)
    assert w.indices.tolist() == [15, 14, 13, 12, 11, 10]
    assert w.mask.tolist() == [False, False, True, True, True, True]
    assert w.frames[:, 0, 0, 0].tolist() == [5, 4, 3, 2, 1, 0]


def test_drop_and_duplicate_keep_t():
    for seed in range(10):
        d = DropFrame(p=1.0)(labelled(), generator=seed).indices.tolist()
        i = next(k for k in range(1, T) if d[k] == d[k - 1])
        assert d == [*range(i), i - 1, *range(i + 1, T)]
        u = DuplicateFrame(p=1.0)(labelled(), generator=seed).indices.tolist()
        j = next(k for k in range(T - 1) if u[k] == u[k + 1])
        assert u == [*range(j + 1), j, *range(j + 1, T - 1)]


@settings(max_examples=30, deadline=None, database=None)
@given(seed=st.integers(0, 2**31), t=st.integers(1, 10))
def test_temporal_transforms_keep_frames_with_their_indices(seed, t):
    pipe = Compose([Reverse(), DropFrame(), DuplicateFrame(), Shuffle(p=0.5)])
    w = pipe(labelled(t), generator=seed)
    assert w.frames.shape[0] == t and w.indices.shape == (t,) and w.mask.shape == (t,)
    assert w.frames[:, 0, 0, 0].tolist() == w.indices.tolist()


def test_temporal_transforms_declare_sequence_changes():
    for cls in (Reverse, DropFrame, DuplicateFrame, Shuffle):
        assert cls.changes_sequence and not cls.changes_count
    assert not RandomResizedCrop.changes_sequence
    assert Compose([RandomCrop(4), Reverse()]).changes_sequence
    assert not Compose([RandomCrop(4)]).changes_sequence
    out = Shuffle()(labelled(), generator=4).indices
    assert sorted(out.tolist()) == list(range(T))


class _DropLast(Transform):
    def apply(self, window, generator):
        return Window(*(part[:-1] for part in window))


class _DeclaredDropLast(_DropLast):
    changes_count = True


def test_undeclared_frame_count_change_names_the_transform():
    with pytest.raises(DataError, match=r"_DropLast\(\) changed the number of frames from 6 to 5"):
        Compose([RandomHorizontalFlip(), _DropLast()])(labelled(), generator=0)
    w = Compose([_DeclaredDropLast()])(labelled())
    assert w.frames.shape[0] == T - 1


# -- normalisation ------------------------------------------------------------------------------

MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]


def test_normalize_uint8_scales_to_unit_range():
    x = same_frames()
    out = Normalize(MEAN, STD)(x).frames
    expect = (x.float() / 255 - torch.tensor(MEAN).view(3, 1, 1)) / torch.tensor(STD).view(3, 1, 1)
    assert out.dtype == torch.float32 and torch.allclose(out, expect, atol=1e-6)


@pytest.mark.parametrize("layout", ["channel", "conv3d"])
def test_normalize_matches_across_layouts(layout):
    x = distinct_frames()
    ref = to_layout(Normalize(MEAN, STD)(x).frames, layout)
    got = normalize(to_layout(x, layout), MEAN, STD, layout=layout)
    assert torch.allclose(got, ref, atol=1e-6)
    batch = torch.stack([x, x.flip(0)])
    got_b = normalize(to_layout(batch, layout), MEAN, STD, layout=layout)
    assert torch.allclose(got_b[0], ref, atol=1e-6)


def test_normalize_channel_count_mismatch():
    with pytest.raises(DataError, match="frames have 3 channels but mean/std have 2 values"):
        normalize(same_frames(), [0.5, 0.5], [0.2, 0.2])
    with pytest.raises(DataError, match="18 channels is not a multiple of the 4"):
        normalize(to_layout(same_frames(), "channel"), [0.5] * 4, [0.2] * 4, layout="channel")


def test_to_float():
    out = ToFloat()(same_frames()).frames
    assert out.dtype == torch.float32 and float(out.max()) <= 1.0


# -- batches ------------------------------------------------------------------------------------


def test_batch_path_uses_per_sample_parameters():
    batch = same_frames().unsqueeze(0).repeat(4, 1, 1, 1, 1)
    gens = [transform_generator(0, 0, i) for i in range(4)]
    out = apply_batch(AUG, batch, generators=gens)
    assert out.frames.shape == (4, T, 3, 24, 24) and out.frames.dtype == torch.uint8
    assert out.indices.shape == (4, T) and out.mask.shape == (4, T)
    for i in range(4):
        single = AUG(batch[i], generator=transform_generator(0, 0, i)).frames
        assert torch.equal(out.frames[i], single)
    assert not torch.equal(out.frames[0], out.frames[1])
    again = AUG.batch(batch, generators=[transform_generator(0, 0, i) for i in range(4)])
    assert torch.equal(again.frames, out.frames)


def test_batch_path_checks_shape_and_generators():
    with pytest.raises(DataError, match=r"use apply_batch"):
        AUG(same_frames().unsqueeze(0), generator=0)
    with pytest.raises(DataError, match="2 generators for a batch of 3"):
        apply_batch(AUG, same_frames().unsqueeze(0).repeat(3, 1, 1, 1, 1), generators=[0, 1])
    with pytest.raises(DataError, match=r"different shapes .*RandomResizedCrop"):
        apply_batch(_RandomWidth(), torch.zeros(2, 2, 3, 40, 48), generators=[0, 1])


class _RandomWidth(Transform):
    random = True

    def apply(self, window, generator):
        w = int(torch.randint(10, 40, (), generator=generator))
        return Window(window.frames[..., :w], window.indices, window.mask)


def test_transform_generator_is_deterministic():
    a = torch.rand(4, generator=transform_generator(1, 2, 3))
    assert torch.equal(a, torch.rand(4, generator=transform_generator(1, 2, 3)))
    assert not torch.equal(a, torch.rand(4, generator=transform_generator(1, 2, 4)))
    with pytest.raises(ConfigError, match="item must be an integer >= 0"):
        transform_generator(0, 0, -1)


def test_a_batch_of_transform_generators_is_the_one_sample_forms():
    from hyperframes.data.transforms._seeds import seed_states, transform_generators

    rng = np.random.default_rng(0)
    epochs, items = rng.integers(0, 2**32, 40), rng.integers(0, 2**32, 40)
    epochs[:4], items[:4] = [0, 0, 1, 2**32 - 1], [0, 2**32 - 1, 0, 5]
    for seed in (0, 9, 2**32 - 1):
        want = [
            np.random.SeedSequence([seed, int(e), int(i)], spawn_key=(3,)).generate_state(
                1, np.uint64
            )[0]
            for e, i in zip(epochs, items)
        ]
        assert np.array_equal(seed_states(seed, epochs, items, 3), np.array(want, np.uint64))
    big = [2**32, 3]  # a key of 2**32 or more: one by one through transform_generator
    for e, i in ((np.arange(3), np.arange(3)), (np.array(big), np.array([7, 2**40]))):
        got = transform_generators(11, e, i)
        for g, a, b in zip(got, e.tolist(), i.tolist()):
            want_draws = torch.rand(4, generator=transform_generator(11, a, b))
            assert torch.equal(torch.rand(4, generator=g), want_draws)
    with pytest.raises(ConfigError, match="item must be an integer >= 0"):
        transform_generators(0, np.zeros(2, np.int64), np.array([1, -1]))
