"""The keyframes sampler picks content changes, not codec I-frames, and spreads its picks.

The clip is generated here: four textured scenes, each slowly panning, with cuts at known
frames, encoded with libx264; then re-encoded at a low quality with I-frames forced at other
frames, where the picture jumps in fine detail and blocking but not in content.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest

from hyperframes import ConfigError, DataError, StoreError
from hyperframes.build import BuildOptions, build_store, convert_to_hdf5
from hyperframes.data import HyperframeDataset
from hyperframes.sampling import VideoMeta, create_sampler
from hyperframes.sampling._keyframes import MIN_FLOW, salience
from hyperframes.store import change_score, checksum_file, open_store
from hyperframes.store._change import ChangeScorer

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
    with pytest.raises(ConfigError, match=r"score must be one of auto, flow, change, got 'x'"):
        create_sampler("keyframes", frames=4, score="x")
    s = create_sampler("keyframes", frames=4, min_gap=3)
    assert s.params() == {
        "frames": 4,
        "short": "error",
        "min_gap": 3,
        "min_change": None,
        "score": "auto",
    }


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


# -- the flow score (a --flow build) ------------------------------------------------------


@pytest.fixture(scope="module")
def flow_store(clips, tmp_path_factory) -> Path:
    """The re-encoded clip (cuts, forced I-frames) built with DIS flow at its own size."""
    out = tmp_path_factory.mktemp("keyframes-flow") / "store"
    build_store(clips["root"] / "clips", out, BuildOptions(flow="dis"), progress=False)
    return out


def _copy_store(store: Path, to: Path) -> Path:
    import shutil

    shutil.copytree(store, to)
    return to


def _reseal(store: Path, *, drop: str | None = None) -> None:
    """Rewrite the manifest's index rows (sizes, checksums) after an edit; ``drop`` a row."""
    m = json.loads((store / "manifest.json").read_text())
    m["index"] = [row for row in m["index"] if row["name"] != drop]
    for row in m["index"]:
        f = store / row["name"]
        row["bytes"], row["checksum"] = f.stat().st_size, checksum_file(f)
    (store / "manifest.json").write_text(json.dumps(m))


def test_flow_score_peaks_at_the_cuts_not_the_i_frames(flow_store):
    scores = open_store(flow_store).flow_scores(0)
    assert scores.dtype == np.float32 and scores.shape == (N,) and scores[0] == 0
    s = salience(scores)
    # a cut is pixels of flow (content found nowhere); the pan is 0.35 px a frame
    assert all(s[c] > 4 * MIN_FLOW for c in CUTS), s[list(CUTS)]
    assert np.delete(s, list(CUTS)).max() < MIN_FLOW, s  # I-frames and noise included
    assert np.load(flow_store / "index" / "flow_score.npy").shape == (N,)


@pytest.mark.parametrize("frames", PLAN_SIZES)
def test_flow_score_plans_pick_the_cuts(flow_store, frames):
    ds = HyperframeDataset(flow_store, sampler="keyframes", frames=frames)
    assert ds.sampler.scores_used(ds._table(ds.store.videos)) == ["flow"]  # auto: flow stored
    picks = ds[0].meta["frame_indices"].tolist()
    assert len(picks) == frames and picks == sorted(set(picks))
    assert all(_near(picks, c) for c in CUTS), picks
    assert not any(_near(picks, f) for f in IFRAMES), picks
    assert min(np.diff(picks)) >= N // (2 * frames), picks
    assert 0 not in picks
    if frames == len(CUTS):
        assert picks == list(CUTS)
    flow = HyperframeDataset(
        flow_store, sampler="keyframes", frames=frames, sampler_options={"score": "flow"}
    )
    change = HyperframeDataset(
        flow_store, sampler="keyframes", frames=frames, sampler_options={"score": "change"}
    )
    assert change.sampler.scores_used(change._table(change.store.videos)) == ["change"]
    assert flow[0].meta["frame_indices"].tolist() == picks
    assert change[0].meta["frame_indices"].tolist() == picks  # both find the same cuts


def test_a_store_without_flow_scores_plans_with_the_change_score(flow_store, tmp_path):
    """A --flow store built before flow scores were recorded: no index/flow_score.npy."""
    old = _copy_store(flow_store, tmp_path / "old")
    (old / "index" / "flow_score.npy").unlink()
    _reseal(old, drop="index/flow_score.npy")
    store = open_store(old)
    assert store.flow_scores(0) is None and store.change_scores(0) is not None
    ds = HyperframeDataset(old, sampler="keyframes", frames=len(CUTS))
    assert ds.sampler.scores_used(ds._table(ds.store.videos)) == ["change"]
    assert ds[0].meta["frame_indices"].tolist() == list(CUTS)
    with pytest.raises(DataError, match=r"score='flow' needs a flow score for every video"):
        HyperframeDataset(old, sampler="keyframes", frames=3, sampler_options={"score": "flow"})[0]


def test_a_flow_score_file_of_the_wrong_length_is_refused(flow_store, tmp_path):
    bad = _copy_store(flow_store, tmp_path / "bad")
    np.save(bad / "index" / "flow_score.npy", np.zeros(N - 1, np.float32))
    _reseal(bad)
    with pytest.raises(StoreError, match=r"flow_score\.npy: holds float32 of shape \(119,\)"):
        open_store(bad)


def test_a_non_finite_flow_score_is_refused_when_read(flow_store, tmp_path):
    bad = _copy_store(flow_store, tmp_path / "nan")
    scores = np.load(bad / "index" / "flow_score.npy")
    scores[5] = np.nan
    np.save(bad / "index" / "flow_score.npy", scores)
    _reseal(bad)
    with pytest.raises(StoreError, match=r"flow_score\.npy: video 0's frame 5 has flow score"):
        open_store(bad).flow_scores(0)
    with pytest.raises(DataError, match=r"video 0: flow_score must be finite and >= 0"):
        HyperframeDataset(bad, sampler="keyframes", frames=3)[0]


def test_hdf5_keeps_the_flow_scores(flow_store, tmp_path):
    h5 = tmp_path / "store.h5"
    convert_to_hdf5(flow_store, h5, progress=False)
    back = open_store(h5)
    np.testing.assert_array_equal(back.flow_scores(0), open_store(flow_store).flow_scores(0))
    ds = HyperframeDataset(h5, sampler="keyframes", frames=len(CUTS))
    assert ds.sampler.scores_used(ds._table(ds.store.videos)) == ["flow"]
    assert ds[0].meta["frame_indices"].tolist() == list(CUTS)


def test_auto_prefers_the_flow_score_per_video():
    change = np.full(60, 0.05)
    change[20] = 1.0  # the change score sees a cut at 20
    flow = np.full(60, 0.3)
    flow[40] = 8.0  # the flow score at 40
    both = VideoMeta(60, 30.0, change_score=change, flow_score=flow)
    only_change = VideoMeta(60, 30.0, change_score=change)
    sampler = create_sampler("keyframes", frames=1)
    assert sampler.scores_used([both, only_change]) == ["flow", "change"]
    assert sampler.plan([both, only_change], 0).frame_indices.tolist() == [40]
    assert sampler.plan([both, only_change], 1).frame_indices.tolist() == [20]
    by_change = create_sampler("keyframes", frames=1, score="change")
    assert by_change.plan([both], 0).frame_indices.tolist() == [20]
    # min_change is in the score's unit: 8 px of flow is no change at 10
    assert (
        create_sampler("keyframes", frames=1, min_change=10).plan([both], 0).frame_indices[0] != 40
    )
    with pytest.raises(DataError, match=r"flow_score must be finite and >= 0"):
        VideoMeta(60, 30.0, flow_score=-flow)
    with pytest.raises(DataError, match=r"video 1 has none \(1 videos without\)"):
        create_sampler("keyframes", frames=1, score="flow").plan([both, only_change], 1)


@pytest.mark.parametrize("flow_size", [None, "32x32"])
def test_flow_score_is_the_motion_in_stored_pixels(tmp_path, flow_size):
    """A texture moving (1.5, -2) px a frame scores its speed, 2.5 px, at every frame but the
    first, whatever size the flow is computed at (its vectors are scaled to the frame's)."""
    from _media import make_translating_video

    make_translating_video(tmp_path / "d" / "move.mkv", 1.5, -2.0, frames=6, size=64)
    out = tmp_path / "store"
    build_store(
        tmp_path / "d",
        out,
        BuildOptions(size="none", flow="dis", flow_size=flow_size),
        progress=False,
    )
    scores = open_store(out).flow_scores(0)
    assert scores[0] == 0
    np.testing.assert_allclose(scores[1:], 2.5, rtol=0.15)
