"""Tracks per batch (issue 20 item 3): log-mel audio, window flow and registration computed for
a whole batch at once, checked against the per-window path they replace in the batch
pipeline: the same values (audio), the same geometry as ``follow_geometry`` with the same
crop box (flow), the same warp inside the box (registration)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torchvision.transforms.v2.functional as TF

from _media import make_beep_video, make_translating_video, write_video
from _per_sample import registered, window_flow
from hyperframes._core._errors import DataError
from hyperframes.build import BuildOptions, build_store
from hyperframes.data._audio import column_times, logmel_columns
from hyperframes.data._flow_geometry import follow_geometry
from hyperframes.data._tracks import WindowTracks
from hyperframes.data.transforms import (
    CenterCrop,
    Compose,
    RandomHorizontalFlip,
    RandomResizedCrop,
    Window,
)
from hyperframes.store import open_store

BEEP = (0.50, 0.60)
DX, DY = 2.0, 1.0  # the moving texture's pixels per frame


def _build(src, out, **options):
    report = build_store(src, out, BuildOptions(size="none", **options), progress=False)
    assert report.exit_code == 0
    return out


@pytest.fixture(scope="module")
def audio_store(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("batch-audio")
    make_beep_video(tmp / "src" / "beep.mkv", seconds=1.2, fps=25, beeps=[BEEP])
    make_beep_video(tmp / "src" / "beep2.mkv", seconds=1.0, fps=20, beeps=[(0.2, 0.3)])
    write_video(tmp / "src" / "silent.mp4", frames=30, fps=25)
    return _build(tmp / "src", tmp / "store", audio=True)


@pytest.fixture(scope="module")
def flow_store(tmp_path_factory):
    """Two 64x64 textures moving (DX, DY) and (-1, 0.5) px per frame, flow at frame size."""
    tmp = tmp_path_factory.mktemp("batch-flow")
    make_translating_video(tmp / "src" / "a.mkv", DX, DY, frames=9, size=64, seed=3)
    make_translating_video(tmp / "src" / "b.mkv", -1.0, 0.5, frames=9, size=64, seed=4)
    return _build(tmp / "src", tmp / "store", flow="dis")


@pytest.fixture(scope="module")
def small_flow_store(tmp_path_factory):
    """The same texture with its flow stored at 32x32 as int8: boxes map to another grid."""
    tmp = tmp_path_factory.mktemp("batch-flow32")
    make_translating_video(tmp / "src" / "a.mkv", DX, DY, frames=9, size=64, seed=3)
    return _build(tmp / "src", tmp / "store", flow="dis", flow_size="32", flow_dtype="int8")


# -- audio ------------------------------------------------------------------------------------


def _old_read_audio(store, video, pts, fps, mask, k=4):
    """The per-window log-mel as it was computed before batches (one read, one STFT per
    window), from the public pure functions: the reference the batch must equal."""
    from hyperframes.data import LogMelOptions

    opts = LogMelOptions()
    out = torch.zeros(opts.n_mels, len(pts) * k)
    valid = np.flatnonzero(mask)
    if store.audio_info(video) is None or not valid.size:
        return out
    rate = store.audio_info(video)["rate"]
    times = column_times(pts[valid], fps, k)
    half = opts.window_samples(rate) / rate
    samples, rate, first = store.read_audio(video, times.min() - half, times.max() + half)
    cols = logmel_columns(samples, rate, first, times, opts)
    out[:, (valid[:, None] * k + np.arange(k)).reshape(-1)] = cols
    return out


def test_batched_logmel_equals_each_window_alone(audio_store):
    store = open_store(audio_store)
    videos = store.videos
    rng = np.random.default_rng(0)
    t = 8
    rows = []
    for video in [0, 1, 0, 2, 1, 0, 0, 1]:  # windows sharing a video: one read for them
        n = int(videos.num_frames[video])
        stride = int(rng.integers(1, 3))
        start = int(rng.integers(0, n - stride * t + 1))
        idx = start + stride * np.arange(t)
        rows.append((video, idx))
    vids = np.array([v for v, _ in rows], np.int64)
    pts = np.stack([videos.pts_seconds_all[videos.frame_start[v] + ix] for v, ix in rows]).astype(
        np.float64
    )
    fps = np.asarray(videos.fps, np.float64)[vids]
    mask = np.ones((len(rows), t), bool)
    mask[1, 5:] = False  # padding at the end
    mask[4, [0, 3]] = False  # and frames left out inside
    mask[6] = False  # a window with nothing valid
    tracks = WindowTracks(store, audio="logmel")
    calls = []
    read = store.read_audio
    store.read_audio = lambda *a: calls.append(a[0]) or read(*a)  # count the reads
    audio, amask = tracks.read_audio_batch(vids, pts, fps, mask)
    store.read_audio = read
    assert audio.shape == (len(rows), 64, t * 4) and audio.dtype == torch.float32
    assert sorted(calls) == [0, 1]  # one read per video with audio and valid frames
    for b, (v, _) in enumerate(rows):
        want = _old_read_audio(store, v, pts[b], fps[b], mask[b])
        torch.testing.assert_close(audio[b], want, rtol=0, atol=1e-4)
        has = store.audio_info(v) is not None
        assert torch.equal(amask[b], torch.from_numpy(mask[b] & has))
        one, one_mask = tracks.read_audio_batch(
            vids[b : b + 1], pts[b : b + 1], fps[b : b + 1], mask[b : b + 1]
        )
        torch.testing.assert_close(one[0], audio[b], rtol=0, atol=1e-4)
        assert torch.equal(one_mask[0], amask[b])
    assert videos.paths[2].endswith("silent.mp4") and not amask[3].any()
    assert not audio[6].any() and not audio[3].any()  # nothing valid; a silent video
    assert audio[0].abs().sum() > 0
    strict = WindowTracks(store, audio="logmel", audio_missing="error")
    with pytest.raises(DataError, match=r"silent\.mp4"):
        strict.read_audio_batch(vids, pts, fps, mask)
    store.close()


# -- flow -------------------------------------------------------------------------------------


def _reference_flow(tracks, video, idx, size, transform, seed):
    """window_flow then follow_geometry: the per-window path."""
    flow = window_flow(tracks, video, idx, size)
    frames = torch.zeros(len(idx), 3, *size, dtype=torch.uint8)
    window = Window(frames, torch.from_numpy(idx), torch.ones(len(idx), dtype=torch.bool))
    g = torch.Generator().manual_seed(seed)
    return follow_geometry(transform, window, flow, g)[1]


def _rrc_box(rrc, size, seed):
    g = torch.Generator().manual_seed(seed)
    return rrc.box(*size, g)


WINDOWS = [  # (video, stored indices): stride 1, stride 2, backwards and repeated frames
    (0, [0, 1, 2, 3]),
    (1, [2, 4, 6, 8]),
    (0, [5, 3, 3, 4]),
    (1, [1, 2, 3, 4]),
]


def test_batched_flow_through_a_center_crop_equals_the_per_window_flow(flow_store):
    store = open_store(flow_store)
    tracks = WindowTracks(store, flow=True)
    vids = np.array([v for v, _ in WINDOWS])
    idx = np.array([ix for _, ix in WINDOWS])
    boxes = np.tile([8, 8, 48, 48], (len(WINDOWS), 1))  # CenterCrop(48) of 64x64
    got = tracks.window_flow_batch(vids, idx, boxes, (48, 48), np.zeros(len(WINDOWS), bool))
    assert got.shape == (4, 3, 2, 48, 48) and got.dtype == torch.float32
    for b, (v, ix) in enumerate(WINDOWS):
        want = _reference_flow(tracks, v, np.array(ix), (64, 64), CenterCrop(48), 0)
        torch.testing.assert_close(got[b], want, rtol=0, atol=1e-4)
    # the known motion, chained over the stride, negated backwards, zero for a repeat
    mean = got[..., 8:-8, 8:-8].mean((-1, -2))
    torch.testing.assert_close(mean[1, 0], torch.tensor([-2.0, 1.0]), atol=0.3, rtol=0)
    torch.testing.assert_close(mean[2, 0], torch.tensor([-2 * DX, -2 * DY]), atol=0.3, rtol=0)
    assert not got[2, 1].any()
    store.close()


@pytest.mark.parametrize("scale", [(0.25, 0.35), (0.8, 0.95)], ids=["grow", "shrink"])
def test_batched_flow_follows_a_random_resized_crop_and_flip(flow_store, scale):
    """The box of a RandomResizedCrop(48) + flip: growing (box < 48 px) the bilinear filters
    agree, inside the box's outer pixel (where the per-window crop repeats the box's own edge
    and the batch reads the frame just outside: both are bilinear from there); shrinking,
    the per-window resize antialiases and the batch does not: on this smooth flow the two
    differ by well under a tenth of a pixel on average, a few tenths at most."""
    store = open_store(flow_store)
    tracks = WindowTracks(store, flow=True)
    rrc = RandomResizedCrop(48, scale=scale)
    vids = np.array([v for v, _ in WINDOWS])
    idx = np.array([ix for _, ix in WINDOWS])
    boxes = np.array([_rrc_box(rrc, (64, 64), seed) for seed in range(len(WINDOWS))])
    flip = np.array([True, False, True, True])
    got = tracks.window_flow_batch(vids, idx, boxes, (48, 48), flip)
    for b, (v, ix) in enumerate(WINDOWS):
        steps = [rrc] + ([RandomHorizontalFlip(1.0)] if flip[b] else [])
        want = _reference_flow(tracks, v, np.array(ix), (64, 64), Compose(steps), b)
        if scale[1] < 0.5:
            torch.testing.assert_close(
                got[b, ..., 2:-2, 2:-2], want[..., 2:-2, 2:-2], rtol=0, atol=2e-3
            )
        else:
            diff = (got[b] - want)[..., 2:-2, 2:-2].abs()
            assert float(diff.mean()) < 0.05 and float(diff.max()) < 0.5, diff.max()
    # mirrored: dx changes sign
    moving = got[0, 0, :, 8:-8, 8:-8].mean((-1, -2))
    assert float(moving[0]) < -DX * 0.5 and float(moving[1]) > 0
    store.close()


def test_batched_flow_maps_the_box_to_the_flows_own_size(small_flow_store):
    """Flow stored at 32x32 (int8) for 64x64 frames: the per-window path resizes it to 64
    first, the batch samples the 32x32 flow straight at the output pixels (one bilinear
    filter instead of two): within a few hundredths of a pixel on this smooth motion."""
    store = open_store(small_flow_store)
    tracks = WindowTracks(store, flow=True)
    assert store.flow_shape(0) == (32, 32)
    rrc = RandomResizedCrop(40, scale=(0.3, 0.5))
    idx = np.array([[0, 1, 2, 3], [1, 3, 5, 7]])
    boxes = np.array([_rrc_box(rrc, (64, 64), s) for s in (0, 1)])
    got = tracks.window_flow_batch(np.array([0, 0]), idx, boxes, (40, 40), np.array([0, 1], bool))
    assert got.shape == (2, 3, 2, 40, 40)
    for b in range(2):
        steps = [rrc] + ([RandomHorizontalFlip(1.0)] if b else [])
        want = _reference_flow(tracks, 0, idx[b], (64, 64), Compose(steps), b)
        diff = (got[b] - want)[..., 3:-3, 3:-3].abs()
        assert float(diff.mean()) < 0.03 and float(diff.max()) < 0.3, (diff.mean(), diff.max())
    store.close()


# -- registration ----------------------------------------------------------------------------


def _crop(frames, box, out, flip=False):
    y, x, h, w = (int(v) for v in box)
    got = TF.resized_crop(frames, y, x, h, w, list(out), antialias=True)
    return got.flip(-1) if flip else got


@pytest.mark.parametrize("mode", ["homography", "flow"])
def test_batched_registration_agrees_with_the_per_window_warp_inside_the_box(flow_store, mode):
    """Per window: the whole stored frames registered, then cropped. Batched: the crop
    registered with the box-conjugated motion. Away from the box's edge by more than the
    motion (here 3 frames x 2 px from the key) both warp the same pixels: equal up to uint8
    rounding (unscaled box), or the resize filter (a box resized by 2/3, and flipped)."""
    store = open_store(flow_store)
    tracks = WindowTracks(store, register=mode)
    full = {v: store.read_numpy(v, np.arange(9)) for v in (0, 1)}
    idx = np.array([[0, 1, 2, 3], [2, 3, 4, 5], [4, 5, 6, 7]])
    vids = np.array([0, 1, 0])
    key = 1
    for boxes, out, flip, tol in [
        (np.tile([8, 8, 48, 48], (3, 1)), (48, 48), np.zeros(3, bool), 1.0),
        (np.array([[4, 6, 54, 54], [2, 2, 60, 60], [8, 4, 48, 54]]), (36, 36), None, 3.0),
        (np.tile([8, 8, 48, 48], (3, 1)), (48, 48), np.array([True, False, True]), 1.0),
    ]:
        fl = np.zeros(3, bool) if flip is None else flip
        stored = [torch.from_numpy(full[v][ix]) for v, ix in zip(vids, idx)]
        batch = torch.stack([_crop(f, bx, out, f_) for f, bx, f_ in zip(stored, boxes, fl)])
        got = tracks.registered_batch(batch, vids, idx, boxes, key, flip=flip)
        assert got.shape == batch.shape and got.dtype == torch.uint8
        m = 10 * out[0] // 48  # the motion, in output pixels, and a pixel more
        for b in range(3):
            reg = registered(tracks, stored[b], int(vids[b]), idx[b], key)
            want = _crop(reg, boxes[b], out, fl[b])
            diff = (got[b].float() - want.float())[..., m:-m, m:-m].abs()
            assert float(diff.mean()) < tol / 2 and float(diff.max()) <= 4 * tol, (b, diff.max())
            # and it did register: the frames hold still around the key frame
            still = (got[b].float() - got[b, key].float())[..., m:-m, m:-m].abs().mean()
            moving = (batch[b].float() - batch[b, key].float())[..., m:-m, m:-m].abs().mean()
            assert float(still) < float(moving) / 3
    store.close()


def test_opencv_uint8_warps_match_the_float_warps(small_flow_store):
    """uint8 frames on the CPU warp with OpenCV (fixed-point bilinear); float frames with
    grid_sample: the same pixels within two grey levels, zeros outside alike; and the int8
    flow dequantised in torch for a batch equals the store's own read."""
    from _media import smooth_texture
    from hyperframes.data._warp import warp_by_flow, warp_by_homography

    tex = torch.from_numpy(smooth_texture(40, 48, seed=2))
    frames = tex[None, None].repeat(3, 3, 1, 1)  # (T=3, C=3, 40, 48)
    to_key = np.stack(
        [
            np.eye(3),
            [[1, 0.02, -2.5], [0.01, 1, 1.25], [0, 0, 1]],
            [[0.95, 0, 3], [0, 1.05, -2], [1e-4, 0, 1]],
        ]
    )
    flow = torch.randn(3, 2, 40, 48) * 0.3 + torch.tensor([1.5, -0.75]).view(1, 2, 1, 1)
    for got, want in [
        (warp_by_homography(frames, to_key), warp_by_homography(frames.float(), to_key)),
        (warp_by_flow(frames, flow), warp_by_flow(frames.float(), flow)),
    ]:
        assert got.dtype == torch.uint8 and got.shape == frames.shape
        diff = (got.float() - want.round().clamp(0, 255)).abs()
        assert float(diff.max()) <= 2 and float(diff.mean()) < 0.5, diff.max()
    store = open_store(small_flow_store)
    tracks = WindowTracks(store, flow=True)
    pairs = tracks._read_pairs(np.array([0, 0]), np.array([1, 4]), np.array([3, 8]))
    want = np.concatenate(
        [store.read_flow(0, np.arange(1, 3)), store.read_flow(0, np.arange(4, 8))]
    )
    np.testing.assert_allclose(pairs.numpy(), want, rtol=0, atol=1e-6)
    store.close()
