"""Every check an :class:`~hyperframes._core._contract.InputContract` makes of its fields, in
one place: :func:`check_contract` runs them in field order when a contract is made (from code,
a config or an untrusted checkpoint) and returns the normalised values of the fields it
normalises. Every value is bounded (:mod:`._limits`); a bad one raises :class:`ConfigError`
naming the field, the value and what is allowed.

The records ``decoder`` (the store's decoder and version: a model sees the pixels of the
decoder that built its store, and another decoder's differ) and ``calibration``
(``hyperframes recalibrate``: the T the BatchNorm statistics were re-estimated at) are checked
here too (:func:`check_decoder`, :func:`check_calibration`)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ._errors import ConfigError
from ._limits import MAX_CLASSES, MAX_FPS, MAX_FRAMES, MAX_SIDE
from ._sizes import parse_size

__all__ = [
    "DOWNSCALE_FILTERS",
    "DTYPES",
    "FRAME_KINDS",
    "REGISTER_MODES",
    "check_calibration",
    "check_contract",
    "check_decoder",
    "check_frame_size",
]

#: what the frames arriving from a store hold
DTYPES = ("uint8", "float16")
FRAME_KINDS = ("interpolation", "super_resolution")
DOWNSCALE_FILTERS = ("bicubic", "area")
REGISTER_MODES = ("homography", "flow")
AUDIO_KEYS = ("n_mels", "window_ms", "columns_per_frame")
#: the longest text a record (decoder name, version, calibration store) may hold
TEXT_LIMIT = 200


def check_contract(c: Any) -> dict[str, Any]:
    """Check every field of contract ``c`` in field order; the normalised values of
    ``mean``, ``std``, ``classes``, ``audio``, ``decoder``, ``calibration`` and
    ``frame_task`` (tuples for sequences, plain dicts of the known keys for mappings)."""
    _check_window(c.frames, c.frame_stride, c.layout)
    _check_geometry(c.size, c.crop, c.fps)
    mean, std = _stats(c.mean, "mean"), _stats(c.std, "std")
    if c.dtype not in DTYPES:
        raise ConfigError(f"dtype {c.dtype!r:.80} is not allowed; allowed: uint8, float16")
    classes = _classes(c.classes)
    audio = _check_tracks(c.flow, c.layout, c.register, c.audio)
    return {
        "mean": mean,
        "std": std,
        "classes": classes,
        "audio": audio,
        "decoder": check_decoder(c.decoder),
        "calibration": check_calibration(c.calibration),
        "frame_task": _frame_task(c.frame_task),
    }


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


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


def _check_window(frames: Any, frame_stride: Any, layout: Any) -> None:
    if not _is_int(frames):
        raise ConfigError(f"frames must be an integer, got {frames!r:.80}")
    if not 1 <= frames <= MAX_FRAMES:
        raise ConfigError(f"frames: out of range: {frames}; allowed: 1 to {MAX_FRAMES}")
    if not _is_int(frame_stride) or not 1 <= frame_stride <= MAX_FRAMES:
        raise ConfigError(
            f"frame_stride must be an integer from 1 to {MAX_FRAMES}, got {frame_stride!r:.80}"
        )
    from ._layouts import LAYOUTS

    if layout not in LAYOUTS:
        raise ConfigError(f"layout {layout!r:.80} is not a layout; allowed: {', '.join(LAYOUTS)}")


def _check_geometry(size: Any, crop: Any, fps: Any) -> None:
    if size is not None and not isinstance(size, str):
        raise ConfigError(f"size must be a string ('128', '112x96') or None, got {size!r:.80}")
    check_frame_size(size, "size")
    if crop is not None and (not _is_int(crop) or not 1 <= crop <= MAX_SIDE):
        raise ConfigError(f"crop must be an integer from 1 to {MAX_SIDE} or None, got {crop!r:.80}")
    if fps is not None and (
        isinstance(fps, bool)
        or not isinstance(fps, int | float)
        or not (math.isfinite(fps) and 0 < fps <= MAX_FPS)
    ):
        raise ConfigError(
            f"fps must be a positive number up to {MAX_FPS:g} or None, got {fps!r:.80}"
        )


def _stats(values: Any, name: str) -> tuple[float, float, float]:
    if isinstance(values, str | bytes) or not hasattr(values, "__len__") or len(values) != 3:
        raise ConfigError(f"{name}: expected 3 numbers (one per RGB channel), got {values!r:.80}")
    out = []
    for v in values:
        if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
            raise ConfigError(f"{name}: expected 3 finite numbers, got {values!r:.80}")
        out.append(float(v))
    if name == "std" and min(out) <= 0:
        raise ConfigError(f"std: every value must be > 0, got {out}")
    return (out[0], out[1], out[2])


def _classes(classes: Any) -> tuple[str, ...]:
    if isinstance(classes, str) or not isinstance(classes, list | tuple):
        raise ConfigError(f"classes: expected a list of class names, got {classes!r:.80}")
    if len(classes) > MAX_CLASSES or not all(isinstance(c, str) for c in classes):
        raise ConfigError(
            f"classes: expected at most {MAX_CLASSES} class names (strings), got "
            f"{len(classes)} items"
        )
    return tuple(classes)


def _check_tracks(flow: Any, layout: str, register: Any, audio: Any) -> dict | None:
    """``flow`` and ``register`` checked; ``audio`` as a dict of its known keys (None: none)."""
    if not isinstance(flow, bool):
        raise ConfigError(f"flow must be true or false, got {flow!r:.80}")
    if flow and layout != "channel":
        raise ConfigError(
            f"flow: the flow planes are appended in the channel layout; layout "
            f"{layout!r} takes frames only (use a channel model, or flow: false)"
        )
    if register not in (None, *REGISTER_MODES):
        raise ConfigError(
            f"register {register!r:.80} is not allowed; allowed: null, {', '.join(REGISTER_MODES)}"
        )
    a = audio
    if a is None:
        return None
    if not isinstance(a, Mapping) or sorted(a) != sorted(AUDIO_KEYS):
        raise ConfigError(f"audio: expected a mapping with {', '.join(AUDIO_KEYS)}, got {a!r:.120}")
    for k in ("n_mels", "columns_per_frame"):
        if not _is_int(a[k]) or not 1 <= a[k] <= 1024:
            raise ConfigError(f"audio.{k}: expected an integer from 1 to 1024, got {a[k]!r:.40}")
    w = a["window_ms"]
    if isinstance(w, bool) or not isinstance(w, int | float) or not 1 <= w <= 1000:
        raise ConfigError(f"audio.window_ms: expected a number from 1 to 1000, got {w!r:.40}")
    return {k: a[k] for k in AUDIO_KEYS}


def _frame_task(ft: Any) -> dict | None:
    if ft is None:
        return None
    if not isinstance(ft, Mapping) or ft.get("kind") not in FRAME_KINDS:
        raise ConfigError(
            f"frame_task: expected a mapping with kind {' or '.join(FRAME_KINDS)}, got {ft!r:.120}"
        )
    if ft["kind"] == "interpolation":
        if sorted(ft) != ["kind"]:
            raise ConfigError(f"frame_task: interpolation takes no options, got {ft!r:.120}")
        return {"kind": "interpolation"}
    if sorted(ft) != ["factor", "filter", "kind"]:
        raise ConfigError(f"frame_task: expected kind, factor and filter, got {ft!r:.120}")
    if not _is_int(ft["factor"]) or not 2 <= ft["factor"] <= 16:
        raise ConfigError(
            f"frame_task.factor: expected an integer from 2 to 16, got {ft['factor']!r:.40}"
        )
    if ft["filter"] not in DOWNSCALE_FILTERS:
        raise ConfigError(
            f"frame_task.filter: {ft['filter']!r:.40} is not allowed; allowed: "
            f"{', '.join(DOWNSCALE_FILTERS)}"
        )
    return {k: ft[k] for k in ("kind", "factor", "filter")}


def _text(value: Any, key: str) -> str:
    if not isinstance(value, str) or not 0 < len(value) <= TEXT_LIMIT:
        raise ConfigError(
            f"{key}: expected a string of 1 to {TEXT_LIMIT} characters, got {value!r:.60}"
        )
    return value


def check_decoder(d: Any) -> dict | None:
    """``{"name", "version"}`` checked (None stays None)."""
    if d is None:
        return None
    if not isinstance(d, Mapping) or sorted(d) != ["name", "version"]:
        raise ConfigError(f"decoder: expected a mapping with name and version, got {d!r:.120}")
    return {
        "name": _text(d["name"], "decoder.name"),
        "version": _text(d["version"], "decoder.version"),
    }


def check_calibration(c: Any) -> dict | None:
    """``{"frames", "trained_frames", "store", "clips"}`` checked (None stays None)."""
    if c is None:
        return None
    keys = ["clips", "frames", "store", "trained_frames"]
    if not isinstance(c, Mapping) or sorted(c) != keys:
        raise ConfigError(f"calibration: expected a mapping with {', '.join(keys)}, got {c!r:.120}")
    for k in ("frames", "trained_frames", "clips"):
        v = c[k]
        top = MAX_FRAMES if k != "clips" else 10**9
        if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= top:
            raise ConfigError(
                f"calibration.{k}: expected an integer from 1 to {top}, got {v!r:.40}"
            )
    return {k: (_text(c[k], "calibration.store") if k == "store" else int(c[k])) for k in keys}
