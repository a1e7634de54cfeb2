"""Segmentation training data: targets are the key frame's mask from the .npz beside each
source video; a keyframe model trains and evaluates with mIoU."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
import torch
import torchvision.transforms.v2.functional as TF
from torchvision.transforms import InterpolationMode

from hyperframes import ConfigError, DataError, models
from hyperframes.build import BuildOptions, build_store
from hyperframes.data.transforms import RandomResizedCrop, transform_generator
from hyperframes.demo import make_segmentation_dataset
from hyperframes.infer import Predictor, load_inference_model
from hyperframes.models import UNet
from hyperframes.store import open_store
from hyperframes.train import evaluate, load_config, run_training
from hyperframes.train._tasks._segmentation import SegmentationDataset


@pytest.fixture(scope="module")
def seg_data(tmp_path_factory):
    root = tmp_path_factory.mktemp("seg") / "videos"
    root.mkdir()  # make_segmentation_dataset writes the masks before it makes the folder
    make_segmentation_dataset(root, videos=6, frames=12, size=32, seed=2)
    return root


@pytest.fixture(scope="module")
def seg_store(seg_data, tmp_path_factory):
    out = tmp_path_factory.mktemp("seg") / "store"
    build_store(seg_data, out, BuildOptions(size="none"), progress=False)
    return out


def _config(store, frames=4, **train):
    return {
        "data": {
            "store": str(store),
            "frames": frames,
            "batch_size": 4,
            "sampler": "sliding",
            "sampler_options": {"window_stride": 4},
            "val_sampler_options": {"clips": 2},
            "augmentation": {"hflip": 0.5},
        },
        "model": {"name": "keyframe_unet", "options": {"base_width": 4, "depth": 2}},
        "train": {"epochs": 1, "optimizer": "adamw", "lr": 0.003, **train},
    }


@pytest.mark.parametrize("frames", [1, 4])
def test_target_is_the_key_frames_mask(seg_store, frames):
    store = open_store(seg_store)
    ds = SegmentationDataset(
        store, [0, 1], sampler="sliding", frames=frames, layout="keyframe", seed=0
    )
    for i in range(len(ds)):
        h = ds[i]
        src = h.meta["frame_indices"][frames // 2]
        masks = np.load(h.meta["video"].replace(".mp4", ".npz"))["masks"]
        assert torch.equal(h.target, torch.from_numpy(masks[src].astype(np.int64)))
        assert "target" not in h.meta  # typed, not in meta
        assert h.frames.key.shape == (3, 32, 32)
        assert torch.equal(h.frames.key, h.frames.context[frames // 2])


def test_hflip_mirrors_frames_and_mask_together(seg_store):
    store = open_store(seg_store)
    kw = {"sampler": "sliding", "frames": 2, "layout": "keyframe", "seed": 0}
    plain = SegmentationDataset(store, [0], **kw)
    flipped = SegmentationDataset(store, [0], hflip=1.0, **kw)
    a, b = plain[0], flipped[0]
    assert torch.equal(b.target, a.target.flip(-1))
    assert torch.equal(b.frames.context, a.frames.context.flip(-1))


def test_missing_masks_are_explained(seg_data, tmp_path):
    data = tmp_path / "videos"
    shutil.copytree(seg_data, data)
    (data / "seg_001.npz").unlink()
    store = tmp_path / "store"
    build_store(data, store, BuildOptions(size="none"), progress=False)
    ds = SegmentationDataset(open_store(store), [1], sampler="sliding", frames=2, layout="keyframe")
    with pytest.raises(DataError, match=r"seg_001\.npz: missing; segmentation training needs"):
        ds[0]


def test_keyframe_model_trains_and_evaluates(seg_store, tmp_path):
    s = run_training(_config(seg_store, aux_weight=1.0), tmp_path / "run", progress=False)
    assert s["task"] == "segmentation" and 0.0 <= s["miou"] <= 1.0
    assert set(s["val_metrics"]["iou"]) == {"background", "foreground"}
    for name in ("curves.png", "confusion.png", "best.pt", "epochs.csv"):
        assert (tmp_path / "run" / name).is_file()
    m = evaluate(tmp_path / "run" / "best.pt", clips=2, crops=1, verbose=False)
    assert m["videos"] == s["split"]["val_videos"] and m["windows"] == 2 * m["videos"]
    # per store, split, checkpoint and views
    saved = (
        tmp_path / "run" / "eval" / seg_store.name / "val" / "best_2clips_1crops" / "metrics.json"
    )
    assert m["metrics_json"] == str(saved) and "predictions_csv" not in m
    assert json.loads(saved.read_text())["miou"] == m["miou"]
    with pytest.raises(ConfigError, match="segmentation is evaluated on whole frames"):
        evaluate(tmp_path / "run" / "best.pt", crops=3)
    # the single-frame baseline: the same network on K_t alone
    s1 = run_training(_config(seg_store, frames=1), tmp_path / "t1", progress=False)
    assert s1["frames"] == 1 and 0.0 <= s1["miou"] <= 1.0


def test_segmentation_config_checks():
    with pytest.raises(ConfigError, match=r"data\.augmentation\.color_jitter: not applied"):
        load_config(
            {
                "data": {"store": "s", "augmentation": {"color_jitter": 0.2}},
                "model": {"name": "keyframe_unet"},
            }
        )
    # crop and scale move the masks with the frames: allowed
    cfg = load_config(
        {"data": {"store": "s", "augmentation": {"size": 16}}, "model": {"name": "keyframe_unet"}}
    )
    assert cfg.data.augmentation.size == 16


def test_crop_and_scale_move_frames_and_mask_together(seg_store):
    store = open_store(seg_store)
    kw = {"sampler": "sliding", "frames": 2, "layout": "keyframe", "seed": 0}
    plain = SegmentationDataset(store, [0], **kw)[0]
    ds = SegmentationDataset(store, [0], size=16, scale=(0.2, 0.5), hflip=1.0, **kw)
    got = ds[0]
    assert got.frames.context.shape == (2, 3, 16, 16) and got.target.shape == (16, 16)
    # the box the sample drew, from its own generator: crop, then the flip
    g = transform_generator(0, 0, 0)
    top, left, h, w = RandomResizedCrop(16, scale=(0.2, 0.5)).box(32, 32, g)
    assert h * w <= 0.5 * 32 * 32 + 64
    want_frames = TF.resized_crop(plain.frames.context, top, left, h, w, [16, 16], antialias=True)
    want_mask = TF.resized_crop(
        plain.target[None], top, left, h, w, [16, 16], interpolation=InterpolationMode.NEAREST
    )[0]
    assert torch.equal(got.frames.context, want_frames.flip(-1))
    assert torch.equal(got.target, want_mask.flip(-1))
    assert set(got.target.unique().tolist()) <= {0, 1}  # nearest: classes, not blends
    assert torch.equal(got.frames.key, got.frames.context[1])


def test_channel_unet_on_identical_frames_is_the_2d_unet():
    torch.manual_seed(0)
    model = models.create("channel_unet", num_classes=2, frames=4, base_width=4, depth=2).eval()
    torch.manual_seed(0)
    unet = UNet(3, 2, base_width=4, depth=2).eval()
    frame = torch.rand(1, 3, 16, 16)
    with torch.no_grad():
        torch.testing.assert_close(model(frame.repeat(1, 4, 1, 1)), unet(frame))
    with pytest.raises(DataError, match=r"channel layout \(B, 3\*4=12, H, W\)"):
        model(torch.zeros(1, 9, 16, 16))


def test_channel_unet_trains_with_crops_and_predicts_masks(seg_store, tmp_path):
    cfg = _config(seg_store, task="segmentation")
    cfg["model"] = {"name": "channel_unet", "options": {"base_width": 4, "depth": 2}}
    cfg["data"]["augmentation"] = {"hflip": 0.5, "size": 24, "scale": [0.4, 1.0]}
    s = run_training(cfg, tmp_path / "run", progress=False)
    assert s["task"] == "segmentation" and 0.0 <= s["miou"] <= 1.0
    loaded = load_inference_model(tmp_path / "run" / "best.pt")
    assert loaded.contract.layout == "channel" and loaded.task == "segmentation"
    # evaluation and prediction see whole frames: the mask is the stored frame's size
    frames = open_store(seg_store).read(0, list(range(8)))
    p = Predictor.from_checkpoint(loaded, stride=1)
    preds = [q for i, f in enumerate(frames) for q in p.push(f.permute(1, 2, 0).numpy(), i / 15)]
    preds += p.flush()
    assert [q.key_source_frame for q in preds] == list(range(8))
    assert preds[0].mask.shape == (32, 32)
