"""The demo's self-generated datasets: layout, decodability, determinism, and that the
answer lives in the motion (two frames tell it, one frame does not)."""

from __future__ import annotations

import math
import tracemalloc

import av
import numpy as np
import pytest

from hyperframes._core._errors import ConfigError
from hyperframes.demo._synthetic import (
    MOTION_CLASSES,
    _segmentation_scene,
    make_motion_dataset,
    make_motion_frames,
    make_segmentation_dataset,
    make_segmentation_frames,
    write_h264,
)


def decode(path) -> np.ndarray:
    with av.open(str(path)) as container:
        return np.stack([f.to_ndarray(format="rgb24") for f in container.decode(video=0)])


# --------------------------------------------------------------------------- motion statistics


def estimate_shift(f0: np.ndarray, f1: np.ndarray, radius: int = 4) -> tuple[int, int]:
    """Integer (dx, dy) that best maps f0 onto f1 on the pixels that changed."""
    f0 = f0.astype(np.float32)
    f1 = f1.astype(np.float32)
    changed = np.abs(f1 - f0).sum(-1) > 30
    best = (math.inf, 0, 0)
    for dy in range(-radius, radius + 1):
        for dx in range(-radius, radius + 1):
            err = np.abs(f1 - np.roll(f0, (dy, dx), (0, 1))).sum(-1)[changed].mean()
            best = min(best, (err, dx, dy))
    return best[1], best[2]


def estimate_spin(f0: np.ndarray, f1: np.ndarray) -> float:
    """Least-squares angular velocity (degrees / frame, > 0 clockwise on screen) about the
    circular-mean centre of the changed pixels (the frame is a torus)."""
    g0 = f0.astype(np.float32)
    g1 = f1.astype(np.float32)
    size = g0.shape[0]
    changed = np.abs(g1 - g0).sum(-1) > 30
    ys, xs = np.nonzero(changed)
    w = 2 * np.pi / size
    cx = np.angle(np.exp(1j * w * xs).mean()) / w
    cy = np.angle(np.exp(1j * w * ys).mean()) / w
    roll = (round(size / 2 - cy), round(size / 2 - cx))
    g0, g1, changed = (np.roll(a, roll, (0, 1)) for a in (g0, g1, changed))
    iy, ix = np.gradient((g0 + g1) / 2, axis=(0, 1))
    yy, xx = np.mgrid[0:size, 0:size].astype(np.float32) - size / 2
    g = iy * xx[..., None] - ix * yy[..., None]  # d(image)/d(angle) for a rotation about centre
    return math.degrees(-((g1 - g0) * g)[changed].sum() / (g * g)[changed].sum())


def single_frame_features(frame: np.ndarray) -> np.ndarray:
    f = frame.astype(np.float32)
    return np.array(
        [
            *f.mean((0, 1)),
            f.std(),
            np.abs(np.diff(f, axis=1)).mean(),
            np.abs(np.diff(f, axis=0)).mean(),
        ]
    )


# --------------------------------------------------------------------------- motion: pure


def test_motion_frames_shape_dtype_and_determinism():
    a = make_motion_frames("left", frames=5, size=32, rng=np.random.default_rng(1))
    b = make_motion_frames("left", frames=5, size=32, rng=np.random.default_rng(1))
    c = make_motion_frames("left", frames=5, size=32, rng=np.random.default_rng(2))
    assert a.shape == (5, 32, 32, 3) and a.dtype == np.uint8
    assert np.array_equal(a, b)
    assert not np.array_equal(a, c)


def test_first_frame_does_not_depend_on_class():
    # the class is drawn nowhere: same generator -> same first frame for every class
    clips = {
        label: make_motion_frames(label, frames=3, size=48, rng=np.random.default_rng(7))
        for label in MOTION_CLASSES
    }
    for label in MOTION_CLASSES[1:]:
        assert np.array_equal(clips[label][0], clips["left"][0]), label
        assert not np.array_equal(clips[label][2], clips["left"][2]), label


def test_single_frame_statistics_do_not_separate_classes():
    # any frame (here a late one) is drawn from the same distribution for every class
    n = 24
    feats = {
        label: np.stack(
            [
                single_frame_features(
                    make_motion_frames(label, frames=8, size=48, rng=np.random.default_rng([k, i]))[
                        -1
                    ]
                )
                for i in range(n)
            ]
        )
        for k, label in enumerate(MOTION_CLASSES)
    }
    for a in MOTION_CLASSES:
        for b in MOTION_CLASSES:
            se = np.sqrt(feats[a].var(0) / n + feats[b].var(0) / n)
            z = np.abs(feats[a].mean(0) - feats[b].mean(0)) / se
            assert z.max() < 4, (a, b, z)


def test_two_frames_tell_the_motion():
    expected = {"left": (-1, 0), "right": (1, 0), "up": (0, -1), "down": (0, 1)}
    for k, label in enumerate(MOTION_CLASSES):
        for i in range(10):
            f0, f1 = make_motion_frames(
                label, frames=2, size=64, rng=np.random.default_rng([100 + k, i])
            )
            if label in expected:
                dx, dy = estimate_shift(f0, f1)
                assert (np.sign(dx), np.sign(dy)) == expected[label], (label, i, dx, dy)
            else:
                spin = estimate_spin(f0, f1)
                assert spin > 3 if label == "clockwise" else spin < -3, (label, i, spin)


def test_motion_scale_scales_the_speed():
    for label in ("right", "anticlockwise"):
        base, fast = (
            make_motion_frames(label, frames=3, size=32, rng=np.random.default_rng(7), motion=m)
            for m in (1.0, 2.0)
        )
        assert not np.array_equal(base[1], base[2])
        np.testing.assert_array_equal(fast[1], base[2])  # twice the speed: frame 1 = frame 2
    still = make_motion_frames("left", frames=3, size=32, rng=np.random.default_rng(1), motion=0)
    assert (still == still[0]).all()
    with pytest.raises(ConfigError, match="motion"):
        make_motion_frames("left", frames=2, size=32, rng=np.random.default_rng(0), motion=-1)


def test_motion_frames_rejects_bad_arguments():
    rng = np.random.default_rng(0)
    with pytest.raises(ConfigError, match="unknown motion class"):
        make_motion_frames("sideways", frames=4, size=32, rng=rng)
    with pytest.raises(ConfigError, match="even"):
        make_motion_frames("left", frames=4, size=33, rng=rng)
    with pytest.raises(ConfigError, match="Generator"):
        make_motion_frames("left", frames=4, size=32, rng=0)
    with pytest.raises(ConfigError, match="frames"):
        make_motion_frames("left", frames=0, size=32, rng=rng)


# --------------------------------------------------------------------------- motion: the pan scene


def spin_about_centre(f0: np.ndarray, f1: np.ndarray) -> float:
    """Least-squares angular velocity (degrees / frame, > 0 clockwise on screen) of the whole
    picture about the frame's centre."""
    g0, g1 = f0.astype(np.float32), f1.astype(np.float32)
    size = g0.shape[0]
    iy, ix = np.gradient((g0 + g1) / 2, axis=(0, 1))
    yy, xx = np.mgrid[0:size, 0:size].astype(np.float32) - (size - 1) / 2
    g = iy * xx[..., None] - ix * yy[..., None]
    return math.degrees(-((g1 - g0) * g).sum() / (g * g).sum())


def picture_shift(f0: np.ndarray, f1: np.ndarray, radius: int = 4) -> tuple[int, int]:
    """Integer (dx, dy) that best maps the whole picture f0 onto f1 (no wrap: the borders
    the shift uncovers are left out)."""
    g0, g1 = f0.astype(np.float32), f1.astype(np.float32)
    r, h = radius, f0.shape[0]
    inner = g1[r : h - r, r : h - r]
    errors = {
        (dx, dy): np.abs(inner - g0[r - dy : h - r - dy, r - dx : h - r - dx]).mean()
        for dy in range(-r, r + 1)
        for dx in range(-r, r + 1)
    }
    return min(errors, key=errors.__getitem__)


def moving_patch_share(clip: np.ndarray, patch: int = 8) -> float:
    """The share of (frame, patch) places that change by more than 5 levels to the next frame."""
    diff = np.abs(np.diff(clip.astype(np.int16), axis=0)).max(-1)
    t, h, w = diff.shape
    blocks = diff.reshape(t, h // patch, patch, w // patch, patch).max((2, 4))
    return float((blocks > 5).mean())


def test_pan_scene_moves_every_patch_in_the_labels_direction():
    expected = {"left": (-1, 0), "right": (1, 0), "up": (0, -1), "down": (0, 1)}
    for label in MOTION_CLASSES:
        for i in range(4):
            clip = make_motion_frames(
                label, frames=4, size=64, rng=np.random.default_rng([9, i]), scene="pan"
            )
            assert moving_patch_share(clip) > 0.9, (label, i)
            if label in expected:
                dx, dy = picture_shift(clip[0], clip[2])
                assert (np.sign(dx), np.sign(dy)) == expected[label], (label, i, dx, dy)
                assert abs(spin_about_centre(clip[0], clip[1])) < 1.5
            else:
                spin = spin_about_centre(clip[0], clip[1])
                assert 4 < (spin if label == "clockwise" else -spin) < 11, (label, i, spin)
    # the disc scene, for contrast: most places are still background
    disc = make_motion_frames("left", frames=4, size=64, rng=np.random.default_rng(0))
    assert moving_patch_share(disc) < 0.6


def test_pan_scene_is_deterministic_and_its_first_frame_does_not_depend_on_class():
    clips = {
        label: make_motion_frames(
            label, frames=3, size=32, rng=np.random.default_rng(4), scene="pan"
        )
        for label in MOTION_CLASSES
    }
    again = make_motion_frames("up", frames=3, size=32, rng=np.random.default_rng(4), scene="pan")
    assert np.array_equal(clips["up"], again)
    for label in MOTION_CLASSES[1:]:
        assert np.array_equal(clips[label][0], clips["left"][0]), label
        assert not np.array_equal(clips[label][2], clips["left"][2]), label
    still = make_motion_frames(
        "right", frames=3, size=32, rng=np.random.default_rng(4), scene="pan", motion=0
    )
    assert (still == clips["left"][0]).all()
    with pytest.raises(ConfigError, match="scene"):
        make_motion_frames("left", frames=2, size=32, rng=np.random.default_rng(0), scene="x")


def test_a_large_pan_frame_needs_no_large_temporaries():
    # the texture holds at most 256 samples a period and the view is computed in blocks of
    # rows: at 512 x 512 the first renderer's texture alone took gigabytes
    tracemalloc.start()
    try:
        clip = make_motion_frames(
            "up", frames=1, size=512, rng=np.random.default_rng(0), scene="pan"
        )
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert clip.shape == (1, 512, 512, 3) and clip.std() > 20
    assert peak < 100 * 2**20, f"{peak / 2**20:.0f} MiB"


def test_pan_dataset_writes_the_generator_as_h264(tmp_path):
    paths = make_motion_dataset(
        tmp_path, classes=("right",), videos_per_class=1, frames=8, size=64, seed=2, scene="pan"
    )
    video = decode(paths[0]).astype(np.int16)
    rng = np.random.default_rng([2, MOTION_CLASSES.index("right"), 0])
    length = 8 + int(rng.integers(-2, 3))
    raw = make_motion_frames("right", frames=length, size=64, rng=rng, scene="pan")
    assert video.shape == raw.shape
    error = np.abs(video - raw).mean()  # 4:2:0 on saturated colours
    assert error < 6
    assert error < np.abs(video[1:] - raw[:-1]).mean() / 2  # frame by frame
    assert picture_shift(video[0], video[2]) in ((2, 0), (3, 0), (4, 0), (5, 0))  # right


# --------------------------------------------------------------------------- motion: files


def test_motion_dataset_layout_decode_and_progress(tmp_path):
    calls = []
    classes = ("left", "right", "clockwise")
    paths = make_motion_dataset(
        tmp_path,
        classes=classes,
        videos_per_class=3,
        frames=12,
        size=64,
        seed=3,
        progress=lambda done, total: calls.append((done, total)),
    )
    assert calls == [(i, 9) for i in range(1, 10)]
    assert paths == [tmp_path / c / f"{c}_{i:03d}.mp4" for c in classes for i in range(3)]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(classes)
    assert sorted(tmp_path.rglob("*")) == sorted([*paths, *(tmp_path / c for c in classes)])

    lengths = set()
    for path in paths:
        label = path.parent.name
        video = decode(path)
        assert video.shape[1:] == (64, 64, 3)
        assert 9 <= len(video) <= 15  # 12 +- 12 // 4
        lengths.add(len(video))
        # the file is the documented generator, lightly compressed
        rng = np.random.default_rng([3, MOTION_CLASSES.index(label), int(path.stem[-3:])])
        assert len(video) == 12 + int(rng.integers(-3, 4))
        raw = make_motion_frames(label, frames=len(video), size=64, rng=rng)
        assert np.abs(video.astype(np.int16) - raw).mean() < 6  # 4:2:0 chroma, crf 18
        # motion survives the encoder
        if label in ("left", "right"):
            dx, dy = estimate_shift(video[0], video[1])
            assert (np.sign(dx), dy) == ((-1 if label == "left" else 1), 0), path
        else:
            assert estimate_spin(video[0], video[1]) > 3
    assert len(lengths) > 1


def test_motion_dataset_is_deterministic(tmp_path):
    kwargs = {"classes": ("up", "anticlockwise"), "videos_per_class": 2, "frames": 8, "size": 32}
    a = make_motion_dataset(tmp_path / "a", seed=5, **kwargs)
    b = make_motion_dataset(tmp_path / "b", seed=5, **kwargs)
    c = make_motion_dataset(tmp_path / "c", seed=6, **kwargs)
    for pa, pb, pc in zip(a, b, c, strict=True):
        assert pa.read_bytes() == pb.read_bytes()
        assert np.array_equal(decode(pa), decode(pb))
        assert pa.read_bytes() != pc.read_bytes()
    # a class's videos do not depend on which other classes are generated: the same bytes
    # (with x264's macroblock tree on, CI once wrote this clip 250 bytes apart here)
    d = make_motion_dataset(tmp_path / "d", seed=5, **{**kwargs, "classes": ("anticlockwise",)})
    assert d[0].read_bytes() == a[2].read_bytes()
    alone = decode(d[0]).astype(np.int16)
    assert np.abs(alone - decode(c[2]).astype(np.int16)).mean() > 5  # another seed: another clip


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"classes": ()}, "empty"),
        ({"classes": "left"}, "sequence"),
        ({"classes": ("left", "spin")}, "unknown"),
        ({"classes": ("left", "left")}, "repeat"),
        ({"videos_per_class": 0}, "videos_per_class"),
        ({"frames": 2}, "frames"),
        ({"size": 30.0}, "size"),
        ({"size": 50 + 1}, "even"),
        ({"fps": 0}, "fps"),
        ({"seed": -1}, "seed"),
        ({"progress": 3}, "progress"),
        ({"scene": "tilt"}, "scene"),
    ],
)
def test_motion_dataset_rejects_bad_arguments(tmp_path, kwargs, match):
    with pytest.raises(ConfigError, match=match):
        make_motion_dataset(tmp_path, **kwargs)
    assert not any(tmp_path.iterdir())


def test_write_h264_rejects_bad_frames(tmp_path):
    with pytest.raises(ConfigError, match="uint8"):
        write_h264(tmp_path / "x.mp4", np.zeros((2, 16, 16, 3), np.float32))
    with pytest.raises(ConfigError, match="even"):
        write_h264(tmp_path / "x.mp4", np.zeros((2, 15, 16, 3), np.uint8))


# --------------------------------------------------------------------------- segmentation


def test_segmentation_scene_has_still_and_moving_lookalikes():
    for i in range(20):
        scene = _segmentation_scene(64, np.random.default_rng(i))
        moving = scene["moving"]
        assert moving.any() and not moving.all()
        speed = np.hypot(*scene["velocity"].T)
        assert (speed[moving] >= 2).all() and (speed[~moving] == 0).all()
        assert len({t.shape for t in scene["textures"]}) == 1  # one shape for all discs


def test_segmentation_appearance_does_not_tell_motion():
    # disc textures and start positions are drawn before (and apart from) who moves
    moving_stats, still_stats = [], []
    for i in range(200):
        scene = _segmentation_scene(64, np.random.default_rng(i))
        for tex, start, m in zip(scene["textures"], scene["starts"], scene["moving"]):
            stats = np.array([*tex.mean((0, 1)), tex.std(), *start / 64])
            (moving_stats if m else still_stats).append(stats)
    a, b = np.array(moving_stats), np.array(still_stats)
    z = np.abs(a.mean(0) - b.mean(0)) / np.sqrt(a.var(0) / len(a) + b.var(0) / len(b))
    assert z.max() < 4, z


def test_segmentation_frames_masks_follow_the_moving_discs():
    for i in range(8):
        video, masks = make_segmentation_frames(frames=10, size=64, rng=np.random.default_rng(i))
        assert video.shape == (10, 64, 64, 3) and video.dtype == np.uint8
        assert masks.shape == (10, 64, 64) and masks.dtype == np.uint8
        assert set(np.unique(masks)) <= {0, 1}
        assert masks.any(axis=(1, 2)).mean() > 0.5
        scene = _segmentation_scene(64, np.random.default_rng(i))
        for t in range(9):
            assert not np.array_equal(masks[t], masks[t + 1])  # moving discs moved
            changed = np.any(video[t] != video[t + 1], axis=-1)
            near = masks[t].astype(bool) | masks[t + 1].astype(bool)
            near = _dilate(_dilate(near))
            # static discs and background are exactly still
            assert (changed & ~near).mean() < 0.005
            # centres of still discs are unmasked
            for (cx, cy), m in zip(scene["starts"], scene["moving"]):
                if not m and not near[int(cy), int(cx)]:
                    assert masks[t, int(cy), int(cx)] == 0


def _dilate(mask: np.ndarray) -> np.ndarray:
    out = mask.copy()
    for axis in (0, 1):
        for step in (-1, 1):
            out |= np.roll(mask, step, axis)
    return out


def test_segmentation_dataset_files_align(tmp_path):
    paths = make_segmentation_dataset(tmp_path, videos=3, frames=12, size=64, seed=1)
    assert paths == [tmp_path / f"seg_{i:03d}.mp4" for i in range(3)]
    assert sorted(tmp_path.iterdir()) == sorted([*paths, *(p.with_suffix(".npz") for p in paths)])
    for i, path in enumerate(paths):
        video = decode(path)
        with np.load(path.with_suffix(".npz")) as npz:
            masks = npz["masks"]
        assert masks.dtype == np.uint8 and masks.shape == (len(video), 64, 64)
        assert 9 <= len(video) <= 15
        rng = np.random.default_rng([1, i])
        assert len(video) == 12 + int(rng.integers(-3, 4))
        raw, raw_masks = make_segmentation_frames(frames=len(video), size=64, rng=rng)
        assert np.array_equal(masks, raw_masks)
        assert np.abs(video.astype(np.int16) - raw).mean() < 6  # 4:2:0 chroma, crf 18
        # in the decoded video, change between frames happens on the masked discs
        diff = np.abs(np.diff(video.astype(np.float32), axis=0)).sum(-1)
        on = (masks[:-1] | masks[1:]).astype(bool)
        assert diff[on].mean() > 8 * diff[~on].mean()
    again = make_segmentation_dataset(tmp_path / "again", videos=3, frames=12, size=64, seed=1)
    for a, b in zip(paths, again):
        assert a.read_bytes() == b.read_bytes()
        with np.load(a.with_suffix(".npz")) as na, np.load(b.with_suffix(".npz")) as nb:
            assert np.array_equal(na["masks"], nb["masks"])


def test_segmentation_rejects_bad_arguments(tmp_path):
    with pytest.raises(ConfigError, match="videos"):
        make_segmentation_dataset(tmp_path, videos=0)
    with pytest.raises(ConfigError, match="even"):
        make_segmentation_frames(frames=4, size=17, rng=np.random.default_rng(0))
