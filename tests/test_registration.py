"""Registration (issue 12 item 4): warping a window's frames onto its key frame by the stored
homographies or the stored flow. Pure warps first, then a panning clip through the dataset."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from _media import make_translating_video, smooth_texture
from hyperframes import ConfigError
from hyperframes.data import HyperframeDataset
from hyperframes.data._warp import (
    compose_flow,
    compose_flows,
    compose_homography,
    warp_by_flow,
    warp_by_homography,
)

DX, DY = 2.0, 1.0
T = 5


def shifted(tex: np.ndarray, dx: float, dy: float, k: int, size: int = 48) -> torch.Tensor:
    """Frame k of ``tex`` moving (dx, dy) per frame: content at x in frame 0 is at x + k*dx."""
    pad = 16
    x0, y0 = pad - round(k * dx), pad - round(k * dy)
    return torch.from_numpy(tex[y0 : y0 + size, x0 : x0 + size].copy())[None].repeat(3, 1, 1)


def diff_to_key(frames: torch.Tensor, key: int = 0, margin: int = 12) -> float:
    """Mean absolute difference of every other frame to the key frame, inside a margin."""
    f = frames.float()[..., margin:-margin, margin:-margin]
    others = [i for i in range(f.shape[0]) if i != key]
    return float((f[others] - f[key]).abs().mean())


def test_pure_warps_undo_a_known_translation():
    tex = smooth_texture(80, 80, seed=1)
    frames = torch.stack([shifted(tex, DX, DY, k) for k in range(T)])
    # H_k maps frame k+1 coordinates to frame k: a shift back by (dx, dy)
    pair = np.tile(np.array([[1, 0, -DX], [0, 1, -DY], [0, 0, 1]], np.float32), (T - 1, 1, 1))
    to_key = np.stack([compose_homography(pair, 0, f) for f in range(T)])
    np.testing.assert_allclose(to_key[3], [[1, 0, -3 * DX], [0, 1, -3 * DY], [0, 0, 1]], atol=1e-6)
    # backwards (a key in the middle): the inverse
    np.testing.assert_allclose(compose_homography(pair, 2, 0)[:2, 2], [2 * DX, 2 * DY], atol=1e-6)
    warped = warp_by_homography(frames, to_key)
    assert warped.dtype == torch.uint8 and warped.shape == frames.shape
    assert diff_to_key(warped) < 1.0 < diff_to_key(frames)
    flow = torch.stack(
        [torch.full((2, 48, 48), 0.0)]
        + [
            torch.stack([torch.full((48, 48), k * DX), torch.full((48, 48), k * DY)])
            for k in range(1, T)
        ]
    )
    by_flow = warp_by_flow(frames, flow)
    assert diff_to_key(by_flow) < 1.0
    torch.testing.assert_close(by_flow[0], frames[0])


def _bilinear(f: np.ndarray, x: float, y: float) -> np.ndarray:
    """f (2, h, w) at (x, y), bilinear, zeros outside (as grid_sample with zero padding)."""
    out = np.zeros(2)
    x0, y0 = int(np.floor(x)), int(np.floor(y))
    for yy, wy in ((y0, 1 - (y - y0)), (y0 + 1, y - y0)):
        for xx, wx in ((x0, 1 - (x - x0)), (x0 + 1, x - x0)):
            if 0 <= yy < f.shape[1] and 0 <= xx < f.shape[2]:
                out += wy * wx * f[:, yy, xx]
    return out


@pytest.mark.parametrize("channels", [1, 3, 5])
def test_uint8_homography_warps_are_opencvs_interleaved_warp_and_copy_the_key(channels):
    """The uint8 warp runs plane by plane: the pixels of OpenCV's interleaved warp (per 4
    channels at most), and the key frame (an identity map) comes back unchanged."""
    import cv2

    rng = np.random.default_rng(3)
    frames = torch.from_numpy(rng.integers(0, 256, (4, channels, 30, 40), dtype=np.uint8))
    to_key = np.stack(
        [np.eye(3)]
        + [np.array([[1.02, 0.03, 1.5 * k], [-0.02, 0.98, -1.0], [2e-4, 0.0, 1.0]]) for k in (1, 2)]
        + [np.eye(3)]  # a repeated (padded) key frame
    )
    got = warp_by_homography(frames, to_key).numpy()
    inv = np.linalg.inv(to_key)
    flags = cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP
    for k in range(4):
        want = np.concatenate(
            [
                np.atleast_3d(
                    cv2.warpPerspective(
                        cv2.merge(list(part)), inv[k], (40, 30), flags=flags, borderValue=0
                    )
                ).transpose(2, 0, 1)
                for part in np.array_split(frames[k].numpy(), range(4, channels, 4))
            ]
        )
        np.testing.assert_array_equal(got[k], want)
    np.testing.assert_array_equal(got[[0, 3]], frames.numpy()[[0, 3]])
    assert (got[1] != frames.numpy()[1]).mean() > 0.5


def test_one_sweep_composes_flows_along_each_pixels_trajectory():
    """compose_flows (one sweep each way, linear in the span): forwards, each key pixel's
    displacement is its trajectory through the pair flows (x_(j+1) = x_j + F_j(x_j), followed
    point by point here); backwards, the same chain as compose_flow, negated."""
    g = torch.Generator().manual_seed(0)
    smooth = torch.nn.functional.avg_pool2d(torch.randn(9, 2, 24, 24, generator=g), 5, 1, 2)
    pairs = 1.5 * smooth + torch.tensor([1.0, -0.5]).reshape(1, 2, 1, 1)
    first, key, targets = 3, 7, [3, 5, 7, 8, 10, 12]
    got = compose_flows(pairs, first, key, targets)
    assert got.shape == (6, 2, 24, 24) and not got[2].any()  # the key itself: no motion
    for n, t in enumerate(targets[:2]):
        torch.testing.assert_close(got[n], compose_flow(pairs, first, key, t))
    f = pairs.numpy().astype(np.float64)
    for y, x in ((5, 6), (12, 12), (18, 9)):
        pos = np.array([x, y], np.float64)
        for j in range(key, 12):
            pos = pos + _bilinear(f[j - first], *pos)
            if j + 1 in targets:
                want = pos - (x, y)
                np.testing.assert_allclose(got[targets.index(j + 1), :, y, x], want, atol=1e-4)


@pytest.fixture(scope="module")
def panning_store(tmp_path_factory):
    from hyperframes.build import BuildOptions, build_store

    tmp = tmp_path_factory.mktemp("pan")
    make_translating_video(tmp / "src" / "pan.mkv", DX, DY, frames=8, size=64, seed=3)
    out = tmp / "store"
    build_store(tmp / "src", out, BuildOptions(size="none", flow="dis"), progress=False)
    return out


@pytest.mark.parametrize("mode", ["homography", "flow"])
def test_a_registered_panning_window_holds_still(panning_store, mode):
    opts = {"clips": 1}
    plain = HyperframeDataset(panning_store, "uniform", frames=T, sampler_options=opts)[0]
    reg = HyperframeDataset(
        panning_store, "uniform", frames=T, register=mode, sampler_options=opts
    )[0]
    assert plain.meta["registered"] is None and reg.meta["registered"] == mode
    before, after = diff_to_key(plain.frames), diff_to_key(reg.frames)
    assert before > 5, before  # the pan moves the texture a lot
    assert after < before / 3, (before, after)
    # the key frame itself is left as it was
    torch.testing.assert_close(reg.frames[0].float(), plain.frames[0].float(), atol=1, rtol=0)


def test_the_keyframe_layout_registers_onto_the_middle_frame(panning_store):
    opts = {"clips": 1}
    plain = HyperframeDataset(panning_store, "uniform", frames=T, sampler_options=opts)[0].frames
    ds = HyperframeDataset(
        panning_store,
        "uniform",
        frames=T,
        layout="keyframe",
        register="homography",
        sampler_options=opts,
    )
    s = ds[0]
    key = T // 2
    ctx = s.frames.context
    assert diff_to_key(ctx, key) < diff_to_key(plain, key) / 3
    torch.testing.assert_close(s.frames.key.float(), plain[key].float(), atol=1, rtol=0)


def test_register_onto_the_middle_in_the_temporal_layout(panning_store):
    """``register_onto="middle"``: a temporal window registered onto T//2 (a training run's
    windows stay temporal until the contract lays them out, so it says which frame is key)."""
    opts = {"clips": 1}
    plain = HyperframeDataset(panning_store, "uniform", frames=T, sampler_options=opts)[0].frames
    got = HyperframeDataset(
        panning_store,
        "uniform",
        frames=T,
        register="homography",
        register_onto="middle",
        sampler_options=opts,
    )[0].frames
    key = T // 2
    assert diff_to_key(got, key) < diff_to_key(plain, key) / 3
    assert diff_to_key(got, key) < diff_to_key(got, 0) / 3  # not onto the first frame
    torch.testing.assert_close(got[key].float(), plain[key].float(), atol=1, rtol=0)


@pytest.mark.parametrize(
    ("model", "onto"), [("keyframe_unet", "middle"), ("r2plus1d_tiny", "first")]
)
def test_a_run_registers_onto_its_models_key_frame(panning_store, model, onto):
    """The training config's dataset registers a keyframe model's windows onto the key frame
    (T//2), which the keyframe layout takes as K_t; other models' onto the first frame."""
    from hyperframes.train import load_config
    from hyperframes.train._config._data import dataset_options

    cfg = load_config(
        {
            "data": {"store": str(panning_store), "frames": T, "register": "homography"},
            "model": {"name": model},
        }
    )
    tracks = dataset_options(cfg, train=True).tracks
    assert tracks.register == "homography" and tracks.register_onto == onto
    opts = {"clips": 1}
    plain = HyperframeDataset(panning_store, "uniform", frames=T, sampler_options=opts)[0].frames
    frames = HyperframeDataset(
        panning_store, "uniform", frames=T, sampler_options=opts, **tracks.as_dict()
    )[0].frames
    key, other = (T // 2, 0) if onto == "middle" else (0, T // 2)
    assert diff_to_key(frames, key) < diff_to_key(plain, key) / 3  # registered ...
    # ... onto the key frame, which stays as it was, while the other one is moved
    torch.testing.assert_close(frames[key].float(), plain[key].float(), atol=1, rtol=0)
    assert (frames[other].int() - plain[other].int()).abs().float().mean() > 5


def test_register_onto_refuses_other_frames(panning_store):
    with pytest.raises(ConfigError, match="register_onto"):
        HyperframeDataset(panning_store, frames=T, register="homography", register_onto="last")


@pytest.mark.parametrize("mode", ["homography", "flow"])
def test_the_batch_pipeline_registers_through_each_samples_crop_and_flip(panning_store, mode):
    """Registration in the batch pipeline (the whole batch warped through each sample's
    crop box and flip, then colour jitter): every window still holds still."""
    from hyperframes.data.transforms import (
        ColorJitter,
        Compose,
        RandomHorizontalFlip,
        RandomResizedCrop,
    )

    aug = Compose(
        [RandomResizedCrop(40, scale=(0.4, 0.7)), RandomHorizontalFlip(), ColorJitter(0.2)]
    )
    opts = {"clips": 2}
    kw = {"frames": T, "transform": aug, "sampler_options": opts, "seed": 1}
    reg = HyperframeDataset(panning_store, "uniform", register=mode, **kw)
    plain = HyperframeDataset(panning_store, "uniform", **kw)
    assert reg.read_batch([0]) is not None  # not the per-sample path
    samples = reg.__getitems__([0, 1])
    for k in range(2):
        got, moving = samples[k].frames, plain[k].frames
        assert samples[k].meta["registered"] == mode
        assert diff_to_key(got, margin=8) < diff_to_key(moving, margin=8) / 3
