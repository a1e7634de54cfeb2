"""Repeated sampling: K independently drawn windows of one video per item, read in one batch.

:class:`RepeatedWindows` wraps a dataset whose random sampler draws ``K`` windows per item of
its own (``clips_per_video=K``; with ``clips_per_video=c`` too, ``c*K``): item ``g`` of the
wrapper is the inner items ``g*K .. g*K + K-1``, all windows of the same video, each seeded by
``(seed, epoch, inner item)`` for its window and its augmentation. A batch of ``n`` items is
one read of the inner dataset's ``n*K`` windows, in item order (the K windows of an item side
by side). Since every window has its own seed, the samples do not depend on the number of
workers, nor on which batch an item falls into. With a store a window is a view of stored
frames, so the K windows cost K reads and no decoding at all (the reason VideoMAE decodes
once and crops K times).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .._core._errors import ConfigError

__all__ = ["RepeatedWindows"]


class RepeatedWindows:
    """``repeats`` windows of the same video per item of ``inner`` (module doc)."""

    def __init__(self, inner, repeats: int) -> None:
        if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
            raise ConfigError(f"repeats must be an integer >= 1, got {repeats!r}")
        per = inner.sampler.clips_per_video
        if per % repeats:
            raise ConfigError(
                f"repeats={repeats}: the inner dataset's sampler draws {per} windows per item of "
                f"its own; build it with clips_per_video a multiple of {repeats}"
            )
        self.inner, self.repeats = inner, repeats
        self._len = len(inner) // repeats

    def __len__(self) -> int:
        return self._len

    def __getattr__(self, name: str):
        # everything else (seed, epoch, sampler, store, device, classes...) is the inner one's
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)

    def set_epoch(self, epoch: int) -> None:
        self.inner.set_epoch(epoch)

    @property
    def labels(self) -> np.ndarray:
        """One label per item (its video's), for class-balanced sampling."""
        return np.asarray(self.inner.labels)[:: self.repeats]

    def windows(self, index) -> list:
        """The inner keys of item ``index`` (an int or ``(epoch, item)``)."""
        epoch, item = index if isinstance(index, tuple) else (self.inner.epoch, index)
        item = int(item)
        if not 0 <= item < self._len:
            raise IndexError(f"item {item} is out of range: the dataset has {self._len} items")
        k = self.repeats
        return [(int(epoch), item * k + r) for r in range(k)]

    def __getitems__(self, indices: Sequence):
        return self.inner.__getitems__([w for i in indices for w in self.windows(i)])

    def __getitem__(self, index):
        return self.inner.__getitems__(self.windows(index))
