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
