"""Helpers for tests that compare whole stores."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from hyperframes.build._shard import checksum_file
from hyperframes.store import open_store


def reseal(store: Path) -> None:
    """What a crafted store does: the manifest's index sizes and checksums updated to match
    the files as they are now (so only the checks of their content can refuse them)."""
    m = json.loads((store / "manifest.json").read_text())
    for row in m["index"]:
        f = store / row["name"]
        row["bytes"], row["checksum"] = f.stat().st_size, checksum_file(f)
    (store / "manifest.json").write_text(json.dumps(m))


def store_content(store) -> dict:
    """{source path: (label, pts list, every frame's bytes)} of a store: equal for two stores
    that hold the same videos, whatever their shards, codecs' chunking or build history."""
    s = open_store(store)
    try:
        return {
            v.path: (
                v.label,
                v.pts_seconds.tolist(),
                s.read_numpy(v, np.arange(v.num_frames)).tobytes(),
            )
            for v in s.videos
        }
    finally:
        s.close()


def tiny_train_config(store, **train) -> dict:
    """A config dict for a quick run on ``store``: r2plus1d_tiny (width 8), T=4 at stride 2,
    batch 2, AdamW, two epochs; ``train`` overrides entries of its ``train`` section."""
    return {
        "data": {
            "store": str(store),
            "frames": 4,
            "batch_size": 2,
            "sampler_options": {"stride": 2},
            "val_sampler_options": {"clips": 1, "stride": 2},
        },
        "model": {"name": "r2plus1d_tiny", "options": {"base_width": 8}},
        "train": {"epochs": 2, "optimizer": "adamw", "lr": 0.003, "log_every": 1, **train},
    }
