"""``ssv2``: Something-Something v2's JSON lists, ``[{"id": "78687", "template": "Holding
[something] next to [something]", "label": ...}, ...]``, with the labels file
``something-something-v2-labels.json`` (``{"Holding something next to something": "41"}``).

DATA is one list (the labels file beside it is used) or the labels file / their folder (every
list beside it is read). The class is the ``template`` without brackets (else ``label``); the
split is the list's name (``...-train.json`` -> ``train``, ``-validation``, ``-test``); test
lists carry no labels. Videos are ``<id>.<ext>`` (or a frame folder ``<id>/``) anywhere under
``--root`` (default: the lists' folder).

Class ids: the labels file's ids. A class missing from it is a failed row; an id listed twice is
an error.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from ..._core._errors import InputError
from .._sources import Inputs
from ._registry import SPECIFIC, Probe, register_input_format
from ._rows import RowError, Rows, find_by_name, json_file, json_list, pick, split_from_name

_LIST_HEAD = re.compile(r'\s*\[\s*(\]|\{[^{}]*"id"\s*:)')
_LABELS_HEAD = re.compile(r'\s*\{\s*"[^"]*"\s*:\s*"\d+"')


def _is_list(probe: Probe, path: Path) -> bool:
    return bool(_LIST_HEAD.match(probe.head(path)))


def _is_labels(probe: Probe, path: Path) -> bool:
    return bool(_LABELS_HEAD.match(probe.head(path)))


def _detect(probe: Probe) -> int:
    files = probe.files(".json")
    if probe.is_dir:
        ok = any(_is_labels(probe, p) for p in files) and any(_is_list(probe, p) for p in files)
    else:
        ok = bool(files) and (_is_list(probe, files[0]) or _is_labels(probe, files[0]))
    return SPECIFIC if ok else 0


@register_input_format("ssv2", detect=_detect)
def read_ssv2(data: Path, root: Path | None) -> Inputs:
    """Something-Something v2 JSON lists with their labels JSON: one list, or their folder."""
    folder = data if data.is_dir() else data.parent
    probe = Probe(folder)
    jsons = probe.files(".json")
    labels_files = [p for p in jsons if _is_labels(probe, p)]
    if len(labels_files) != 1:
        raise InputError(
            f'{data}: SSv2 lists need one labels file ({{"class": "id"}}, e.g. '
            f"something-something-v2-labels.json) in {folder}; found "
            f"{len(labels_files)}: {', '.join(p.name for p in labels_files) or 'none'}"
        )
    classes = _classes(labels_files[0])
    if data.is_file() and data != labels_files[0]:
        lists = [data]
    else:
        lists = [p for p in jsons if _is_list(probe, p)]
    items = [(lst, lineno, item) for lst in lists for lineno, item in json_list(lst)]
    base = root or folder
    found = find_by_name(
        base, {str(item.get("id")) for _, _, item in items if isinstance(item, dict)}
    )
    known = set(classes)
    first: dict[str, str] = {}
    rows = Rows(data, base)
    for lst, lineno, item in items:
        where = f"{lst}:{lineno}"
        if not isinstance(item, dict) or "id" not in item:
            raise InputError(f"{where}: expected an object with an 'id', got {str(item)[:80]!r}")
        vid = str(item["id"])
        if vid in first:
            raise InputError(f"{where}: duplicate id {vid} (first at {first[vid]})")
        first[vid] = where
        name = item.get("template", item.get("label"))
        label = None if name is None else str(name).replace("[", "").replace("]", "")
        try:
            path, kind = pick(found, [vid]) or (os.path.join(base, f"{vid}.webm"), None)
        except RowError as e:
            rows.fail(os.path.join(base, f"{vid}.webm"), where, str(e))
            continue
        if label is not None and label not in known:
            rows.fail(path, where, f"id {vid}: class {label!r} is not in {labels_files[0].name}")
            continue
        rows.add(path, where, label=label, split=split_from_name(lst), kind=kind)
    return rows.inputs(classes)


def _classes(path: Path) -> list[str]:
    table = json_file(path)
    if not isinstance(table, dict):
        raise InputError(f'{path}: expected {{"class name": "id", ...}}')
    by_id: dict[int, str] = {}
    for name, value in table.items():
        if not str(value).isdigit():
            raise InputError(f"{path}: class {name!r} has id {value!r}, expected a number")
        if int(value) in by_id:
            raise InputError(f"{path}: id {value} names both {by_id[int(value)]!r} and {name!r}")
        by_id[int(value)] = name
    if sorted(by_id) != list(range(len(by_id))):
        raise InputError(f"{path}: class ids must run 0..{len(by_id) - 1}")
    return [by_id[i] for i in range(len(by_id))]
