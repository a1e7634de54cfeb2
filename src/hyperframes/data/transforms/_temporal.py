"""Temporal transforms: they reorder or repeat frames, moving indices and mask with them.

All keep T constant and declare ``changes_sequence = True``. On a batch each sample's order
(drawn from its own generator) gathers its frames, indices and mask in one indexing of the
batch.

* :class:`Reverse` -- play the window backwards;
* :class:`DropFrame` -- frame ``i`` (0 < i < T) is lost and its predecessor shown twice in its
  place, as a player does on a dropped frame: ``[.., f(i-1), f(i-1), f(i+1), ..]``;
* :class:`DuplicateFrame` -- frame ``i`` is shown twice and the rest is delayed by one, the last
  frame falling off: ``[.., f(i), f(i), f(i+1), .., f(T-2)]``;
* :class:`Shuffle` -- a random permutation (opt-in: it destroys motion).
"""

from __future__ import annotations

import torch

from . import _random as R
from ._base import Transform, Window
from ._registry import register_transform

__all__ = ["DropFrame", "DuplicateFrame", "Reverse", "Shuffle"]


def _take(window: Window, order: torch.Tensor) -> Window:
    return Window(
        window.frames.index_select(0, order.to(window.frames.device)),
        window.indices.index_select(0, order.to(window.indices.device)),
        window.mask.index_select(0, order.to(window.mask.device)),
    )


class _Temporal(Transform):
    random = True
    changes_sequence = True
    geometry = "none"  # frames move in time, pixels stay

    def __init__(self, p: float = 0.5) -> None:
        self.p = R.probability(type(self).__name__, p)

    def order(self, t: int, g: torch.Generator) -> torch.Tensor | None:
        """The new position -> old position map, or None for no change."""
        raise NotImplementedError

    def draw(self, generator, shape) -> torch.Tensor | None:
        t = int(shape[0])
        if t < 2 or not R.coin(generator, self.p):
            return None
        return self.order(t, generator)

    def apply_drawn(self, window, params):
        return window if params is None else _take(window, params)

    def batch_apply(self, batch, params):
        if all(p is None for p in params):
            return batch
        b, t = batch.frames.shape[:2]
        order = torch.arange(t).repeat(b, 1)
        for k, p in enumerate(params):
            if p is not None:
                order[k] = p
        rows = torch.arange(b)[:, None]
        return Window(
            batch.frames[rows.to(batch.frames.device), order.to(batch.frames.device)],
            torch.as_tensor(batch.indices)[rows, order],
            torch.as_tensor(batch.mask)[rows, order],
        )


@register_transform("reverse")
class Reverse(_Temporal):
    """Reverse the window (frames, indices and mask) with probability ``p``."""

    def order(self, t, g):
        return torch.arange(t - 1, -1, -1)


@register_transform("drop_frame")
class DropFrame(_Temporal):
    """With probability ``p`` replace a random frame i (0 < i < T) by a copy of frame i-1."""

    def order(self, t, g):
        i = R.randint(g, 1, t - 1)
        order = torch.arange(t)
        order[i] = i - 1
        return order


@register_transform("duplicate_frame")
class DuplicateFrame(_Temporal):
    """With probability ``p`` show a random frame i (i < T-1) twice, delaying the rest by one."""

    def order(self, t, g):
        i = R.randint(g, 0, t - 2)
        return torch.cat([torch.arange(i + 1), torch.tensor([i]), torch.arange(i + 1, t - 1)])


@register_transform("shuffle")
class Shuffle(_Temporal):
    """With probability ``p`` (default 1) permute the frames randomly."""

    def __init__(self, p: float = 1.0) -> None:
        super().__init__(p)

    def order(self, t, g):
        return torch.randperm(t, generator=g, device=g.device)
