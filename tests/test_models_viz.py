"""hyperframes.viz.pca_image: H_t feature maps as RGB pictures."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from PIL import Image

from hyperframes import InputError
from hyperframes import models as M
from hyperframes.viz import pca_image


def _read(path) -> np.ndarray:
    with Image.open(path) as img:
        assert img.format == "PNG" and img.mode == "RGB"
        return np.asarray(img)


def test_pca_image_of_a_keyframe_hidden_map(tmp_path):
    torch.manual_seed(0)
    model = M.create("keyframe_unet", num_classes=2, frames=4).eval()
    x = model.example_input(batch=1, size=40)
    with torch.no_grad():
        h = model.hidden(x)[0]  # (C, H, W)
    path = pca_image(h, tmp_path / "sub" / "h.png")
    assert path.exists()
    img = _read(path)
    assert img.shape == (40, 40, 3)
    assert img.reshape(-1, 3).std(0).min() > 0  # every colour varies


def test_pca_image_shape_scale_and_structure(tmp_path):
    h, w = 12, 20
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float64)
    feats = np.stack([xx, yy, xx * yy, np.ones_like(xx)])  # (4, H, W) with structure
    img = _read(pca_image(feats, tmp_path / "a.png", scale=3))
    assert img.shape == (h * 3, w * 3, 3)
    assert len(np.unique(img.reshape(-1, 3), axis=0)) > 10
    again = _read(pca_image(feats, tmp_path / "b.png", scale=3))
    assert np.array_equal(img, again)  # deterministic, signs included


def test_pca_image_few_channels_and_batch_of_one(tmp_path):
    feats = torch.randn(1, 2, 8, 9)
    img = _read(pca_image(feats, tmp_path / "two.png"))
    assert img.shape == (8, 9, 3)
    assert (img[..., 2] == 0).all() and img[..., 0].std() > 0


def test_pca_image_refuses_bad_input(tmp_path):
    with pytest.raises(InputError, match=r"\(C, H, W\)"):
        pca_image(torch.randn(8, 8), tmp_path / "x.png")
    with pytest.raises(InputError, match="NaN"):
        pca_image(torch.full((3, 4, 4), float("nan")), tmp_path / "x.png")
    with pytest.raises(InputError, match="scale"):
        pca_image(torch.randn(3, 4, 4), tmp_path / "x.png", scale=0)
