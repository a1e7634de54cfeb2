"""``hyperframes.loader``: a standard PyTorch DataLoader with defaults for this workload.

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
from collections.abc import Iterator

import torch
import torch.utils.data

from ._collate import collate_windows
from ._record import Hyperframe, HyperframeBatch
from ._torch_samplers import BalancedSampler, EpochSampler


def collate_hyperframes(samples: list[Hyperframe]) -> HyperframeBatch:
    frames = collate_windows([s.frames for s in samples])
    labels = torch.tensor([s.label for s in samples], dtype=torch.int64)
    mask = torch.stack([s.mask for s in samples])
    return HyperframeBatch(frames, labels, mask, [s.meta for s in samples])


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

    def set_epoch(self, epoch: int, start: int = 0) -> None:
        self.sampler.inner.set_epoch(epoch, start)
        self.dataset.set_epoch(epoch)


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
) -> HyperframeLoader:
    seed = dataset.seed if seed is None else seed
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
    on_device = getattr(dataset._reader, "device", torch.device("cpu")).type != "cpu"
    if on_device:
        workers = 0  # the data already lives on the GPU: index it in the main process
    kw = {}
    if workers > 0:
        kw = {"prefetch_factor": prefetch_factor, "persistent_workers": persistent_workers}
    return HyperframeLoader(
        dataset,
        batch_size=batch_size,
        sampler=_WithEpoch(inner),
        num_workers=workers,
        collate_fn=collate_hyperframes,
        pin_memory=torch.cuda.is_available() and not on_device
        if pin_memory is None
        else pin_memory,
        drop_last=drop_last,
        **kw,
    )
