"""Hugging Face inputs: a ``videofolder`` (videos + metadata.csv / metadata.jsonl, split
folders) and a ``datasets`` dataset saved with ``save_to_disk`` (the real library), read,
detected and built into stores whose labels, classes and splits are the dataset's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from _media import write_video
from hyperframes import InputError
from hyperframes.build import BuildOptions, build_store
from hyperframes.inputs._formats import detect_input_format
from hyperframes.inputs._scan import scan_inputs
from hyperframes.store import open_store


def _video(path: Path) -> Path:
    return write_video(path, frames=4, width=32, height=24)


def videofolder(root: Path) -> Path:
    """train/ with metadata.jsonl (one multi-label row), test/ with metadata.csv."""
    for name in ("a.mp4", "b.mp4", "c.mp4"):
        _video(root / "train" / name)
    rows = [
        {"file_name": "a.mp4", "label": "cat", "caption": "a cat"},
        {"file_name": "b.mp4", "label": "dog", "caption": "a dog"},
        {"file_name": "c.mp4", "label": ["cat", "dog"], "caption": "both"},
    ]
    (root / "train" / "metadata.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    _video(root / "test" / "clips" / "d.mp4")
    (root / "test" / "metadata.csv").write_text("file_name,label,caption\nclips/d.mp4,dog,x\n")
    return root


def test_a_videofolder_is_detected_and_read_with_its_splits(tmp_path):
    data = videofolder(tmp_path / "vf")
    assert detect_input_format(data) == "videofolder"
    inputs = scan_inputs(data)
    got = [(Path(s.path).name, s.label, s.labels, s.split) for s in inputs.sources]
    assert got == [
        ("d.mp4", "dog", None, "test"),
        ("a.mp4", "cat", None, "train"),
        ("b.mp4", "dog", None, "train"),
        ("c.mp4", None, ("cat", "dog"), "train"),
    ]
    assert inputs.classes == ["cat", "dog"]
    assert inputs.sources[0].row == f"{data}/test/metadata.csv:2"
    assert [dict(s.fields) for s in inputs.sources] == [
        {"caption": "x"},
        {"caption": "a cat"},
        {"caption": "a dog"},
        {"caption": "both"},
    ]


def test_a_videofolder_store_keeps_labels_splits_and_the_other_columns(tmp_path, capsys):
    from hyperframes.cli import main

    data = videofolder(tmp_path / "vf")
    assert (
        main(["build", str(data), "--out", str(tmp_path / "s"), "--size", "none", "--quiet"]) == 0
    )
    capsys.readouterr()
    assert main(["info", str(tmp_path / "s"), "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["splits"] == {"test": 1, "train": 3} and d["classes"] == ["cat", "dog"]
    assert d["fields"] == {
        str(data / "test" / "clips" / "d.mp4"): {"caption": "x"},
        **{
            str(data / "train" / n): {"caption": c}
            for n, c in (("a.mp4", "a cat"), ("b.mp4", "a dog"), ("c.mp4", "both"))
        },
    }


def test_videofolder_without_a_label_column_takes_the_folder_name(tmp_path):
    _video(tmp_path / "vf" / "walk" / "w.mp4")
    _video(tmp_path / "vf" / "run" / "r.mp4")
    (tmp_path / "vf" / "metadata.csv").write_text("file_name,text\nwalk/w.mp4,x\nrun/r.mp4,y\n")
    inputs = scan_inputs(tmp_path / "vf")
    assert [(Path(s.path).name, s.label) for s in inputs.sources] == [
        ("w.mp4", "walk"),
        ("r.mp4", "run"),
    ]
    assert inputs.classes == ["run", "walk"]


def test_videofolder_csv_json_list_labels_read_as_the_jsonl_rows(tmp_path):
    """A metadata.csv label cell holding a JSON list (written by the csv module, so quoted
    as "[""people"", ""indoor""]") is the multi-label row the same line of metadata.jsonl
    gives, not a class named by the JSON text."""
    import csv

    rows = [
        {"file_name": "a.mp4", "label": ["people", "indoor"]},
        {"file_name": "b.mp4", "label": "people"},
        {"file_name": "c.mp4", "label": ["outdoor"]},
    ]
    for kind in ("csv", "jsonl"):
        for r in rows:
            _video(tmp_path / kind / r["file_name"])
    with open(tmp_path / "csv" / "metadata.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["file_name", "label"])
        for r in rows:
            label = r["label"]
            w.writerow([r["file_name"], json.dumps(label) if isinstance(label, list) else label])
    assert '"[""people"", ""indoor""]"' in (tmp_path / "csv" / "metadata.csv").read_text()
    (tmp_path / "jsonl" / "metadata.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    got = {}
    for kind in ("csv", "jsonl"):
        inputs = scan_inputs(tmp_path / kind)
        got[kind] = (
            [(Path(s.path).name, s.label, s.labels) for s in inputs.sources],
            inputs.classes,
        )
    assert got["csv"] == got["jsonl"]
    assert got["csv"] == (
        [
            ("a.mp4", None, ("people", "indoor")),
            ("b.mp4", "people", None),
            ("c.mp4", None, ("outdoor",)),
        ],
        ["indoor", "outdoor", "people"],
    )


def test_videofolder_csv_label_that_is_a_broken_json_list_fails_its_row(tmp_path):
    _video(tmp_path / "vf" / "a.mp4")
    _video(tmp_path / "vf" / "b.mp4")
    (tmp_path / "vf" / "metadata.csv").write_text(
        'file_name,label\na.mp4,"[""people"", indoor]"\nb.mp4,people\n'
    )
    inputs = scan_inputs(tmp_path / "vf")
    assert [Path(s.path).name for s in inputs.sources] == ["b.mp4"]
    (failed,) = inputs.failed_rows
    assert "is not a JSON list" in failed["error"] and "metadata.csv:2" in failed["error"]


def test_videofolder_metadata_without_file_name_is_refused_naming_it(tmp_path):
    _video(tmp_path / "vf" / "a.mp4")
    (tmp_path / "vf" / "metadata.csv").write_text("path,label\na.mp4,cat\n")
    with pytest.raises(InputError, match=r"metadata\.csv:1: .* 'file_name' column"):
        scan_inputs(tmp_path / "vf")


def _saved_dataset(tmp: Path) -> Path:
    """A DatasetDict (train, validation) of video paths with a ClassLabel whose order is not
    sorted, saved with save_to_disk; paths relative to the saved folder's parent."""
    datasets = pytest.importorskip("datasets", reason="the hf extra (datasets) is not installed")
    names = ["walk", "run", "jump"]
    feats = datasets.Features(
        {
            "video": datasets.Value("string"),
            "label": datasets.ClassLabel(names=names),
            "n": datasets.Value("int32"),
        }
    )
    splits = {"train": [("v0.mp4", 2), ("v1.mp4", 0)], "validation": [("v2.mp4", 1)]}
    parts = {}
    for split, rows in splits.items():
        for name, _ in rows:
            _video(tmp / "videos" / name)
        parts[split] = datasets.Dataset.from_dict(
            {
                "video": [f"videos/{n}" for n, _ in rows],
                "label": [k for _, k in rows],
                "n": [int(n[1]) for n, _ in rows],
            },
            features=feats,
        )
    out = tmp / "saved"
    datasets.DatasetDict(parts).save_to_disk(str(out))
    return out


def test_a_saved_datasets_dataset_builds_with_its_class_labels_and_splits(tmp_path):
    saved = _saved_dataset(tmp_path)
    assert detect_input_format(saved) == "hf_disk"
    with pytest.raises(InputError, match=r"none of the 3 listed files exists under .*saved"):
        scan_inputs(saved)  # paths are relative to the videos' parent: root says so
    inputs = scan_inputs(saved, root=tmp_path)
    assert inputs.classes == ["walk", "run", "jump"]  # the ClassLabel's order, not sorted
    got = [(Path(s.path).name, s.label, s.split) for s in inputs.sources]
    assert got == [
        ("v0.mp4", "jump", "train"),
        ("v1.mp4", "walk", "train"),
        ("v2.mp4", "run", "validation"),
    ]
    report = build_store(
        saved, tmp_path / "store", BuildOptions(size="none"), progress=False, root=tmp_path
    )
    assert report.exit_code == 0 and not report.failed
    store = open_store(tmp_path / "store")
    assert store.classes == ["walk", "run", "jump"]
    by_name = {Path(v.path).name: (v.label, v.split) for v in store.videos}
    fields = store.manifest["fields"]
    assert {Path(p).name: f for p, f in fields.items()} == {
        f"v{i}.mp4": {"n": str(i)} for i in range(3)
    }
    assert by_name == {
        "v0.mp4": ("jump", "train"),
        "v1.mp4": ("walk", "train"),
        "v2.mp4": ("run", "validation"),
    }


def test_a_saved_video_feature_with_embedded_bytes_is_a_failed_row(tmp_path):
    datasets = pytest.importorskip("datasets", reason="the hf extra (datasets) is not installed")
    video = _video(tmp_path / "v.mp4")
    ds = datasets.Dataset.from_dict({"clip": [str(video)]}).cast_column("clip", datasets.Video())
    ds.save_to_disk(str(tmp_path / "saved"))
    with pytest.raises(InputError, match=r"holds the video's bytes, not a path"):
        scan_inputs(tmp_path / "saved")


def test_without_the_datasets_package_a_saved_dataset_says_which_extra(tmp_path, monkeypatch):
    import sys

    saved = _saved_dataset(tmp_path)
    monkeypatch.setitem(sys.modules, "datasets", None)  # as if it were not installed
    assert detect_input_format(saved) == "hf_disk"  # detection reads file names only
    with pytest.raises(
        InputError, match=r"saved\b.*'datasets' package: pip install 'hyperframes-video\[hf\]'"
    ):
        scan_inputs(saved, root=tmp_path)
