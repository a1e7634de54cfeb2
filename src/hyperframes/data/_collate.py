"""Collation: stack windows into a batch, keeping dtype (uint8 stays uint8) and masks.

:func:`collate_windows` takes a list of samples, each one of

* a tensor window (T, C, H, W) (or any layout) -- stacked alone;
* a :class:`~hyperframes.data.transforms.Window` (frames, indices, mask);
* a :class:`~hyperframes.data.KeyframeWindow` (key, context);
* a mapping with ``"frames"`` and optionally ``"mask"``, ``"indices"`` and other fields
  (tensors, numpy arrays, Window / KeyframeWindow, numbers; other objects such as strings are
  gathered in lists),

and returns the same kind with a leading batch axis B; masks become (B, T) bool. Inside a
DataLoader worker the frames are stacked straight into shared memory (as torch's default
collate does) to avoid one copy on the way to the main process.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping, Sequence

import numpy as np
import torch

from .._core._errors import DataError
from .._core._layouts import KeyframeWindow
from ._record import BatchMeta, Hyperframe, HyperframeBatch
from .transforms import Window

__all__ = ["collate_hyperframes", "collate_targets", "collate_track", "collate_windows"]

SIZE_HINT = (
    "add a fixed-size spatial transform (RandomResizedCrop(size), Resize((h, w)) or "
    "CenterCrop(size)) so every window has the same height and width"
)


def _describe(shapes: set) -> str:
    return ", ".join(str(s) for s in sorted(shapes))


def _stack(tensors: list[torch.Tensor], what: str) -> torch.Tensor:
    shapes = {tuple(t.shape) for t in tensors}
    if len(shapes) > 1:
        spatial = {s[-2:] for s in shapes if len(s) >= 2}
        leading = {s[:-2] for s in shapes}
        if len(spatial) > 1 and len(leading) == 1:
            sizes = ", ".join(f"{h}x{w}" for h, w in sorted(spatial))
            raise DataError(
                f"cannot batch {what}: windows have different sizes {sizes}; {SIZE_HINT}"
            )
        raise DataError(
            f"cannot batch {what}: windows have different shapes {_describe(shapes)}; windows "
            f"need the same frame count (sampler short='pad' keeps T fixed) and layout"
            + (f"; {SIZE_HINT}" if len(spatial) > 1 else "")
        )
    dtypes = {t.dtype for t in tensors}
    if len(dtypes) > 1:
        raise DataError(
            f"cannot batch {what}: windows have different dtypes "
            f"{', '.join(sorted(str(d) for d in dtypes))}; convert them alike (e.g. ToFloat)"
        )
    out = None
    if torch.utils.data.get_worker_info() is not None and tensors[0].device.type == "cpu":
        shape = (len(tensors), *tensors[0].shape)
        out = torch.empty(shape, dtype=tensors[0].dtype).share_memory_()
    return torch.stack(tensors, out=out)


def _as_tensor(value) -> torch.Tensor:
    if isinstance(value, np.ndarray):
        return torch.from_numpy(np.ascontiguousarray(value))
    return torch.as_tensor(value)


def _collate_field(values: list, name: str):
    first = values[0]
    if isinstance(first, Window | KeyframeWindow):
        return collate_windows(values)
    if isinstance(first, torch.Tensor | np.ndarray):
        return _stack([_as_tensor(v) for v in values], name)
    if isinstance(first, bool | np.bool_):
        return torch.tensor([bool(v) for v in values])
    if isinstance(first, numbers.Integral):
        return torch.tensor([int(v) for v in values], dtype=torch.int64)
    if isinstance(first, numbers.Real):
        return torch.tensor([float(v) for v in values], dtype=torch.float64)
    return list(values)


def collate_targets(targets: Sequence) -> torch.Tensor | None:
    """Stack the samples' ``target`` tensors (B, ...); None when no sample has one."""
    missing = [i for i, t in enumerate(targets) if t is None]
    if len(missing) == len(targets):
        return None
    if missing:
        raise DataError(
            f"cannot batch targets: samples {missing[:5]} have no target but others have one; "
            "give every sample of a dataset a target, or none"
        )
    tensors = [_as_tensor(t) for t in targets]
    return _stack(_padded_lists(tensors), "targets")


def _padded_lists(tensors: list[torch.Tensor]) -> list[torch.Tensor]:
    """Float lists of rows (N_k, D) of different lengths (a frame's boxes) padded with rows
    of -1 to the longest; every other target as it is (equal shapes, or refused by the
    stack)."""
    first = tensors[0]
    if not (
        first.dim() == 2
        and first.is_floating_point()
        and all(t.dim() == 2 and t.is_floating_point() for t in tensors)
        and len({t.shape[1] for t in tensors}) == 1
        and len({t.shape[0] for t in tensors}) > 1
    ):
        return tensors
    longest = max(t.shape[0] for t in tensors)
    out = []
    for t in tensors:
        pad = t.new_full((longest - t.shape[0], t.shape[1]), -1.0)
        out.append(torch.cat([t, pad]))
    return out


def collate_track(values: Sequence, name: str) -> torch.Tensor | None:
    """Stack the samples' ``name`` track (audio, audio_mask, flow); None when none has one."""
    if all(v is None for v in values):
        return None
    if any(v is None for v in values):
        raise DataError(
            f"cannot batch {name}: some samples have it and others not; give every sample of a "
            "dataset the same tracks"
        )
    return _stack([_as_tensor(v) for v in values], name)


def collate_windows(samples: Sequence):
    """Stack a list of windows / samples into a batch (see the module docstring)."""
    if len(samples) == 0:
        raise DataError("collate_windows got an empty list; a batch needs at least one window")
    first = samples[0]
    kinds = {type(s) for s in samples}
    if len(kinds) > 1:
        raise DataError(
            f"collate_windows got mixed sample kinds {sorted(k.__name__ for k in kinds)}; "
            f"give windows of one kind"
        )
    if isinstance(first, Window):
        return Window(
            _stack([s.frames for s in samples], "frames"),
            _stack([_as_tensor(s.indices).to(torch.int64) for s in samples], "indices"),
            _stack([_as_tensor(s.mask).to(torch.bool) for s in samples], "mask"),
        )
    if isinstance(first, KeyframeWindow):
        return KeyframeWindow(
            _stack([s.key for s in samples], "key"),
            _stack([s.context for s in samples], "context"),
        )
    if isinstance(first, torch.Tensor):
        return _stack(list(samples), "frames")
    if isinstance(first, Mapping):
        keys = set(first)
        for i, s in enumerate(samples):
            if set(s) != keys:
                raise DataError(
                    f"collate_windows: sample {i} has fields {sorted(s)} but sample 0 has "
                    f"{sorted(keys)}; every sample needs the same fields"
                )
        if "frames" not in keys:
            raise DataError(f"collate_windows: samples need a 'frames' field, got {sorted(keys)}")
        out = {k: _collate_field([s[k] for s in samples], k) for k in first}
        if isinstance(out.get("mask"), torch.Tensor):
            out["mask"] = out["mask"].to(torch.bool)
        return out
    raise DataError(
        f"collate_windows cannot batch {type(first).__name__}; give tensors, Window, "
        f"KeyframeWindow or dicts with a 'frames' tensor"
    )


def _dense(t: torch.Tensor) -> bool:
    """True when ``t`` is a permutation of a contiguous block (no gaps, no overlap)."""
    expected = 1
    for size, stride in sorted(zip(t.shape, t.stride()), key=lambda p: p[1]):
        if size != 1 and stride != expected:
            return False
        expected *= size
    return True


def _view_of_one_batch(tensors: Sequence[torch.Tensor | KeyframeWindow]) -> torch.Tensor | None:
    """When the samples are consecutive, equally shaped views of one buffer (as the dataset
    returns them after one batched read), the batch is a view of that buffer: no copy."""
    t0 = tensors[0]
    if not isinstance(t0, torch.Tensor) or not _dense(t0):
        return None
    ptr, n, off = t0.untyped_storage().data_ptr(), t0.numel(), t0.storage_offset()
    for k, t in enumerate(tensors):
        if (
            not isinstance(t, torch.Tensor)
            or t.untyped_storage().data_ptr() != ptr
            or t.storage_offset() != off + k * n
            or t.shape != t0.shape
            or t.stride() != t0.stride()
            or t.dtype != t0.dtype
        ):
            return None
    return t0.as_strided((len(tensors), *t0.shape), (n, *t0.stride()), off)


def collate_hyperframes(samples: Sequence[Hyperframe]) -> HyperframeBatch:
    """Stack samples into a :class:`HyperframeBatch`; a batch (what the dataset's
    ``__getitems__`` returns) is handed on as it is."""
    if isinstance(samples, HyperframeBatch):
        return samples
    windows = [s.frames for s in samples]
    batch = _view_of_one_batch(windows)
    frames = batch if batch is not None else collate_windows(windows)
    labels = torch.tensor([s.label for s in samples], dtype=torch.int64)
    mask = torch.stack([s.mask for s in samples])
    target = collate_targets([s.target for s in samples])
    return HyperframeBatch(
        frames,
        labels,
        mask,
        BatchMeta.from_dicts([s.meta for s in samples]),
        target,
        collate_track([s.audio for s in samples], "audio"),
        collate_track([s.audio_mask for s in samples], "audio_mask"),
        collate_track([s.flow for s in samples], "flow"),
    )
