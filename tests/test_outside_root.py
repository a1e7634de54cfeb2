"""An annotation's paths stay inside --root: a '../' or absolute path, or a link leading out,
is a failed row naming its row (nothing of it is read) unless --allow-outside-root is given."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from _media import write_video
from hyperframes._core._errors import InputError
from hyperframes.cli import main
from hyperframes.inputs import scan_inputs
from hyperframes.store import open_store


def _tree(tmp: Path) -> tuple[Path, Path, Path]:
    """``(root, inside video, outside video)``: ``root/in.mp4`` and ``tmp/secret/out.mp4``."""
    root, secret = tmp / "root", tmp / "secret"
    root.mkdir()
    secret.mkdir()
    inside = write_video(root / "in.mp4", frames=4)
    outside = write_video(secret / "out.mp4", frames=4)
    return root, inside, outside


def _refused(inputs) -> list[str]:
    return [f["path"] for f in inputs.failed_rows if "is outside root" in f["error"]]


LISTS = {
    # name: (annotation file under root, its text given the outside path as listed)
    "csv": ("ann.csv", lambda p: f"path,label\nin.mp4,a\n{p},b\n"),
    "mmaction": ("list.txt", lambda p: f"in.mp4 0\n{p} 1\n"),
    "videofolder-csv": ("metadata.csv", lambda p: f"file_name,label\nin.mp4,a\n{p},b\n"),
    "videofolder-jsonl": (
        "metadata.jsonl",
        lambda p: (
            json.dumps({"file_name": "in.mp4", "label": "a"})
            + "\n"
            + json.dumps({"file_name": p, "label": "b"})
            + "\n"
        ),
    ),
}


@pytest.mark.parametrize("how", ["dotdot", "absolute", "link"])
@pytest.mark.parametrize("fmt", list(LISTS))
def test_listed_paths_outside_root_are_failed_rows(fmt, how, tmp_path):
    root, inside, outside = _tree(tmp_path)
    listed = {"dotdot": "../secret/out.mp4", "absolute": str(outside), "link": "link.mp4"}[how]
    if how == "link":  # a name inside root whose target is not
        os.symlink(outside, root / "link.mp4")
    name, text = LISTS[fmt]
    (root / name).write_text(text(listed))
    inputs = scan_inputs(root / name)
    assert [s.path for s in inputs.sources] == [str(inside)]
    refused = _refused(inputs)
    assert len(refused) == 1 and refused[0].endswith(listed.lstrip("."))
    error = inputs.failed_rows[0]["error"]
    assert f"outside root {root} (at {root / name}:" in error and "--allow-outside-root" in error
    if how == "link":
        assert f"(a link to {outside})" in error
    allowed = scan_inputs(root / name, allow_outside_root=True)
    assert len(allowed.sources) == 2 and not allowed.failed_rows


def test_a_given_root_is_the_bound(tmp_path):
    root, inside, outside = _tree(tmp_path)
    lists = tmp_path / "lists"
    lists.mkdir()
    (lists / "ann.csv").write_text(f"path,label\nin.mp4,a\n{outside},b\n")
    inputs = scan_inputs(lists / "ann.csv", root=root)
    assert [s.path for s in inputs.sources] == [str(inside)] and _refused(inputs) == [str(outside)]
    assert len(scan_inputs(lists / "ann.csv", root=tmp_path).sources) == 2  # a root holding both


def test_a_saved_datasets_path_column_outside_root_is_refused(tmp_path):
    datasets = pytest.importorskip("datasets", reason="the hf extra (datasets) is not installed")
    root, inside, outside = _tree(tmp_path)
    feats = datasets.Features({"video": datasets.Value("string")})
    rows = {"video": [str(inside), "../secret/out.mp4"]}
    datasets.Dataset.from_dict(rows, features=feats).save_to_disk(str(root / "saved"))
    inputs = scan_inputs(root / "saved", root=root)
    assert [s.path for s in inputs.sources] == [str(inside)]
    assert _refused(inputs) == [str(outside)]
    with pytest.raises(InputError, match="every listed file is outside root") as e:
        scan_inputs(root / "saved")  # default root: the saved folder, which holds neither
    assert str(inside) in str(e.value) and "secret/out.mp4" in str(e.value)


def test_every_refused_row_is_listed_and_nothing_outside_is_stored(tmp_path):
    root, inside, outside = _tree(tmp_path)
    other = write_video(tmp_path / "secret" / "two.mp4", frames=4)
    (root / "ann.csv").write_text(f"path,label\nin.mp4,a\n../secret/out.mp4,b\n{other},b\n")
    out = tmp_path / "store"
    build = ["build", str(root / "ann.csv"), "--size", "none", "--quiet"]
    assert main([*build, "--out", str(out)]) == 2
    failed = open_store(out).manifest["failed"]
    assert sorted(f["path"] for f in failed) == sorted([str(outside), str(other)])
    assert open_store(out).videos.paths == [str(inside)]
    assert main([*build, "--out", str(tmp_path / "all"), "--allow-outside-root"]) == 0
    assert len(open_store(tmp_path / "all")) == 3

    (root / "only.csv").write_text(f"path,label\n{outside},b\n{other},b\n")
    with pytest.raises(InputError) as e:
        scan_inputs(root / "only.csv")
    assert str(e.value).count(f"is outside root {root} (at {root / 'only.csv'}:") == 2


def test_an_hdf5_build_reads_from_the_root_given(tmp_path):
    """``build --format hdf5`` reads the inputs a folder build reads: ``--root`` resolves the
    list's relative paths (it was dropped before the staging build)."""
    root, _inside, _outside = _tree(tmp_path)
    lists = tmp_path / "lists"
    lists.mkdir()
    (lists / "ann.csv").write_text("path,label\nin.mp4,a\n")
    out = tmp_path / "s.h5"
    args = ["build", str(lists / "ann.csv"), "--root", str(root), "--out", str(out)]
    assert main([*args, "--format", "hdf5", "--size", "16", "--quiet"]) == 0
    with open_store(out) as s:
        assert [Path(p).name for p in s.videos.paths] == ["in.mp4"]
