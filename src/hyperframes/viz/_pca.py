"""``pca_image``: a (C, H, W) feature map as an RGB picture of its first principal components."""

from __future__ import annotations

from pathlib import Path

from PIL import Image

from .._core._pictures import pca_rgb

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
    img = pca_rgb(features, scale=scale)
    out = Path(path).expanduser()
    out.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(img).save(out, format="PNG")
    return out
