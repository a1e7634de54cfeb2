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


def reseal_h5(h5: Path) -> None:
    """``reseal`` for an HDF5 store: its index checksum recomputed over the index as it is
    now (a crafted file whose index is consistent with itself)."""
    import h5py

    from hyperframes.store import H5_INDEX_SUM_ATTR, h5_index_checksum

    with h5py.File(h5, "r+") as f:
        f.attrs[H5_INDEX_SUM_ATTR] = h5_index_checksum(f)


def unsign_h5(h5: Path, *, frames: bool = False) -> None:
    """What a file written by an older hyperframes lacks: the index checksum (and, with
    ``frames``, the frames' checksums, older still)."""
    import h5py

    from hyperframes.store import H5_INDEX_SUM_ATTR

    with h5py.File(h5, "r+") as f:
        del f.attrs[H5_INDEX_SUM_ATTR]
        if frames:
            del f["index/frames_xxh3_64"]


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
