"""Leakage by content: store videos that show the same clip, whatever their bytes (a remux, a
re-encode at another bitrate, a resized copy, a horizontal mirror, a crop keeping 70% of the
area or more).

Each video's perceptual signature (:mod:`hyperframes.store._signature`: mirror-blind pHashes
of its stored frames at 1/8, 3/8, 5/8 and 7/8 of its duration, of the whole frame and of 42
parts of it) is the one the build recorded in the index; a store built before signatures
existed, or before the parts were hashed, gets them computed here from its stored frames (four
reads per video). Every pair of videos is compared; a pair whose whole-frame hashes differ by
at most ``SIMILAR_BITS`` (12) of 64 bits on average, over at least two frames, is the same
content. A crop is then looked for (up to ``CROP_MAX_VIDEOS``, 2000, videos): each video's
whole frames against every other's parts, and a pair within ``CROP_GATE_BITS`` (18) has the
part refined on the other's frames (read from the store) to at most ``CROP_SIMILAR_BITS`` (7).

Measured (tests and README): a copy re-encoded at another size and bitrate differs by 0-3
bits, one at half the frame rate by up to 9, a mirror by 0-1.5, a crop by 1-3 after
refinement; unrelated real clips differ by 23.5 or more (about 32 on average). A video whose frames are all
flat (black, one colour) has no hash and cannot be compared: it is counted in
``content_unchecked``.
"""

from __future__ import annotations

import numpy as np

from ...store import (
    CROP_MAX_VIDEOS,
    CROP_SIMILAR_BITS,
    MIN_FRAMES,
    SIGNATURE_FRAMES,
    SIGNATURE_WIDTH,
    crop_candidates,
    grey_base,
    refine_crop,
    signature_frames,
    signature_of_frames,
    similar_pairs,
)

__all__ = ["crop_pairs", "find_similar", "video_signatures"]


def _as_uint8(frames: np.ndarray, manifest: dict) -> np.ndarray:
    """Stored frames as uint8 RGB (a float16 store holds them normalised)."""
    if frames.dtype == np.uint8:
        return frames
    norm = manifest.get("normalize") or {}
    mean = np.asarray(norm.get("mean", (0.0, 0.0, 0.0)), np.float32).reshape(1, -1, 1, 1)
    std = np.asarray(norm.get("std", (1.0, 1.0, 1.0)), np.float32).reshape(1, -1, 1, 1)
    rgb = (frames.astype(np.float32) * std + mean) * 255.0
    return np.clip(np.rint(rgb), 0, 255).astype(np.uint8)


def _bases(store, video: int) -> list[np.ndarray]:
    """The :func:`grey_base` images of the frames a signature of store video ``video`` hashes."""
    which = signature_frames(store.videos[video].pts_seconds)
    if not which.size:
        return []
    frames = _as_uint8(np.asarray(store.read_numpy(video, which)), store.manifest)
    return [grey_base(f) for f in frames]


def video_signatures(store, ids) -> np.ndarray:
    """(len(ids), SIGNATURE_WIDTH) uint64 signatures of the store videos ``ids``: recorded at
    build, or computed now from the stored frames for a store without them (or with those of
    an older kind: whole frames only)."""
    ids = np.asarray(ids, np.int64)
    recorded = store.videos.annotations.signatures
    if recorded is not None and np.asarray(recorded).shape[1] == SIGNATURE_WIDTH:
        return np.asarray(recorded, np.uint64)[ids]
    out = np.zeros((len(ids), SIGNATURE_WIDTH), np.uint64)
    for row, v in enumerate(ids.tolist()):
        out[row] = signature_of_frames(_bases(store, v))
    return out


def crop_pairs(
    store, ids: np.ndarray, sig: np.ndarray, found: set, *, limit: float = CROP_SIMILAR_BITS
) -> list[tuple]:
    """``(a, b, distance, compared)`` (row numbers of ``ids``, a < b) of the pairs where one
    video is a crop of the other, refined to at most ``limit`` bits, beyond the pairs in
    ``found``: candidates by box hashes, each refined on the possible original's frames."""
    copy, original, _, box = crop_candidates(sig)
    shapes = np.asarray(store.videos.shapes)[ids]  # (C, H, W) of the stored frames

    def aspect(c: int, o: int) -> float:  # a crop's width/height, as fractions of the original
        return float(shapes[c, 2] / shapes[c, 1]) / float(shapes[o, 2] / shapes[o, 1])

    bases: dict[int, list[np.ndarray]] = {}
    best: dict[tuple[int, int], tuple[float, int]] = {}
    for c, o, b in zip(copy.tolist(), original.tolist(), box.tolist()):
        key = (min(c, o), max(c, o))
        if key in found:
            continue
        if o not in bases:
            bases[o] = _bases(store, int(ids[o]))
        d, n, _ = refine_crop(sig[c, :SIGNATURE_FRAMES], bases[o], b, aspect=aspect(c, o))
        if d <= limit + 1e-9 and d < best.get(key, (np.inf, 0))[0]:
            best[key] = (d, n)
    return [(a, b, d, n) for (a, b), (d, n) in sorted(best.items())]


def find_similar(store, roles: dict[int, str]) -> tuple[list[dict], int]:
    """The pairs of videos in ``roles`` (video id -> split) with the same content, each
    ``{"a", "b", "similarity", "distance_bits", "frames_compared", "match", "across"}``
    (``a``/``b``: id, path, split, label; ``match``: ``"whole frames"`` or ``"a crop"``, one
    shows a part of the other; ``across``: ``"split"`` and/or ``"label"`` where they differ),
    and how many videos had too few hashes to compare."""
    ids = np.asarray(sorted(roles), np.int64)
    sig = video_signatures(store, ids)
    unchecked = int(((sig[:, :SIGNATURE_FRAMES] != 0).sum(axis=1) < MIN_FRAMES).sum())
    i, j, distance, compared = similar_pairs(sig[:, :SIGNATURE_FRAMES])
    rows = [(a, b, d, c, "whole frames") for a, b, d, c in zip(i, j, distance, compared)]
    if len(ids) <= CROP_MAX_VIDEOS:
        found = {(int(a), int(b)) for a, b in zip(i, j)}
        rows += [(a, b, d, c, "a crop") for a, b, d, c in crop_pairs(store, ids, sig, found)]
    videos = store.videos
    pairs = []
    for ra, rb, d, c, how in rows:
        a, b, d, c = int(ids[ra]), int(ids[rb]), float(d), int(c)
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
                "match": how,
                "across": across,
            }
        )
    return pairs, unchecked
