"""The records the data layer returns: one ``Hyperframe`` per sample, a ``HyperframeBatch`` per
batch. Both print shapes, not values, and carry enough ``meta`` to trace a sample back to the
exact frames of its source video."""

from __future__ import annotations

import dataclasses

import torch

from .._layouts import KeyframeWindow


def _shape(x) -> str:
    if isinstance(x, KeyframeWindow):
        return f"KeyframeWindow(key={tuple(x.key.shape)}, context={tuple(x.context.shape)})"
    return f"{tuple(x.shape)} {str(x.dtype).replace('torch.', '')}"


@dataclasses.dataclass(frozen=True, repr=False)
class Hyperframe:
    """One sample: ``frames`` in the dataset's layout, its ``label`` (-1 = none), ``mask`` (T,)
    False on padded positions, and ``meta``: ``video`` (path), ``video_id``, ``frame_indices``
    (source numbering), ``stored_indices``, ``pts_seconds``, ``fps``, ``frames`` (T), ``seed``,
    ``epoch``, ``item`` and ``clip``."""

    frames: torch.Tensor | KeyframeWindow
    label: int
    mask: torch.Tensor
    meta: dict

    def __post_init__(self):
        t = self.meta.get("frames")
        if t is not None and tuple(self.mask.shape) != (t,):
            raise ValueError(f"mask has shape {tuple(self.mask.shape)}, expected ({t},)")

    def __repr__(self) -> str:
        return (
            f"Hyperframe(frames={_shape(self.frames)}, label={self.label}, "
            f"mask={int(self.mask.sum())}/{self.mask.numel()} valid, video={self.meta.get('video')!r})"
        )


@dataclasses.dataclass(frozen=True, repr=False)
class HyperframeBatch:
    """A batch: ``frames`` (B, ...), ``labels`` (B,), ``mask`` (B, T) and a list of ``meta``."""

    frames: torch.Tensor | KeyframeWindow
    labels: torch.Tensor
    mask: torch.Tensor
    meta: list[dict]

    def __len__(self) -> int:
        return int(self.labels.shape[0])

    def __repr__(self) -> str:
        return (
            f"HyperframeBatch(frames={_shape(self.frames)}, labels={tuple(self.labels.shape)}, "
            f"mask={tuple(self.mask.shape)})"
        )

    def _map(self, fn) -> HyperframeBatch:
        frames = (
            KeyframeWindow(fn(self.frames.key), fn(self.frames.context))
            if isinstance(self.frames, KeyframeWindow)
            else fn(self.frames)
        )
        return HyperframeBatch(frames, fn(self.labels), fn(self.mask), self.meta)

    def to(self, device, *, non_blocking: bool = False) -> HyperframeBatch:
        return self._map(lambda t: t.to(device, non_blocking=non_blocking))

    def pin_memory(self) -> HyperframeBatch:
        """Called by the DataLoader when ``pin_memory=True``."""
        return self._map(lambda t: t.pin_memory())
