"""root/<split>/<label>/<video>: split folders detected, their names recorded in the store,
counted by info, chosen by HyperframeDataset(split=...) and by a config's train/val split; a
layout that is none of the accepted ones is refused with the list of those."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from _media import write_video
from hyperframes import InputError
from hyperframes.build import BuildOptions, build_store
from hyperframes.cli import main
from hyperframes.inputs._scan import scan_inputs
from hyperframes.store import open_store


def _split_tree(root: Path) -> Path:
    """train: cat 2, dog 1; val: cat 1, dog 1 (one file directly in val/ is unlabelled)."""
    for split, label, n in (("train", "cat", 2), ("train", "dog", 1), ("val", "cat", 1)):
        for i in range(n):
            write_video(root / split / label / f"{label}{i}.mp4", frames=4, width=32, height=24)
    write_video(root / "val" / "dog" / "dog0.mp4", frames=4, width=32, height=24)
    write_video(root / "val" / "loose.mp4", frames=4, width=32, height=24)
    return root


@pytest.fixture(scope="module")
def split_store(tmp_path_factory) -> Path:
    data = _split_tree(tmp_path_factory.mktemp("splits") / "data")
    out = data.parent / "store"
    report = build_store(data, out, BuildOptions(size="none"), progress=False)
    assert report.exit_code == 0 and not report.failed
    return out


def test_split_folders_are_read_as_splits(tmp_path):
    inputs = scan_inputs(_split_tree(tmp_path / "d"))
    got = [(s.split, s.label, Path(s.path).name) for s in inputs.sources]
    assert got == [  # split by split; a split's own files first, then its label folders
        ("train", "cat", "cat0.mp4"),
        ("train", "cat", "cat1.mp4"),
        ("train", "dog", "dog0.mp4"),
        ("val", None, "loose.mp4"),
        ("val", "cat", "cat0.mp4"),
        ("val", "dog", "dog0.mp4"),
    ]
    assert inputs.classes == ["cat", "dog"] and inputs.skipped == []


def test_info_counts_videos_per_split_and_class(split_store, capsys):
    assert main(["info", str(split_store), "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["splits"] == {"train": 3, "val": 3}
    assert d["class_counts"]["by_split"] == {
        "train": {"cat": 2, "dog": 1},
        "val": {"cat": 1, "dog": 1, "(no single label)": 1},
    }
    assert d["class_counts"]["all"] == {"cat": 3, "dog": 2, "(no single label)": 1}
    assert main(["info", str(split_store)]) == 0
    assert "splits         train 3, val 3" in capsys.readouterr().out


def test_dataset_and_config_choose_a_split(split_store):
    from hyperframes import HyperframeDataset
    from hyperframes.train._config._load import load_config
    from hyperframes.train._config._splits import resolve_split

    store = open_store(split_store)
    val = HyperframeDataset(store, sampler="uniform", frames=2, split="val")
    names = sorted(Path(store.videos.paths[int(i)]).name for i in val.video_ids)
    assert names == ["cat0.mp4", "dog0.mp4", "loose.mp4"]
    cfg = load_config(
        {
            "data": {"store": str(split_store), "frames": 2, "train_split": "train"},
            "model": {"name": "r2plus1d_tiny", "options": {"base_width": 8}},
        }
    )
    ids, _ = resolve_split(store, cfg.data.train_split, cfg.data, role="train")
    assert sorted(store.videos.split_ids[ids].tolist()) == [0, 0, 0]
    assert store.videos.splits == ["train", "val"]


def test_an_unknown_layout_lists_the_accepted_ones(tmp_path):
    data = tmp_path / "data"
    write_video(data / "clips" / "walk" / "w.mp4", frames=4, width=32, height=24)
    with pytest.raises(InputError) as caught:
        scan_inputs(data)
    msg = str(caught.value)
    for layout in ("root/<label>/<video>", "root/<split>/<label>/<video>", "frame folders"):
        assert layout in msg
    assert "1 nested below a label folder" in msg
    assert "name them train/val/test, or list the videos in a CSV with path,label,split" in msg


def test_a_frame_folder_named_like_a_split_is_a_video(tmp_path):
    from PIL import Image

    for split in ("train", "test"):
        (tmp_path / "raw" / split).mkdir(parents=True)
        for i in range(3):
            Image.new("RGB", (8, 8), (i * 40, 0, 0)).save(tmp_path / "raw" / split / f"{i}.png")
    inputs = scan_inputs(tmp_path / "raw")
    assert [(Path(s.path).name, s.kind, s.split) for s in inputs.sources] == [
        ("test", "frames", None),
        ("train", "frames", None),
    ]
