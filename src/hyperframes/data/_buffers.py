"""Batch buffers allocated once and reused while nobody holds them.

A batch of 32 windows of 16x3x112x112 is 19 MB. Allocating it afresh for every batch costs
more than reading into it: each new buffer is fresh pages the kernel must fault in and zero
(4,700 faults for ``torch.empty``; in a worker thread glibc maps and unmaps a new region every
time), measured 2-3x slower than reading a raw store into a reused buffer. So the dataset takes
its batch buffers from here. (They are allocated by torch: a numpy allocation lands on
transparent huge pages, which measured ~25% slower to copy windows into here.)

A buffer is a numpy array lent out as a tensor with ``torch.from_numpy``: every tensor made
from it, views included, keeps the array alive through its storage, so the array's reference
count says whether anybody still holds a batch made from it. A buffer is lent again only when
nothing but this pool refers to it; a batch the caller keeps is never overwritten. The pool
keeps at most ``keep`` buffers: as many as are in flight at once (the loader's prefetch), not
one per batch.
"""

from __future__ import annotations

import sys
import threading

import numpy as np
import torch

from .._core._device import torch_dtype


def _refs(pool: list, k: int) -> int:
    return sys.getrefcount(pool[k])


def _idle_refs() -> int:
    """References to a pooled array that nobody else holds, as ``_refs`` counts them."""
    pool = [np.empty(0)]
    return _refs(pool, 0)


_IDLE = _idle_refs()


class BatchBuffers:
    """Reusable ``(B, T, C, H, W)`` buffers; :meth:`take` lends one out as a tensor."""

    def __init__(self, keep: int = 16):
        self.keep = keep
        self._arrays: list[np.ndarray] = []
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._arrays)

    def take(self, shape: tuple[int, ...], dtype: np.dtype) -> torch.Tensor:
        """A tensor of ``shape`` and ``dtype`` that no one else holds (contents undefined)."""
        dtype = np.dtype(dtype)
        with self._lock:
            pool = self._arrays
            for k in range(len(pool)):
                a = pool[k]
                if a.shape == shape and a.dtype == dtype:
                    del a
                    if _refs(pool, k) == _IDLE:
                        return torch.from_numpy(pool[k])
            # allocated by torch, held as a numpy array (whose reference count tells)
            new = torch.empty(shape, dtype=torch_dtype(dtype)).numpy()
            if len(pool) < self.keep:
                pool.append(new)
            else:  # replace an idle buffer of another shape, if any (shapes changed)
                for k in range(len(pool)):
                    if _refs(pool, k) == _IDLE:
                        pool[k] = new
                        break
            return torch.from_numpy(new)

    def __getstate__(self) -> dict:
        return {"keep": self.keep}  # buffers and the lock stay in this process

    def __setstate__(self, state: dict) -> None:
        BatchBuffers.__init__(self, state["keep"])
