"""DDP on CPU: two processes started by torchrun (gloo) train one run; rank 0 alone writes."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import yaml

from hyperframes.build import BuildOptions, build_store
from hyperframes.demo import make_motion_dataset
from hyperframes.train import load_checkpoint

SCRIPT = """
import sys
from hyperframes.cli import main
sys.exit(main(["train", *sys.argv[1:]]))
"""

pytestmark = pytest.mark.slow  # two-process DDP training


@pytest.mark.slow
def test_two_processes_train_one_run(tmp_path):
    data = tmp_path / "data"
    make_motion_dataset(data, classes=("left", "right"), videos_per_class=4, frames=10, size=32)
    store = tmp_path / "store"
    build_store(data, store, BuildOptions(size="none"), progress=False)
    config = {
        "data": {"store": str(store), "frames": 4, "batch_size": 2, "val_fraction": 0.25},
        "model": {"name": "r2plus1d_tiny", "options": {"base_width": 4}},
        "train": {"epochs": 2, "optimizer": "adamw", "lr": 0.003, "log_every": 1},
        "eval": {"clips": 2},
    }
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(config))
    (tmp_path / "train.py").write_text(SCRIPT)
    run = tmp_path / "run"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONWARNINGS": "ignore"}
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc_per_node=2",
        str(tmp_path / "train.py"),
        str(tmp_path / "c.yaml"),
        "--out",
        str(run),
        "--quiet",
    ]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads((run / "summary.json").read_text())
    # 6 train videos over 2 ranks of batch 2: one step per epoch per rank, global batch 4
    assert summary["world_size"] == 2 and summary["global_batch"] == 4
    assert summary["steps"] == 2 and summary["epochs"] == 2
    # validation gathered from both ranks, each video counted once
    assert summary["val_metrics"]["samples"] == summary["split"]["val_videos"] == 2
    assert summary["video_level"]["videos"] == 2
    rows = (run / "epochs.csv").read_text().splitlines()
    assert len(rows) == 3  # header + one row per epoch: rank 0 logs alone
    ck = load_checkpoint(run / "last.pt")
    assert ck["epoch"] == 2 and ck["step"] == 2
    assert not [p.name for p in run.iterdir() if p.name.endswith(".tmp")]
