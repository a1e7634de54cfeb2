"""Drawing parameters from an explicit generator, and checking transform options."""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

from ..._core._errors import ConfigError


def uniform(g: torch.Generator, lo: float, hi: float, n: int | None = None):
    """A float (or ``n`` floats) uniform in [lo, hi)."""
    if n is None:
        return lo + (hi - lo) * float(torch.rand((), generator=g, device=g.device))
    return (lo + (hi - lo) * torch.rand(n, generator=g, device=g.device)).tolist()


def randint(g: torch.Generator, lo: int, hi: int) -> int:
    """An int uniform in [lo, hi] (inclusive)."""
    return int(torch.randint(lo, hi + 1, (), generator=g, device=g.device))


def coin(g: torch.Generator, p: float) -> bool:
    """True with probability ``p`` (no draw when p is 0 or 1, so such transforms stay cheap)."""
    if p >= 1.0:
        return True
    if p <= 0.0:
        return False
    return uniform(g, 0.0, 1.0) < p


def probability(who: str, p) -> float:
    p = float(p)
    if not 0.0 <= p <= 1.0:
        raise ConfigError(f"{who}: p must be a probability in [0, 1], got {p!r}")
    return p


def size2(who: str, size) -> tuple[int, int]:
    """An int or (h, w) pair of positive ints."""
    if isinstance(size, int) and not isinstance(size, bool):
        size = (size, size)
    if (
        not isinstance(size, Sequence)
        or len(size) != 2
        or not all(isinstance(s, int) and not isinstance(s, bool) and s > 0 for s in size)
    ):
        raise ConfigError(
            f"{who}: size must be an int or (height, width) of ints > 0, got {size!r}"
        )
    return int(size[0]), int(size[1])


def span(who: str, name: str, value, *, center: float | None = None, lo: float = -math.inf):
    """A (low, high) range; a single number ``v`` means (center - v, center + v) (or (-v, v))."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        if value < 0:
            raise ConfigError(f"{who}: {name} must be >= 0, got {value!r}")
        c = 0.0 if center is None else center
        low, high = max(c - value, lo), c + value
    elif isinstance(value, Sequence) and len(value) == 2:
        low, high = float(value[0]), float(value[1])
    else:
        raise ConfigError(f"{who}: {name} must be a number or a (low, high) pair, got {value!r}")
    if not (low <= high and low >= lo):
        raise ConfigError(f"{who}: {name} range ({low}, {high}) must have {lo} <= low <= high")
    return float(low), float(high)
