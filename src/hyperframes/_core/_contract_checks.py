"""The input contract's fields, declared once with pydantic (:mod:`._validate`): the names a
field may take, the records it holds, and the few checks a type cannot say.

:class:`~hyperframes._core._contract.InputContract` types its plain fields itself (``Field``
bounds, ``Literal`` choices); its four records, plain dicts on the contract (a checkpoint and
JSON hold them as they are), are validated by the strict models here: ``audio`` (the log-mel
parameters), ``decoder`` (the decoder and version that built the store: a model sees the pixels
of its store's decoder, and another decoder's differ), ``calibration`` (``hyperframes
recalibrate``: the T the BatchNorm statistics were re-estimated at) and ``frame_task`` (what a
restoring model is given). Every value is bounded (:mod:`._limits`); a bad one is a
:class:`ConfigError` naming the key, the value and what is allowed, in the words of every
other setting."""

from __future__ import annotations

import typing
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import Field

from ._errors import ConfigError
from ._limits import MAX_FRAMES, MAX_SIDE
from ._sizes import parse_size
from ._validate import Number, Strict, validate

__all__ = [
    "DOWNSCALE_FILTERS",
    "DTYPES",
    "FRAME_KINDS",
    "LAYOUTS",
    "REGISTER_MODES",
    "TEXT_LIMIT",
    "Layout",
    "check_frame_size",
    "check_record",
]

#: how a window is arranged for a model (:mod:`._layouts` implements them)
Layout = Literal["temporal", "channel", "conv3d", "keyframe"]
LAYOUTS: tuple[str, ...] = typing.get_args(Layout)
#: what the frames arriving from a store hold
Dtype = Literal["uint8", "float16"]
DTYPES: tuple[str, ...] = typing.get_args(Dtype)
Register = Literal["homography", "flow"]
REGISTER_MODES: tuple[str, ...] = typing.get_args(Register)
FRAME_KINDS = ("interpolation", "super_resolution")
Filter = Literal["bicubic", "area"]
DOWNSCALE_FILTERS: tuple[str, ...] = typing.get_args(Filter)
#: the longest text a record (decoder name, version, calibration store) may hold
TEXT_LIMIT = 200

Text = Annotated[str, Field(min_length=1, max_length=TEXT_LIMIT)]
Finite = Annotated[float, Field(allow_inf_nan=False)]
Positive = Annotated[float, Field(gt=0, allow_inf_nan=False)]


class _Audio(Strict):
    n_mels: int = Field(ge=1, le=1024, description="mel bands")
    window_ms: Number = Field(ge=1, le=1000, description="analysis window, milliseconds")
    columns_per_frame: int = Field(ge=1, le=1024, description="log-mel columns per frame")


class _Decoder(Strict):
    name: Text
    version: Text


class _Calibration(Strict):  # keys in sorted order, as checkpoints have held them
    clips: int = Field(ge=1, le=10**9)
    frames: int = Field(ge=1, le=MAX_FRAMES, description="T the statistics were estimated at")
    store: Text
    trained_frames: int = Field(ge=1, le=MAX_FRAMES, description="T the model was trained at")


class _Interpolation(Strict):
    kind: Literal["interpolation"]


class _SuperResolution(Strict):
    kind: Literal["super_resolution"]
    factor: int = Field(ge=2, le=16, description="downscale factor")
    filter: Filter


_RECORDS: dict[str, type[Strict]] = {
    "audio": _Audio,
    "decoder": _Decoder,
    "calibration": _Calibration,
}


def check_record(name: str, value: Any) -> dict | None:
    """The record ``name`` of a contract checked by its model; a plain dict of its keys in
    their declared order (None stays None)."""
    if value is None:
        return None
    if name == "frame_task":
        kind = value.get("kind") if isinstance(value, Mapping) else None
        if kind not in FRAME_KINDS:
            raise ConfigError(
                f"frame_task: expected a mapping with kind {' or '.join(FRAME_KINDS)}, got "
                f"{value!r:.120}"
            )
        model: type[Strict] = _Interpolation if kind == "interpolation" else _SuperResolution
    else:
        model = _RECORDS[name]
    return validate(model, value, where=name).model_dump()


def check_frame_size(size: Any, key: str) -> tuple[int, int, str] | None:
    """``size`` as the store reads it (``"128"``, ``"112x96"``, ``"none"``) with each side at
    most :data:`~hyperframes._core._limits.MAX_SIDE`; (H, W, ``key``), None for native."""
    spec = parse_size(size, where=key)
    if spec is None:
        return None
    _, height, width = spec
    if max(height, width) > MAX_SIDE:
        raise ConfigError(
            f"{key}: {size!r} asks for frames of {height} x {width} pixels; allowed: sides of at "
            f"most {MAX_SIDE} (a short side 128, HxW 112x112, or none)"
        )
    return (height, width, key)
