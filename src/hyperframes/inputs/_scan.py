"""Reading what a build is given: :func:`scan_inputs` reads a folder, a file list or an
annotation in its format (detected, or named) into :class:`~hyperframes.inputs._sources.Inputs`;
:func:`scan` and :func:`discover` are its short forms."""

from __future__ import annotations

import os

from ._formats import read_inputs
from ._sources import Inputs, Source

__all__ = ["discover", "scan", "scan_inputs"]


def scan_inputs(
    data: str | os.PathLike,
    input_format: str | None = None,
    root: str | os.PathLike | None = None,
    *,
    allow_outside_root: bool = False,
    defer_checks: bool = False,
) -> Inputs:
    """Read ``data`` as ``input_format`` (``None``: detected from names, headers and JSON
    shapes; an ambiguous ``data`` asks for one). ``root``: the folder an annotation's paths are
    relative to (default: the annotation file's folder); a listed file outside it (links followed)
    is a failed row unless ``allow_outside_root``; ``defer_checks``: that check is made of
    one source only (every listed file outside the root is still an error), the rest left to
    ``Inputs.root_check``, which a build calls as it hands each video out. The formats and how
    each assigns class ids: :func:`hyperframes.inputs._formats.list_input_formats`."""
    return read_inputs(
        data,
        input_format=input_format,
        root=root,
        allow_outside_root=allow_outside_root,
        defer_checks=defer_checks,
    )


def scan(data: str | os.PathLike) -> tuple[list[Source], list[dict]]:
    """``(sources, skipped)`` of ``data`` in its detected format (see :func:`scan_inputs`,
    which also returns the class names and the rows that failed)."""
    inputs = scan_inputs(data)
    return inputs.sources, inputs.skipped


def discover(data: str | os.PathLike) -> list[Source]:
    """Every source under ``data``, in a stable order (see :func:`scan`)."""
    return scan(data)[0]
