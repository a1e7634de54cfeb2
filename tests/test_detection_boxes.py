"""Boxes given at build (``build DATA --boxes boxes.csv``): stored as index/boxes.npy aligned to
the stored frames, checksummed, verified, kept by a resumed build; bad rows refused before
anything is decoded, naming the file, the row and the rule."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from hyperframes import open_store
from hyperframes._core._errors import InputError, StoreError
from hyperframes.build import BuildOptions, build_store
from hyperframes.cli import main
from hyperframes.demo._detection import make_detection_dataset
from hyperframes.store import verify_store


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("det_data")
    make_detection_dataset(root, videos=2, frames=10, size=48, fps=8, seed=1)
    return root


@pytest.fixture(scope="module")
def store(data, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("det_store") / "s"
    build_store(data, out, BuildOptions(boxes=str(data / "boxes.csv")), progress=False)
    return out


def _csv_rows(path: Path) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def test_boxes_are_stored_on_the_frame_of_their_time(data, store):
    s = open_store(store)
    names = json.loads((store / "manifest.json").read_text())["box_classes"]
    assert names == ["disc", "square"]
    rows = _csv_rows(data / "boxes.csv")
    for v, rec in enumerate(s.videos):
        name = Path(rec.path).name
        for k, pts in enumerate(rec.pts_seconds):
            want = [r for r in rows if r["path"] == name and abs(float(r["time"]) - pts) < 1e-3]
            xyxy, ids = s.index.annotations.boxes_of(v, k)
            assert len(want) == len(ids) > 0
            order = np.lexsort(xyxy.T[::-1])
            exp = sorted(
                ([float(r[c]) for c in ("x1", "y1", "x2", "y2")], r["label"]) for r in want
            )
            np.testing.assert_allclose(xyxy[order], [e[0] for e in exp], atol=1e-6)
            assert [names[i] for i in ids[order]] == [e[1] for e in exp]
    s.close()


def test_boxes_are_checksummed_and_verified(store, tmp_path):
    assert verify_store(store) == []
    bad = tmp_path / "s"
    shutil.copytree(store, bad)
    arr = np.load(bad / "index" / "boxes.npy")
    arr["x2"][0] = 0.5 * arr["x2"][0]
    np.save(bad / "index" / "boxes.npy", arr)
    with pytest.raises(StoreError, match=r"boxes\.npy"):
        open_store(bad)


def test_a_resumed_build_keeps_its_videos_and_boxes(data, store, tmp_path):
    again = tmp_path / "s"
    shutil.copytree(store, again)
    report = build_store(data, again, BuildOptions(boxes=str(data / "boxes.csv")), progress=False)
    assert report.reused == 2
    a = np.load(store / "index" / "boxes.npy")
    b = np.load(again / "index" / "boxes.npy")
    assert a.tobytes() == b.tobytes()


def test_ava_layout_is_read(data, tmp_path):
    ava = tmp_path / "ava.csv"
    with open(ava, "w", newline="") as f:
        w = csv.writer(f)
        for r in _csv_rows(data / "boxes.csv")[:5]:
            stem = Path(r["path"]).stem  # AVA names a video by its id, the file's stem
            w.writerow([stem, r["time"], r["x1"], r["y1"], r["x2"], r["y2"], "12", "0"])
    out = tmp_path / "s"
    build_store(data, out, BuildOptions(boxes=str(ava)), progress=False)
    s = open_store(out)
    assert json.loads((out / "manifest.json").read_text())["box_classes"] == ["12"]
    assert len(s.index.annotations.boxes) == 5
    s.close()


@pytest.mark.parametrize(
    ("cells", "message"),
    [
        ({"x2": "1.5"}, r"row 3: x2 1\.5 is outside \[0, 1\]"),
        ({"x1": "0.6", "x2": "0.4"}, r"row 3: box .* is empty or reversed; x1 < x2"),
        ({"path": "nope.mp4"}, r"row 3: path 'nope\.mp4' is not one of the build's 2 videos"),
        ({"time": "-1"}, r"row 3: time -1 is negative"),
    ],
)
def test_a_bad_row_is_refused_before_decoding(data, tmp_path, cells, message):
    rows = _csv_rows(data / "boxes.csv")
    rows[1].update(cells)  # line 3 of the file (the header is line 1)
    bad = tmp_path / "bad.csv"
    with open(bad, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    out = tmp_path / "s"
    with pytest.raises(InputError, match=rf"{bad}: {message}"):
        build_store(data, out, BuildOptions(boxes=str(bad)), progress=False)
    assert not (out / "manifest.json").exists()
    assert not list((out / "shards").glob("*")) if out.exists() else True


def test_build_takes_boxes_on_the_command_line(data, tmp_path):
    out = tmp_path / "s"
    boxes = str(data / "boxes.csv")
    assert main(["build", str(data), "--out", str(out), "--boxes", boxes, "--quiet"]) == 0
    assert (out / "index" / "boxes.npy").exists()


def test_an_hdf5_store_keeps_the_boxes(data, store, tmp_path):
    h5 = tmp_path / "s.h5"
    build_store(
        data, h5, BuildOptions(format="hdf5", boxes=str(data / "boxes.csv")), progress=False
    )
    with open_store(h5) as s:
        assert s.manifest["box_classes"] == ["disc", "square"]
        want = np.load(store / "index" / "boxes.npy")
        assert np.asarray(s.index.annotations.boxes).tobytes() == want.tobytes()
