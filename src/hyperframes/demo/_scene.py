"""What both synthetic generators (:mod:`._synthetic`) are made of: the checks of their
arguments (each a :class:`ConfigError` naming the value and a fix) and the drawing
primitives: palettes, block textures, the smooth background, a textured disc placed on the
torus with bilinear sampling. Pure numpy, no I/O."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from hyperframes._core._errors import ConfigError

_MAX_LENGTH_JITTER = 4  # dataset videos are frames ± up to this many frames long


# --------------------------------------------------------------------------- checks


def _check_int(name: str, value: object, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ConfigError(f"{name} must be an integer >= {minimum}, got {value!r}")
    if value < minimum:
        raise ConfigError(f"{name} must be >= {minimum}, got {value}; try {name}={minimum}")
    return int(value)


def _check_size(size: object) -> int:
    size = _check_int("size", size, 16)
    if size % 2:
        raise ConfigError(
            f"size must be even (H.264 yuv420p needs even dimensions), got {size}; "
            f"try size={size + 1}"
        )
    return size


def _check_fps(fps: object) -> Fraction:
    try:
        # any value on purpose: Fraction's TypeError/ValueError becomes the ConfigError below
        rate = Fraction(fps).limit_denominator(1001)  # type: ignore[call-overload]
    except (TypeError, ValueError):
        raise ConfigError(f"fps must be a positive number, got {fps!r}") from None
    if rate <= 0:
        raise ConfigError(f"fps must be a positive number, got {fps!r}")
    return rate


def _check_scale(motion: object) -> float:
    if isinstance(motion, bool) or not isinstance(motion, (int, float)) or not motion >= 0:
        raise ConfigError(f"motion must be a number >= 0 (1 = default speeds), got {motion!r}")
    return float(motion)


def _check_rng(rng: object) -> np.random.Generator:
    if not isinstance(rng, np.random.Generator):
        raise ConfigError(
            f"rng must be a numpy.random.Generator, got {type(rng).__name__}; "
            "try rng=numpy.random.default_rng(0)"
        )
    return rng


def _check_progress(progress: object) -> None:
    if progress is not None and not callable(progress):
        raise ConfigError(f"progress must be None or a callable(done, total), got {progress!r}")


def _jittered_length(frames: int, rng: np.random.Generator) -> int:
    jitter = min(_MAX_LENGTH_JITTER, frames // 4)
    return frames + int(rng.integers(-jitter, jitter + 1))


# --------------------------------------------------------------------------- drawing


def _palette(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Two random, clearly different RGB colours in [0, 1]."""
    c0 = rng.uniform(0.05, 0.95, 3)
    c1 = rng.uniform(0.05, 0.95, 3)
    while np.abs(c1 - c0).sum() < 0.6:  # keep the texture visible
        c1 = rng.uniform(0.05, 0.95, 3)
    return c0, c1


def _object_texture(
    side: int, rng: np.random.Generator, palette: tuple[np.ndarray, np.ndarray] | None = None
) -> np.ndarray:
    """A (side, side, 3) float texture: random blocks of two colours plus fine noise.

    The colours are drawn from ``rng`` unless a ``palette`` (two RGB colours) is given.
    """
    c0, c1 = _palette(rng) if palette is None else palette
    cell = int(rng.integers(3, 6))
    n = -(-side // cell)
    blocks = np.kron(rng.random((n, n)), np.ones((cell, cell)))[:side, :side]
    t = np.clip(blocks + rng.normal(0.0, 0.08, (side, side)), 0.0, 1.0)
    return (c0 * (1.0 - t[..., None]) + c1 * t[..., None]).astype(np.float32)


def _bright_texture(side: int, rng: np.random.Generator) -> np.ndarray:
    """A (side, side, 3) float texture in [0.45, 1]: light blocks on a mid-tone, colours random.

    Unlike :func:`_object_texture` its contrast has one sign (light on mid) whatever the
    colours, and it is brighter than a :func:`_dark_background`: a frame difference then
    shows a moving disc the same way in every video.
    """
    c0, c1 = _palette(rng)
    cell = int(rng.integers(3, 6))
    n = -(-side // cell)
    blocks = np.kron(rng.random((n, n)), np.ones((cell, cell)))[:side, :side]
    light = (blocks > 0.6)[..., None]
    grain = rng.normal(0.0, 0.03, (side, side, 1))
    rgb = np.where(light, 0.85 + 0.15 * c1, 0.45 + 0.15 * c0) + grain
    return np.clip(rgb, 0.0, 1.0).astype(np.float32)


def _dark_background(size: int, rng: np.random.Generator) -> np.ndarray:
    """:func:`_background` dimmed to [0, 0.35]: always darker than a :func:`_bright_texture`."""
    return _background(size, rng) * np.float32(0.35)


def _background(size: int, rng: np.random.Generator) -> np.ndarray:
    """A (size, size, 3) float background: smooth two-colour noise plus faint grain."""
    c0, c1 = _palette(rng)
    n = int(rng.integers(3, 7))
    coarse = rng.random((n, n))
    # bilinear upsampling of the coarse grid to size x size
    pos = np.linspace(0.0, n - 1.0, size)
    i0 = np.minimum(pos.astype(int), n - 2)
    f = pos - i0
    rows = coarse[i0] * (1.0 - f)[:, None] + coarse[i0 + 1] * f[:, None]
    smooth = rows[:, i0] * (1.0 - f)[None, :] + rows[:, i0 + 1] * f[None, :]
    t = np.clip(0.2 + 0.6 * smooth + rng.normal(0.0, 0.04, (size, size)), 0.0, 1.0)
    return (c0 * (1.0 - t[..., None]) + c1 * t[..., None]).astype(np.float32)


def _bilinear(tex: np.ndarray, u: np.ndarray, v: np.ndarray, wrap: bool = False) -> np.ndarray:
    """Sample ``tex`` (h, w, 3) at float column ``u`` / row ``v``: clamped at the border, or
    with ``wrap`` (``u`` and ``v`` then in [0, w) and [0, h)) across it, as a tiling texture."""
    h, w = tex.shape[:2]
    if wrap:
        x0, y0 = u.astype(np.intp), v.astype(np.intp)
        x1, y1 = (x0 + 1) % w, (y0 + 1) % h
    else:
        u = np.clip(u, 0.0, w - 1.0)
        v = np.clip(v, 0.0, h - 1.0)
        x0 = np.minimum(u.astype(np.intp), w - 2)
        y0 = np.minimum(v.astype(np.intp), h - 2)
        x1, y1 = x0 + 1, y0 + 1
    fx = (u - x0)[..., None]
    fy = (v - y0)[..., None]
    top = tex[y0, x0] * (1.0 - fx) + tex[y0, x1] * fx
    bottom = tex[y1, x0] * (1.0 - fx) + tex[y1, x1] * fx
    return top * (1.0 - fy) + bottom * fy


def _disc(
    size: int, tex: np.ndarray, radius: float, cx: float, cy: float, angle: float
) -> tuple[np.ndarray, np.ndarray]:
    """Render a textured disc centred at (cx, cy) rotated by ``angle`` (clockwise on screen).

    Positions wrap around the frame edges (a disc leaving on the right re-enters on the
    left). Returns (rgb (size, size, 3), alpha (size, size)) with an anti-aliased edge.
    """
    # float64 throughout: the arithmetic of a pixel does not depend on how numpy splits
    # the loop (the demo's files must repeat)
    grid = np.arange(size, dtype=np.float64)
    dx = (grid[None, :] - cx + size / 2.0) % size - size / 2.0
    dy = (grid[:, None] - cy + size / 2.0) % size - size / 2.0
    dx, dy = np.broadcast_arrays(dx, dy)
    alpha = np.clip(radius + 0.5 - np.hypot(dx, dy), 0.0, 1.0)
    # inverse rotation: which texture point lands on this pixel
    cos, sin = math.cos(angle), math.sin(angle)
    centre = (tex.shape[0] - 1) / 2.0
    u = cos * dx + sin * dy + centre
    v = -sin * dx + cos * dy + centre
    return _bilinear(tex, u, v), alpha


def _to_uint8(image: np.ndarray) -> np.ndarray:
    return np.clip(np.rint(image * 255.0), 0, 255).astype(np.uint8)


def _texture_side(radius: float) -> int:
    return 2 * math.ceil(radius) + 3


#: samples a period of the pan scene's texture holds, at most: its finest detail, an eighth of
#: the period, still gets 32 of them, and the texture costs 3 MB whatever the frame size
_TEXTURE_SAMPLES = 256
#: samples a block of a view computes at once (with its temporaries, tens of MB)
_VIEW_BLOCK = 2**18


def _tiling_texture(period: int, rng: np.random.Generator) -> np.ndarray:
    """A (n, n, 3) float texture in [0, 1] that tiles with a period of ``period`` pixels,
    sampled n = min(4 period, 256) times a period: three octaves of random colour noise,
    white noise on grids of 4, 8 and 16 cells a period interpolated smoothly by zero-padding
    its spectrum (features of about a half, a quarter and an eighth of the period), weighted
    1, 0.3 and 0.09, so every patch of a view has smooth structure to follow when it moves."""
    n = min(4 * period, _TEXTURE_SAMPLES)
    field = np.zeros((n, n, 3))
    for grid, weight in ((4, 1.0), (8, 0.6), (16, 0.35)):
        coarse = np.fft.fft2(rng.normal(size=(grid, grid, 3)), axes=(0, 1))
        spectrum = np.zeros((n, n, 3), complex)
        h = grid // 2
        for rows in (slice(0, h), slice(-h, None)):
            for cols in (slice(0, h), slice(-h, None)):
                spectrum[rows, cols] = coarse[rows, cols]
        field += weight / grid**2 * np.fft.ifft2(spectrum, axes=(0, 1)).real
    field = (field - field.mean()) / field.std()
    return np.clip(0.5 + 0.18 * field, 0.0, 1.0)


def _view(tex: np.ndarray, period: int, size: int, x: float, y: float, angle: float) -> np.ndarray:
    """A (size, size, 3) view of the tiling texture ``tex`` of ``period`` pixels: the frame's
    centre on texture point (x, y) in pixels, the texture turned by ``angle`` (clockwise on
    screen, as :func:`_disc`). Each pixel is the mean of 4 x 4 bilinear samples, wrapping
    around the period; computed in blocks of rows, so a large frame needs no large
    temporaries."""
    n = tex.shape[0]
    scale = n / period  # texture samples a pixel
    grid = (np.arange(4 * size, dtype=np.float64) + 0.5) / 4.0 - size / 2.0
    cos, sin = math.cos(angle), math.sin(angle)
    out = np.empty((size, size, 3))
    step = max(1, _VIEW_BLOCK // (16 * size))  # output rows a block
    for r0 in range(0, size, step):
        r1 = min(size, r0 + step)
        dx, dy = np.broadcast_arrays(grid[None, :], grid[4 * r0 : 4 * r1, None])
        u = ((cos * dx + sin * dy + x) * scale) % n
        v = ((-sin * dx + cos * dy + y) * scale) % n
        fine = _bilinear(tex, u, v, wrap=True)
        out[r0:r1] = fine.reshape(r1 - r0, 4, size, 4, 3).mean((1, 3))
    return out
