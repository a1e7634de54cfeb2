"""The C kernels of the batch transforms (``hyperframes._core._pixels``, issue 36's speed of
``RandomAffine`` and hue jitter) against torchvision's float path, on every kind of pixel: hue
on greys, saturated colours, noise and each sector of the hue circle, turns of every size;
the affine warp with rotation, shear, scale, a translation that uncovers most of the frame and
a fill. Stated tolerance: the affine within one grey level (weights in 1/16384), the hue's
largest and smallest channel exact and the third within one level; the OpenCV fallback
(without the kernel) within two."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torchvision.transforms.v2.functional as F
from torchvision.transforms import InterpolationMode

import hyperframes.data.transforms._color as color
import hyperframes.data.transforms._spatial as spatial
from hyperframes._core._kernels import pixels
from hyperframes.data.transforms._color import hue_batch
from hyperframes.data.transforms._spatial import affine_source_map, warp_affine_batch

needs_kernel = pytest.mark.skipif(
    pixels is None, reason="the C extension is not built here (make setup builds it)"
)


def _frames(b: int, t: int, h: int, w: int, seed: int = 0) -> np.ndarray:
    """uint8 (b, t, 3, h, w): noise, with grey, black, white and saturated rows mixed in."""
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 256, (b, t, 3, h, w), dtype=np.uint8)
    x[..., 0, :] = rng.integers(0, 256, (b, t, 1, w), dtype=np.uint8)  # grey rows
    x[..., 1, :] = np.array([255, 0, 0], np.uint8)[:, None]  # pure red
    x[..., 2, :] = np.array([0, 255, 255], np.uint8)[:, None]
    x[..., 3, ::2] = 0
    x[..., 4, ::3] = 255
    return x


@needs_kernel
def test_hue_kernel_matches_torchvision_for_every_turn():
    x = _frames(2, 6, 20, 24)
    shifts = np.array([[0.5, -0.5, 0.25, -0.13, 1e-4, 0.0], [0.1, -0.1, 0.333, -0.49, 0.07, 0.0]])
    got = x.copy()
    hue_batch(got, shifts)
    want = np.stack(
        [
            np.stack(
                [
                    F.adjust_hue(torch.from_numpy(x[k, j]), float(s)).numpy()
                    for j, s in enumerate(row)
                ]
            )
            for k, row in enumerate(shifts)
        ]
    )
    diff = np.abs(got.astype(int) - want.astype(int))
    assert diff.max() <= 1 and (diff > 0).mean() < 1e-3
    assert np.array_equal(got[:, -1], x[:, -1])  # a turn of 0 leaves the frame as it was
    assert (got[:, :-1] != x[:, :-1]).any()
    assert np.array_equal(got[..., 0, :], x[..., 0, :])  # greys have no hue to turn


def _affine_case(params: dict, fill: float, h: int = 30, w: int = 40):
    x = _frames(2, 3, h, w, seed=1)
    maps = np.stack([affine_source_map(params, h, w)] * 2)
    got = warp_affine_batch(torch.from_numpy(x.copy()), maps, fill).numpy()  # in place
    frames = torch.from_numpy(x).flatten(0, 1)
    want = F.affine(
        frames, **params, interpolation=InterpolationMode.BILINEAR, fill=[fill] * 3
    ).reshape(x.shape)
    return got, want.numpy(), x


AFFINE = [
    ({"angle": 33.0, "translate": [3, -2], "scale": 1.2, "shear": [12.0, 0.0]}, 0.0),
    ({"angle": -170.0, "translate": [0, 0], "scale": 0.6, "shear": [0.0, 0.0]}, 90.0),
    ({"angle": 5.0, "translate": [31, 22], "scale": 1.0, "shear": [-20.0, 0.0]}, 255.0),
]


@needs_kernel
@pytest.mark.parametrize("params,fill", AFFINE)
def test_affine_kernel_is_within_a_level_of_torchvision(params, fill):
    got, want, x = _affine_case(params, fill)
    diff = np.abs(got.astype(int) - want.astype(int))
    assert diff.max() <= 1 and diff.mean() < 0.01
    assert not np.array_equal(got, x)


def test_without_the_kernel_opencv_stands_in_within_two_levels(monkeypatch):
    monkeypatch.setattr(spatial, "pixels", None)
    monkeypatch.setattr(color, "pixels", None)
    got, want, _ = _affine_case(*AFFINE[0])
    assert np.abs(got.astype(int) - want.astype(int)).max() <= 2
    x = _frames(1, 2, 12, 16)
    hued = x.copy()
    hue_batch(hued, np.array([[0.2, -0.3]]))
    want_hue = np.stack(
        [F.adjust_hue(torch.from_numpy(f), s).numpy() for f, s in zip(x[0], (0.2, -0.3))]
    )
    assert np.abs(hued[0].astype(int) - want_hue.astype(int)).max() <= 1


@needs_kernel
def test_the_kernels_refuse_buffers_smaller_than_the_shape():
    x = np.zeros((1, 3, 8, 8), np.uint8)
    with pytest.raises(ValueError, match="buffer sizes"):
        pixels.warp_affine(x, np.zeros((1, 2, 3)), 2, 3, 8, 8, 0.0)
    with pytest.raises(ValueError, match="buffer sizes"):
        pixels.hue_shift(x, np.zeros(4), 4, 64)


def _opencv_linear(crop: np.ndarray, oh: int, ow: int, flip: bool) -> np.ndarray:
    """OpenCV's INTER_LINEAR plane by plane, mirrored after: what the resize kernel stands for."""
    import cv2

    planes = crop.reshape(-1, *crop.shape[-2:])
    out = np.stack([cv2.resize(p, (ow, oh), interpolation=cv2.INTER_LINEAR) for p in planes])
    out = out.reshape(*crop.shape[:-2], oh, ow)
    return np.ascontiguousarray(out[..., ::-1]) if flip else out


# (box h, w, out h, w): up and down (below 2x), boxes narrower than 16 (no byte shuffle),
# widths that are not a multiple of 8, 16 or 32, a box of one row or column, the bench's sizes
RESIZES = [
    (100, 150, 112, 112),
    (37, 53, 112, 112),
    (128, 200, 112, 112),
    (9, 13, 21, 30),
    (1, 40, 5, 7),
    (30, 1, 17, 3),
    (60, 90, 45, 61),
    (64, 64, 64, 33),
]


@needs_kernel
@pytest.mark.parametrize("flip", [False, True], ids=["plain", "flipped"])
@pytest.mark.parametrize("bh,bw,oh,ow", RESIZES)
def test_resize_kernel_gives_opencvs_bilinear_pixels(bh, bw, oh, ow, flip):
    frames = _frames(1, 9, 140, 210, seed=2)[0]  # (T, C, H, W)
    crop = frames[1:9:2, :, 5 : 5 + bh, 7 : 7 + bw]  # a strided window of a box, no copy
    got = np.full((4, 3, oh, ow), 7, np.uint8)
    pixels.resize_linear(crop, got, flip)
    diff = np.abs(got.astype(int) - _opencv_linear(crop, oh, ow, flip).astype(int))
    # the same weights and integer steps: equal here (OpenCV's scalar tail of a row, whose
    # length depends on its build's vector width, rounds within one level of its SIMD body)
    assert diff.max() <= 1 and (diff > 0).mean() < 1e-3


@needs_kernel
def test_resize_planes_takes_the_kernel_and_equals_its_opencv_fallback(monkeypatch):
    import hyperframes._core._resize as resize

    x = _frames(2, 4, 90, 120, seed=3)
    box = (4, 9, 70, 100)
    for flip in (False, True):
        fast = np.empty((2, 4, 3, 64, 80), np.uint8)
        resize.resize_planes(x, box, fast, filter="linear", flip=flip)
        monkeypatch.setattr(resize, "pixels", None)
        slow = np.empty_like(fast)
        resize.resize_planes(x, box, slow, filter="linear", flip=flip)
        monkeypatch.setattr(resize, "pixels", pixels)
        assert np.abs(fast.astype(int) - slow.astype(int)).max() <= 1
        assert (fast != slow).mean() < 1e-3
        assert not np.array_equal(fast, fast[..., ::-1])  # the flip is a real mirror here


def test_a_raw_store_batch_reads_the_same_pixels_without_the_resize_kernel(
    tiny_motion_store, monkeypatch
):
    import hyperframes._core._resize as resize
    from hyperframes.data import HyperframeDataset
    from hyperframes.data.transforms import Compose, RandomHorizontalFlip, RandomResizedCrop

    aug = Compose([RandomResizedCrop(24, scale=(0.3, 1.0)), RandomHorizontalFlip()])
    ds = HyperframeDataset(tiny_motion_store, "random", frames=4, seed=1, transform=aug)
    fast = ds.read_batch(list(range(6))).frames.clone()
    monkeypatch.setattr(resize, "pixels", None)  # OpenCV plane by plane, the flip after
    slow = ds.read_batch(list(range(6))).frames
    assert (fast.int() - slow.int()).abs().max() <= 1
    assert (fast != slow).float().mean() < 1e-3


@needs_kernel
def test_the_resize_kernel_refuses_arrays_it_cannot_take():
    src = np.zeros((2, 3, 8, 8), np.uint8)
    with pytest.raises(ValueError, match="resize_linear: need uint8 src"):
        pixels.resize_linear(src, np.zeros((2, 2, 4, 4), np.uint8), False)  # planes differ
    with pytest.raises(ValueError, match="resize_linear: need uint8 src"):
        pixels.resize_linear(src[..., ::2], np.zeros((2, 3, 4, 4), np.uint8), False)
    with pytest.raises(ValueError, match="resize_linear: need uint8 src"):
        pixels.resize_linear(src, np.zeros((2, 3, 4, 8), np.uint8)[..., ::2], False)
