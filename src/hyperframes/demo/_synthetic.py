"""Synthetic video datasets the demo generates itself: no download, seconds to build.

Two tasks whose answer lives in the *motion*, never in a single frame:

* **Motion classification** (:func:`make_motion_dataset`): one textured disc (light blocks
  on a mid-tone, random colours) over a darker smoothly textured background either
  translates (``left``/``right``/``up``/``down``) or spins in place
  (``clockwise``/``anticlockwise``). The disc is always lighter than the background, so a
  frame difference shows a moving disc with the same signs in every video: models that mix
  raw frames linearly (early fusion, the channel layout) can learn the motion too. Appearance, position, size and speed are drawn by the
  same random process for every class, in the same order, so the first frame has the same
  distribution whatever the class (with the same random generator the first frames of all
  six classes are *identical*). Positions live on a torus (a disc leaving on the right
  re-enters on the left; start positions are uniform over the whole frame, and start
  angles uniform), so *every* frame, not just the first, has a class-independent
  distribution: a frame-level model is at chance, a model that compares frames is not.
* **Moving-object segmentation** (:func:`make_segmentation_dataset`): several look-alike
  textured discs, some still and some moving (at least 2 px per frame); the per-frame mask
  marks only the moving ones. Which disc moves is drawn after its appearance and position
  (both drawn alike for all discs, positions uniform on the same torus), so one frame
  cannot tell them apart but two consecutive frames can.

Videos are written as real H.264 (``libx264``, ``yuv420p``, crf 18, a keyframe every 8
frames, one encoder thread and no macroblock tree so files are reproducible) so they
exercise the same decode path as user videos. The pure generators (:func:`make_motion_frames`,
:func:`make_segmentation_frames`) do no I/O and are what the writers call.

Image convention: ``x`` grows to the right, ``y`` grows *down*; ``clockwise`` is clockwise
as seen on screen.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from fractions import Fraction
from pathlib import Path

import numpy as np

from hyperframes._core._errors import ConfigError

from ._scene import (
    _background,
    _bright_texture,
    _check_fps,
    _check_int,
    _check_progress,
    _check_rng,
    _check_scale,
    _check_size,
    _dark_background,
    _disc,
    _jittered_length,
    _object_texture,
    _palette,
    _texture_side,
    _tiling_texture,
    _to_uint8,
    _view,
)

__all__ = [
    "MOTION_CLASSES",
    "MOTION_SCENES",
    "make_motion_dataset",
    "make_motion_frames",
    "make_segmentation_dataset",
    "make_segmentation_frames",
    "write_h264",
]

MOTION_CLASSES: tuple[str, ...] = ("left", "right", "up", "down", "clockwise", "anticlockwise")
#: what moves in a motion clip: one disc over a still background, or the whole view (a camera
#: panning, or rolling for the two rotation classes, over a textured scene)
MOTION_SCENES: tuple[str, ...] = ("disc", "pan")

# Unit direction (dx, dy) of each translation class, and the sign of each rotation class
# (positive angle = clockwise on screen because y grows down).
_DIRECTIONS = {"left": (-1.0, 0.0), "right": (1.0, 0.0), "up": (0.0, -1.0), "down": (0.0, 1.0)}
_SPINS = {"clockwise": 1.0, "anticlockwise": -1.0}

_CRF = 18
_GOP = 8

Progress = Callable[[int, int], object]


# --------------------------------------------------------------------------- motion


def make_motion_frames(
    label: str,
    *,
    frames: int,
    size: int,
    rng: np.random.Generator,
    motion: float = 1.0,
    scene: str = "disc",
) -> np.ndarray:
    """Render one motion-classification clip; pure, no I/O.

    ``label`` is one of :data:`MOTION_CLASSES`. Everything random (background, disc
    texture and colours, radius, start position, start angle, speed) is drawn from ``rng``
    in an order that does not depend on ``label``; the label only picks the direction of
    motion. Translations move 1.25-2.5 px per frame (at 64 px, scaled with ``size``) and
    wrap around the edges; rotations turn 5-10 degrees per frame about a fixed centre;
    ``motion`` scales both (0 gives a still clip: the class is then invisible).

    ``scene="pan"`` moves the whole view instead of a disc: a camera over a tiling textured
    scene (features from about the frame's size down to a quarter of it) pans so that the picture moves in the
    label's direction at the same speeds, or rolls about the frame's centre for the rotation
    classes. Every patch of the frame then moves: the data on which masked video pretraining
    learns the direction of motion (the self-supervised guide), where over the still
    background of ``"disc"`` it does not. Its draws are also made in an order that does not
    depend on ``label``.

    Returns an array (frames, size, size, 3) of uint8 RGB.
    """
    if label not in MOTION_CLASSES:
        raise ConfigError(f"unknown motion class {label!r}; choose from {MOTION_CLASSES}")
    frames = _check_int("frames", frames, 1)
    size = _check_size(size)
    rng = _check_rng(rng)
    motion = _check_scale(motion)
    _check_scene(scene)
    if scene == "pan":
        return _pan_frames(label, frames, size, rng, motion)

    background = _dark_background(size, rng)
    radius = size * rng.uniform(0.16, 0.24)
    tex = _bright_texture(_texture_side(radius), rng)
    cx, cy = rng.uniform(0.0, size, 2)  # uniform on the torus: every frame looks alike
    angle0 = rng.uniform(0.0, 2.0 * math.pi)
    speed = rng.uniform(1.25, 2.5) * size / 64.0 * motion  # px per frame
    spin = math.radians(rng.uniform(5.0, 10.0)) * motion  # rad per frame

    dx, dy = _DIRECTIONS.get(label, (0.0, 0.0))
    turn = _SPINS.get(label, 0.0)
    out = np.empty((frames, size, size, 3), dtype=np.uint8)
    for t in range(frames):
        rgb, alpha = _disc(
            size, tex, radius, cx + dx * speed * t, cy + dy * speed * t, angle0 + turn * spin * t
        )
        a = alpha[..., None]
        out[t] = _to_uint8(background * (1.0 - a) + rgb * a)
    return out


def _check_scene(scene: object) -> None:
    if scene not in MOTION_SCENES:
        raise ConfigError(f"unknown motion scene {scene!r}; choose from {MOTION_SCENES}")


def _pan_frames(
    label: str, frames: int, size: int, rng: np.random.Generator, motion: float
) -> np.ndarray:
    """:func:`make_motion_frames` with ``scene="pan"``."""
    period = 2 * size  # a clip never sees the texture repeat across one frame
    tex = _tiling_texture(period, rng)
    x0, y0 = rng.uniform(0.0, period, 2)
    angle0 = rng.uniform(0.0, 2.0 * math.pi)
    speed = rng.uniform(1.25, 2.5) * size / 64.0 * motion
    spin = math.radians(rng.uniform(5.0, 10.0)) * motion
    dx, dy = _DIRECTIONS.get(label, (0.0, 0.0))
    turn = _SPINS.get(label, 0.0)
    out = np.empty((frames, size, size, 3), dtype=np.uint8)
    cos, sin = math.cos(angle0), math.sin(angle0)
    for t in range(frames):
        # the picture moves by +v on screen: the view's centre moves by -v in screen axes,
        # which the texture's turn maps to texture axes
        sx, sy = -dx * speed * t, -dy * speed * t
        x = x0 + cos * sx + sin * sy
        y = y0 - sin * sx + cos * sy
        out[t] = _to_uint8(_view(tex, period, size, x, y, angle0 + turn * spin * t))
    return out


def make_motion_dataset(
    root: str | Path,
    *,
    classes: Sequence[str] = MOTION_CLASSES,
    videos_per_class: int = 8,
    frames: int = 32,
    size: int = 64,
    fps: float | Fraction = 15,
    seed: int = 0,
    progress: Progress | None = None,
    gop: int = 8,
    overwrite: bool = True,
    motion: float = 1.0,
    scene: str = "disc",
) -> list[Path]:
    """Write a motion-classification set as ``root/<label>/<label>_<i:03d>.mp4``.

    ``scene`` is what moves (:data:`MOTION_SCENES`; see :func:`make_motion_frames`).

    ``gop`` is the keyframe interval (250 gives x264's default, as in most real footage);
    ``overwrite=False`` keeps files already there (generation is deterministic, so a rerun
    leaves a store built from them valid).

    Each video is ``frames`` ± up to 4 frames long (``frames // 4`` for short clips), so
    stores built from it hold videos of different lengths. Video ``i`` of class ``label``
    is rendered from ``numpy.random.default_rng([seed, class_id, i])`` where ``class_id``
    is the label's index in :data:`MOTION_CLASSES`, so a class's videos do not change
    when other classes are added or removed. ``progress(done, total)`` is called after
    each video. Returns the written paths, class by class.
    """
    if isinstance(classes, str):
        raise ConfigError(f"classes must be a sequence of labels, got the string {classes!r}")
    classes = tuple(classes)
    if not classes:
        raise ConfigError(f"classes must not be empty; choose from {MOTION_CLASSES}")
    unknown = [c for c in classes if c not in MOTION_CLASSES]
    if unknown:
        raise ConfigError(f"unknown motion classes {unknown}; choose from {MOTION_CLASSES}")
    if len(set(classes)) != len(classes):
        raise ConfigError(f"classes must not repeat, got {classes}")
    videos_per_class = _check_int("videos_per_class", videos_per_class, 1)
    frames = _check_int("frames", frames, 4)
    size = _check_size(size)
    rate = _check_fps(fps)
    seed = _check_int("seed", seed, 0)
    motion = _check_scale(motion)
    _check_scene(scene)
    _check_progress(progress)

    root = Path(root)
    total = len(classes) * videos_per_class
    paths: list[Path] = []
    for label in classes:
        class_id = MOTION_CLASSES.index(label)
        for i in range(videos_per_class):
            path = root / label / f"{label}_{i:03d}.mp4"
            if overwrite or not path.exists():
                rng = np.random.default_rng([seed, class_id, i])
                clip = make_motion_frames(
                    label,
                    frames=_jittered_length(frames, rng),
                    size=size,
                    rng=rng,
                    motion=motion,
                    scene=scene,
                )
                write_h264(path, clip, fps=rate, gop=gop)
            paths.append(path)
            if progress is not None:
                progress(len(paths), total)
    return paths


# --------------------------------------------------------------------------- segmentation


def _segmentation_scene(size: int, rng: np.random.Generator) -> dict:
    """Draw one scene: background, look-alike discs, then which of them move.

    Appearance and start positions of all discs are drawn before (and independently of)
    the choice of which discs move, so a disc's look says nothing about its motion.
    """
    background = _background(size, rng)
    n = int(rng.integers(3, 6))  # 3 to 5 discs
    radius = size * rng.uniform(0.08, 0.11)  # one shape for all: look-alikes
    palette = _palette(rng)  # one palette for all discs; each gets its own block layout
    textures = [_object_texture(_texture_side(radius), rng, palette) for _ in range(n)]
    starts = rng.uniform(0.0, size, (n, 2))  # uniform on the torus, like moving discs
    n_moving = int(rng.integers(1, n))  # at least one moving and one still disc
    moving = np.zeros(n, dtype=bool)
    moving[rng.permutation(n)[:n_moving]] = True
    heading = rng.uniform(0.0, 2.0 * math.pi, n)
    speed = rng.uniform(2.0, 3.0, n) * max(1.0, size / 64.0)  # >= 2 px per frame
    velocity = np.stack([np.cos(heading), np.sin(heading)], axis=1) * speed[:, None]
    velocity[~moving] = 0.0
    return {
        "background": background,
        "radius": radius,
        "textures": textures,
        "starts": starts,
        "velocity": velocity,
        "moving": moving,
        "order": rng.permutation(n),  # drawing order (front-most last), motion-blind
    }


def make_segmentation_frames(
    *, frames: int, size: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Render one moving-object segmentation clip; pure, no I/O.

    3-5 discs of the same radius and texture statistics sit on a textured background;
    at least one moves (2-3 px per frame in a random direction, wrapping around the
    edges) and at least one stays still. The mask is 1 where a *moving* disc is the
    front-most thing covering the pixel (alpha >= 0.5) and 0 elsewhere (background,
    still discs, moving discs hidden behind still ones).

    Returns ``(frames (T, size, size, 3) uint8, masks (T, size, size) uint8)``.
    """
    frames = _check_int("frames", frames, 1)
    size = _check_size(size)
    rng = _check_rng(rng)
    scene = _segmentation_scene(size, rng)
    return _render_segmentation(scene, frames, size)


def _render_segmentation(scene: dict, frames: int, size: int) -> tuple[np.ndarray, np.ndarray]:
    video = np.empty((frames, size, size, 3), dtype=np.uint8)
    masks = np.empty((frames, size, size), dtype=np.uint8)
    for t in range(frames):
        canvas = scene["background"].copy()
        moving_front = np.zeros((size, size), dtype=bool)
        for k in scene["order"]:
            cx, cy = scene["starts"][k] + scene["velocity"][k] * t
            rgb, alpha = _disc(size, scene["textures"][k], scene["radius"], cx, cy, 0.0)
            a = alpha[..., None]
            canvas = canvas * (1.0 - a) + rgb * a
            covered = alpha >= 0.5
            moving_front[covered] = bool(scene["moving"][k])
        video[t] = _to_uint8(canvas)
        masks[t] = moving_front
    return video, masks


def make_segmentation_dataset(
    root: str | Path,
    *,
    videos: int = 16,
    frames: int = 32,
    size: int = 64,
    fps: float | Fraction = 15,
    seed: int = 0,
    progress: Progress | None = None,
) -> list[Path]:
    """Write a segmentation set as ``root/seg_<i:03d>.mp4`` + ``root/seg_<i:03d>.npz``.

    The ``.npz`` (same stem as the video) holds ``masks``: (F, size, size) uint8, 1 on
    moving discs, one mask per video frame, stored losslessly. Lengths are ``frames`` ±
    up to 4 like :func:`make_motion_dataset`; video ``i`` is rendered from
    ``numpy.random.default_rng([seed, i])``. Returns the video paths.
    """
    videos = _check_int("videos", videos, 1)
    frames = _check_int("frames", frames, 4)
    size = _check_size(size)
    rate = _check_fps(fps)
    seed = _check_int("seed", seed, 0)
    _check_progress(progress)

    root = Path(root)
    paths: list[Path] = []
    for i in range(videos):
        rng = np.random.default_rng([seed, i])
        clip, masks = make_segmentation_frames(
            frames=_jittered_length(frames, rng), size=size, rng=rng
        )
        path = root / f"seg_{i:03d}.mp4"
        # masks first (temp name + rename), then the video: a video never lacks its masks
        tmp_masks = path.with_name(f".{path.stem}.partial.npz")
        path.parent.mkdir(parents=True, exist_ok=True)
        np.savez_compressed(tmp_masks, masks=masks)
        os.replace(tmp_masks, path.with_suffix(".npz"))
        write_h264(path, clip, fps=rate)
        paths.append(path)
        if progress is not None:
            progress(len(paths), videos)
    return paths


# --------------------------------------------------------------------------- writing


def _rgb_to_i420(image: np.ndarray) -> np.ndarray:
    """(H, W, 3) uint8 RGB as one (H * 3 / 2, W) I420 array: BT.601, limited range (what a
    decoder assumes for an untagged stream), chroma from each 2x2 block's mean.

    Integer arithmetic in numpy, not swscale: the same frames then give the same encoder
    input with any FFmpeg build and CPU (swscale's SIMD paths are not bit-exact with each
    other unless asked), so the demo's files can repeat across machines.
    """
    rgb = image.astype(np.int32)
    h, w = rgb.shape[:2]
    r, g, b = rgb[..., 0], rgb[..., 1], rgb[..., 2]
    y = ((66 * r + 129 * g + 25 * b + 128) >> 8) + 16
    quad = rgb.reshape(h // 2, 2, w // 2, 2, 3).sum(axis=(1, 3))  # 4x each block's mean
    r4, g4, b4 = quad[..., 0], quad[..., 1], quad[..., 2]
    u = ((-38 * r4 - 74 * g4 + 112 * b4 + 512) >> 10) + 128
    v = ((112 * r4 - 94 * g4 - 18 * b4 + 512) >> 10) + 128
    planes = np.concatenate([y.ravel(), u.ravel(), v.ravel()])  # PyAV's flat I420 layout
    return planes.astype(np.uint8).reshape(h * 3 // 2, w)


def write_h264(
    path: str | Path, frames: np.ndarray, *, fps: float | Fraction = 15, gop: int = _GOP
) -> Path:
    """Encode (T, H, W, 3) uint8 RGB ``frames`` to an H.264 ``.mp4`` at ``path``.

    ``libx264``, ``yuv420p`` (converted in numpy: :func:`_rgb_to_i420`), crf 18, a keyframe
    every 8 frames, no B-frames, no macroblock-tree rate control, one encoder thread (so the
    same frames give the same bytes). H and W must be even. Parent
    folders are created. Returns the path.
    """
    import av  # heavy; only needed when writing

    frames = np.asarray(frames)
    if frames.ndim != 4 or frames.shape[-1] != 3 or frames.dtype != np.uint8 or not len(frames):
        raise ConfigError(
            f"frames must be a non-empty (T, H, W, 3) uint8 array, got shape "
            f"{frames.shape} dtype {frames.dtype}"
        )
    height, width = frames.shape[1:3]
    if height % 2 or width % 2:
        raise ConfigError(f"H.264 yuv420p needs even height and width, got {height}x{width}")
    rate = _check_fps(fps)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    # written under a temporary name and renamed when complete: never a partial .mp4
    tmp = path.with_name(f".{path.stem}.partial{path.suffix}")
    with av.open(str(tmp), mode="w", format="mp4") as container:
        stream = container.add_stream(
            "libx264",
            rate=rate,
            options={
                "crf": str(_CRF),
                "g": str(gop),
                "bf": "0",
                "preset": "medium",
                "threads": "1",
                # x264's macroblock-tree rate control gave other bytes for the same frames
                # now and then (2 of 80 encodes of a 32 px clip after heap churn in one
                # process; 0 of 300 with it off), and the files must repeat
                "x264-params": "mbtree=0",
            },
        )
        stream.width = width
        stream.height = height
        stream.pix_fmt = "yuv420p"
        stream.codec_context.thread_count = 1
        for image in frames:
            frame = av.VideoFrame.from_ndarray(_rgb_to_i420(image), format="yuv420p")
            container.mux(stream.encode(frame))
        container.mux(stream.encode(None))
    os.replace(tmp, path)
    return path
