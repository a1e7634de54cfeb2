"""``hmdb51``: HMDB51's split files, ``<class>_test_split<N>.txt`` per class, each line
``<video>.avi 0|1|2`` (0: not used by split N, 1: train, 2: test).

DATA is the folder of split files (split 1 is read) or one split file (its split N is read, for
every class in its folder). Videos are ``<root>/<class>/<video>`` (``--root`` default: the
split files' folder; the videos usually sit in ``hmdb51_org/`` beside it). Rows marked 0 are
skipped (``"not in split N"``).

Class ids: the class names sorted (``brush_hair`` is 0), as torchvision and mmaction2 number
them.
"""

from __future__ import annotations

import re
from pathlib import Path

from ..._core._errors import InputError
from .._sources import Inputs
from ._registry import SPECIFIC, Probe, register_input_format
from ._rows import Rows, text_lines

_SPLIT_FILE = re.compile(r"(?P<cls>.+)_test_split(?P<n>\d+)\.txt", re.IGNORECASE)
_MARKS = {"1": "train", "2": "test"}


def _detect(probe: Probe) -> int:
    names = probe.names if probe.is_dir else [probe.path.name]
    return SPECIFIC if any(_SPLIT_FILE.fullmatch(n) for n in names) else 0


@register_input_format("hmdb51", detect=_detect)
def read_hmdb51(data: Path, root: Path | None) -> Inputs:
    """HMDB51 split files <class>_test_split<N>.txt: their folder (split 1) or one of them."""
    folder = data if data.is_dir() else data.parent
    m = _SPLIT_FILE.fullmatch(data.name)
    files: dict[int, dict[str, Path]] = {}
    for p in sorted(folder.iterdir()):
        f = _SPLIT_FILE.fullmatch(p.name)
        if f:
            files.setdefault(int(f["n"]), {})[f["cls"]] = p
    if not files:
        raise InputError(f"{data}: no <class>_test_split<N>.txt files in {folder}")
    split = int(m["n"]) if m else min(files)
    by_class = files[split]
    rows = Rows(data, root or folder)
    for cls, path in sorted(by_class.items()):
        for lineno, line in text_lines(path):
            where = f"{path}:{lineno}"
            name, _, mark = line.rpartition(" ")
            name = name.strip()
            video = rows.path(f"{cls}/{name}")
            if not name or mark not in ("0", "1", "2"):
                raise InputError(f"{where}: expected '<video> 0|1|2', got {line!r}")
            if mark == "0":
                rows.skip(video, where, f"not in split {split} (marked 0)")
            else:
                rows.add(video, where, label=cls, split=_MARKS[mark], listed=f"{cls}/{name}")
    return rows.inputs(sorted(by_class))
