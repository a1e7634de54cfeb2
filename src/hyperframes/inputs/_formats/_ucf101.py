"""``ucf101``: UCF101's split lists: ``classInd.txt`` (``1 ApplyEyeMakeup`` per line) with
``trainlistNN.txt`` (``ApplyEyeMakeup/v_..._g08_c01.avi 1``: the label is 1-indexed) and
``testlistNN.txt`` (paths only: the label is the class folder's name).

DATA is the folder holding ``classInd.txt`` (or ``classInd.txt`` itself): split 01 is read,
``trainlist01`` as split ``train`` and ``testlist01`` as ``test``; or one ``trainlistNN.txt`` /
``testlistNN.txt``: that list alone. Paths are relative to ``--root`` (default: the lists'
folder; the videos usually sit in ``UCF-101/`` beside it).

Class ids: classInd's order, shifted to start at 0: ``1 ApplyEyeMakeup`` is id 0, ``101
YoYo`` is id 100; the names are classInd's. A label outside classInd, a train label that
disagrees with its class folder, or a test path whose folder is no class is a failed row.
"""

from __future__ import annotations

import re
from pathlib import Path

from ..._core._errors import InputError
from .._sources import Inputs
from ._registry import SPECIFIC, Probe, register_input_format
from ._rows import Rows, text_lines

CLASS_INDEX = "classind.txt"
_LIST = re.compile(r"(train|test)list(\d+)\.txt", re.IGNORECASE)
_SPLITS = {"train": "train", "test": "test"}


def _detect(probe: Probe) -> int:
    names = [n.lower() for n in probe.names] if probe.is_dir else [probe.path.name.lower()]
    if CLASS_INDEX in names or (not probe.is_dir and _LIST.fullmatch(names[0])):
        return SPECIFIC
    return 0


@register_input_format("ucf101", detect=_detect)
def read_ucf101(data: Path, root: Path | None) -> Inputs:
    """UCF101 lists: the folder with classInd.txt (split 01), or one trainlistNN/testlistNN."""
    folder = data if data.is_dir() else data.parent
    classes = read_class_index(_find(folder, CLASS_INDEX, data))
    m = _LIST.fullmatch(data.name)
    if m:
        lists = [data]
    else:
        lists = [_find(folder, f"{kind}list01.txt", data) for kind in ("train", "test")]
    rows = Rows(data, root or folder)
    for lst in lists:
        kind = _LIST.fullmatch(lst.name)
        assert kind is not None  # data matched _LIST, or _find found a {kind}list01.txt
        _read_list(lst, kind[1].lower(), classes, rows)
    return rows.inputs(classes)


def _find(folder: Path, name: str, data: Path) -> Path:
    for p in sorted(folder.iterdir()):
        if p.name.lower() == name.lower():
            return p
    raise InputError(f"{data}: UCF101 lists need {name} in {folder} (the official split files)")


def read_class_index(path: Path) -> list[str]:
    """Class names in id order from ``N name`` lines numbered 1..K (any order)."""
    by_number: dict[int, str] = {}
    for lineno, line in text_lines(path):
        number, _, name = line.partition(" ")
        name = name.strip()
        if not number.isdigit() or not name:
            raise InputError(f"{path}:{lineno}: expected 'number ClassName', got {line!r}")
        if int(number) in by_number:
            raise InputError(f"{path}:{lineno}: class number {number} appears twice")
        by_number[int(number)] = name
    if sorted(by_number) != list(range(1, len(by_number) + 1)):
        gaps = sorted(set(range(1, max(by_number, default=0) + 1)) - set(by_number))
        raise InputError(f"{path}: class numbers must run 1..{len(by_number)}; missing {gaps[:5]}")
    return [by_number[i] for i in range(1, len(by_number) + 1)]


def _read_list(lst: Path, kind: str, classes: list[str], rows: Rows) -> None:
    by_folder = {c.lower(): c for c in classes}
    for lineno, line in text_lines(lst):
        where = f"{lst}:{lineno}"
        listed, _, number = line.rpartition(" ")
        if not (number.isdigit() and listed.strip()):
            listed, number = line, ""  # a test list: the path alone
        listed = listed.strip()
        path = rows.path(listed)
        folder = listed.replace("\\", "/").split("/")[0]
        from_folder = by_folder.get(folder.lower()) if "/" in listed.replace("\\", "/") else None
        if number:
            n = int(number)
            if not 1 <= n <= len(classes):
                rows.fail(path, where, f"label {n} is not in classInd's 1..{len(classes)}")
                continue
            label = classes[n - 1]
            if from_folder is not None and from_folder != label:
                rows.fail(
                    path,
                    where,
                    f"label {n} is {label!r} in classInd.txt, but the class folder says "
                    f"{from_folder!r}",
                )
                continue
        elif from_folder is None:
            rows.fail(
                path,
                where,
                f"class folder {folder!r} is not in classInd.txt (a test list takes its label "
                "from the folder name)",
            )
            continue
        else:
            label = from_folder
        rows.add(path, where, label=label, split=_SPLITS[kind], listed=listed)
