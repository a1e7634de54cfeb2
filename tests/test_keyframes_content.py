"""The keyframes sampler picks content changes, not codec I-frames, and spreads its picks.

The clip is generated here: four textured scenes, each slowly panning, with cuts at known
frames, encoded with libx264; then re-encoded at a low quality with I-frames forced at other
frames, where the picture jumps in fine detail and blocking but not in content.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest

from hyperframes import ConfigError, DataError
from hyperframes.data import HyperframeDataset
from hyperframes.sampling import ChangeScorer, VideoMeta, change_score, create_sampler
from hyperframes.sampling._keyframes import salience
from hyperframes.store import build_store

av = pytest.importorskip("av")
if "libx264" not in av.codecs_available:
    pytest.skip("PyAV was built without libx264", allow_module_level=True)

W, H, N = 192, 144, 120
CUTS = (31, 62, 94)
IFRAMES = (22, 40, 70, 101)  # away from the cuts (and the fill's middles: see the plans)
PLAN_SIZES = (3, 6, 8)


def _texture(rng: np.random.Generator, h: int, w: int) -> np.ndarray:
    """Coarse random blocks + fine noise + stripes, (h, w, 3) float in 0..255."""
    blocks = np.kron(rng.random((h // 16 + 2, w // 16 + 2, 3)), np.ones((16, 16, 1)))[:h, :w]
    yy, xx = np.mgrid[0:h, 0:w]
    freq, angle = rng.uniform(0.05, 0.2), rng.uniform(0, np.pi)
    stripes = 0.25 * np.sin(freq * (np.cos(angle) * xx + np.sin(angle) * yy))[..., None]
    img = 0.6 * blocks + 0.35 * rng.random((h, w, 3)) + stripes
    return (img - img.min()) / (img.max() - img.min()) * 255


def _view(tex: np.ndarray, y: float, x: float) -> np.ndarray:
    """The (H, W) window of ``tex`` at a sub-pixel offset (bilinear): a slow, smooth pan."""
    y0, x0 = int(np.floor(y)), int(np.floor(x))
    fy, fx = y - y0, x - x0
    a = tex[y0 : y0 + H + 1, x0 : x0 + W + 1]
    top = a[:-1, :-1] * (1 - fx) + a[:-1, 1:] * fx
    bottom = a[1:, :-1] * (1 - fx) + a[1:, 1:] * fx
    return (top * (1 - fy) + bottom * fy).round().astype(np.uint8)


def _scenes(seed: int = 0, speed: float = 0.25) -> np.ndarray:
    """(N, H, W, 3) uint8: a new scene at every cut, each panning ``speed`` px per frame."""
    rng = np.random.default_rng(seed)
    bounds = (0, *CUTS, N)
    frames = []
    for start, stop in itertools.pairwise(bounds):
        tex = _texture(rng, H + 40, W + 40)
        dy, dx = rng.choice([-1.0, 1.0], 2) * speed
        frames += [_view(tex, 20 + dy * k, 20 + dx * k) for k in range(stop - start)]
    return np.stack(frames)


def _encode(frames: np.ndarray, path: Path, *, crf: int, iframes=(), params: str = "") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with av.open(str(path), "w") as out:
        s = out.add_stream("libx264", rate=30)
        s.width, s.height, s.pix_fmt = W, H, "yuv420p"
        s.options = {"crf": str(crf), "preset": "veryfast", "bf": "0", "x264-params": params}
        for i, img in enumerate(frames):
            f = av.VideoFrame.from_ndarray(np.ascontiguousarray(img), format="rgb24")
            f.pts = i
            if i in iframes:
                f.pict_type = av.video.frame.PictureType.I
            for pkt in s.encode(f):
                out.mux(pkt)
        for pkt in s.encode():
            out.mux(pkt)
    return path


def _decode(path: Path) -> tuple[np.ndarray, list[int]]:
    """(F, 3, H, W) uint8 frames and the indices of the I-frames."""
    frames, iframes = [], []
    with av.open(str(path)) as c:
        for i, f in enumerate(c.decode(video=0)):
            frames.append(f.to_ndarray(format="rgb24").transpose(2, 0, 1))
            if f.pict_type == av.video.frame.PictureType.I:
                iframes.append(i)
    return np.stack(frames), iframes


# only the forced I-frames (no scene-cut detection), each much better than the P-frames
_LOW_QUALITY = "keyint=1000:min-keyint=1000:scenecut=0:ipratio=3.0"


@pytest.fixture(scope="module")
def clips(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("keyframes")
    first, _ = _decode(_encode(_scenes(), root / "original.mp4", crf=18))
    rgb = first.transpose(0, 2, 3, 1)
    forced = _encode(
        rgb, root / "clips" / "a" / "reencoded.mp4", crf=36, iframes=IFRAMES, params=_LOW_QUALITY
    )
    plain = _encode(rgb, root / "plain.mp4", crf=36, params=_LOW_QUALITY)
    return {"root": root, "forced": _decode(forced), "plain": _decode(plain)}


def _plan(scores: np.ndarray, frames: int, **options) -> list[int]:
    meta = VideoMeta(len(scores), 30.0, change_score=scores)
    return (
        create_sampler("keyframes", frames=frames, **options).plan([meta], 0).frame_indices.tolist()
    )


def _near(picks, frame: int) -> bool:
    return any(abs(p - frame) <= 1 for p in picks)


def test_the_copy_has_i_frame_quality_jumps_where_forced(clips):
    frames, iframes = clips["forced"]
    assert frames.shape == (N, 3, H, W)
    assert iframes == [0, *IFRAMES]  # the cuts are P-frames in this copy
    # a visible jump: full-resolution change at each I-frame is several times the usual
    fine = np.abs(np.diff(frames.astype(np.int16), axis=0)).mean((1, 2, 3))  # fine[i-1]: i-1 -> i
    usual = np.median(np.delete(fine, [f - 1 for f in (*CUTS, *IFRAMES)]))
    assert all(fine[f - 1] > 3 * usual for f in IFRAMES), (fine[[f - 1 for f in IFRAMES]], usual)


def test_cuts_score_high_and_i_frames_low(clips):
    frames, _ = clips["forced"]
    s = salience(change_score(frames))
    assert all(s[c] > 0.9 for c in CUTS), s[list(CUTS)]
    assert all(s[f] < 0.2 for f in IFRAMES), s[list(IFRAMES)]  # min_change is 0.5
    assert s[0] == 0  # frame 0 has no predecessor: no free score


@pytest.mark.parametrize("frames", PLAN_SIZES)
def test_picks_are_the_cuts_not_the_i_frames_and_spread(clips, frames):
    scores = change_score(clips["forced"][0])
    picks = _plan(scores, frames)
    assert len(picks) == frames and picks == sorted(set(picks))
    assert all(_near(picks, c) for c in CUTS), picks
    assert not any(_near(picks, f) for f in IFRAMES), picks
    assert min(np.diff(picks)) >= N // (2 * frames), picks  # the default min_gap
    assert 0 not in picks
    if frames == len(CUTS):
        assert picks == list(CUTS)
    # the forced I-frames change nothing: the same plan as the copy without them
    assert picks == _plan(change_score(clips["plain"][0]), frames)


def test_plans_from_a_built_store(clips, tmp_path):
    """The build records the scores (ChangeScorer, at the stored size) and the dataset plans
    with them."""
    out = tmp_path / "store"
    build_store(clips["root"] / "clips", out, progress=False)
    ds = HyperframeDataset(out, sampler="keyframes", frames=len(CUTS))
    assert ds[0].meta["frame_indices"].tolist() == list(CUTS)


def test_real_footage_cut_found_dissolve_not_bunched(shared_videos):
    """nasa_13013.mp4 (first video stream): a dissolve over frames ~127-150, a cut at 202
    (also an I-frame). The old sampler picked [0, 127, 132, 137, 142, 144, 147, 202]."""
    frames, _ = _decode(shared_videos / "nasa_13013.mp4")
    picks = _plan(change_score(frames), 8)
    assert 202 in picks and 0 not in picks
    assert min(np.diff(picks)) >= len(frames) // 16
    assert sum(120 <= p <= 155 for p in picks) <= 2


# -- the rule on hand-made scores -----------------------------------------------------------


def test_a_burst_of_changes_gives_one_pick():
    scores = np.full(120, 0.05)
    scores[[29, 30, 32, 33, 34, 35, 41]] = [1.0, 1.2, 0.9, 1.1, 0.8, 1.3, 0.7]
    picks = _plan(scores, 8)  # min_gap = 120 // 16 = 7: 29 and 41 are too close to 35
    assert [p for p in picks if 29 <= p <= 41] == [35]
    assert picks == [17, 35, 45, 56, 66, 77, 98, 109]
    # a smaller gap lets the burst's other peaks in (30, 32, 33, 34 are not peaks: within a
    # burst the running median is high, so their salience is low)
    assert [p for p in _plan(scores, 8, min_gap=3) if 29 <= p <= 41] == [29, 35, 41]


def test_frame_0_earns_nothing_and_no_changes_spread_evenly():
    flat = np.full(120, 0.02)
    assert _plan(flat, 3) == [29, 59, 89]
    old_store = flat.copy()
    old_store[0] = 5.0  # stores built before recorded the video's largest score at frame 0
    assert _plan(old_store, 3) == [29, 59, 89]
    steady_motion = np.full(120, 0.8)  # over min_change, but the same every frame
    assert _plan(steady_motion, 3) == [29, 59, 89]
    assert _plan(flat, 120) == list(range(120))


def test_min_change_decides_what_counts():
    scores = np.full(60, 0.05)
    scores[40] = 0.3
    assert 40 not in _plan(scores, 2)
    assert 40 in _plan(scores, 2, min_change=0.2)


def test_options_are_checked():
    with pytest.raises(ConfigError, match=r"min_change must be a number > 0, got 0"):
        create_sampler("keyframes", frames=4, min_change=0)
    with pytest.raises(ConfigError, match=r"min_gap must be an integer >= 1, got 0"):
        create_sampler("keyframes", frames=4, min_gap=0)
    s = create_sampler("keyframes", frames=4, min_gap=3)
    assert s.params() == {"frames": 4, "short": "error", "min_gap": 3, "min_change": 0.5}


# -- the score ----------------------------------------------------------------------------


def test_score_is_a_fraction_of_the_contrast_whatever_the_frame_scale(clips):
    frames = clips["forced"][0][:40]
    uint8 = change_score(frames)
    normalised = ((frames.astype(np.float32) - 110.0) / 60.0).astype(np.float16)
    np.testing.assert_allclose(change_score(normalised), uint8, rtol=2e-2, atol=2e-3)
    assert change_score(np.full((5, 3, 8, 8), 7, np.uint8)).tolist() == [0.0] * 5


def test_scorer_refuses_a_frame_of_another_shape():
    scorer = ChangeScorer()
    scorer.add(np.zeros((3, 16, 16), np.uint8))
    with pytest.raises(DataError, match=r"frame shape \(3, 8, 8\) differs from the first"):
        scorer.add(np.zeros((3, 8, 8), np.uint8))


@pytest.mark.parametrize("shape", [(3, 4, 1000), (1, 1, 1), (3, 999, 7)])
def test_score_of_odd_frame_shapes(shape):
    rng = np.random.default_rng(0)
    frames = rng.integers(0, 256, (4, *shape), dtype=np.uint8)
    scores = change_score(frames)
    assert scores.shape == (4,) and np.isfinite(scores).all() and scores[0] == 0
