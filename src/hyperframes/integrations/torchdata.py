"""``HyperframeDataset`` in torchdata's ``StatefulDataLoader``.

:func:`stateful_loader` is a ``torchdata.stateful_dataloader.StatefulDataLoader`` over a
dataset, with the epoch order of :func:`hyperframes.loader` (a function of ``(seed, epoch)``,
shared by ranks) and its resumable state: the sampler's iterator is what torchdata saves, and its
state is the loader state of :mod:`hyperframes.data._loader_state` (the epoch and the position
reached in the epoch's *global* order). So ``state_dict()`` taken mid-epoch and given to
``load_state_dict()`` of a new loader (with the same ``num_workers``: torchdata keeps a state
per worker process, and another count is a :class:`~hyperframes.ConfigError` naming both; any
world size) yields exactly the remaining
samples, the same for any ``num_workers``; the keys carry the epoch (``(epoch, item)``), so
persistent workers need no restart between epochs::

    from hyperframes.integrations.torchdata import stateful_loader

    dl = stateful_loader(dataset, batch_size=8, num_workers=2)
    for epoch in range(epochs):
        dl.set_epoch(epoch)          # a restored state wins over set_epoch for its epoch
        for batch in dl: ...
        state = dl.state_dict()      # at any point; torch.save it with the model

A plain ``StatefulDataLoader(dataset, batch_size=8, shuffle=True,
collate_fn=hyperframes.data.collate_hyperframes)`` works too (torch's shuffled order instead of
the dataset's seed, the epoch set with ``dataset.set_epoch`` before each epoch).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import torch.utils.data

from .._core._errors import ConfigError
from ..data import BalancedSampler, EpochSampler, collate_hyperframes, item_sampler
from ._optional import require

__all__ = ["stateful_loader"]


class _KeysIterator(Iterator[tuple[int, int]]):
    """This rank's ``(epoch, item)`` keys of one epoch; its state (torchdata's ``Stateful``) is
    a loader state: where the ranks together stand in the epoch's global order."""

    def __init__(self, inner: EpochSampler | BalancedSampler) -> None:
        self.inner = inner
        self._reset()

    def _reset(self) -> None:
        self.epoch = self.inner.epoch
        self._items = list(self.inner)  # this rank's share, after its first `start`
        self._next = 0

    def __iter__(self) -> _KeysIterator:
        return self

    def __next__(self) -> tuple[int, int]:
        if self._next >= len(self._items):
            raise StopIteration
        self._next += 1
        return self.epoch, int(self._items[self._next - 1])

    def state_dict(self) -> dict:
        finished = self._next >= len(self._items)  # every key of the epoch handed out
        return self.inner.state(None if finished else self._next, epoch=self.epoch)

    def load_state_dict(self, state: dict) -> None:
        epoch, start, origin = self.inner.resume_point(state, where="StatefulDataLoader sampler")
        self.inner.set_epoch(epoch, start, origin=origin)
        self._reset()


class EpochKeys(torch.utils.data.Sampler):
    """A sampler of ``(epoch, item)`` keys over an :class:`~hyperframes.data.EpochSampler` or
    :class:`~hyperframes.data.BalancedSampler` (``inner``), whose iterators torchdata saves and
    restores (module doc)."""

    def __init__(self, inner: EpochSampler | BalancedSampler) -> None:
        self.inner = inner

    def set_epoch(self, epoch: int) -> None:
        self.inner.set_epoch(epoch)

    def __iter__(self) -> _KeysIterator:
        return _KeysIterator(self.inner)

    def __len__(self) -> int:
        return len(self.inner)


def stateful_loader(
    dataset,
    batch_size: int = 32,
    *,
    shuffle: bool = True,
    balanced: bool = False,
    num_workers: int = 0,
    rank: int = 0,
    world_size: int = 1,
    drop_last: bool = False,
    seed: int | None = None,
    **kwargs: Any,
):
    """A ``StatefulDataLoader`` of ``dataset`` (module doc) with ``set_epoch(epoch)``; other
    ``kwargs`` go to ``StatefulDataLoader`` (``persistent_workers``, ``pin_memory``,
    ``snapshot_every_n_steps``...). ``collate_fn`` defaults to
    :func:`~hyperframes.data.collate_hyperframes`."""
    # torchdata is an optional extra: imported here, where a loader is asked for
    sdl = require("torchdata.stateful_dataloader", "torchdata", "stateful_loader")
    seed = dataset.seed if seed is None else int(seed)
    inner = item_sampler(
        dataset,
        seed=seed,
        shuffle=shuffle,
        balanced=balanced,
        rank=rank,
        world_size=world_size,
        drop_last=drop_last,
    )
    kwargs.setdefault("collate_fn", collate_hyperframes)
    keys = EpochKeys(inner)
    loader = sdl.StatefulDataLoader(
        dataset,
        batch_size=batch_size,
        sampler=keys,
        num_workers=num_workers,
        drop_last=drop_last,
        **kwargs,
    )
    loader.set_epoch = keys.set_epoch
    restore = loader.load_state_dict

    def load_state_dict(state: dict) -> None:
        saved = _workers_of(state)
        if saved is not None and saved != num_workers:
            raise ConfigError(
                f"a StatefulDataLoader state saved with num_workers={saved} cannot be restored "
                f"into this loader's num_workers={num_workers} (torchdata keeps a state per "
                f"worker process); make the loader with num_workers={saved} to continue"
            )
        restore(state)

    loader.load_state_dict = load_state_dict
    return loader


def _workers_of(state) -> int | None:
    """The ``num_workers`` of the loader a torchdata state was saved from (None: not known)."""
    if not isinstance(state, dict):
        return None
    if "_snapshot" not in state:
        return 0 if "_num_yielded" in state else None
    main = (
        state["_snapshot"].get("_main_snapshot", {}) if isinstance(state["_snapshot"], dict) else {}
    )
    workers = main.get("_num_workers") if isinstance(main, dict) else None
    return workers if isinstance(workers, int) else None
