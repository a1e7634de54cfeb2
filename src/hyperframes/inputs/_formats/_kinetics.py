"""``kinetics``: Kinetics CSVs, ``label,youtube_id,time_start,time_end,split`` (the label column
may be missing in test lists; other columns, such as ``is_cc``, are ignored).

DATA is one CSV or a folder of them (all read). A clip's file is found by name anywhere under
``--root`` (default: the CSV's folder): ``<youtube_id>_<start:06d>_<end:06d>.<ext>`` (a trimmed
clip: the whole file is the clip) or ``<youtube_id>.<ext>`` (the untrimmed video: the clip is
its ``time_start..time_end`` segment); a frame folder of either name counts too. A row whose
file is not found stays a source with the trimmed name, which the build fails, naming the row.
The split is the ``split`` column, else the CSV's name (``validate.csv`` -> ``validate``).

Class ids: the label names sorted (``abseiling`` is 0), as mmaction2's Kinetics label maps.
The same youtube_id and time range listed twice is an error.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

from ..._core._errors import InputError
from .._sources import Inputs, Segment
from ._registry import Probe, detect_kind, files_of_kind, register_input_format
from ._rows import RowError, Rows, csv_rows, find_by_name, pick, segment

REQUIRED = ("youtube_id", "time_start", "time_end")


def _is_kinetics(probe: Probe, path: Path) -> bool:
    return "youtube_id" in probe.header(path)


def clip_name(youtube_id: str, start: float, end: float) -> str:
    return f"{youtube_id}_{int(start):06d}_{int(end):06d}"


@register_input_format("kinetics", detect=detect_kind(".csv", _is_kinetics))
def read_kinetics(data: Path, root: Path | None) -> Inputs:
    """Kinetics CSVs (label,youtube_id,time_start,time_end,split): one, or their folder."""
    csvs = files_of_kind(data, ".csv", _is_kinetics)
    if not csvs:
        raise InputError(
            f"{data}: expected a Kinetics CSV with a header naming {','.join(REQUIRED)}"
        )
    parsed = []
    for path in csvs:
        header, lines = csv_rows(path)
        missing = [c for c in REQUIRED if c not in header]
        if missing:
            raise InputError(f"{path}:1: a Kinetics CSV needs the columns {', '.join(missing)}")
        parsed += [(path, lineno, row) for lineno, row in lines]
    base = root or (data if data.is_dir() else data.parent)
    segments: list[Segment | RowError] = []  # each row's time range, parsed once
    seg: Segment | RowError
    wanted = set()
    for _, _, row in parsed:
        wanted.add(row["youtube_id"])
        label = row.get("label") or None
        try:
            seg = segment(row["time_start"], row["time_end"], () if label is None else (label,))
        except RowError as e:
            segments.append(e)
            continue
        segments.append(seg)
        wanted.add(clip_name(row["youtube_id"], seg.start_seconds, seg.end_seconds))
    found = find_by_name(base, wanted)
    rows = Rows(data, base)
    first: dict[tuple, str] = {}
    for (path, lineno, row), seg in zip(parsed, segments):
        where = f"{path}:{lineno}"
        yid, start, end = row["youtube_id"], row["time_start"], row["time_end"]
        label = row.get("label") or None
        split = row.get("split") or path.stem.lower()
        if (yid, start, end) in first:
            raise InputError(
                f"{where}: duplicate id {yid} {start}..{end} (first at {first[yid, start, end]})"
            )
        first[yid, start, end] = where
        try:
            if isinstance(seg, RowError):
                raise seg
            name = clip_name(yid, seg.start_seconds, seg.end_seconds)
            trimmed = pick(found, [name])
            untrimmed = None if trimmed else pick(found, [yid])
        except RowError as e:
            rows.fail(os.path.join(base, f"{yid}_{start}_{end}.mp4"), where, f"{yid}: {e}")
            continue
        if trimmed is not None:
            rows.add(trimmed[0], where, label=label, split=split, kind=trimmed[1])
        elif untrimmed is not None:
            rows.add(
                untrimmed[0],
                where,
                label=label,
                split=split,
                segments=(dataclasses.replace(seg, row=where),),
                kind=untrimmed[1],
            )
        else:  # not found: a source the build fails, naming the row
            rows.add(os.path.join(base, f"{name}.mp4"), where, label=label, split=split)
    return rows.inputs()
