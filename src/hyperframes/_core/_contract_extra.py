"""The contract's records of where its frames came from and what was re-estimated:
``decoder`` (the store's decoder and version, seed 002 sections 2.3 and 5.1: a model sees
the pixels of the decoder that built its store, and another decoder's differ) and
``calibration`` (``hyperframes recalibrate``: the T the BatchNorm statistics were
re-estimated at). Both bounded, as everything read from a checkpoint is."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._errors import ConfigError
from ._limits import MAX_FRAMES

__all__ = ["check_calibration", "check_decoder", "decoder_of"]

_TEXT = 200


def _text(value: Any, key: str) -> str:
    if not isinstance(value, str) or not 0 < len(value) <= _TEXT:
        raise ConfigError(f"{key}: expected a string of 1 to {_TEXT} characters, got {value!r:.60}")
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


def decoder_of(manifest: Mapping) -> dict | None:
    """The decoder a store's manifest records (``{"name", "version"}``), None if it does not."""
    dec = manifest.get("decoder") if isinstance(manifest, Mapping) else None
    if not isinstance(dec, Mapping):
        return None
    name, version = dec.get("name"), dec.get("version")
    if not isinstance(name, str) or not isinstance(version, str) or not name or not version:
        return None
    return {"name": name[:_TEXT], "version": version[:_TEXT]}
