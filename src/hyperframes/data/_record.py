"""The records the data layer returns: one ``Hyperframe`` per sample, a ``HyperframeBatch`` per
batch. Both print shapes, not values, and carry enough ``meta`` to trace a sample back to the
exact frames of its source video.

Targets are typed: ``label`` is the video's class (-1 = none); ``target`` is a tensor target
of the sample beyond its label (a segmentation mask (H, W), ...), or None. A batch stacks them
into ``labels`` (B,) and ``target`` (B, ...) (None when the samples have none)."""

from __future__ import annotations

import dataclasses

import torch

from .._core._layouts import KeyframeWindow


def _shape(x) -> str:
    if isinstance(x, KeyframeWindow):
        return f"KeyframeWindow(key={tuple(x.key.shape)}, context={tuple(x.context.shape)})"
    return f"{tuple(x.shape)} {str(x.dtype).replace('torch.', '')}"


@dataclasses.dataclass(frozen=True, repr=False)
class Hyperframe:
    """One sample: ``frames`` in the dataset's layout, its ``label`` (-1 = none), ``mask`` (T,)
    False on padded positions, ``meta``: ``video`` (path), ``video_id``, ``frame_indices``
    (source numbering), ``stored_indices``, ``pts_seconds``, ``fps``, ``frames`` (T), ``seed``,
    ``epoch``, ``item``, ``clip`` and ``segment`` (the store's segment row of a ``per_segment``
    item, else -1); and ``target``, a tensor target beyond the label (e.g. the key frame's
    segmentation mask (H, W) int64, or multi-hot classes (C,) or (T, C)), or None."""

    frames: torch.Tensor | KeyframeWindow
    label: int
    mask: torch.Tensor
    meta: dict
    target: torch.Tensor | None = None

    def __post_init__(self):
        t = self.meta.get("frames")
        if t is not None and tuple(self.mask.shape) != (t,):
            raise ValueError(f"mask has shape {tuple(self.mask.shape)}, expected ({t},)")
        if self.target is not None and not isinstance(self.target, torch.Tensor):
            raise ValueError(
                f"target must be a torch.Tensor or None, got {type(self.target).__name__}; "
                "convert it with torch.as_tensor"
            )

    def __repr__(self) -> str:
        target = "" if self.target is None else f", target={_shape(self.target)}"
        return (
            f"Hyperframe(frames={_shape(self.frames)}, label={self.label}{target}, "
            f"mask={int(self.mask.sum())}/{self.mask.numel()} valid, video={self.meta.get('video')!r})"
        )


@dataclasses.dataclass(frozen=True, repr=False)
class HyperframeBatch:
    """A batch: ``frames`` (B, ...), ``labels`` (B,), ``mask`` (B, T), a list of ``meta`` and
    ``target`` (B, ...), the samples' targets stacked (None when they have none)."""

    frames: torch.Tensor | KeyframeWindow
    labels: torch.Tensor
    mask: torch.Tensor
    meta: list[dict]
    target: torch.Tensor | None = None

    def __len__(self) -> int:
        return int(self.labels.shape[0])

    def __repr__(self) -> str:
        target = "" if self.target is None else f", target={_shape(self.target)}"
        return (
            f"HyperframeBatch(frames={_shape(self.frames)}, labels={tuple(self.labels.shape)}, "
            f"mask={tuple(self.mask.shape)}{target})"
        )

    def _map(self, fn) -> HyperframeBatch:
        frames = (
            KeyframeWindow(fn(self.frames.key), fn(self.frames.context))
            if isinstance(self.frames, KeyframeWindow)
            else fn(self.frames)
        )
        target = None if self.target is None else fn(self.target)
        return HyperframeBatch(frames, fn(self.labels), fn(self.mask), self.meta, target)

    def to(self, device, *, non_blocking: bool = False) -> HyperframeBatch:
        return self._map(lambda t: t.to(device, non_blocking=non_blocking))

    def pin_memory(self) -> HyperframeBatch:
        """Called by the DataLoader when ``pin_memory=True``."""
        return self._map(lambda t: t.pin_memory())
