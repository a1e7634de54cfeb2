"""``hyperframes.loader``: a standard PyTorch DataLoader with defaults for this workload.

- ``mode="threads"`` (default): batches are read by a pool of ``workers`` threads in this
  process. Store reads are memory copies and decompressions that release the GIL, so threads
  run them in parallel with no inter-process copy of the pixels (on a 2-core machine a process
  DataLoader spends more on moving a 19 MB batch through shared memory than on reading it).
  ``mode="processes"``: the standard ``torch.utils.data.DataLoader`` with worker processes,
  for heavy Python-side transforms.
- batches are read with one ``__getitems__`` call (planned and read together);
- the epoch travels with each index as ``(epoch, item)``, so persistent workers need no restart
  and any number of workers gives the same samples;
- ``workers`` defaults to the CPU count (at most 8), ``prefetch_factor`` 4, persistent workers,
  ``pin_memory`` when a GPU is present;
- ``balanced=True`` draws items with weights inversely proportional to class frequency;
  ``rank``/``world_size`` partition every epoch's order across processes (same global order
  for any world size);
- ``state_dict()`` / ``load_state_dict()`` (as torchdata's ``StatefulDataLoader``): the epoch and
  the position reached in its *global* order, so a run stopped mid-epoch continues it with the
  same or another number of processes (:mod:`hyperframes.data._loader_state`).
"""

from __future__ import annotations

import os
import weakref
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import torch
import torch.utils.data

from ._collate import collate_hyperframes
from ._options import (
    LOADER_GROUPS,
    DeliveryOptions,
    OrderOptions,
    resolve_groups,
)
from ._record import HyperframeBatch
from ._torch_samplers import item_sampler

#: batches drawn from the sampler ahead of the reads at most (for their plans)
_LOOKAHEAD_BATCHES = 256


def _remote_store(dataset):
    """The store at a URL that ``dataset`` reads directly (with plans of its items), or None."""
    store = getattr(dataset, "store", None)
    if (
        store is None
        or getattr(dataset, "reader", store) is not store  # (frames held in memory or a GPU)
        or not callable(getattr(dataset, "plan", None))
        or not callable(getattr(store, "read_ahead", None))
        or getattr(getattr(store, "_source", None), "is_local", True)
    ):
        return None
    return store


class _Lookahead:
    """The batch sampler's keys, drawn ahead of the reads so that a store at a URL fetches the
    ranges of the next batches in the background (``Store.read_ahead``): each ``next`` first
    hands the store the plans of the batches drawn and not yet accepted, in order, until it
    declines one (its byte budget is full); the depth thus follows ``budget``."""

    def __init__(self, keys: Iterator, dataset, budget: int):

        self.keys, self.dataset, self.budget = keys, dataset, budget
        self.store = _remote_store(dataset) if budget > 0 else None
        self.look: deque = deque()
        self.offered = 0  # of self.look, from its start

    def next(self):
        if self.store is not None:
            self._offer()
        if self.look:
            self.offered = max(0, self.offered - 1)
            return self.look.popleft()
        return next(self.keys, None)

    def _offer(self) -> None:
        assert self.store is not None
        while True:
            if self.offered == len(self.look):
                if len(self.look) >= _LOOKAHEAD_BATCHES:
                    return
                k = next(self.keys, None)
                if k is None:
                    return
                self.look.append(k)
            plans = [self.dataset.plan(i) for i in self.look[self.offered]]
            reqs = [(p.video, p.frame_indices) for p in plans]
            if not self.store.read_ahead([reqs], budget=self.budget):
                return
            self.offered += 1

    def cancel(self) -> None:
        if self.store is not None:
            self.store.cancel_read_ahead()


class _WithEpoch(torch.utils.data.Sampler):
    def __init__(self, inner):
        self.inner = inner

    def __iter__(self) -> Iterator[tuple[int, int]]:
        epoch = self.inner.epoch
        return ((epoch, i) for i in self.inner)

    def __len__(self) -> int:
        return len(self.inner)


class _Resumable:
    """``set_epoch``, ``state_dict``, ``load_state_dict`` and the count of the batches yielded,
    shared by both loaders (``sampler`` is a :class:`_WithEpoch`, ``dataset`` has
    ``set_epoch``)."""

    sampler: _WithEpoch
    dataset: Any
    _yielded: int = 0  # batches handed to the caller since the last iter() / set_epoch

    def _batch_size(self) -> int:
        raise NotImplementedError

    def __len__(self) -> int:
        raise NotImplementedError

    def set_epoch(self, epoch: int, start: int = 0, *, origin: int = 0) -> None:
        """Use epoch ``epoch`` (reshuffled) from its start; ``start`` skips this rank's first
        items, ``origin`` the global order's first positions (as :meth:`load_state_dict` sets
        them; module doc of :mod:`hyperframes.data._loader_state`)."""
        self.sampler.inner.set_epoch(epoch, start, origin=origin)
        self.dataset.set_epoch(epoch)
        self._yielded = 0
        store = _remote_store(self.dataset)
        if store is not None:  # the batches read ahead were those of the old order
            store.cancel_read_ahead()

    def state_dict(self, held: int = 0) -> dict:
        """Where this loader stands: the epoch and the global position of the batches yielded
        so far (not of those prefetched), as plain ints and strings. ``held``: of the batches
        yielded, those a wrapper holds ahead and its caller has not had
        (:class:`~hyperframes.data.PrefetchLoader`): not counted."""
        if isinstance(held, bool) or not isinstance(held, int) or not 0 <= held <= self._yielded:
            raise ValueError(f"held={held!r}: allowed: 0 to the {self._yielded} batches yielded")
        inner = self.sampler.inner
        handed = self._yielded - held
        if handed >= len(self):
            return inner.state(None)  # every batch of the epoch handed out: finished
        return inner.state(min(handed * self._batch_size(), len(inner)))

    def load_state_dict(self, state: dict) -> None:
        """Continue from ``state`` (from :meth:`state_dict`, possibly of a loader with another
        world size): the next iteration yields the rest of that epoch's global order, this
        rank's share of it. :class:`ConfigError` when it is not a state of the same order."""
        epoch, start, origin = self.sampler.inner.resume_point(state)
        self.set_epoch(epoch, start, origin=origin)

    def _counted(self, batches: Iterator) -> Iterator:
        try:
            for batch in batches:
                self._yielded += 1
                yield batch
        finally:  # left early: let the inner iterator cancel its reads now
            close = getattr(batches, "close", None)
            if close is not None:
                close()


class HyperframeLoader(_Resumable, torch.utils.data.DataLoader):
    """A DataLoader whose ``set_epoch(e, start=0)`` reshuffles (and can resume mid-epoch), with
    ``state_dict()`` / ``load_state_dict()``."""

    sampler: _WithEpoch  # as loader() makes it
    dataset: Any  # a HyperframeDataset, or any dataset with set_epoch(epoch)

    def _batch_size(self) -> int:
        assert self.batch_size is not None  # loader() always batches
        return self.batch_size

    def __len__(self) -> int:
        return torch.utils.data.DataLoader.__len__(self)

    def __iter__(self) -> Iterator:  # type: ignore[override]
        self._yielded = 0
        return self._counted(super().__iter__())


class ThreadLoader(_Resumable):
    """Batches read by a thread pool, in order, ``prefetch`` batches ahead. Same interface as
    :class:`HyperframeLoader` (``dataset``, ``sampler``, ``set_epoch``, ``state_dict``,
    ``load_state_dict``, ``len``, iteration)."""

    def __init__(
        self,
        dataset,
        batch_sampler,
        *,
        workers,
        prefetch,
        pin_memory,
        collate_fn=None,
        read_ahead: int = 0,
    ):
        self.dataset = dataset
        self.read_ahead = read_ahead  # bytes (0: none; see _Lookahead)
        self.collate_fn = collate_fn or collate_hyperframes
        self.batch_sampler = batch_sampler
        self.sampler = batch_sampler.sampler
        self.workers = workers  # 0: read in the calling thread
        self.prefetch = max(1, prefetch)
        self.pin_memory = pin_memory
        self._pool: ThreadPoolExecutor | None = None

    def __len__(self) -> int:
        return len(self.batch_sampler)

    def _batch_size(self) -> int:
        return self.batch_sampler.batch_size

    def _load(self, keys) -> HyperframeBatch:
        batch = self.collate_fn(self.dataset.__getitems__(keys))
        return batch.pin_memory() if self.pin_memory and hasattr(batch, "pin_memory") else batch

    def __iter__(self) -> Iterator[HyperframeBatch]:
        self._yielded = 0
        return self._counted(self._batches())

    def _batches(self) -> Iterator[HyperframeBatch]:

        keys = _Lookahead(iter(self.batch_sampler), self.dataset, self.read_ahead)
        pending: deque = deque()
        try:
            if self.workers == 0:
                while (k := keys.next()) is not None:
                    yield self._load(k)
                return
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self.workers, thread_name_prefix="hyperframes")
                # shut down when the loader is collected, or at exit while the modules it
                # uses still exist (a __del__ run at interpreter teardown found
                # concurrent.futures' globals already cleared: a traceback on every exit)
                weakref.finalize(self, self._pool.shutdown, wait=False, cancel_futures=True)
            pool = self._pool
            while len(pending) < self.prefetch * self.workers and (k := keys.next()) is not None:
                pending.append(pool.submit(self._load, k))
            while pending:
                batch = pending.popleft().result()
                nxt = keys.next()
                if nxt is not None:
                    pending.append(pool.submit(self._load, nxt))
                yield batch
        finally:  # epoch end or left early: batches not started are not read at all
            for f in pending:
                f.cancel()
            keys.cancel()


def default_workers() -> int:
    return max(0, min(8, os.cpu_count() or 1))


def loader(
    dataset,
    batch_size: int = 32,
    *,
    shuffle: bool = True,
    workers: int | None = None,
    collate_fn: Callable[[list], object] | None = None,
    order: OrderOptions | Mapping | None = None,
    delivery: DeliveryOptions | Mapping | None = None,
    **options,
) -> HyperframeLoader | ThreadLoader:
    """Batches of ``dataset`` (see the module docstring for the defaults and ``mode``).

    ``workers``: threads (or processes) reading batches (None: the CPU count, at most 8).
    ``collate_fn`` turns the list of samples of one batch into the batch (default
    :func:`collate_hyperframes`: a :class:`HyperframeBatch`), for datasets whose samples are
    not :class:`Hyperframe` records; a batch with a ``pin_memory()`` method is pinned.

    The other options come in two groups (:mod:`hyperframes.data._options`), each a model or
    a mapping of its fields, and each option may be given on its own by keyword as well
    (``seed=3``, ``drop_last=True``), replacing that field of a group given beside it:

    * ``order=`` :class:`OrderOptions`: ``drop_last``, ``balanced``, ``seed`` (None: the
      dataset's), ``rank`` / ``world_size``;
    * ``delivery=`` :class:`DeliveryOptions`: ``mode`` (``threads``, ``processes``),
      ``prefetch_factor``, ``persistent_workers``, ``pin_memory`` (None: with a GPU) and
      ``read_ahead`` (threads mode, a store at a URL: bytes of the next batches' ranges
      fetched in the background while the current ones are read and used, 0: none; dropped
      at the epoch's end and on ``set_epoch``, :mod:`hyperframes.remote._ahead`)."""
    groups = resolve_groups(LOADER_GROUPS, {"order": order, "delivery": delivery}, options)
    how, ahead = groups["order"], groups["delivery"]
    assert isinstance(how, OrderOptions) and isinstance(ahead, DeliveryOptions)
    drop_last = how.drop_last
    inner = item_sampler(
        dataset,
        seed=dataset.seed if how.seed is None else how.seed,
        shuffle=shuffle,
        balanced=how.balanced,
        rank=how.rank,
        world_size=how.world_size,
        drop_last=drop_last,
    )
    workers = default_workers() if workers is None else workers
    on_device = torch.device(getattr(dataset, "device", "cpu")).type != "cpu"
    if on_device:
        workers = 0  # the data already lives on the GPU: index it in the main process
    pin = torch.cuda.is_available() and not on_device
    pin = pin if ahead.pin_memory is None else ahead.pin_memory
    if ahead.mode == "threads":
        batches = torch.utils.data.BatchSampler(_WithEpoch(inner), batch_size, drop_last)
        return ThreadLoader(
            dataset,
            batches,
            workers=workers,
            prefetch=ahead.prefetch_factor,
            pin_memory=pin,
            collate_fn=collate_fn,
            read_ahead=ahead.read_ahead,
        )
    kw: dict[str, Any] = {}  # DataLoader refuses these without worker processes
    if workers > 0:
        kw = {"prefetch_factor": ahead.prefetch_factor}
        kw["persistent_workers"] = ahead.persistent_workers
    return HyperframeLoader(
        dataset,
        batch_size=batch_size,
        sampler=_WithEpoch(inner),
        num_workers=workers,
        collate_fn=collate_fn or collate_hyperframes,
        pin_memory=pin,
        drop_last=drop_last,
        **kw,
    )
