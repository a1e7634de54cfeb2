"""The order items are visited in one epoch, class balancing, and the split across ranks.

All pure numpy and seeded from (seed, epoch) only, so every process computes the same global
order. The order streams are kept apart from the per-item plan streams (``[seed, epoch, item]``)
by a SeedSequence spawn key. Resuming mid-epoch is slicing: ``order[done:]``.
"""

from __future__ import annotations

import numpy as np

from .._core._errors import ConfigError, DataError
from ._base import _check_seed

__all__ = ["balanced_order", "class_weights", "epoch_order", "partition"]

_ORDER_KEY = 1
_BALANCED_KEY = 2


def _rng(seed: int, epoch: int, key: int) -> np.random.Generator:
    seq = np.random.SeedSequence(
        [_check_seed("seed", seed), _check_seed("epoch", epoch)], spawn_key=(key,)
    )
    return np.random.default_rng(seq)


def _count(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 0:
        raise ConfigError(f"{name} must be an integer >= 0, got {value!r}")
    return int(value)


def epoch_order(
    num_items: int, seed: int = 0, epoch: int = 0, *, shuffle: bool = True
) -> np.ndarray:
    """Item order of one epoch: a seeded permutation of ``range(num_items)`` (int64), or the
    identity when ``shuffle=False``."""
    n = _count("num_items", num_items)
    if not shuffle:
        return np.arange(n, dtype=np.int64)
    return _rng(seed, epoch, _ORDER_KEY).permutation(n).astype(np.int64)


def class_weights(labels: np.ndarray) -> np.ndarray:
    """Per-item weights inversely proportional to the frequency of the item's class, summing to 1
    (every class then has the same total weight). Labels must be integers >= 0."""
    labels = np.asarray(labels)
    if labels.ndim != 1 or not np.issubdtype(labels.dtype, np.integer):
        raise DataError(
            f"class_weights needs a 1-d integer label array, got {labels.dtype} shape {labels.shape}"
        )
    if labels.shape[0] == 0:
        raise DataError("class_weights got no labels; there are no items to balance")
    if (labels < 0).any():
        raise DataError(
            f"class-balanced sampling needs a label >= 0 for every item, but "
            f"{int((labels < 0).sum())} items have a negative label (e.g. item "
            f"{int(np.argmax(labels < 0))}: {int(labels[np.argmax(labels < 0)])}); set "
            f"VideoMeta.label or drop unlabelled videos"
        )
    _, inverse, counts = np.unique(labels, return_inverse=True, return_counts=True)
    weights = 1.0 / counts[inverse].astype(np.float64)
    return weights / weights.sum()


def balanced_order(
    labels: np.ndarray, seed: int = 0, epoch: int = 0, *, num_samples: int | None = None
) -> np.ndarray:
    """``num_samples`` items (default: as many as labels) drawn with replacement with
    :func:`class_weights`, so every class is drawn about equally often; seeded by (seed, epoch)."""
    weights = class_weights(labels)
    n = weights.shape[0] if num_samples is None else _count("num_samples", num_samples)
    rng = _rng(seed, epoch, _BALANCED_KEY)
    return rng.choice(weights.shape[0], size=n, replace=True, p=weights).astype(np.int64)


def partition(
    order: np.ndarray, rank: int, world_size: int, *, drop_last: bool = False
) -> np.ndarray:
    """The share of rank ``rank`` of ``world_size``: ``order[rank::world_size]`` after padding
    ``order`` by wrapping around to a multiple of ``world_size`` (``drop_last=True`` truncates
    instead), so every rank gets the same count. Taking one item from each rank in turn gives back
    the (padded) global order for any world size."""
    world = _count("world_size", world_size)
    if world < 1:
        raise ConfigError(f"world_size must be an integer >= 1, got {world_size!r}")
    r = _count("rank", rank)
    if r >= world:
        raise ConfigError(f"rank must be in 0..{world - 1} for world_size={world}, got {rank!r}")
    order = np.asarray(order, dtype=np.int64).reshape(-1)
    n = order.shape[0]
    if drop_last:
        order = order[: n - n % world]
    elif n % world and n:
        order = np.resize(order, n + world - n % world)  # np.resize repeats from the start
    return order[r::world]
