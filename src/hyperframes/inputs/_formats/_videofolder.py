"""``videofolder``: Hugging Face's folder form of a video dataset: video files with a
``metadata.csv`` or ``metadata.jsonl`` whose ``file_name`` column names each file (relative to
the metadata file's folder), either at the top or in split folders
(``root/<split>/metadata.jsonl``).

DATA is the folder (or one metadata file). The split is the folder holding the metadata file
when that folder is a split folder (``train``, ``val``, ``test``, ...; else none), or a
``split`` column. The label is the ``label`` column (a name or a class id; a JSON list, in
``metadata.jsonl`` or as a ``metadata.csv`` cell such as ``"[""people"", ""indoor""]"``, is a
multi-label row); without one, a file inside a ``<label>/`` folder takes
the folder's name, as Hugging Face's folder builder does. Other columns (captions, ids, ...)
are kept as the video's fields: the manifest's ``fields`` (``info --json``), by path.

Class ids: names sorted; integer labels keep their ids.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from ..._core._errors import InputError
from ..._core._json import loads_json
from .._sources import SPLIT_NAMES, Inputs
from ._registry import SPECIFIC, Probe, register_input_format
from ._rows import DEEP_HINT, RowError, Rows, csv_rows, read_text

METADATA = ("metadata.csv", "metadata.jsonl")
_KNOWN = ("file_name", "label", "split")  # the columns that are not fields


def _text(value) -> str:
    """A field's value as text: strings as they are, other JSON values as JSON."""
    return value if isinstance(value, str) else json.dumps(value)


def _metadata_files(data: Path) -> list[Path]:
    """The metadata files of ``data``: its own, then those of its split folders, by name."""
    if data.is_file():
        return [data] if data.name.lower() in METADATA else []
    found = [data / n for n in METADATA if (data / n).is_file()]
    try:
        subdirs = sorted(p for p in data.iterdir() if p.is_dir() and not p.name.startswith("."))
    except OSError:
        return found
    for d in subdirs:
        if d.name.lower() in SPLIT_NAMES:
            found += [d / n for n in METADATA if (d / n).is_file()]
    return found


def _detect(probe: Probe) -> int:
    if not probe.is_dir:
        return SPECIFIC if probe.path.name.lower() in METADATA else 0
    return SPECIFIC if _metadata_files(probe.path) else 0


def _rows(path: Path) -> list[tuple[int, dict]]:
    """``(line, row)`` of a metadata file; a row without ``file_name`` is an error."""
    if path.suffix.lower() == ".csv":
        header, lines = csv_rows(path)
        if "file_name" not in header:
            raise InputError(
                f"{path}:1: a videofolder's metadata names each video in a 'file_name' "
                f"column; the header is {','.join(header)!r}"
            )
        return list(lines)
    out = []
    for lineno, line in enumerate(read_text(path).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = loads_json(line, f"{path}:{lineno}", InputError, hint=DEEP_HINT)
        except json.JSONDecodeError as e:
            raise InputError(f"{path}:{lineno}: not valid JSON ({e.msg})") from None
        if not isinstance(row, dict) or "file_name" not in row:
            raise InputError(f"{path}:{lineno}: expected an object with a 'file_name' key")
        out.append((lineno, row))
    return out


def _listed_labels(text: str) -> list:
    """The list a CSV cell holds as JSON text (``["people", "indoor"]``)."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as e:
        raise RowError(
            f"label {text!r} starts with '[' but is not a JSON list ({e.msg}); write a "
            'multi-label cell as ["people", "indoor"] (CSV-quoted: "[""people"", ""indoor""]")'
        ) from None
    if not isinstance(value, list) or not all(
        isinstance(v, (str, int)) and not isinstance(v, bool) for v in value
    ):
        raise RowError(f"label {text!r}: a multi-label list holds class names or integer ids")
    return value


def _label(row: dict, file_name: str) -> tuple[str | None, tuple[str, ...] | None]:
    """``(label, labels)`` of a row: the ``label`` column, else the file's folder name. A
    JSON list (a ``metadata.jsonl`` list, or a CSV cell holding one as text) is a
    multi-label row."""
    value = row.get("label")
    if isinstance(value, str) and value.strip().startswith("["):
        value = _listed_labels(value.strip())
    if isinstance(value, list):
        return None, tuple(str(v) for v in value)
    if value is not None and str(value).strip() != "":
        if isinstance(value, float) and not value.is_integer():
            raise RowError(f"label {value!r}: expected a class name or an integer id")
        return str(int(value) if isinstance(value, float) else value).strip(), None
    parts = Path(file_name).parts
    return (parts[-2] if len(parts) > 1 else None), None


@register_input_format("videofolder", detect=_detect)
def read_videofolder(data: Path, root: Path | None) -> Inputs:
    """a Hugging Face videofolder: videos + metadata.csv/.jsonl (file_name, label columns)."""
    files = _metadata_files(data)
    if not files:
        raise InputError(
            f"{data}: no metadata.csv or metadata.jsonl (at the top or in split folders "
            f"{'/'.join(sorted(SPLIT_NAMES))})"
        )
    rows = Rows(files[0], root or files[0].parent)
    for meta in files:
        base = root or meta.parent
        folder_split = meta.parent.name if meta.parent.name.lower() in SPLIT_NAMES else None
        for lineno, row in _rows(meta):
            where = f"{meta}:{lineno}"
            listed = str(row.get("file_name") or "").strip()
            if not listed:
                raise InputError(f"{where}: empty file_name")
            path = os.path.abspath(os.path.join(base, listed))
            try:
                label, labels = _label(row, listed)
            except RowError as e:
                rows.fail(path, where, str(e))
                continue
            split = str(row.get("split") or "").strip() or folder_split
            fields = tuple((k, _text(v)) for k, v in row.items() if k not in _KNOWN)
            rows.add(
                path, where, label=label, labels=labels, split=split, listed=listed, fields=fields
            )
    return rows.inputs()
