"""``mmaction``: mmaction2 annotation lists, ``path label`` per line (videos) or ``path frames
label`` (rawframes: a folder of frame images and its frame count).

Paths may hold spaces: the label is the last field, a frame count the one before it (when the
path without it is a folder, or the path with it does not exist); tab-separated lines split at
tabs only. Class ids: integer labels keep their ids (names ``"0" .. max``), names are sorted.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from ..._core._errors import InputError
from .._sources import Inputs
from ._registry import GENERIC, Probe, register_input_format
from ._rows import Rows, text_lines

LIST_EXTENSIONS = frozenset([".txt", ".lst", ".list"])
_LINE = re.compile(r"(?P<path>.+?)(?:\s+(?P<frames>\d+))?\s+(?P<label>\S+)")


def _detect(probe: Probe) -> int:
    return GENERIC if not probe.is_dir and probe.path.suffix.lower() in LIST_EXTENSIONS else 0


def parse_line(line: str, rows: Rows) -> tuple[str, str] | None:
    """``(listed path, label)`` of one line, or None when it is not ``path [frames] label``."""
    if "\t" in line:
        cells = [c.strip() for c in line.split("\t") if c.strip()]
        return (cells[0], cells[-1]) if len(cells) in (2, 3) else None
    m = _LINE.fullmatch(line)
    if m is None:
        return None
    path, frames = m["path"], m["frames"]
    if frames is not None:
        with_count = f"{path}{line[m.end('path') : m.end('frames')]}"
        if not os.path.isdir(rows.path(path)) and os.path.exists(rows.path(with_count)):
            path = with_count  # a name ending in a number, not a frame count
    return path, m["label"]


@register_input_format("mmaction", detect=_detect)
def read_mmaction(data: Path, root: Path | None) -> Inputs:
    """an mmaction2 list: 'path label' per line, or 'path frames label' (rawframes)."""
    rows = Rows(data, root or data.parent)
    for lineno, line in text_lines(data):
        parsed = parse_line(line, rows)
        if parsed is None:
            raise InputError(
                f"{data}:{lineno}: expected 'relative/path label' (or 'path frames label'), "
                f"got {line!r}"
            )
        listed, label = parsed
        rows.add(rows.path(listed), f"{data}:{lineno}", label=label, listed=listed)
    return rows.inputs()
