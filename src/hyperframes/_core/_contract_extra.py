"""The decoder a store's manifest records, as an input contract's ``decoder`` record holds it
(the checks of that record and of ``calibration`` are in :mod:`._contract_checks`)."""

from __future__ import annotations

from collections.abc import Mapping

from ._contract_checks import TEXT_LIMIT

__all__ = ["decoder_of"]


def decoder_of(manifest: Mapping) -> dict | None:
    """The decoder a store's manifest records (``{"name", "version"}``), None if it does not."""
    dec = manifest.get("decoder") if isinstance(manifest, Mapping) else None
    if not isinstance(dec, Mapping):
        return None
    name, version = dec.get("name"), dec.get("version")
    if not isinstance(name, str) or not isinstance(version, str) or not name or not version:
        return None
    return {"name": name[:TEXT_LIMIT], "version": version[:TEXT_LIMIT]}
