"""Types of the C extension ``_pixels.c`` (uint8 affine warp, hue shift, bilinear resize, I420 to RGB)."""

import numpy as np

def warp_affine(
    frames: np.ndarray,
    maps: np.ndarray,
    windows: int,
    planes: int,
    height: int,
    width: int,
    fill: float,
    /,
) -> None: ...
def hue_shift(frames: np.ndarray, shifts: np.ndarray, count: int, pixels: int, /) -> None: ...
def resize_linear(src: np.ndarray, dst: np.ndarray, flip: bool, /) -> None: ...
def i420_to_rgb(
    y: np.ndarray,
    u: np.ndarray,
    v: np.ndarray,
    out: np.ndarray,
    frames: int,
    pixels: int,
    coefficients: tuple[float, float, float, float, float, float, float, float],
    /,
) -> None: ...
