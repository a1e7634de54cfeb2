"""Device and dtype resolution, one rule for training, evaluation, inference and reading.

``resolve_device("auto")`` is CUDA when a GPU is available, else the CPU; ``"cpu"``, ``"cuda"``,
``"cuda:N"`` or a ``torch.device`` are taken as given, and asking for CUDA where there is none
is a :class:`ConfigError` naming the parameter (``where``), not an error deep inside torch.
:func:`torch_dtype` maps the pixel types a store holds (numpy) to torch's; :func:`batch_out` is
the one check of a caller's batch buffer (``read_batch(..., out=)``) for every store reader,
:func:`window_columns` the one check of ``read_windows``' columns.
torch is imported when these are called.
"""

from __future__ import annotations

from typing import Any

from ._errors import ConfigError, DataError

__all__ = ["batch_out", "resolve_device", "torch_dtype", "window_columns", "window_requests"]

#: pixel types a store holds (numpy names) and the torch dtypes they read into
_TORCH_DTYPES = {"uint8": "uint8", "float16": "float16", "float32": "float32"}


def resolve_device(device: Any, *, where: str = "device"):
    """The ``torch.device`` ``device`` names (``"auto"``, ``"cpu"``, ``"cuda"``, ``"cuda:N"``,
    or a ``torch.device``); ``where`` is the parameter named by the error."""
    import torch  # deferred: optional/heavy dependency

    if isinstance(device, str) and device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        resolved = device if isinstance(device, torch.device) else torch.device(device)
    except (RuntimeError, TypeError, ValueError):
        raise ConfigError(
            f"{where} {device!r:.80} is not a device; allowed: auto, cpu, cuda or cuda:N"
        ) from None
    if resolved.type == "cuda" and not torch.cuda.is_available():
        raise ConfigError(f"{where}: {device!r} but no CUDA GPU is available; allowed: auto, cpu")
    return resolved


def torch_dtype(dtype: Any):
    """The torch dtype of a store's numpy pixel type (``uint8``, ``float16``, ``float32``)."""
    import numpy as np  # deferred: optional/heavy dependency
    import torch  # deferred: optional/heavy dependency

    name = np.dtype(dtype).name
    if name not in _TORCH_DTYPES:
        raise ConfigError(
            f"dtype {name!r} is not a pixel type; allowed: {', '.join(_TORCH_DTYPES)}"
        )
    return getattr(torch, _TORCH_DTYPES[name])


def batch_out(out, want: tuple[int, ...], dtype, device=None):
    """The tensor a batch is read into: ``out`` when it has shape ``want`` and the torch
    dtype of the pixel type ``dtype`` (a :class:`DataError` otherwise), or a new one (on
    ``device``)."""
    import torch  # deferred: optional/heavy dependency

    want_dtype = torch_dtype(dtype)
    if out is None:
        return torch.empty(want, dtype=want_dtype, device=device)
    if tuple(out.shape) != tuple(want) or out.dtype != want_dtype:
        raise DataError(f"out has shape {tuple(out.shape)} {out.dtype}; needs {want} {want_dtype}")
    return out


def window_columns(videos, index):
    """``read_windows``' columns as int64 arrays, ``videos`` (B,) and ``index`` (B, T); columns
    of other shapes are a :class:`DataError`."""
    import numpy as np  # deferred, as torch is

    videos = np.asarray(videos, np.int64).reshape(-1)
    index = np.asarray(index, np.int64)
    if index.ndim != 2 or len(index) != len(videos):
        raise DataError(
            f"read_windows: index must be (B, T) for {len(videos)} videos, got {index.shape}"
        )
    return videos, index


def window_requests(videos, index) -> list:
    """``read_windows``' columns (checked by :func:`window_columns`) as ``read_batch``'s
    ``(video, frame_indices)`` requests."""
    videos, index = window_columns(videos, index)
    return list(zip(videos.tolist(), index))
