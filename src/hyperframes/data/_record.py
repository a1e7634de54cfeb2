"""The records the data layer returns: one ``Hyperframe`` per sample, a ``HyperframeBatch`` per
batch. Both print shapes, not values, and carry enough ``meta`` to trace a sample back to the
exact frames of its source video.

Targets are typed: ``label`` is the video's class (-1 = none); ``target`` is a tensor target
of the sample beyond its label (a segmentation mask (H, W), ...), or None. A batch stacks them
into ``labels`` (B,) and ``target`` (B, ...) (None when the samples have none).

Aligned tracks (None unless the dataset was asked for them): ``audio`` (n_mels, T*k) float32
log-mel, columns ``j*k .. j*k+k-1`` heard while frame j is shown, with ``audio_mask`` (T,)
(False for padded frames and for a video without audio); ``flow`` (T-1, 2, H, W) float32, the
optical flow from each frame of the window to the next, in pixels of the sample's frames. A
batch stacks them: ``audio`` (B, n_mels, T*k), ``audio_mask`` (B, T), ``flow`` (B, T-1, 2,
H, W)."""

from __future__ import annotations

import dataclasses

import torch

from .._core._layouts import KeyframeWindow


def _tracks(r) -> str:
    """``, target=..., audio=..., flow=...`` for the fields a record has."""
    names = ("target", "audio", "flow")
    return "".join(f", {n}={_shape(getattr(r, n))}" for n in names if getattr(r, n) is not None)


def _shape(x) -> str:
    if isinstance(x, KeyframeWindow):
        return f"KeyframeWindow(key={tuple(x.key.shape)}, context={tuple(x.context.shape)})"
    return f"{tuple(x.shape)} {str(x.dtype).replace('torch.', '')}"


@dataclasses.dataclass(frozen=True, repr=False)
class Hyperframe:
    """One sample: ``frames`` in the dataset's layout, its ``label`` (-1 = none), ``mask`` (T,)
    False on padded positions, ``meta``: ``video`` (path), ``video_id``, ``frame_indices``
    (source numbering), ``stored_indices``, ``pts_seconds``, ``fps``, ``frames`` (T), ``seed``,
    ``epoch``, ``item``, ``clip``, ``segment`` (the store's segment row of a ``per_segment``
    item, else -1) and ``registered`` (the registration applied: "homography", "flow" or
    None); ``target``, a tensor target beyond the label (e.g. the key frame's segmentation
    mask (H, W) int64, or multi-hot classes (C,) or (T, C)), or None; ``audio``,
    ``audio_mask`` and ``flow``: the aligned tracks (module doc), or None."""

    frames: torch.Tensor | KeyframeWindow
    label: int
    mask: torch.Tensor
    meta: dict
    target: torch.Tensor | None = None
    audio: torch.Tensor | None = None
    audio_mask: torch.Tensor | None = None
    flow: torch.Tensor | None = None

    def __post_init__(self):
        t = self.meta.get("frames")
        if t is not None and tuple(self.mask.shape) != (t,):
            raise ValueError(f"mask has shape {tuple(self.mask.shape)}, expected ({t},)")
        if self.target is not None and not isinstance(self.target, torch.Tensor):
            raise ValueError(
                f"target must be a torch.Tensor or None, got {type(self.target).__name__}; "
                "convert it with torch.as_tensor"
            )
        if t is not None and self.audio_mask is not None and tuple(self.audio_mask.shape) != (t,):
            raise ValueError(
                f"audio_mask has shape {tuple(self.audio_mask.shape)}, expected ({t},)"
            )
        if t is not None and self.flow is not None and self.flow.shape[0] != max(t - 1, 0):
            raise ValueError(
                f"flow has shape {tuple(self.flow.shape)}, expected ({t - 1}, 2, H, W)"
            )

    def __repr__(self) -> str:
        target = _tracks(self)
        return (
            f"Hyperframe(frames={_shape(self.frames)}, label={self.label}{target}, "
            f"mask={int(self.mask.sum())}/{self.mask.numel()} valid, video={self.meta.get('video')!r})"
        )


@dataclasses.dataclass(frozen=True, repr=False)
class HyperframeBatch:
    """A batch: ``frames`` (B, ...), ``labels`` (B,), ``mask`` (B, T), a list of ``meta`` and
    ``target`` (B, ...), the samples' targets stacked (None when they have none); ``audio``,
    ``audio_mask`` and ``flow`` stacked likewise (module doc)."""

    frames: torch.Tensor | KeyframeWindow
    labels: torch.Tensor
    mask: torch.Tensor
    meta: list[dict]
    target: torch.Tensor | None = None
    audio: torch.Tensor | None = None
    audio_mask: torch.Tensor | None = None
    flow: torch.Tensor | None = None

    def __len__(self) -> int:
        return int(self.labels.shape[0])

    def __repr__(self) -> str:
        target = _tracks(self)
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

        def opt(t):
            return None if t is None else fn(t)

        return HyperframeBatch(
            frames,
            fn(self.labels),
            fn(self.mask),
            self.meta,
            opt(self.target),
            opt(self.audio),
            opt(self.audio_mask),
            opt(self.flow),
        )

    def to(self, device, *, non_blocking: bool = False) -> HyperframeBatch:
        return self._map(lambda t: t.to(device, non_blocking=non_blocking))

    def pin_memory(self) -> HyperframeBatch:
        """Called by the DataLoader when ``pin_memory=True``."""
        return self._map(lambda t: t.pin_memory())
