"""Batches copied to a GPU ahead of the step, as timm's ``PrefetchLoader`` does.

:class:`PrefetchLoader` wraps a loader: while the caller works on batch k (the model's step on
the default CUDA stream), batch k+1 is copied from pinned memory on a side CUDA stream and
prepared there (``prepare``: typically ``lambda b: contract.prepare(b.frames, flow=b.flow,
audio=b.audio)``, dtype, normalisation, layout and flow planes on the device); the default
stream waits for the side stream only when the batch is handed out. On a CPU ``device`` it
hands batches through (prepared when asked), so the same code runs without a GPU.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import torch

from .._core._errors import ConfigError

__all__ = ["PrefetchLoader"]


def _tensors(x) -> list[torch.Tensor]:
    if isinstance(x, torch.Tensor):
        return [x]
    if isinstance(x, tuple | list):
        return [t for v in x for t in _tensors(v)]
    fields = getattr(x, "__dataclass_fields__", None)
    if fields is not None:
        return [t for name in fields for t in _tensors(getattr(x, name))]
    return []


class PrefetchLoader:
    """Iterate ``loader``'s batches on ``device``, one batch ahead (module doc). With
    ``prepare``, each item is ``(batch, prepare(batch))``, both on the device; else the batch.
    ``len``, ``set_epoch``, ``state_dict`` and the rest are the wrapped loader's."""

    def __init__(self, loader, device="cuda", *, prepare: Callable[[Any], Any] | None = None):
        self.loader, self.prepare = loader, prepare
        self.device = torch.device(device)
        if self.device.type == "cuda" and not torch.cuda.is_available():
            raise ConfigError(
                f"PrefetchLoader(device={str(self.device)!r}): no CUDA GPU here; give "
                "device='cpu' (batches are then handed through) or run where a GPU is"
            )

    def __len__(self) -> int:
        return len(self.loader)

    def __getattr__(self, name: str):
        if name == "loader":  # not set yet (unpickling): no recursion
            raise AttributeError(name)
        return getattr(self.loader, name)

    def _move(self, batch):
        moved = batch.to(self.device, non_blocking=True)
        return moved if self.prepare is None else (moved, self.prepare(moved))

    def __iter__(self) -> Iterator:
        if self.device.type != "cuda":
            for batch in self.loader:
                yield self._move(batch)
            return
        stream = torch.cuda.Stream(device=self.device)
        pending = None
        for batch in self.loader:
            with torch.cuda.stream(stream):
                ready = self._move(batch)
            if pending is not None:
                yield pending
            torch.cuda.current_stream(self.device).wait_stream(stream)
            for t in _tensors(ready):  # made on the side stream, used on the default one
                if t.device.type == "cuda":
                    t.record_stream(torch.cuda.current_stream(self.device))
            pending = ready
        if pending is not None:
            yield pending
