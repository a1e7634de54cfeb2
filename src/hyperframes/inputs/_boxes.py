"""Boxes given at build (``build DATA --boxes boxes.csv``): read and checked before anything is
decoded.

Two layouts are read:

* hyperframes' own, with a header: ``path,time,x1,y1,x2,y2,label`` (other columns after
  these are ignored);
* AVA's, without a header: ``video_id,middle_frame_timestamp,x1,y1,x2,y2,action_id[,
  person_id]``.

Coordinates are normalised to [0, 1] of the frame's width and height (AVA's convention), with
``x1 < x2`` and ``y1 < y2``; ``time`` is in seconds on the video's clock (the stored frames'
pts). A row's ``path`` names one of the build's videos: as listed, relative to DATA (or
``--root``), absolute, or by its file name or stem when that is unique (AVA's ``video_id``).
The first bad row is an :class:`InputError` naming the file, the row and the rule.
"""

from __future__ import annotations

import csv
import dataclasses
import math
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from .._core._errors import InputError
from ._sources import Source

__all__ = ["BoxRows", "match_boxes", "read_boxes"]

HEADER = ("path", "time", "x1", "y1", "x2", "y2", "label")


@dataclasses.dataclass(frozen=True, repr=False)
class BoxRows:
    """The boxes of a file: per row its ``path`` (as written), ``time`` (seconds), corners
    ``xyxy`` (N, 4) float32 in [0, 1], ``label`` and ``line`` (the file's line number);
    ``layout``: "hyperframes" or "ava"."""

    file: str
    layout: str
    paths: list[str]
    time: np.ndarray
    xyxy: np.ndarray
    labels: list[str]
    lines: np.ndarray

    def __len__(self) -> int:
        return len(self.paths)

    def __repr__(self) -> str:
        return f"BoxRows({self.file!r}, layout={self.layout}, rows={len(self)})"

    @property
    def classes(self) -> list[str]:
        """The box classes, sorted (numbers as numbers: AVA's action ids)."""
        names = set(self.labels)
        if all(n.isdigit() for n in names):
            return sorted(names, key=int)
        return sorted(names)


def _number(text: str, file: str, line: int, column: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise InputError(
            f"{file}: row {line}: {column} {text.strip()!r} is not a finite number; {column} "
            "is a number (coordinates normalised to [0, 1], time in seconds)"
        )
    return value


def read_boxes(path: str | os.PathLike) -> BoxRows:
    """The rows of the boxes file ``path`` (module doc), checked row by row."""
    file = str(path)
    try:
        with open(file, newline="", encoding="utf-8") as f:
            rows = list(csv.reader(f))
    except FileNotFoundError:
        raise InputError(f"{file}: no such boxes file; --boxes takes a CSV file") from None
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"{file}: cannot be read as a CSV of boxes ({e})") from None
    numbered = [(n, r) for n, r in enumerate(rows, 1) if r and any(c.strip() for c in r)]
    if not numbered:
        raise InputError(f"{file}: holds no rows; a boxes file has {','.join(HEADER)} rows")
    first = [c.strip().lower() for c in numbered[0][1]]
    if tuple(first[: len(HEADER)]) == HEADER:
        layout, numbered, width = "hyperframes", numbered[1:], len(HEADER)
    elif first and first[0] in ("path", "video", "video_id"):
        raise InputError(
            f"{file}: row {numbered[0][0]}: header {','.join(first)} is not "
            f"{','.join(HEADER)}; give that header, or AVA's layout without one"
        )
    else:
        layout, width = "ava", 7
    names = (
        HEADER if layout == "hyperframes" else ("video_id", "timestamp", *HEADER[2:6], "action_id")
    )
    paths, labels, lines = [], [], []
    times, corners = [], []
    for line, row in numbered:
        if len(row) < width:
            raise InputError(
                f"{file}: row {line}: {len(row)} columns; a row has {width}: {','.join(names)}"
            )
        t = _number(row[1], file, line, names[1])
        if t < 0:
            raise InputError(f"{file}: row {line}: {names[1]} {t:g} is negative; times are >= 0")
        box = [_number(row[k], file, line, names[k]) for k in range(2, 6)]
        for k, v in enumerate(box):
            if not 0.0 <= v <= 1.0:
                raise InputError(
                    f"{file}: row {line}: {names[k + 2]} {v:g} is outside [0, 1]; coordinates "
                    "are normalised to the frame's width and height"
                )
        x1, y1, x2, y2 = box
        if not (x1 < x2 and y1 < y2):
            raise InputError(
                f"{file}: row {line}: box ({x1:g}, {y1:g}, {x2:g}, {y2:g}) is empty or "
                "reversed; x1 < x2 and y1 < y2 are required"
            )
        label = row[6].strip()
        if not label:
            raise InputError(f"{file}: row {line}: {names[6]} is empty; every box has a class")
        paths.append(row[0].strip())
        labels.append(label)
        lines.append(line)
        times.append(t)
        corners.append(box)
    return BoxRows(
        file,
        layout,
        paths,
        np.asarray(times, np.float64),
        np.asarray(corners, np.float32).reshape(-1, 4),
        labels,
        np.asarray(lines, np.int64),
    )


def match_boxes(
    boxes: BoxRows, sources: Sequence[Source], *, root: str | os.PathLike | None
) -> np.ndarray:
    """Each row's position in ``sources`` (int64): its path as a source's path, relative to
    ``root``, or a unique file name or stem. An unknown path is an InputError naming the row."""
    keys: dict[str, int] = {}
    ambiguous: set[str] = set()
    for i, s in enumerate(sources):
        p = Path(s.path)
        names = {s.path, p.name, p.stem}
        if s.given:
            names.add(s.given)
        if root is not None:
            try:
                rel = p.relative_to(Path(root).absolute())
                names |= {str(rel), str(rel.with_suffix(""))}
            except ValueError:
                pass
        for k in names:
            if k in keys and keys[k] != i:
                ambiguous.add(k)
            keys[k] = i
    out = np.empty(len(boxes), np.int64)
    for r, path in enumerate(boxes.paths):
        key = path if path in keys else str(Path(path))
        if key in ambiguous:
            raise InputError(
                f"{boxes.file}: row {int(boxes.lines[r])}: path {path!r} names several of the "
                "build's videos; give it relative to DATA"
            )
        if key not in keys and os.path.isabs(path):
            key = str(Path(path).resolve())
        if key not in keys:
            raise InputError(
                f"{boxes.file}: row {int(boxes.lines[r])}: path {path!r} is not one of the "
                f"build's {len(sources)} videos; give a video's path relative to DATA, its "
                "absolute path, or its file name or stem"
            )
        out[r] = keys[key]
    return out
