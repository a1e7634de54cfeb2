"""``csv``: a CSV whose header names its columns: ``path`` (required), ``label``, ``split``,
``start`` and ``end`` (seconds, or H:MM:SS; both or neither), in any order; other columns are
ignored. Rows of one path with ``start,end`` are one video with several labelled segments.

Class ids: integer labels keep their ids (``10`` and ``2`` are ids 10 and 2; names ``"0" ..
max``), names are sorted.
"""

from __future__ import annotations

from pathlib import Path

from ..._core._errors import InputError
from .._sources import ANNOTATION_EXTENSIONS, Inputs, Segment
from ._csv_columns import read_columns
from ._registry import GENERIC, SPECIFIC, Probe, register_input_format
from ._rows import RowError, Rows, csv_header, csv_rows, segment

COLUMNS = ("path", "label", "split", "start", "end")


def _detect(probe: Probe) -> int:
    if probe.is_dir or probe.path.suffix.lower() not in ANNOTATION_EXTENSIONS:
        return 0
    if "path" in probe.header():
        return SPECIFIC
    return GENERIC if probe.path.suffix.lower() == ".csv" else 0


@register_input_format("csv", detect=_detect)
def read_csv(data: Path, root: Path | None) -> Inputs:
    """a CSV with a header: path[,label][,split][,start,end]."""
    header = csv_header(data)
    _check_header(data, header)
    timed = "start" in header
    read = None if timed else read_columns(data, header, root or data.parent)
    if read is not None:  # a plain CSV: read as whole columns, no Python work per row
        return read.inputs()
    header, lines = csv_rows(data)
    rows = Rows(data, root or data.parent)
    for lineno, row in lines:
        where = f"{data}:{lineno}"
        listed = row.get("path", "")
        if not listed:
            raise InputError(f"{where}: empty path")
        path = rows.path(listed)
        label = row.get("label") or None
        segments: tuple[Segment, ...] = ()
        if timed and (row.get("start") or row.get("end")):
            try:
                segments = (segment(row.get("start"), row.get("end"), _own(label), where),)
            except RowError as e:
                rows.fail(path, where, str(e))
                continue
        rows.add(
            path,
            where,
            label=label,
            split=row.get("split") or None,
            segments=segments,
            listed=listed,
        )
    return rows.inputs()


def _own(label: str | None) -> tuple[str, ...]:
    return () if label is None else (label,)


def _check_header(data: Path, header: list[str]) -> None:
    found = ",".join(header)
    if "path" not in header:
        raise InputError(
            f"{data}:1: expected a header naming the columns, {','.join(COLUMNS)} (path "
            f"required); the first line is {found!r}: add the header line"
        )
    if ("start" in header) != ("end" in header):
        raise InputError(f"{data}:1: 'start' and 'end' columns come together; header {found!r}")
    unknown = [h for h in header if h not in COLUMNS]
    if "label" not in header and unknown:
        raise InputError(
            f"{data}:1: no 'label' column (columns: {found}); name the label column 'label', "
            f"or drop {', '.join(unknown)} for an unlabelled list"
        )
    dup = sorted({h for h in header if h in COLUMNS and header.count(h) > 1})
    if dup:
        raise InputError(f"{data}:1: column {dup[0]!r} appears twice in the header {found!r}")
