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
import numbers
from collections.abc import Iterator, Mapping, Sequence

import numpy as np
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


def _column(values: list):
    """One meta field of a batch as a column: an array when every value is an array of one
    shape or a number, else a list."""
    first = values[0]
    if isinstance(first, np.ndarray) and all(
        isinstance(v, np.ndarray) and v.shape == first.shape for v in values
    ):
        return np.stack(values)
    if all(isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in values):
        return np.asarray(values, np.int64)
    if all(isinstance(v, numbers.Real) and not isinstance(v, bool) for v in values):
        return np.asarray(values, np.float64)
    return list(values)


def _cell(column, k: int):
    value = column[k]
    return value.item() if isinstance(value, np.generic) else value


class BatchMeta(Sequence):
    """A batch's ``meta`` as columns: ``meta["pts_seconds"]`` is (B, T), ``meta["item"]``
    (B,), ``meta["video"]`` a list of B paths. Indexing by position (``meta[k]``) or
    iterating gives each sample's dict, as :class:`Hyperframe` carries it."""

    def __init__(self, columns: Mapping, size: int) -> None:
        self.columns = dict(columns)
        self.size = int(size)
        for name, col in self.columns.items():
            if len(col) != self.size:
                raise ValueError(f"meta column {name!r} has {len(col)} rows, expected {size}")

    @classmethod
    def from_dicts(cls, metas: Sequence[Mapping]) -> BatchMeta:
        """The columns of per-sample meta dicts (every dict with the same keys)."""
        names = list(metas[0]) if len(metas) else []
        return cls({n: _column([m[n] for m in metas]) for n in names}, len(metas))

    def __len__(self) -> int:
        return self.size

    def keys(self):
        return self.columns.keys()

    def __getitem__(self, key):
        if isinstance(key, str):
            return self.columns[key]
        if isinstance(key, slice):
            return [self[k] for k in range(self.size)[key]]
        k = range(self.size)[key]
        return {name: _cell(col, k) for name, col in self.columns.items()}

    def __iter__(self) -> Iterator[dict]:
        return (self[k] for k in range(self.size))

    def __repr__(self) -> str:
        return f"BatchMeta({self.size} samples: {', '.join(self.columns)})"


@dataclasses.dataclass(frozen=True, repr=False)
class HyperframeBatch:
    """A batch: ``frames`` (B, ...), ``labels`` (B,), ``mask`` (B, T), ``meta`` as columns
    (:class:`BatchMeta`; ``meta[k]`` is sample k's dict) and ``target`` (B, ...), the
    samples' targets stacked (None when they have none); ``audio``, ``audio_mask`` and
    ``flow`` stacked likewise (module doc)."""

    frames: torch.Tensor | KeyframeWindow
    labels: torch.Tensor
    mask: torch.Tensor
    meta: BatchMeta
    target: torch.Tensor | None = None
    audio: torch.Tensor | None = None
    audio_mask: torch.Tensor | None = None
    flow: torch.Tensor | None = None

    def __post_init__(self):
        if not isinstance(self.meta, BatchMeta):  # a list of per-sample dicts
            object.__setattr__(self, "meta", BatchMeta.from_dicts(list(self.meta)))

    def __len__(self) -> int:
        return int(self.labels.shape[0])

    def __getitem__(self, k):
        """Sample ``k`` (:meth:`sample`), or a list of them for a slice: a batch is also the
        sequence of its samples (``ds[i]`` is ``ds.__getitems__([i])[0]``)."""
        if isinstance(k, slice):
            return [self.sample(i) for i in range(len(self))[k]]
        return self.sample(range(len(self))[k])

    def __iter__(self) -> Iterator[Hyperframe]:
        return (self.sample(k) for k in range(len(self)))

    def sample(self, k: int) -> Hyperframe:
        """Sample ``k`` as a :class:`Hyperframe` (views of the batch's tensors)."""
        f = self.frames
        frames = KeyframeWindow(f.key[k], f.context[k]) if isinstance(f, KeyframeWindow) else f[k]

        def row(t):
            return None if t is None else t[k]

        return Hyperframe(
            frames,
            int(self.labels[k]),
            self.mask[k],
            self.meta[k],
            row(self.target),
            row(self.audio),
            row(self.audio_mask),
            row(self.flow),
        )

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
