"""Frame interpolation and super-resolution: targets made at load, metrics against the
baselines, the motion filter, and train / eval / predict / export on a tiny real store."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from PIL import Image

from hyperframes import ConfigError
from hyperframes.build import BuildOptions, build_store
from hyperframes.cli import main
from hyperframes.demo import make_motion_dataset
from hyperframes.sampling import VideoMeta, create_sampler
from hyperframes.sampling._motion import MotionSampler
from hyperframes.store import open_store
from hyperframes.train import evaluate, load_config, run_training
from hyperframes.train._tasks._frame_data import FrameTaskDataset, downscale
from hyperframes.train._tasks._frame_tasks import psnr, ssim

CONFIGS = Path(__file__).resolve().parents[1] / "configs"


@pytest.fixture(scope="module")
def videos(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("frames") / "videos"
    make_motion_dataset(root, classes=("left", "right"), videos_per_class=3, frames=12, size=32)
    return root


@pytest.fixture(scope="module")
def store(videos, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("frames") / "store"
    build_store(videos, out, BuildOptions(size="none"), progress=False)
    return out


def _config(store, task: str, frames: int = 3, **data) -> dict:
    model = {
        "interpolation": {"name": "frame_unet", "options": {"base_width": 4, "depth": 2}},
        "super_resolution": {"name": "frame_sr", "options": {"width": 8, "blocks": 1}},
    }[task]
    return {
        "data": {
            "store": str(store),
            "frames": frames,
            "batch_size": 4,
            "clips_per_video": 2,
            "val_sampler_options": {"clips": 2},
            "downscale": {"factor": 2, "filter": "area"},
            **data,
        },
        "model": model,
        "train": {"epochs": 1, "optimizer": "adamw", "lr": 0.003},
    }


def _stored(store_path, video: int, indices) -> torch.Tensor:
    s = open_store(store_path)
    try:
        return torch.from_numpy(np.asarray(s.read_numpy(video, np.asarray(indices))))
    finally:
        s.close()


# -- config -----------------------------------------------------------------------------


@pytest.mark.parametrize("frames", [2, 4, 1])
def test_interpolation_refuses_an_even_window(store, frames):
    with pytest.raises(ConfigError, match=r"data.frames: .* odd window of 3 frames or more"):
        load_config(_config(store, "interpolation", frames=frames))


def test_frame_task_config_checks(store):
    with pytest.raises(ConfigError, match=r"eval\.crops: super_resolution is evaluated"):
        load_config({**_config(store, "super_resolution"), "eval": {"crops": 3}})
    with pytest.raises(ConfigError, match="restores whole frames"):
        load_config(_config(store, "interpolation", augmentation={"size": 16}))
    with pytest.raises(ConfigError, match=r"data\.downscale\.filter"):
        load_config(_config(store, "super_resolution", downscale={"filter": "nearest"}))


@pytest.mark.parametrize("name", ["interpolation.yaml", "super_resolution.yaml"])
def test_example_configs_load(name):
    cfg = load_config(CONFIGS / name)
    assert cfg.train.task == name.removesuffix(".yaml")
    if cfg.train.task == "interpolation":
        assert cfg.data.frames % 2 == 1
    else:
        assert cfg.data.sampler == "motion" and cfg.data.sampler_options["min_motion"] > 0


# -- targets made at load ---------------------------------------------------------------


def test_interpolation_target_is_the_middle_frame(store):
    ds = FrameTaskDataset(
        open_store(store),
        [0, 3],
        kind="interpolation",
        frames=5,
        sampler="uniform",
        sampler_options={"clips": 2},
    )
    for i in range(len(ds)):
        s = ds[i]
        real = _stored(store, s.meta["video_id"], s.meta["stored_indices"])  # (5, 3, H, W)
        assert torch.equal(s.frames[2], torch.zeros_like(real[2]))  # the target is not input
        assert torch.equal(s.frames[[0, 1, 3, 4]], real[[0, 1, 3, 4]])
        truth, baseline = s.target
        assert torch.equal(truth, real[2].float() / 255)
        torch.testing.assert_close(baseline, (real[1].float() + real[3].float()) / 510)


@pytest.mark.parametrize("filt", ["area", "bicubic"])
def test_low_resolution_window_is_made_with_the_recorded_filter(store, filt):
    ds = FrameTaskDataset(
        open_store(store),
        [1],
        kind="super_resolution",
        factor=2,
        filter=filt,
        frames=3,
        sampler="uniform",
        sampler_options={"clips": 1},
    )
    s = ds[0]
    real = _stored(store, 1, s.meta["stored_indices"])
    h, w = real.shape[-2:]
    x = real.float()
    if filt == "area":  # each low pixel: the rounded mean of its 2 x 2 block
        want = x.reshape(3, 3, h // 2, 2, w // 2, 2).mean(dim=(3, 5))
    else:
        want = F.interpolate(x, size=(h // 2, w // 2), mode="bicubic", antialias=True)
    assert s.frames.dtype == torch.uint8 and s.frames.shape == (3, 3, h // 2, w // 2)
    assert torch.equal(s.frames, want.round().clamp(0, 255).to(torch.uint8))
    truth, baseline = s.target
    assert torch.equal(truth, real[1].float() / 255)  # the key frame at store resolution
    up = F.interpolate(s.frames[1:2].float() / 255, scale_factor=2, mode="bicubic")
    torch.testing.assert_close(baseline, up[0].clamp(0, 1))
    with pytest.raises(Exception, match="cannot be downscaled 3 times exactly"):
        downscale(real, 3)


# -- metrics ----------------------------------------------------------------------------


def test_psnr_and_ssim_on_known_cases():
    g = torch.Generator().manual_seed(0)
    a = torch.rand(2, 3, 16, 16, generator=g) * 0.8
    # a constant error of 0.1: MSE 0.01, PSNR 20 dB exactly
    torch.testing.assert_close(psnr(a + 0.1, a), torch.full((2,), 20.0))
    assert psnr(a, a).tolist() == [100.0, 100.0]  # identical frames: the cap
    torch.testing.assert_close(ssim(a, a), torch.ones(2))
    # flat frames x = 0.2, y = 0.6: no variance, SSIM = (2xy + C1) / (x^2 + y^2 + C1)
    c1 = 0.01**2
    x, y = torch.full((1, 3, 12, 12), 0.2), torch.full((1, 3, 12, 12), 0.6)
    want = (2 * 0.2 * 0.6 + c1) / (0.2**2 + 0.6**2 + c1)
    assert math.isclose(float(ssim(x, y)[0]), want, rel_tol=1e-5)
    # noise lowers SSIM, more noise lowers it more
    noisy = [a + s * torch.randn(a.shape, generator=g) for s in (0.02, 0.1)]
    s1, s2 = (float(ssim(n, a).mean()) for n in noisy)
    assert 1.0 > s1 > s2 > 0.0


# -- the motion filter ------------------------------------------------------------------


def test_motion_sampler_keeps_only_windows_above_the_threshold():
    still = np.zeros(10, np.float32)
    moving = np.zeros(10, np.float32)
    moving[6:9] = 1.0  # frames 5 -> 8 move
    videos = [
        VideoMeta(num_frames=10, fps=10, change_score=still),
        VideoMeta(num_frames=10, fps=10, change_score=moving),
    ]
    s = create_sampler("motion", frames=3, min_motion=0.5, score="change")
    assert isinstance(s, MotionSampler) and s.num_items(videos) == 1  # the still video: none
    # windows of 3 frames: motion = mean of scores[start + 1], scores[start + 2]
    assert s.kept_starts(s._index(videos).table, 1).tolist() == [4, 5, 6, 7]
    starts = {int(s.plan(videos, 0, seed=0, epoch=e).frame_indices[0]) for e in range(60)}
    assert starts == {4, 5, 6, 7}  # every kept window is drawn, nothing else
    assert create_sampler("motion", frames=3, min_motion=2.0).num_items(videos) == 0
    with pytest.raises(ConfigError, match="min_motion must be a number >= 0"):
        create_sampler("motion", frames=3, min_motion=-1)


def test_motion_sampler_reads_the_stores_scores(store):
    st = open_store(store)
    scores = [np.asarray(st.change_scores(v)) for v in range(len(st.videos))]
    threshold = float(np.median([s[1:].mean() for s in scores]))
    ds = FrameTaskDataset(
        st,
        list(range(len(st.videos))),
        kind="super_resolution",
        factor=2,
        frames=3,
        sampler="motion",
        sampler_options={"min_motion": threshold},
    )
    assert 0 < len(ds) <= len(st.videos)
    for i in range(len(ds)):
        s = ds[i]
        idx = s.meta["stored_indices"]
        assert scores[s.meta["video_id"]][idx[1:]].mean() >= threshold - 1e-6


# -- train, eval, predict, export -------------------------------------------------------


def _png_size(path: Path) -> tuple[int, int]:
    with Image.open(path) as im:
        assert im.mode == "RGB"
        return im.size


@pytest.fixture(scope="module")
def runs(store, tmp_path_factory) -> dict[str, Path]:
    """One short run per task (1 epoch, 2 steps)."""
    out = {}
    for task in ("interpolation", "super_resolution"):
        run = tmp_path_factory.mktemp(task) / "run"
        s = run_training(_config(store, task), run, progress=False)
        assert s["task"] == task and math.isfinite(s["psnr"])
        out[task] = run
    return out


@pytest.mark.parametrize("task", ["interpolation", "super_resolution"])
def test_eval_and_predict(runs, videos, tmp_path, task):
    run = runs[task]
    # no crops asked: whole frames, 1 view (issue 35: the default 3 was refused)
    m = evaluate(run / "best.pt", clips=2, out=tmp_path / "m.json", verbose=False)
    assert m["windows"] == 2 * m["videos"] and m["crops"] == 1
    for key in ("psnr", "ssim", "baseline_psnr", "baseline_ssim"):
        assert math.isfinite(m[key]), key
    assert m["psnr_gain"] == pytest.approx(m["psnr"] - m["baseline_psnr"])
    assert json.loads(Path(m["metrics_json"]).read_text())["psnr"] == m["psnr"]
    video = sorted(videos.rglob("*.mp4"))[0]
    out = tmp_path / "pred"
    assert main(["predict", str(run / "best.pt"), str(video), "--out", str(out), "--quiet"]) == 0
    listing = json.loads((out / "frames.json").read_text())
    pngs = sorted(out.glob("*.png"))
    assert len(pngs) == len(listing["frames"]) > 0
    side = 32 * (2 if task == "super_resolution" else 1)  # upscaled twice, or as stored
    assert _png_size(pngs[0]) == (side, side)
    rec = tmp_path / "rec"
    args = ["predict", str(run / "best.pt"), str(video), "--out", str(rec), "--reconstruct"]
    assert main([*args, "--stride", "4", "--quiet"]) == 0
    scored = json.loads((rec / "frames.json").read_text())
    assert all(math.isfinite(r["psnr"]) and "baseline_psnr" in r for r in scored["frames"])
    assert _png_size(sorted(rec.glob("*.png"))[0]) == (32, 32)


def test_export_carries_the_frame_task(runs, tmp_path):
    import onnx

    from hyperframes.infer import export_onnx

    want = {
        "interpolation": ({"kind": "interpolation"}, [3, 3, 32, 32], [3, 32, 32]),
        "super_resolution": (
            {"kind": "super_resolution", "factor": 2, "filter": "area"},
            [3, 3, 16, 16],  # the low-resolution window
            [3, 32, 32],
        ),
    }
    for task, (frame_task, inputs, output) in want.items():
        report = export_onnx(runs[task] / "best.pt", tmp_path / f"{task}.onnx", size=inputs[-1])
        assert report.max_abs_diff is not None and report.max_abs_diff < 1e-4
        assert report.inputs["input"] == ["batch", *inputs]
        assert report.output_shape == ["batch", *output]
        meta = {p.key: p.value for p in onnx.load(str(report.path)).metadata_props}
        assert json.loads(meta["hyperframes.contract"])["frame_task"] == frame_task
        assert meta["task"] == task and task.split("_")[0] in meta["preprocessing"]
