"""Frames that backends hand back as RGB arrays, and their resize: PIL bilinear (antialiased),
or, for an array that must match what a PyAV build stored, FFmpeg's swscale with its area
filter (:func:`resize_rgb` ``like="pyav"``)."""

from __future__ import annotations

import av
import numpy as np
from PIL import Image

from .._core._errors import ConfigError
from ._base import resize_algorithm_of

#: recorded in store manifests for backends that resize with :func:`resize_rgb`
PIL_BILINEAR = "pil-bilinear"
#: recorded for the PyAV backend: swscale's area filter, in its RGB conversion
SWSCALE_AREA = "swscale-area"


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


def resize_rgb(
    rgb: np.ndarray, size: tuple[int, int] | None, *, like: str | None = None
) -> np.ndarray:
    """Resize an (H, W, 3) uint8 array to ``size=(height, width)`` with PIL's BILINEAR, or,
    with ``like`` (a decoder's name), as that decoder resizes in a build (its
    ``resize_algorithm``: swscale's area filter for ``"pyav"``, one thread as the decoder
    uses it; PIL bilinear for the others).

    PIL's BILINEAR widens its kernel when shrinking, so downscaling is antialiased.
    Returns a C-contiguous array; ``size=None`` or the same size returns ``rgb`` itself.
    """
    if size is None:
        return rgb
    height, width = check_size(size)
    if rgb.shape[:2] == (height, width):
        return rgb
    if like is not None and resize_algorithm_of(like) == SWSCALE_AREA:
        frame = av.VideoFrame.from_ndarray(np.ascontiguousarray(rgb), format="rgb24")
        return np.ascontiguousarray(
            frame.to_ndarray(
                format="rgb24", width=width, height=height, interpolation="AREA", threads=1
            )
        )
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
