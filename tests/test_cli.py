"""The command line is a thin shell: each command calls the library and prints."""

import json


def test_models_command_lists_the_registry(capsys):
    from hyperframes.cli import main

    assert main(["models", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    names = {r["name"]: r for r in rows}
    assert names["channel_resnet18"]["layout"] == "channel"
    assert all(r["layout"] in ("temporal", "channel", "conv3d", "keyframe") for r in rows)


def test_models_table_keeps_its_columns_apart(capsys):
    """Every cell of the text table is followed by at least two spaces, the longest task
    name (super_resolution) too: splitting a row on runs of 2+ spaces gives its 6 columns."""
    import re

    from hyperframes.cli import main

    assert main(["models"]) == 0
    lines = capsys.readouterr().out.splitlines()
    rows = [re.split(r" {2,}", line.strip()) for line in lines]
    assert rows[0] == ["name", "layout", "params", "family", "task", "summary"]
    assert all(len(r) == 6 for r in rows), [line for line, r in zip(lines, rows) if len(r) != 6]
    sr = next(r for r in rows if r[0] == "frame_sr")
    assert sr[4] == "super_resolution" and sr[5].startswith("Sliding-window")


def _checkpoint(path):
    import torch

    from hyperframes import models
    from hyperframes.checkpoint._checkpoint import save_checkpoint

    torch.manual_seed(0)
    model = models.create("tsn_mobilenet_v3_small", num_classes=2, frames=4)
    config = {
        "data": {"frames": 4, "mean": [0.5] * 3, "std": [0.25] * 3},
        "model": {"name": "tsn_mobilenet_v3_small", "num_classes": 2, "options": {}},
    }
    return save_checkpoint(
        path, {"model": model.state_dict(), "config": config, "classes": ["a", "b"]}
    )


def test_predict_command(tmp_path, capsys):
    import numpy as np

    from hyperframes.cli import main
    from hyperframes.demo._synthetic import make_motion_frames, write_h264

    ckpt = _checkpoint(tmp_path / "best.pt")
    clip = make_motion_frames("up", frames=12, size=32, rng=np.random.default_rng(0))
    video = write_h264(tmp_path / "v.mp4", clip, fps=10)
    out = tmp_path / "pred"
    code = main(
        [
            "predict",
            str(ckpt),
            str(video),
            "--stride",
            "2",
            "--ema",
            "0.5",
            "--out",
            str(out),
            "--quiet",
        ]
    )
    assert code == 0
    rows = json.loads((out / "timeline.json").read_text())
    assert rows and (out / "timeline.csv").exists() and (out / "timeline.png").exists()
    # `export` end to end: test_cli_honest_train.py (the file, its contract, external weights)
    capsys.readouterr()
    assert main(["predict", str(ckpt), str(video), "--stride", "0", "--quiet"]) == 1
    assert "stride" in capsys.readouterr().err
    (tmp_path / "junk.pt").write_bytes(b"not a checkpoint")
    assert main(["predict", str(tmp_path / "junk.pt"), str(video), "--quiet"]) == 1
    assert "junk.pt" in capsys.readouterr().err
