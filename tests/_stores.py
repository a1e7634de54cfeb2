"""Helpers for tests that compare whole stores."""

from __future__ import annotations

import numpy as np

from hyperframes.store import open_store


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
