"""Leakage by content: store videos that show the same clip, whatever their bytes (a remux, a
re-encode at another bitrate, a resized copy).

Each video's perceptual signature (:mod:`hyperframes._core._signature`: pHashes of its stored
frames at 1/8, 3/8, 5/8 and 7/8 of its duration) is the one the build recorded in the index;
a store built before signatures existed gets them computed here from its stored frames (four
reads per video). Every pair of videos is compared; a pair whose hashes differ by at most
``SIMILAR_BITS`` (12) of 64 bits on average, over at least two frames, is the same content.

Measured (tests and README): a copy re-encoded at another size and bitrate differs by 0-3
bits, one at half the frame rate by up to 9; unrelated clips differ by 18 or more (about 32
on average). A video whose frames are all flat (black, one colour) has no hash and cannot be
compared: it is counted in ``content_unchecked``.
"""

from __future__ import annotations

import numpy as np

from .._core._signature import (
    MIN_FRAMES,
    SIGNATURE_FRAMES,
    frame_hash,
    grey_thumbnail,
    signature_frames,
    similar_pairs,
)

__all__ = ["find_similar", "video_signatures"]


def _as_uint8(frames: np.ndarray, manifest: dict) -> np.ndarray:
    """Stored frames as uint8 RGB (a float16 store holds them normalised)."""
    if frames.dtype == np.uint8:
        return frames
    norm = manifest.get("normalize") or {}
    mean = np.asarray(norm.get("mean", (0.0, 0.0, 0.0)), np.float32).reshape(1, -1, 1, 1)
    std = np.asarray(norm.get("std", (1.0, 1.0, 1.0)), np.float32).reshape(1, -1, 1, 1)
    rgb = (frames.astype(np.float32) * std + mean) * 255.0
    return np.clip(np.rint(rgb), 0, 255).astype(np.uint8)


def video_signatures(store, ids) -> np.ndarray:
    """(len(ids), SIGNATURE_FRAMES) uint64 signatures of the store videos ``ids``: recorded at
    build, or computed now from the stored frames for a store without them."""
    ids = np.asarray(ids, np.int64)
    recorded = store.videos.annotations.signatures
    if recorded is not None:
        return np.asarray(recorded, np.uint64)[ids]
    out = np.zeros((len(ids), SIGNATURE_FRAMES), np.uint64)
    for row, v in enumerate(ids.tolist()):
        which = signature_frames(store.videos[v].pts_seconds)
        if not which.size:
            continue
        frames = _as_uint8(np.asarray(store.read_numpy(v, which)), store.manifest)
        out[row] = [frame_hash(grey_thumbnail(f)) for f in frames]
    return out


def find_similar(store, roles: dict[int, str]) -> tuple[list[dict], int]:
    """The pairs of videos in ``roles`` (video id -> split) with the same content, each
    ``{"a", "b", "similarity", "distance_bits", "frames_compared", "across"}`` (``a``/``b``:
    id, path, split, label; ``across``: ``"split"`` and/or ``"label"`` where they differ),
    and how many videos had too few hashes to compare."""
    ids = np.asarray(sorted(roles), np.int64)
    sig = video_signatures(store, ids)
    unchecked = int(((sig != 0).sum(axis=1) < MIN_FRAMES).sum())
    i, j, distance, compared = similar_pairs(sig)
    videos = store.videos
    pairs = []
    for a, b, d, c in zip(ids[i].tolist(), ids[j].tolist(), distance.tolist(), compared.tolist()):
        ma, mb = (
            {"id": v, "path": videos.paths[v], "split": roles[v], "label": videos[v].label}
            for v in (a, b)
        )
        across = [k for k in ("split", "label") if ma[k] != mb[k]]
        pairs.append(
            {
                "a": ma,
                "b": mb,
                "similarity": round(1.0 - d / 64.0, 4),
                "distance_bits": round(d, 3),
                "frames_compared": int(c),
                "across": across,
            }
        )
    return pairs, unchecked
