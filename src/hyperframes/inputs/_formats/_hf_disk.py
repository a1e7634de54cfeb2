"""``hf_disk``: a Hugging Face ``datasets`` dataset saved with ``save_to_disk`` (a folder
with ``dataset_info.json`` + ``state.json``, or a ``DatasetDict``'s ``dataset_dict.json`` with
one folder per split), whose video column holds paths: a ``Video`` feature (read without
decoding) or a string column whose values are video file names (the first such column; one
named ``video`` is preferred). Relative paths are relative to ``--root`` (default: the saved
dataset's folder). Needs the ``hf`` extra (``pip install 'hyperframes-video[hf]'``).

Splits: a ``DatasetDict``'s split names. Labels: the first ``ClassLabel`` column (``label``
preferred): class ids and names are its ``names``, in its order; without one the videos are
unlabelled. The other plain (``Value``) columns are kept as each video's fields (the
manifest's ``fields``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from ..._core._errors import InputError, install_command
from ..._core._json import TOO_DEEP, loads_json
from .._sources import VIDEO_EXTENSIONS, Inputs
from ._registry import SPECIFIC, Probe, register_input_format
from ._rows import DEEP_HINT, Rows

_SINGLE = {"dataset_info.json", "state.json"}


def _detect(probe: Probe) -> int:
    names = set(probe.names)
    return SPECIFIC if probe.is_dir and ("dataset_dict.json" in names or names >= _SINGLE) else 0


def _load(data: Path):
    try:
        # optional: only this input format needs Hugging Face datasets
        import datasets  # type: ignore[import-untyped]
    except ImportError:
        raise InputError(
            f"{data}: a saved Hugging Face dataset is read with the 'datasets' package: "
            + install_command("hf")
        ) from None
    try:
        loaded = datasets.load_from_disk(os.fspath(data))
    except (OSError, ValueError) as e:
        raise InputError(f"{data}: not a readable save_to_disk dataset ({e})") from None
    except RecursionError:  # a JSON file of the folder nests too deep: name it
        _name_the_deep_file(data)
        raise InputError(f"{data}: {TOO_DEEP}; {DEEP_HINT}") from None
    if isinstance(loaded, datasets.DatasetDict):
        return datasets, dict(loaded)
    return datasets, {None: loaded}


def _name_the_deep_file(data: Path) -> None:
    """Raise the InputError naming the JSON file of a saved dataset (its own, or a split
    folder's) that nests too deep."""
    for path in sorted([*data.glob("*.json"), *data.glob("*/*.json")]):
        try:
            loads_json(path.read_bytes(), path, InputError, hint=DEEP_HINT)
        except (OSError, json.JSONDecodeError, UnicodeDecodeError):
            continue  # (not the deep one: the InputError that names it is a ValueError)


def _columns(datasets, data: Path, ds) -> tuple[str, str | None]:
    """``(video column, ClassLabel column or None)`` of one split."""
    feats = ds.features
    video = [k for k, f in feats.items() if isinstance(f, datasets.Video)]
    if not video:
        first = ds[:1]
        video = [
            k
            for k, f in feats.items()
            if isinstance(f, datasets.Value)
            and f.dtype in ("string", "large_string")
            and first[k]
            and os.path.splitext(str(first[k][0]))[1].lower() in VIDEO_EXTENSIONS
        ]
    if not video:
        raise InputError(
            f"{data}: no video column (a Video feature, or strings naming video files); "
            f"columns: {', '.join(feats)}"
        )
    labels = [k for k, f in feats.items() if isinstance(f, datasets.ClassLabel)]
    pick = "video" if "video" in video else video[0]
    return pick, ("label" if "label" in labels else (labels[0] if labels else None))


def _paths(datasets, ds, column: str) -> list[tuple[str | None, bool]]:
    """``(path, embedded)`` per row: ``embedded`` when the row holds the video's bytes (what
    ``save_to_disk`` makes of a ``Video`` feature), which a build does not read."""
    if isinstance(ds.features[column], datasets.Video):
        ds = ds.cast_column(column, datasets.Video(decode=False))
        return [
            (None, False) if v is None else (v.get("path"), bool(v.get("bytes")))
            for v in ds[column]
        ]
    return [(p, False) for p in ds[column]]


@register_input_format("hf_disk", detect=_detect)
def read_hf_disk(data: Path, root: Path | None) -> Inputs:
    """a Hugging Face datasets folder from save_to_disk (video paths, ClassLabel labels)."""
    datasets, splits = _load(data)
    rows = Rows(data, root or data)
    classes: list[str] | None = None
    for split, ds in splits.items():
        column, label_col = _columns(datasets, data, ds)
        names = ds.features[label_col].names if label_col else None
        if names is not None and classes is not None and names != classes:
            raise InputError(f"{data}: split {split!r} has other class names than the others")
        classes = names if names is not None else classes
        ids = ds[label_col] if label_col else [None] * len(ds)
        extra = [k for k, f in ds.features.items() if k not in (column, label_col)]
        extra = [k for k in extra if isinstance(ds.features[k], datasets.Value)]
        values = {k: ds[k] for k in extra}
        where_split = f"{data}/{split}" if split else str(data)
        for i, ((path, embedded), lid) in enumerate(zip(_paths(datasets, ds, column), ids)):
            where = f"{where_split}:{i + 1}"  # row i + 1 of the split
            if not path:
                rows.skip(where, where, f"no path in column {column!r}")
                continue
            if embedded:
                rows.fail(
                    rows.path(path),
                    where,
                    f"column {column!r} holds the video's bytes, not a path to it; keep the "
                    "paths in a string column (or save the videos as files)",
                )
                continue
            label = None if lid is None or lid < 0 or names is None else names[lid]
            fields = tuple((k, str(values[k][i])) for k in extra if values[k][i] is not None)
            rows.add(rows.path(path), where, label=label, split=split, listed=path, fields=fields)
    return rows.inputs(classes)
