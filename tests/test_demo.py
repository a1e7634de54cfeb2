"""`hyperframes demo --quick`: the whole showcase end to end on its own synthetic data."""

from __future__ import annotations

import json

import pytest
from PIL import Image

from hyperframes.cli import main
from hyperframes.demo._train_demo import DEMO_CLASSES

pytestmark = pytest.mark.slow  # the demo end to end


def test_quick_demo_end_to_end(tmp_path, capsys):
    out = tmp_path / "demo"
    assert main(["demo", "--out", str(out), "--quick"]) == 0
    report = json.loads((out / "report.json").read_text())
    training = json.loads((out / "training" / "report.json").read_text())
    six = ("six_classes_t8", "six_classes_flow_t8")
    assert tuple(report["runs"]) == (
        "hyperframe_t8",
        "single_frame_t1",
        "keyframe_segmentation",
        "single_frame_segmentation",
        *six,
    )
    assert training["runs"] == report["runs"]
    for name, r in report["runs"].items():
        metric = "miou" if "segmentation" in name else "accuracy"
        assert 0.0 <= r[metric] <= 1.0, name
        assert r["train_seconds"] > 0 and 0.0 <= r["data_wait_share"] < 1.0
        assert (out / "training" / "runs" / name / "curves.png").is_file()
        assert r["run_dir"].endswith(name)
        if metric == "accuracy":
            assert r["chance"] == 1 / (6 if name in six else len(DEMO_CLASSES))
    assert (out / "training" / "summary.png").is_file()
    store = report["store"]
    assert store["build"]["failed"] == [] and store["build"]["videos"] == 18
    assert store["reads"]["speedup"] > 1  # the store beats decoding the same windows
    with Image.open(out / "window.png") as img:
        assert img.width > 64 * 4
    text = capsys.readouterr().out
    assert "hyperframes info" in text and "windows/s" in text
    assert "six_classes_flow_t8" in text and "mIoU" in text  # the results table
    # a second run reuses the data, the store and the finished runs (idempotent, fast);
    # a run whose config changed, or one that did not finish, is trained again
    stopped = out / "training" / "runs" / "single_frame_t1" / "summary.json"
    stopped.write_text(json.dumps({**json.loads(stopped.read_text()), "stopped": True}))
    assert main(["demo", "--out", str(out), "--quick"]) == 0
    again = json.loads((out / "store_report.json").read_text())
    assert again["build"]["videos"] == 18
    text = capsys.readouterr().out
    assert "18 kept from an earlier run" in text
    kept = [n for n in report["runs"] if f"--- {n}: finished by an earlier call, kept" in text]
    assert kept == [n for n in report["runs"] if n != "single_frame_t1"]
    rerun = json.loads((out / "training" / "report.json").read_text())["runs"]
    for name in kept:
        assert rerun[name] == report["runs"][name]  # the same summary, not a new run
    assert not json.loads(stopped.read_text())["stopped"]  # trained again, to the end
