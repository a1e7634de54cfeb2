"""Reading what a build is given: :func:`scan_inputs` reads a folder, a file list or an
annotation in its format (detected, or named) into :class:`~hyperframes.inputs._sources.Inputs`;
:func:`scan` and :func:`discover` are its short forms."""

from __future__ import annotations

import os

from ._formats import scan_inputs
from ._sources import Source

__all__ = ["discover", "scan", "scan_inputs"]


def scan(data: str | os.PathLike) -> tuple[list[Source], list[dict]]:
    """``(sources, skipped)`` of ``data`` in its detected format (see :func:`scan_inputs`,
    which also returns the class names and the rows that failed)."""
    inputs = scan_inputs(data)
    return inputs.sources, inputs.skipped


def discover(data: str | os.PathLike) -> list[Source]:
    """Every source under ``data``, in a stable order (see :func:`scan`)."""
    return scan(data)[0]
