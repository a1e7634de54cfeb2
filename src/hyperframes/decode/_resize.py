"""Frames that backends hand back as RGB arrays, and their one resize (PIL bilinear, antialiased)."""

from __future__ import annotations

import numpy as np
from PIL import Image

from .._core._errors import ConfigError

#: recorded in store manifests for backends that resize with :func:`resize_rgb`
PIL_BILINEAR = "pil-bilinear"


def check_size(size) -> tuple[int, int]:
    """Validate ``size=(height, width)``: two positive ints."""
    ok = (
        isinstance(size, (tuple, list))
        and len(size) == 2
        and all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in size)
        and all(v > 0 for v in size)
    )
    if not ok:
        raise ConfigError(f"size must be (height, width) with two positive ints, got {size!r}")
    return int(size[0]), int(size[1])


def resize_rgb(rgb: np.ndarray, size: tuple[int, int] | None) -> np.ndarray:
    """Resize an (H, W, 3) uint8 array to ``size=(height, width)`` with PIL's BILINEAR.

    PIL's BILINEAR widens its kernel when shrinking, so downscaling is antialiased.
    Returns a C-contiguous array; ``size=None`` or the same size returns ``rgb`` itself.
    """
    if size is None:
        return rgb
    height, width = check_size(size)
    if rgb.shape[:2] == (height, width):
        return rgb
    image = Image.fromarray(np.ascontiguousarray(rgb))
    return np.array(image.resize((width, height), Image.Resampling.BILINEAR))


class ArrayFrame:
    """A decoded frame already in RGB (H, W, 3) uint8; ``to_rgb`` resizes with PIL bilinear."""

    __slots__ = ("_rgb", "index", "pts_seconds")

    def __init__(self, rgb: np.ndarray, index: int, pts_seconds: float):
        self._rgb = rgb
        self.index = index
        self.pts_seconds = pts_seconds

    def to_rgb(self, size: tuple[int, int] | None = None) -> np.ndarray:
        return resize_rgb(np.ascontiguousarray(self._rgb), size)
