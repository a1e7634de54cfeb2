"""Small honesty fixes (issue 22 item 8): ``show`` numbers frames one way in its title and
tiles; ``info`` says "unlabelled", prints a 29.97 fps rate as 29.97 and lists a store's splits;
``HyperframeDataset.classes`` names the labels."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest

from _media import write_video
from hyperframes.cli import main
from hyperframes.data import HyperframeDataset
from hyperframes.store import open_store


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    """``labelled``: built from a CSV with labels and splits (one clip at 30000/1001 fps);
    ``flat``: two unlabelled 20 fps clips stored at 10 fps (stored frame k is source 2k)."""
    root = tmp_path_factory.mktemp("small")
    ntsc = write_video(root / "v" / "ntsc.mp4", frames=12, fps=Fraction(30000, 1001))
    a = write_video(root / "v" / "a.mp4", frames=12)
    b = write_video(root / "v" / "b.mp4", frames=12, colour=(30, 200, 30))
    rows = [f"{ntsc},run,train", f"{a},jump,train", f"{b},run,test"]
    (root / "ann.csv").write_text("path,label,split\n" + "\n".join(rows) + "\n")
    labelled = root / "labelled"
    assert main(["build", str(root / "ann.csv"), "--out", str(labelled), "--quiet"]) == 0
    flat_data = root / "flat"
    write_video(flat_data / "c.mp4", frames=20)
    write_video(flat_data / "d.mp4", frames=20, colour=(30, 30, 200))
    flat = root / "flat_store"
    build = ["build", str(flat_data), "--out", str(flat), "--fps", "10", "--quiet"]
    assert main(build) == 0
    return {"labelled": labelled, "flat": flat}


def test_info_lists_the_splits_and_the_real_frame_rate(stores, capsys):
    assert main(["info", str(stores["labelled"])]) == 0
    text = capsys.readouterr().out
    assert "splits         test 1, train 2" in text
    assert "classes        2: jump, run" in text
    line = next(x for x in text.splitlines() if "ntsc.mp4" in x)
    assert "@ 29.97 fps" in line
    assert main(["info", str(stores["labelled"]), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["splits"] == {"test": 1, "train": 2}


def test_info_says_unlabelled_and_no_splits(stores, capsys):
    assert main(["info", str(stores["flat"])]) == 0
    text = capsys.readouterr().out
    assert "classes        unlabelled" in text and "classes        0:" not in text
    assert "splits         none recorded" in text


def test_the_dataset_names_its_classes(stores):
    ds = HyperframeDataset(stores["labelled"], frames=2)
    assert ds.classes == ["jump", "run"]
    assert {ds.classes[k] for k in ds.labels} == {"jump", "run"}
    assert HyperframeDataset(stores["flat"], frames=2).classes == []


def test_show_numbers_title_and_tiles_alike(stores, tmp_path, capsys):
    from hyperframes._core._pictures import show_window

    store = open_store(stores["flat"])
    rec = store.videos[0]
    assert list(rec.source_frame_indices[:4]) == [0, 2, 4, 6]  # 20 fps stored at 10
    shown = show_window(store, 0, tmp_path / "w.png", start=1, frames=3, stride=1)
    assert shown.frame_indices == (1, 2, 3) and shown.source_frame_indices == (2, 4, 6)
    assert [c.split()[0] for c in shown.captions] == ["#1", "#2", "#3"]  # stored numbers
    assert "stored frames 1..3 stride 1 (source frames 2..6)" in shown.title
    out = tmp_path / "cli.png"
    argv = ["show", str(stores["flat"]), "--video", "0", "--start", "1", "--frames", "3"]
    assert main([*argv, "--out", str(out)]) == 0
    said = capsys.readouterr().out
    assert "stored frames 1..3 (source frames 2..6)" in said and out.exists()
