"""``activitynet``: ActivityNet's JSON (``activity_net.v1-3.min.json``): ``{"database": {"<id>":
{"subset": "training", "annotations": [{"segment": [s, e], "label": "Ballet"}, ...]}}}``.

Each video is one source whose ``segments`` are its annotations; ``labels`` lists its classes
and ``label`` is set when it has exactly one. The split is ``subset`` (``training``,
``validation``, ``testing``: test videos carry no annotations). Videos are ``v_<id>.<ext>`` or
``<id>.<ext>`` (or a frame folder of either name) anywhere under ``--root`` (default: the JSON's
folder).

Class ids: the taxonomy's leaf classes sorted (the annotations' labels sorted when the file has
no taxonomy). A label outside the taxonomy, a segment that is not ``[start, end]`` with end >
start, or an unparsable time is a failed row; an id listed twice is an error.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from ..._core._errors import InputError
from .._sources import Inputs
from ._registry import Probe, detect_kind, files_of_kind, register_input_format
from ._rows import RowError, Rows, find_by_name, json_file, pick, read_text, segment

_OBJECT = re.compile(r"\s*\{")


def _is_activitynet(probe: Probe, path: Path) -> bool:
    """An object naming "database" (or "taxonomy": a long one can push "database" past the
    bytes read)."""
    head = probe.head(path)
    return bool(_OBJECT.match(head)) and ('"database"' in head or '"taxonomy"' in head)


@register_input_format("activitynet", detect=detect_kind(".json", _is_activitynet))
def read_activitynet(data: Path, root: Path | None) -> Inputs:
    """ActivityNet JSON ({"database": {id: {"subset", "annotations"}}}) or its folder."""
    files = files_of_kind(data, ".json", _is_activitynet)
    if len(files) != 1:
        raise InputError(
            f'{data}: expected one ActivityNet JSON (with a "database"); found {len(files)}'
        )
    path = files[0]
    doc = json_file(path)
    database = doc.get("database") if isinstance(doc, dict) else None
    if not isinstance(doc, dict) or not isinstance(database, dict):
        raise InputError(f'{path}: expected {{"database": {{"<id>": {{...}}}}}}')
    classes = _leaves(doc.get("taxonomy"), path)
    base = root or path.parent
    found = find_by_name(base, {n for vid in database for n in (f"v_{vid}", vid)})
    lines = _key_lines(read_text(path), list(database))
    rows = Rows(data, base)
    for vid, entry in database.items():
        where = f"{path}:{lines.get(vid, 1)}"
        expected = os.path.join(base, f"v_{vid}.mp4")
        try:
            video, kind = pick(found, [f"v_{vid}", vid]) or (expected, None)
            if not isinstance(entry, dict):
                raise RowError("expected an object with 'subset' and 'annotations'")
            segments = tuple(_segments(entry.get("annotations") or [], classes))
        except RowError as e:
            rows.fail(expected, where, f"video {vid}: {e}")
            continue
        labels = tuple(dict.fromkeys(seg.labels[0] for seg in segments))
        rows.add(
            video,
            where,
            label=labels[0] if len(labels) == 1 else None,
            split=entry.get("subset"),
            labels=labels,
            segments=segments,
            kind=kind,
        )
    return rows.inputs(classes)


def _segments(annotations: object, classes: list[str] | None):
    if not isinstance(annotations, list):
        raise RowError("'annotations' is not a list")
    for a in annotations:
        seg, label = (a.get("segment"), a.get("label")) if isinstance(a, dict) else (None, None)
        if not isinstance(seg, list) or len(seg) != 2 or not isinstance(label, str):
            raise RowError(f"annotation {a!r}: expected {{'segment': [start, end], 'label': ...}}")
        if classes is not None and label not in classes:
            raise RowError(f"label {label!r} is not a class of the taxonomy")
        yield segment(seg[0], seg[1], (label,))


def _leaves(taxonomy: object, path: Path) -> list[str] | None:
    if taxonomy is None:
        return None
    if not isinstance(taxonomy, list) or not all(isinstance(n, dict) for n in taxonomy):
        raise InputError(f"{path}: 'taxonomy' is not a list of nodes")
    parents = {n.get("parentName") for n in taxonomy}
    return sorted({n["nodeName"] for n in taxonomy if n.get("nodeName") not in parents})


def _key_lines(text: str, keys: list[str]) -> dict[str, int]:
    """The line each video id's entry starts on (ids appear in file order)."""
    out, pos, line = {}, 0, 1
    for key in keys:
        at = text.find(f'"{key}"', pos)
        if at < 0:
            continue
        line += text.count("\n", pos, at)
        out[key], pos = line, at
    return out
