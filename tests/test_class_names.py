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
    side = json.loads(onnx_path.with_suffix(".json").read_text())
    assert side["classes"] == list(CLASS_IND)
    import onnx

    meta = {p.key: p.value for p in onnx.load(str(onnx_path)).metadata_props}
    assert json.loads(meta["classes"]) == list(CLASS_IND)
