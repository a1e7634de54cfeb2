"""Layouts: how a window of frames is arranged for a model.

A window is a (T, C, H, W) tensor (uint8 or float); a batch of windows is (B, T, C, H, W).
:func:`to_layout` returns:

========== ======================== ==================== =====================================
name       window                   batch                notes
========== ======================== ==================== =====================================
temporal   (T, C, H, W)             (B, T, C, H, W)      identity (the same tensor)
channel    (T·C, H, W)              (B, T·C, H, W)       frame-major: channel ``c + C·f`` is
                                                         frame f channel c; a view when the
                                                         input is contiguous
conv3d     (C, T, H, W)             (B, C, T, H, W)      a permuted view (not contiguous)
keyframe   :class:`KeyframeWindow`  KeyframeWindow       ``key`` = frame T//2 (C, H, W) / (B, C,
                                                         H, W), a view; ``context`` = the input
========== ======================== ==================== =====================================

The batch form is chosen by the number of dimensions (4: window, 5: batch).

One home for the layouts of both :mod:`hyperframes.data` (which can make them) and
:mod:`hyperframes.models` (which eat them; ``models.Keyframes`` is :class:`KeyframeWindow`).
Training, eval, predict and export keep windows temporal up to the model and apply the
model's layout once per batch, at the model boundary, after normalisation
(:meth:`hyperframes._core._contract.InputContract.prepare`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import torch

from ._contract_checks import LAYOUTS, Layout
from ._errors import ConfigError, DataError

__all__ = [
    "LAYOUTS",
    "PAD_LEAKS",
    "AudioVisual",
    "KeyframeWindow",
    "Layout",
    "expand_channel_stats",
    "from_layout",
    "list_layouts",
    "to_layout",
]

#: layouts whose models ignore the (B, T) mask of padded windows, and why ``short="pad"``
#: leaks the repeated frames into them (seed 001 section 6.3): refused for them
PAD_LEAKS = {
    "conv3d": "a 3D CNN convolves the repeated frames into its features and ignores the mask",
    "channel": "a channel model stacks the repeated frames into its first convolution and "
    "ignores the mask",
}


class AudioVisual(NamedTuple):
    """Input of the audio-visual models: ``video`` in the model's layout and ``audio``
    (B, n_mels, T*k) log-mel. A tuple, so it travels through ``torch.onnx.export`` (two
    graph inputs, ``video`` then ``audio``) and ``DataLoader`` collation."""

    video: torch.Tensor
    audio: torch.Tensor


class KeyframeWindow(NamedTuple):
    """The ``keyframe`` layout: the middle frame ``key`` (index ``T // 2``) and the whole window
    as ``context`` (T, C, H, W); batched, both gain a leading B."""

    key: torch.Tensor
    context: torch.Tensor


def list_layouts() -> list[str]:
    """Names of the layouts :func:`to_layout` accepts."""
    return list(LAYOUTS)


def _check_name(name: str) -> None:
    if name not in LAYOUTS:
        raise ConfigError(
            f"unknown layout {name!r}; allowed layouts are {', '.join(LAYOUTS)} "
            f"(temporal = (T,C,H,W), channel = (T·C,H,W), conv3d = (C,T,H,W), "
            f"keyframe = middle frame + context)"
        )


def _batched(x: object, what: str) -> bool:
    if not isinstance(x, torch.Tensor):
        raise DataError(f"{what} needs a torch.Tensor window, got {type(x).__name__}")
    if x.ndim not in (4, 5):
        raise DataError(
            f"{what} needs a window (T, C, H, W) or a batch (B, T, C, H, W), got shape "
            f"{tuple(x.shape)}"
        )
    return x.ndim == 5


def to_layout(x: torch.Tensor, name: Layout) -> torch.Tensor | KeyframeWindow:
    """Rearrange a window (T, C, H, W) or batch (B, T, C, H, W) into layout ``name``."""
    _check_name(name)
    b = _batched(x, "to_layout")
    t_axis = 1 if b else 0
    if name == "temporal":
        return x
    if name == "channel":
        lead = x.shape[:t_axis]
        return x.reshape(*lead, x.shape[t_axis] * x.shape[t_axis + 1], *x.shape[-2:])
    if name == "conv3d":
        return x.transpose(t_axis, t_axis + 1)
    return KeyframeWindow(x.select(t_axis, x.shape[t_axis] // 2), x)


def from_layout(
    y: torch.Tensor | KeyframeWindow, name: str, *, frames: int | None = None
) -> torch.Tensor:
    """Inverse of :func:`to_layout`: back to (T, C, H, W) / (B, T, C, H, W).

    ``channel`` needs ``frames`` (T) to split T·C; ``keyframe`` returns the context.
    """
    _check_name(name)
    if name == "keyframe":
        # a Tensor here raises AttributeError, not DataError (kept as it is)
        return y.context  # type: ignore[union-attr]
    if name == "temporal":
        _batched(y, "from_layout")
        assert isinstance(y, torch.Tensor)  # _batched raised DataError otherwise
        return y
    if not isinstance(y, torch.Tensor) or y.ndim not in (3, 4, 5):
        raise DataError(f"from_layout({name!r}) got {type(y).__name__} of unexpected shape")
    if name == "conv3d":
        b = _batched(y, "from_layout")
        return y.transpose(1, 2) if b else y.transpose(0, 1)
    if frames is None or frames < 1 or y.shape[-3] % frames:
        raise DataError(
            f"from_layout('channel') needs frames= dividing the {y.shape[-3]} channels, "
            f"got frames={frames!r}"
        )
    return y.reshape(*y.shape[:-3], frames, y.shape[-3] // frames, *y.shape[-2:])


def expand_channel_stats(
    values: Sequence[float] | torch.Tensor,
    name: str,
    *,
    frames: int | None = None,
    dtype: torch.dtype = torch.float32,
    device: torch.device | str | None = None,
) -> torch.Tensor:
    """Shape per-channel values (e.g. a normalisation mean, C values) to broadcast against a
    window or batch in layout ``name``: (C,1,1) for temporal/keyframe, (T·C,1,1) frame-major
    (the C values repeated T times) for channel (needs ``frames``), (C,1,1,1) for conv3d."""
    _check_name(name)
    v = torch.as_tensor(values, dtype=dtype, device=device).reshape(-1)
    if name == "channel":
        if frames is None or frames < 1:
            raise DataError(
                f"expand_channel_stats for the channel layout needs frames= (T), got {frames!r}"
            )
        return v.repeat(frames).reshape(-1, 1, 1)
    if name == "conv3d":
        return v.reshape(-1, 1, 1, 1)
    return v.reshape(-1, 1, 1)
