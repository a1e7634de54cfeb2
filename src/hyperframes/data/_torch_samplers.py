"""``torch.utils.data.Sampler`` wrappers around the pure-numpy epoch orders.

Each yields item numbers for one epoch on one rank; call ``set_epoch(epoch)`` before every
epoch (and give the dataset the same epoch so plans match). ``set_epoch(epoch, start=k)``
resumes after the first ``k`` items of this rank's share; ``set_epoch(epoch, origin=p)`` shares
only the rest of the epoch's global order, from position ``p`` on, between the ranks (how a run
resumed with another world size continues: :mod:`hyperframes.data._loader_state`).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import torch.utils.data

from .._core._errors import ConfigError
from ..sampling import balanced_order, epoch_order, partition
from ._loader_state import continue_at, make_state, position, read_state

__all__ = ["BalancedSampler", "EpochSampler", "item_sampler"]


class _EpochBase(torch.utils.data.Sampler[int]):
    def __init__(self, *, seed: int, rank: int, world_size: int) -> None:
        self.seed = seed
        self.rank = rank
        self.world_size = world_size
        self.epoch = 0
        self.start = 0
        self.origin = 0
        partition(np.zeros(0, np.int64), rank, world_size)  # validates rank / world_size

    #: how the global order is drawn, as a loader state names it
    order_name = "shuffle"

    def set_epoch(self, epoch: int, start: int = 0, *, origin: int = 0) -> None:
        """Use epoch ``epoch`` from now on: the ranks share its global order from position
        ``origin`` on (0: all of it), and this rank skips the first ``start`` items of its share."""
        if start < 0:
            raise ConfigError(f"set_epoch: start must be >= 0, got {start!r}")
        if not 0 <= origin <= self.epoch_length:
            raise ConfigError(
                f"set_epoch: origin must be in 0..{self.epoch_length} (the epoch's length), "
                f"got {origin!r}"
            )
        self.epoch = epoch
        self.start = start
        self.origin = origin

    @property
    def epoch_length(self) -> int:
        """The length of an epoch's global order (all ranks together, before padding)."""
        raise NotImplementedError

    def state(self, handed: int | None, *, epoch: int | None = None) -> dict:
        """The loader state (:mod:`._loader_state`) once ``handed`` of this rank's items after
        its ``start`` were handed out (None: the whole epoch was), of ``epoch`` (default: the
        current one): where the ranks together stand in the epoch's global order."""
        n = self.epoch_length
        reached = (
            n if handed is None else position(self.origin, self.start + handed, self.world_size, n)
        )
        return make_state(
            epoch=self.epoch if epoch is None else epoch,
            samples_yielded=reached,
            epoch_length=n,
            origin=self.origin,
            world_size=self.world_size,
            seed=self.seed,
            order=self.order_name,
        )

    def resume_point(self, state, *, where: str = "loader") -> tuple[int, int, int]:
        """``(epoch, start, origin)`` that continue ``state`` (untrusted: checked against this
        sampler's order) with this sampler's world size, for :meth:`set_epoch`."""
        state = read_state(
            state,
            epoch_length=self.epoch_length,
            seed=self.seed,
            order=self.order_name,
            where=where,
        )
        origin, start = continue_at(state, self.world_size)
        return state["epoch"], start, origin

    def _global(self) -> np.ndarray:
        raise NotImplementedError

    def _share(self) -> np.ndarray:
        drop = getattr(self, "drop_last", False)
        order = self._global()[self.origin :]
        return partition(order, self.rank, self.world_size, drop_last=drop)

    def __iter__(self) -> Iterator[int]:
        return iter(self._share()[self.start :].tolist())

    def __len__(self) -> int:
        return max(self._share().shape[0] - self.start, 0)


class EpochSampler(_EpochBase):
    """Every item once per epoch in :func:`~hyperframes.sampling.epoch_order`, split over ranks
    with :func:`~hyperframes.sampling.partition` (padded by wrapping unless ``drop_last``)."""

    def __init__(
        self,
        num_items: int,
        *,
        seed: int = 0,
        shuffle: bool = True,
        rank: int = 0,
        world_size: int = 1,
        drop_last: bool = False,
    ) -> None:
        super().__init__(seed=seed, rank=rank, world_size=world_size)
        self.num_items = num_items
        self.shuffle = shuffle
        self.drop_last = drop_last
        self.order_name = "shuffle" if shuffle else "sequential"

    @property
    def epoch_length(self) -> int:
        return int(self.num_items)

    def _global(self) -> np.ndarray:
        return epoch_order(self.num_items, self.seed, self.epoch, shuffle=self.shuffle)


class BalancedSampler(_EpochBase):
    """``num_samples`` items per epoch drawn with replacement, classes equally likely
    (:func:`~hyperframes.sampling.balanced_order`); ``labels`` is one label per item, e.g.
    ``sampler.item_labels(videos)``."""

    def __init__(
        self,
        labels,
        *,
        num_samples: int | None = None,
        seed: int = 0,
        rank: int = 0,
        world_size: int = 1,
    ) -> None:
        super().__init__(seed=seed, rank=rank, world_size=world_size)
        self.labels = np.asarray(labels)
        self.num_samples = num_samples
        balanced_order(self.labels, seed, 0, num_samples=0)  # validates the labels now

    order_name = "balanced"

    @property
    def epoch_length(self) -> int:
        return int(self.labels.shape[0] if self.num_samples is None else self.num_samples)

    def _global(self) -> np.ndarray:
        return balanced_order(self.labels, self.seed, self.epoch, num_samples=self.num_samples)


def item_sampler(
    dataset,
    *,
    seed: int,
    shuffle: bool = True,
    balanced: bool = False,
    rank: int = 0,
    world_size: int = 1,
    drop_last: bool = False,
) -> EpochSampler | BalancedSampler:
    """The order a loader reads ``dataset``'s items in: class-balanced draws from its labels
    (``balanced``), else every item once an epoch, shuffled by ``seed`` when ``shuffle``;
    this rank's share of it. Set to the dataset's epoch."""
    inner: EpochSampler | BalancedSampler
    if balanced:
        inner = BalancedSampler(dataset.labels, seed=seed, rank=rank, world_size=world_size)
    else:
        inner = EpochSampler(
            len(dataset),
            seed=seed,
            shuffle=shuffle,
            rank=rank,
            world_size=world_size,
            drop_last=drop_last,
        )
    inner.set_epoch(getattr(dataset, "epoch", 0))
    return inner
