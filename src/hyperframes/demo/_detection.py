"""Synthetic detection clips: objects that pass behind occluders (the channel-fusion story).

One or two bright textured objects, a ``disc`` or a ``square`` (:data:`DETECTION_CLASSES`),
move sideways across a dark textured background (2-3.5 px per frame, bouncing off the
edges) and pass behind vertical grey bars, each wide enough to hide an object completely for
a few frames. The boxes are the objects' whole extent in every frame, hidden or not: the
object is there behind the bar, so a detector that sees one frame misses it while it is
hidden, and one that sees the frames around it need not. Pure generator
:func:`make_detection_frames`; :func:`make_detection_dataset` writes H.264 clips and one
``boxes.csv`` (``path,time,x1,y1,x2,y2,label``, corners normalised to [0, 1]) for
``hyperframes build DATA --boxes DATA/boxes.csv``.
"""

from __future__ import annotations

import csv
import os
from fractions import Fraction
from pathlib import Path

import numpy as np

from ._scene import (
    _bright_texture,
    _check_fps,
    _check_int,
    _check_rng,
    _check_size,
    _dark_background,
    _disc,
    _to_uint8,
)
from ._synthetic import write_h264

__all__ = ["DETECTION_CLASSES", "make_detection_dataset", "make_detection_frames"]

DETECTION_CLASSES: tuple[str, ...] = ("disc", "square")
BOXES_CSV = "boxes.csv"


def make_detection_frames(
    *, frames: int, size: int, rng: np.random.Generator, occluders: int = 1
) -> tuple[np.ndarray, list[list[tuple[float, float, float, float, int]]]]:
    """One clip: ``(frames (T, size, size, 3) uint8, boxes)`` where ``boxes[t]`` lists
    ``(x1, y1, x2, y2, class_id)`` in pixels of frame t (whole extents, hidden or not)."""
    frames = _check_int("frames", frames, 1)
    size = _check_size(size)
    rng = _check_rng(rng)
    occluders = _check_int("occluders", occluders, 0)
    background = _dark_background(size, rng)
    radius = size * rng.uniform(0.07, 0.09)
    n = int(rng.integers(1, 3))
    kinds = rng.integers(0, len(DETECTION_CLASSES), n)
    side = max(4, int(np.ceil(2 * radius)) + 2)
    textures = [_bright_texture(side, rng) for _ in range(n)]
    lanes = rng.permutation(np.linspace(radius + 1, size - radius - 1, max(n, 2)))[:n]
    x0 = rng.uniform(radius, size - radius, n)
    speed = rng.uniform(2.0, 3.5, n) * rng.choice([-1.0, 1.0], n) * max(1.0, size / 64.0)
    bar = int(np.ceil(2 * radius + 2 * abs(speed).max()))  # hides an object for >= 2 frames
    bars = np.linspace(0, size, occluders + 2)[1:-1].astype(int) - bar // 2
    grey = rng.uniform(0.45, 0.6)
    video = np.empty((frames, size, size, 3), np.uint8)
    boxes: list[list[tuple[float, float, float, float, int]]] = []
    lo, hi = radius, size - radius
    for t in range(frames):
        canvas = background.copy()
        here = []
        for k in range(n):
            # bounce between the edges: a triangle wave of the travelled distance
            span = hi - lo
            d = (x0[k] - lo + speed[k] * t) % (2 * span)
            cx = lo + (d if d <= span else 2 * span - d)
            cy = lanes[k]
            rgb, alpha = _disc(size, textures[k], radius, cx, cy, 0.0)
            if kinds[k] == 1:  # a square of the same texture: its box is its extent
                alpha = _square_alpha(size, cx, cy, radius)
            a = alpha[..., None]
            canvas = canvas * (1.0 - a) + rgb * a
            here.append((cx - radius, cy - radius, cx + radius, cy + radius, int(kinds[k])))
        for x in bars:
            canvas[:, max(0, x) : max(0, x + bar)] = grey
        video[t] = _to_uint8(canvas)
        boxes.append(
            [(max(0.0, a), max(0.0, b), min(size, c), min(size, d), k) for a, b, c, d, k in here]
        )
    return video, boxes


def _square_alpha(size: int, cx: float, cy: float, half: float) -> np.ndarray:
    ys, xs = np.mgrid[0:size, 0:size].astype(np.float32) + 0.5
    ax = np.clip(half - np.abs(xs - cx) + 0.5, 0.0, 1.0)
    ay = np.clip(half - np.abs(ys - cy) + 0.5, 0.0, 1.0)
    return (ax * ay).astype(np.float32)


def make_detection_dataset(
    root: str | Path,
    *,
    videos: int = 8,
    frames: int = 24,
    size: int = 64,
    fps: float | Fraction = 8,
    seed: int = 0,
    occluders: int = 1,
) -> list[Path]:
    """Write ``root/det_<i:03d>.mp4`` and ``root/boxes.csv`` (module doc); video ``i`` is
    rendered from ``numpy.random.default_rng([seed, i])``. Returns the video paths."""
    videos = _check_int("videos", videos, 1)
    rate = _check_fps(fps)
    seed = _check_int("seed", seed, 0)
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    rows: list[tuple] = []
    paths = []
    for i in range(videos):
        rng = np.random.default_rng([seed, i])
        clip, boxes = make_detection_frames(frames=frames, size=size, rng=rng, occluders=occluders)
        path = write_h264(root / f"det_{i:03d}.mp4", clip, fps=rate)
        paths.append(path)
        for t, frame_boxes in enumerate(boxes):
            time = float(Fraction(t) / rate)
            for x1, y1, x2, y2, k in frame_boxes:
                corners = [f"{v / size:.5f}" for v in (x1, y1, x2, y2)]
                rows.append((path.name, f"{time:.6f}", *corners, DETECTION_CLASSES[k]))
    tmp = root / f".{BOXES_CSV}.partial"
    with open(tmp, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(("path", "time", "x1", "y1", "x2", "y2", "label"))
        w.writerows(rows)
    os.replace(tmp, root / BOXES_CSV)
    return paths
