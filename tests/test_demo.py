"""`hyperframes demo --quick`: the whole showcase end to end on its own synthetic data."""

from __future__ import annotations

import json

import pytest
from PIL import Image

from hyperframes.cli import main

pytestmark = pytest.mark.slow  # the demo end to end


def test_quick_demo_end_to_end(tmp_path, capsys):
    out = tmp_path / "demo"
    assert main(["demo", "--out", str(out), "--quick"]) == 0
    report = json.loads((out / "report.json").read_text())
    assert set(report["runs"]) == {
        "hyperframe_t8",
        "single_frame_t1",
        "keyframe_segmentation",
        "single_frame_segmentation",
    }
    store = report["store"]
    assert store["build"]["failed"] == [] and store["build"]["videos"] == 18
    assert store["reads"]["speedup"] > 1  # the store beats decoding the same windows
    with Image.open(out / "window.png") as img:
        assert img.width > 64 * 4
    text = capsys.readouterr().out
    assert "hyperframes info" in text and "windows/s" in text
    # a second run reuses the data and the store (idempotent, nothing rebuilt)
    assert main(["demo", "--out", str(out), "--quick"]) == 0
    again = json.loads((out / "store_report.json").read_text())
    assert again["build"]["videos"] == 18
    assert "18 kept from an earlier run" in capsys.readouterr().out
