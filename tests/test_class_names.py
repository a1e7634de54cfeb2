"""Class names travel: a store built with a label map (UCF101's classInd.txt, not in sorted
order) keeps its ids; the names go into the store, the checkpoint, the input contract and the
ONNX sidecar and metadata, and every command prints names, never ids."""

from __future__ import annotations

import csv
import json

import pytest

from hyperframes.cli import main
from hyperframes.demo import make_motion_dataset
from hyperframes.store import open_store
from hyperframes.train import load_checkpoint

#: classInd.txt's order: ids 0, 1, 2 -- not the sorted order
CLASS_IND = ("up", "left", "right")


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    root = tmp_path_factory.mktemp("names")
    videos = root / "UCF-101"
    make_motion_dataset(videos, classes=CLASS_IND, videos_per_class=3, frames=10, size=32, seed=4)
    lists = root / "ucfTrainTestlist"
    lists.mkdir()
    (lists / "classInd.txt").write_text(
        "".join(f"{i} {name}\n" for i, name in enumerate(CLASS_IND, start=1))
    )
    train = [f"{c}/{c}_{i:03d}.mp4 {k}" for k, c in enumerate(CLASS_IND, 1) for i in (1, 2)]
    (lists / "trainlist01.txt").write_text("\n".join(train) + "\n")
    (lists / "testlist01.txt").write_text("\n".join(f"{c}/{c}_000.mp4" for c in CLASS_IND) + "\n")
    store = root / "store"
    build = ["build", str(lists), "--root", str(videos), "--out", str(store), "--quiet"]
    assert main([*build, "--size", "none"]) == 0
    import yaml

    cfg = {
        "data": {"store": str(store), "frames": 2, "batch_size": 2, "val_split": "test"},
        "model": {"name": "r2plus1d_tiny", "options": {"base_width": 4}},
        "train": {"epochs": 1, "optimizer": "adamw"},
    }
    (root / "cfg.yaml").write_text(yaml.safe_dump(cfg))
    out = root / "run"
    assert main(["train", str(root / "cfg.yaml"), "--out", str(out), "--quiet"]) == 0
    return store, out, videos


def test_the_label_map_keeps_its_ids_in_the_store(run):
    store, _, _ = run
    s = open_store(store)
    assert s.classes == list(CLASS_IND) and s.manifest["classes"] == list(CLASS_IND)
    for v in s.videos:
        assert v.label == CLASS_IND[v.label_id] and f"/{v.label}/" in v.path


def test_the_checkpoint_and_its_contract_carry_the_names(run):
    _, out, _ = run
    ck = load_checkpoint(out / "best.pt")
    assert ck["classes"] == list(CLASS_IND)
    assert ck["contract"]["classes"] == list(CLASS_IND)


def test_eval_prints_names(run, capsys):
    _, out, _ = run
    assert (
        main(["eval", str(out / "best.pt"), "--split", "test", "--clips", "1", "--crops", "1"]) == 0
    )
    text = capsys.readouterr().out
    table = [line.split()[0] for line in text.splitlines()[-6:-2]]
    assert table[-3:] == list(CLASS_IND)  # per-class rows, in id order, by name
    csv_path = next(out.rglob("predictions.csv"))
    with open(csv_path, newline="") as f:
        rows = list(csv.DictReader(f))
    assert {r["label"] for r in rows} == set(CLASS_IND)
    assert {r["prediction"] for r in rows} <= set(CLASS_IND)


def test_predict_prints_and_writes_names(run, tmp_path, capsys):
    _, out, videos = run
    video = videos / "left" / "left_000.mp4"
    code = main(
        ["predict", str(out / "best.pt"), str(video), "--out", str(tmp_path / "p"), "--quiet"]
    )
    assert code == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if "mean probability" in x)
    shown = [part.split()[0] for part in line.split(": ", 1)[1].split(", ")]
    assert set(shown) == set(CLASS_IND)
    with open(tmp_path / "p" / "timeline.csv", newline="") as f:
        row = next(csv.DictReader(f))
    assert row["top1"] in CLASS_IND and {f"prob:{c}" for c in CLASS_IND} <= set(row)


def test_the_onnx_export_carries_the_names(run, tmp_path):
    pytest.importorskip("onnx")
    _, out, _ = run
    onnx_path = tmp_path / "model.onnx"
    assert main(["export", str(out / "best.pt"), "--onnx", str(onnx_path)]) == 0
    side = json.loads((tmp_path / "model.onnx.json").read_text())
    assert side["classes"] == list(CLASS_IND)
    import onnx

    meta = {p.key: p.value for p in onnx.load(str(onnx_path)).metadata_props}
    assert json.loads(meta["classes"]) == list(CLASS_IND)


# -- eval matches the store's classes to the model's by name (issue 22, items 1 and 2) --------
def _store_of(run, root, folders) -> str:
    """A store of the run's videos under other class folders: ``[(new folder, run's class)]``
    (or a dict); ``None`` as the folder puts the videos straight under the data (no labels)."""
    import shutil

    _, _, videos = run
    data = root / "data"
    for new, old in dict(folders).items() if isinstance(folders, dict) else folders:
        folder = data if new is None else data / new
        folder.mkdir(parents=True, exist_ok=True)
        for f in sorted((videos / old).glob("*.mp4")):
            shutil.copy(f, folder / (f.name if new is not None else f"{old}_{f.name}"))
    store = root / "store"
    assert main(["build", str(data), "--out", str(store), "--size", "none", "--quiet"]) == 0
    return str(store)


def _eval(run, store, *extra, split="all") -> list[str]:
    _, out, _ = run
    args = ["eval", str(out / "best.pt"), "--store", store, "--split", split]
    return [*args, "--clips", "1", "--crops", "1", *extra]


def _rows(path) -> dict[str, dict]:
    with open(path, newline="") as f:
        return {r["path"].rsplit("/", 1)[-1]: r for r in csv.DictReader(f)}


def test_eval_matches_the_store_classes_to_the_model_by_name(run, tmp_path, capsys):
    """Folders Left/Right/Up number the classes 0, 1, 2 in sorted order; the model's are up,
    left, right: matched by name ignoring case, the store is scored as the training store."""
    store, _, _ = run
    renamed = _store_of(run, tmp_path, {"Right": "right", "Up": "up", "Left": "left"})
    assert open_store(renamed).classes == ["Left", "Right", "Up"]
    assert main(_eval(run, renamed, "--out", str(tmp_path / "m.json"))) == 0
    text = capsys.readouterr()
    assert "classes matched by name ignoring case: Left -> left" in text.err + text.out
    got = json.loads((tmp_path / "m.json").read_text())
    assert got["classes_matched_by"] == "name" and any("ignoring case" in n for n in got["notes"])
    rows = _rows(tmp_path / "m_predictions.csv")
    assert {name: r["label"] for name, r in rows.items()} == {
        name: name.split("_")[0] for name in rows
    }  # the truth keeps its class (main relabelled Left videos as up)
    # the same videos in the training store give the same predictions and metrics
    assert main(_eval(run, str(store), "--out", str(tmp_path / "ref.json"))) == 0
    ref = json.loads((tmp_path / "ref.json").read_text())
    assert got["video_level"]["top1"] == ref["video_level"]["top1"]
    assert got["video_level"]["confusion"] == ref["video_level"]["confusion"]
    assert {k: r["prediction"] for k, r in rows.items()} == {
        k: r["prediction"] for k, r in _rows(tmp_path / "ref_predictions.csv").items()
    }


def test_eval_refuses_classes_the_model_does_not_know(run, tmp_path, capsys):
    other = _store_of(run, tmp_path, {"Up": "up", "Left": "left", "ArmWrestling": "right"})
    assert main(_eval(run, other, "--out", str(tmp_path / "m.json"))) == 1
    err = capsys.readouterr().err
    assert "classes the model does not know: ArmWrestling;" in err
    assert "the store's classes: ArmWrestling, Left, Up" in err
    assert "the model's: up, left, right" in err and "--classes-by-index" in err
    assert not list(tmp_path.glob("m*")), "a refused eval wrote results"
    # by index, as before, and said so
    assert main(_eval(run, other, "--out", str(tmp_path / "m.json"), "--classes-by-index")) == 0
    text = capsys.readouterr()
    said = "classes matched by index (--classes-by-index), not by name"
    assert said in text.out and said in text.err
    got = json.loads((tmp_path / "m.json").read_text())
    assert got["classes_matched_by"] == "index" and said in got["notes"][0]
    assert "ArmWrestling -> up" in got["notes"][0]


def test_eval_on_more_classes_than_the_model_is_a_clear_error(run, tmp_path, capsys):
    more = _store_of(run, tmp_path, {"up": "up", "left": "left", "right": "right", "down": "up"})
    assert main(_eval(run, more)) == 1
    err = capsys.readouterr().err
    assert "classes the model does not know: down;" in err and "Traceback" not in err
    assert main(_eval(run, more, "--classes-by-index")) == 1
    err = capsys.readouterr().err
    assert "has classes the model has no output for by index: 3:up;" in err
    assert "the model's (3): up, left, right" in err


def test_eval_on_an_unlabelled_store_gives_predictions_only(run, tmp_path, capsys):
    flat = _store_of(run, tmp_path, [(None, c) for c in CLASS_IND])
    assert open_store(flat).classes == []
    assert main(_eval(run, flat, "--out", str(tmp_path / "m.json"))) == 0
    text = capsys.readouterr()
    assert "no labels: predictions only, no metrics" in text.out
    assert "have no labels: predictions only (predictions.csv), no metrics" in text.err
    assert not (tmp_path / "m.json").exists()  # no metrics
    rows = _rows(tmp_path / "m_predictions.csv")
    assert len(rows) == 3 * len(CLASS_IND)
    assert {r["label"] for r in rows.values()} == {""}
    assert {r["prediction"] for r in rows.values()} <= set(CLASS_IND)
    # a store that records no splits: the run's generated validation split (here "test")
    assert main(_eval(run, flat, split="test")) == 0
    assert "split test" in capsys.readouterr().out


def test_eval_scores_the_labelled_videos_of_a_partly_labelled_store(run, tmp_path, capsys):
    _, _, videos = run
    files = sorted(videos.rglob("*.mp4"))
    rows = [f"{f},{'' if f.stem.endswith('_000') else f.parent.name}" for f in files]
    (tmp_path / "ann.csv").write_text("path,label\n" + "\n".join(rows) + "\n")
    store = tmp_path / "store"
    build = ["build", str(tmp_path / "ann.csv"), "--out", str(store), "--size", "none"]
    build += ["--root", str(videos)]  # the listed files are under the run's videos
    assert main([*build, "--quiet"]) == 0
    assert main(_eval(run, str(store), "--out", str(tmp_path / "m.json"))) == 0
    text = capsys.readouterr()
    said = "3 of the 9 videos have no label: metrics over the 6 labelled ones, predictions for all"
    assert said in text.err and said in text.out
    got = json.loads((tmp_path / "m.json").read_text())
    assert got["video_level"]["samples"] == 6 and said in got["notes"]
    labels = [r["label"] for r in _rows(tmp_path / "m_predictions.csv").values()]
    assert len(labels) == 9 and labels.count("") == 3
