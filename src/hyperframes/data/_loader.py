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
  for any world size).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import torch
import torch.utils.data

from .._core._layouts import KeyframeWindow
from ._collate import collate_targets, collate_track, collate_windows
from ._record import Hyperframe, HyperframeBatch
from ._torch_samplers import BalancedSampler, EpochSampler


def _dense(t: torch.Tensor) -> bool:
    """True when ``t`` is a permutation of a contiguous block (no gaps, no overlap)."""
    expected = 1
    for size, stride in sorted(zip(t.shape, t.stride()), key=lambda p: p[1]):
        if size != 1 and stride != expected:
            return False
        expected *= size
    return True


def _view_of_one_batch(tensors: Sequence[torch.Tensor | KeyframeWindow]) -> torch.Tensor | None:
    """When the samples are consecutive, equally shaped views of one buffer (as the dataset
    returns them after one batched read), the batch is a view of that buffer: no copy."""
    t0 = tensors[0]
    if not isinstance(t0, torch.Tensor) or not _dense(t0):
        return None
    ptr, n, off = t0.untyped_storage().data_ptr(), t0.numel(), t0.storage_offset()
    for k, t in enumerate(tensors):
        if (
            not isinstance(t, torch.Tensor)
            or t.untyped_storage().data_ptr() != ptr
            or t.storage_offset() != off + k * n
            or t.shape != t0.shape
            or t.stride() != t0.stride()
            or t.dtype != t0.dtype
        ):
            return None
    return t0.as_strided((len(tensors), *t0.shape), (n, *t0.stride()), off)


def collate_hyperframes(samples: list[Hyperframe]) -> HyperframeBatch:
    windows = [s.frames for s in samples]
    batch = _view_of_one_batch(windows)
    frames = batch if batch is not None else collate_windows(windows)
    labels = torch.tensor([s.label for s in samples], dtype=torch.int64)
    mask = torch.stack([s.mask for s in samples])
    target = collate_targets([s.target for s in samples])
    return HyperframeBatch(
        frames,
        labels,
        mask,
        [s.meta for s in samples],
        target,
        collate_track([s.audio for s in samples], "audio"),
        collate_track([s.audio_mask for s in samples], "audio_mask"),
        collate_track([s.flow for s in samples], "flow"),
    )


class _WithEpoch(torch.utils.data.Sampler):
    def __init__(self, inner):
        self.inner = inner

    def __iter__(self) -> Iterator[tuple[int, int]]:
        epoch = self.inner.epoch
        return ((epoch, i) for i in self.inner)

    def __len__(self) -> int:
        return len(self.inner)


class HyperframeLoader(torch.utils.data.DataLoader):
    """A DataLoader whose ``set_epoch(e, start=0)`` reshuffles (and can resume mid-epoch)."""

    sampler: _WithEpoch  # as loader() makes it
    dataset: Any  # a HyperframeDataset, or any dataset with set_epoch(epoch)

    def set_epoch(self, epoch: int, start: int = 0) -> None:
        self.sampler.inner.set_epoch(epoch, start)
        self.dataset.set_epoch(epoch)


class ThreadLoader:
    """Batches read by a thread pool, in order, ``prefetch`` batches ahead. Same interface as
    :class:`HyperframeLoader` (``dataset``, ``sampler``, ``set_epoch``, ``len``, iteration)."""

    def __init__(self, dataset, batch_sampler, *, workers, prefetch, pin_memory, collate_fn=None):
        self.dataset = dataset
        self.collate_fn = collate_fn or collate_hyperframes
        self.batch_sampler = batch_sampler
        self.sampler = batch_sampler.sampler
        self.workers = workers  # 0: read in the calling thread
        self.prefetch = max(1, prefetch)
        self.pin_memory = pin_memory
        self._pool = None

    def __len__(self) -> int:
        return len(self.batch_sampler)

    def set_epoch(self, epoch: int, start: int = 0) -> None:
        self.sampler.inner.set_epoch(epoch, start)
        self.dataset.set_epoch(epoch)

    def _load(self, keys) -> HyperframeBatch:
        batch = self.collate_fn(self.dataset.__getitems__(keys))
        return batch.pin_memory() if self.pin_memory and hasattr(batch, "pin_memory") else batch

    def __iter__(self) -> Iterator[HyperframeBatch]:
        from collections import deque
        from concurrent.futures import ThreadPoolExecutor

        if self.workers == 0:
            for k in self.batch_sampler:
                yield self._load(k)
            return
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self.workers, thread_name_prefix="hyperframes")
        pending: deque = deque()
        keys = iter(self.batch_sampler)
        for k in keys:
            pending.append(self._pool.submit(self._load, k))
            if len(pending) >= self.prefetch * self.workers:
                break
        try:
            while pending:
                batch = pending.popleft().result()
                nxt = next(keys, None)
                if nxt is not None:
                    pending.append(self._pool.submit(self._load, nxt))
                yield batch
        finally:  # left early (break, an error): batches not started are not read at all
            for f in pending:
                f.cancel()

    def __del__(self):
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)


def default_workers() -> int:
    return max(0, min(8, os.cpu_count() or 1))


def loader(
    dataset,
    batch_size: int = 32,
    *,
    shuffle: bool = True,
    workers: int | None = None,
    balanced: bool = False,
    rank: int = 0,
    world_size: int = 1,
    drop_last: bool = False,
    pin_memory: bool | None = None,
    prefetch_factor: int = 4,
    persistent_workers: bool = True,
    seed: int | None = None,
    mode: str = "threads",
    collate_fn: Callable[[list], object] | None = None,
) -> HyperframeLoader | ThreadLoader:
    """Batches of ``dataset`` (see the module docstring for the defaults and ``mode``).

    ``collate_fn`` turns the list of samples of one batch into the batch (default
    :func:`collate_hyperframes`: a :class:`HyperframeBatch`), for datasets whose samples are
    not :class:`Hyperframe` records; a batch with a ``pin_memory()`` method is pinned."""
    from .._core._errors import ConfigError

    if mode not in ("threads", "processes"):
        raise ConfigError(f"unknown loader mode {mode!r}; choose threads or processes")
    seed = dataset.seed if seed is None else seed
    inner: BalancedSampler | EpochSampler
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
    inner.set_epoch(dataset.epoch)
    workers = default_workers() if workers is None else workers
    on_device = torch.device(getattr(dataset, "device", "cpu")).type != "cpu"
    if on_device:
        workers = 0  # the data already lives on the GPU: index it in the main process
    pin = torch.cuda.is_available() and not on_device if pin_memory is None else pin_memory
    if mode == "threads":
        batches = torch.utils.data.BatchSampler(_WithEpoch(inner), batch_size, drop_last)
        return ThreadLoader(
            dataset,
            batches,
            workers=workers,
            prefetch=prefetch_factor,
            pin_memory=pin,
            collate_fn=collate_fn,
        )
    kw: dict[str, Any] = {}  # DataLoader refuses these without worker processes
    if workers > 0:
        kw = {"prefetch_factor": prefetch_factor, "persistent_workers": persistent_workers}
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
