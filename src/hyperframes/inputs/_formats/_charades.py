"""``charades``: Charades CSVs (``Charades_v1_train.csv``): columns ``id`` and ``actions``, where
``actions`` is ``c092 11.90 21.20;c147 0.00 12.60`` (class, start and end seconds; empty for a
video without actions). Multi-label: each source's ``labels`` are its classes and its
``segments`` the actions; ``label`` stays ``None``.

DATA is one CSV or a folder of them (all read). Videos are ``<id>.<ext>`` (or a frame folder
``<id>/``, as ``Charades_v1_rgb``) anywhere under ``--root`` (default: the CSV's folder); the
split is the CSV's name (``Charades_v1_test.csv`` -> ``test``).

Class ids: ``Charades_v1_classes.txt`` beside the CSV (``c000 Holding some clothes``), in its
order; without it the class codes' numbers (``c092`` is id 92). A class not in that file, an
action that is not ``class start end``, or an end <= start is a failed row; an id listed twice
is an error.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from ..._core._errors import InputError
from .._sources import Inputs
from ._registry import Probe, detect_kind, files_of_kind, register_input_format
from ._rows import (
    RowError,
    Rows,
    csv_rows,
    find_by_name,
    pick,
    segment,
    split_from_name,
    text_lines,
)

_CODE = re.compile(r"c(\d+)")


def _is_charades(probe: Probe, path: Path) -> bool:
    header = probe.header(path)
    return "id" in header and "actions" in header


@register_input_format("charades", detect=detect_kind(".csv", _is_charades))
def read_charades(data: Path, root: Path | None) -> Inputs:
    """Charades CSVs (id,...,actions 'c092 11.90 21.20;...'): one, or their folder."""
    folder = data if data.is_dir() else data.parent
    csvs = files_of_kind(data, ".csv", _is_charades)
    if not csvs:
        raise InputError(f"{data}: expected a Charades CSV with the columns id and actions")
    parsed = [(p, lineno, row) for p in csvs for lineno, row in csv_rows(p)[1]]
    classes = _class_list(folder)
    base = root or folder
    found = find_by_name(base, {row["id"] for _, _, row in parsed})
    first: dict[str, str] = {}
    codes: set[str] = set()
    rows = Rows(data, base)
    for path, lineno, row in parsed:
        where = f"{path}:{lineno}"
        vid = row["id"]
        if vid in first:
            raise InputError(f"{where}: duplicate id {vid} (first at {first[vid]})")
        first[vid] = where
        expected = os.path.join(base, f"{vid}.mp4")
        try:
            video, kind = pick(found, [vid]) or (expected, None)
            segments = tuple(_actions(row.get("actions", ""), classes))
        except RowError as e:
            rows.fail(expected, where, f"id {vid}: {e}")
            continue
        labels = tuple(dict.fromkeys(seg.labels[0] for seg in segments))
        codes.update(labels)
        rows.add(
            video, where, split=split_from_name(path), labels=labels, segments=segments, kind=kind
        )
    if classes is None and all(_CODE.fullmatch(c) for c in codes):
        classes = _numbered(codes)
    return rows.inputs(classes)


def _actions(text: str, classes: list[str] | None):
    for action in filter(None, (a.strip() for a in text.split(";"))):
        parts = action.split()
        if len(parts) != 3:
            raise RowError(f"action {action!r}: expected 'class start end'")
        code, start, end = parts
        if classes is not None and code not in classes:
            raise RowError(f"action {action!r}: class {code} is not in Charades_v1_classes.txt")
        yield segment(start, end, (code,))


def _class_list(folder: Path) -> list[str] | None:
    path = next((p for p in sorted(folder.glob("*classes.txt"))), None)
    if path is None:
        return None
    codes = []
    for lineno, line in text_lines(path):
        code = line.split()[0]
        if code in codes:
            raise InputError(f"{path}:{lineno}: class {code} appears twice")
        codes.append(code)
    return codes


def _numbered(codes: set[str]) -> list[str]:
    top = max((int(c[1:]) for c in codes), default=-1)  # every code fullmatches _CODE: c<digits>
    width = max((len(c) - 1 for c in codes), default=3)
    return [f"c{i:0{width}d}" for i in range(top + 1)]
