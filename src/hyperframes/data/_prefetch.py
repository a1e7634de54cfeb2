"""Batches copied to a GPU ahead of the step, as timm's ``PrefetchLoader`` does.

:class:`PrefetchLoader` wraps a loader: while the caller works on batch k (the model's step on
the default CUDA stream), batch k+1 is copied from pinned memory on a side CUDA stream and
prepared there (``prepare``: typically ``lambda b: contract.prepare(b.frames, flow=b.flow,
audio=b.audio)``, dtype, normalisation, layout and flow planes on the device); the default
stream waits for the side stream only when the batch is handed out. A batch already on the
device (a store held on the GPU) was made on the caller's stream: the side stream waits for it
first. On a CPU ``device`` the same one-batch-ahead order runs with no streams and no copies,
so the same code runs without a GPU.

Resuming: the loader has yielded one batch more than the caller has had (the one held ahead).
:meth:`PrefetchLoader.state_dict` asks the wrapped loader for its state without it
(``state_dict(held=...)``, as hyperframes' loaders take it), so a checkpoint written between
two steps resumes at the first batch the caller has not had.
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
    ``move=False``: the batch is handed on as the loader made it (pinned, on the CPU) and
    ``prepare``, still run on the side stream, moves what it needs itself (for work that must
    see the CPU batch, such as a task's targets). ``len``, ``set_epoch`` and the rest are the
    wrapped loader's; ``state_dict`` leaves out the batch held ahead (module doc)."""

    def __init__(
        self,
        loader,
        device="cuda",
        *,
        prepare: Callable[[Any], Any] | None = None,
        move: bool = True,
    ):
        self.loader, self.prepare, self.move = loader, prepare, move
        self.device = torch.device(device)
        self._held = 0  # batches taken from the loader and not yet handed out
        if self.device.type == "cuda" and not torch.cuda.is_available():
            raise ConfigError(
                f"PrefetchLoader(device={str(self.device)!r}): no CUDA GPU here; give "
                "device='cpu' (batches are then handed through) or run where a GPU is"
            )
        if not move and prepare is None:
            raise ConfigError("PrefetchLoader(move=False) needs a prepare that moves the batch")

    def __len__(self) -> int:
        return len(self.loader)

    def __getattr__(self, name: str):
        if name == "loader":  # not set yet (unpickling): no recursion
            raise AttributeError(name)
        return getattr(self.loader, name)

    def state_dict(self) -> dict:
        """The wrapped loader's state at the batches handed out so far (not the one held)."""
        return self.loader.state_dict(held=self._held)

    def load_state_dict(self, state: dict) -> None:
        self._held = 0
        self.loader.load_state_dict(state)

    def set_epoch(self, *args, **kwargs) -> None:
        self._held = 0
        self.loader.set_epoch(*args, **kwargs)

    def _move(self, batch):
        moved = batch.to(self.device, non_blocking=True) if self.move else batch
        return moved if self.prepare is None else (moved, self.prepare(moved))

    def _ahead(self, batch, stream):
        """``batch`` moved and prepared, on ``stream`` (None: the CPU, here and now)."""
        if stream is None:
            return self._move(batch)
        made_here = [t for t in _tensors(batch) if t.device.type == "cuda"]
        if made_here:  # made on the caller's stream: the side stream waits for it
            stream.wait_stream(torch.cuda.current_stream(self.device))
            for t in made_here:
                t.record_stream(stream)
        with torch.cuda.stream(stream):
            return self._move(batch)

    def _hand_over(self, ready, stream) -> None:
        """The caller's stream waits for ``ready`` (made on ``stream``) before it uses it."""
        if stream is None:
            return
        current = torch.cuda.current_stream(self.device)
        current.wait_stream(stream)
        for t in _tensors(ready):  # made on the side stream, used on the caller's
            if t.device.type == "cuda":
                t.record_stream(current)

    def __iter__(self) -> Iterator:
        self._held = 0
        cuda = self.device.type == "cuda"
        stream = torch.cuda.Stream(device=self.device) if cuda else None
        pending = None
        batches = iter(self.loader)
        try:
            for batch in batches:
                self._held += 1
                ready = self._ahead(batch, stream)
                if pending is not None:
                    self._held -= 1
                    yield pending
                self._hand_over(ready, stream)
                pending = ready
            if pending is not None:
                self._held -= 1
                yield pending
        finally:  # left early: the loader stops reading ahead now
            close = getattr(batches, "close", None)
            if close is not None:
                close()
