"""``pca_image``: a (C, H, W) feature map as an RGB picture of its first principal components."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from PIL import Image

from .._core._errors import InputError

__all__ = ["pca_image"]


def pca_image(features, path: str | Path, *, scale: int = 1) -> Path:
    """Write the first three principal components of ``features`` as an RGB PNG.

    ``features``: a (C, H, W) tensor or array (or (1, C, H, W)), e.g. the H_t of a
    keyframe model (``model.hidden(x)[0]``). Each pixel is a C-vector; the three directions
    of largest variance across pixels become red, green and blue, each stretched to 0..255
    (signs fixed so the result is deterministic). Fewer than 3 channels leave the missing
    colours black. ``scale`` enlarges the picture by pixel repetition. Returns the path;
    the PNG is ``W*scale`` x ``H*scale`` pixels.
    """
    if isinstance(features, torch.Tensor):
        arr = features.detach().to("cpu", torch.float64).numpy()
    else:
        arr = np.asarray(features, dtype=np.float64)
    if arr.ndim == 4 and arr.shape[0] == 1:
        arr = arr[0]
    if arr.ndim != 3 or 0 in arr.shape:
        raise InputError(f"pca_image takes a (C, H, W) feature map, got shape {arr.shape}")
    if not np.isfinite(arr).all():
        raise InputError("pca_image: the feature map holds NaN or infinite values")
    if isinstance(scale, bool) or not isinstance(scale, int) or scale < 1:
        raise InputError(f"pca_image: scale must be a positive integer, got {scale!r}")
    c, h, w = arr.shape
    x = arr.reshape(c, h * w).T  # pixels x channels
    x = x - x.mean(axis=0, keepdims=True)
    k = min(3, c, h * w)
    _, _, vt = np.linalg.svd(x, full_matrices=False)
    comps = vt[:k]
    signs = np.sign(comps[np.arange(k), np.abs(comps).argmax(axis=1)])
    comps = comps * np.where(signs == 0, 1.0, signs)[:, None]
    proj = x @ comps.T  # pixels x k
    rgb = np.zeros((h * w, 3))
    lo, hi = proj.min(axis=0), proj.max(axis=0)
    span = np.where(hi - lo > 1e-12, hi - lo, 1.0)
    rgb[:, :k] = (proj - lo) / span
    img = (rgb.reshape(h, w, 3) * 255.0 + 0.5).astype(np.uint8)
    if scale > 1:
        img = img.repeat(scale, axis=0).repeat(scale, axis=1)
    out = Path(path).expanduser()
    out.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(img).save(out, format="PNG")
    return out
