"""The keyframe model's recipe from the config: G pre-trained on the store's optical flow,
F first on a frozen G then both together, and the PCA picture of H_t beside K_t saved at
every validation; on a real segmentation store built with --flow."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from PIL import Image

from hyperframes import ConfigError
from hyperframes.build import BuildOptions, build_store
from hyperframes.demo import make_segmentation_dataset
from hyperframes.infer import predict_video
from hyperframes.store import open_store
from hyperframes.train import load_checkpoint, load_config, run_training
from hyperframes.train._config._data import build_data
from hyperframes.train._loop._keyframe_recipe import hidden_picture, pretrain_on_flow
from hyperframes.train._loop._setup import build_model


@pytest.fixture(scope="module")
def flow_store(tmp_path_factory):
    root = tmp_path_factory.mktemp("kfr") / "videos"
    root.mkdir()
    make_segmentation_dataset(root, videos=6, frames=12, size=32, seed=3)
    out = tmp_path_factory.mktemp("kfr") / "store"
    build_store(root, out, BuildOptions(size="none", flow="dis"), progress=False)
    return out


def _config(store, **train) -> dict:
    return {
        "data": {
            "store": str(store),
            "frames": 4,
            "batch_size": 4,
            "sampler": "sliding",
            "sampler_options": {"window_stride": 4},
            "val_sampler_options": {"clips": 1},
        },
        "model": {"name": "keyframe_unet", "options": {"base_width": 4, "depth": 2}},
        "train": {"epochs": 2, "optimizer": "adamw", "lr": 0.003, **train},
    }


def _g(state: dict) -> dict:
    return {k: v for k, v in state.items() if k.startswith("aggregator.")}


def test_f_learns_first_on_a_frozen_g_then_both(flow_store, tmp_path):
    cfg = load_config(_config(flow_store, f_first_epochs=1))
    init = build_model(cfg, 2).state_dict()
    with open_store(flow_store) as st:
        steps = len(build_data(cfg, st).train) // 4
    run = tmp_path / "run"
    run_training(cfg, run, progress=False, stop_after_steps=steps)  # the end of epoch 1
    first = load_checkpoint(run / "last.pt")["model"]
    for k, v in _g(init).items():  # G untouched: weights and BatchNorm statistics
        assert torch.equal(first[k], v), k
    f_keys = [k for k in init if k.startswith("segmenter.") and k.endswith("weight")]
    assert any(not torch.equal(first[k], init[k]) for k in f_keys)
    run_training(cfg, run, progress=False, resume=True)
    second = load_checkpoint(run / "last.pt")["model"]
    moved = [k for k in _g(init) if k.endswith("weight") and not torch.equal(second[k], first[k])]
    assert moved, "G did not train in the second phase"


def test_g_pre_trains_on_the_stored_flow(flow_store):
    cfg = load_config(_config(flow_store, flow_pretrain_epochs=4))
    with open_store(flow_store) as st:
        b = build_data(cfg, st)
        model = build_model(cfg, 2, b.contract)
        before = {k: v.clone() for k, v in _g(model.state_dict()).items()}
        losses = pretrain_on_flow(cfg, model, b, st, torch.device("cpu"))
    assert len(losses) == 4 and losses[-1] < losses[0]  # G learns to predict the flow
    after = _g(model.state_dict())
    assert any(not torch.equal(after[k], before[k]) for k in before)
    seg = {k: v for k, v in model.state_dict().items() if k.startswith("segmenter.")}
    fresh = build_model(cfg, 2, b.contract).state_dict()
    assert all(torch.equal(v, fresh[k]) for k, v in seg.items())  # F untouched


def test_g_pre_trains_on_flow_in_a_run_that_crops_and_flips(flow_store):
    # the stored flow cannot follow a crop or a flip: the pre-training reads the windows as
    # stored (this raised "target stage ... moves the frames" before), the run keeps its own
    raw = _config(flow_store, flow_pretrain_epochs=1)
    raw["data"]["augmentation"] = {"size": 24, "hflip": 1.0}
    cfg = load_config(raw)
    with open_store(flow_store) as st:
        b = build_data(cfg, st)
        model = build_model(cfg, 2, b.contract)
        losses = pretrain_on_flow(cfg, model, b, st, torch.device("cpu"))
    assert len(losses) == 1 and np.isfinite(losses[0])
    aug = cfg.data.augmentation
    assert (aug.size, aug.hflip, cfg.data.flow) == (24, 1.0, False)


def test_training_with_the_recipe_saves_the_pca_pictures(flow_store, tmp_path, capsys):
    run = tmp_path / "run"
    cfg = _config(flow_store, f_first_epochs=1, flow_pretrain_epochs=1)
    run_training(cfg, run)
    assert "G pre-training on optical flow 1/1" in capsys.readouterr().out
    pictures = sorted((run / "hidden").glob("epoch_*.png"))
    assert [p.name for p in pictures] == ["epoch_001.png", "epoch_002.png"]
    img = np.asarray(Image.open(pictures[-1]))
    assert img.shape == (64, 2 * 64 + 8, 3)  # K_t | gap | PCA(H_t), scale 2 of 32x32
    assert img[:, :64].std() > 0 and img[:, 72:].std() > 0
    with open_store(flow_store) as st:  # predict saves the picture of the first window
        video = st.videos[0].path
    report = predict_video(run / "best.pt", video, stride=4, out=tmp_path / "pred")
    assert tmp_path / "pred" / "hidden.png" in report.outputs
    assert np.asarray(Image.open(tmp_path / "pred" / "hidden.png")).shape == (64, 136, 3)


def test_hidden_picture_shows_the_key_frame(flow_store, tmp_path):
    cfg = load_config(_config(flow_store))
    with open_store(flow_store) as st:
        b = build_data(cfg, st)
        model = build_model(cfg, 2, b.contract)
        s = b.val[0]
        x = b.contract.prepare(s.frames[None])
        path = hidden_picture(
            model,
            x,
            s.mask[None],
            tmp_path / "h.png",
            mean=b.contract.mean,
            std=b.contract.std,
            scale=1,
        )
    img = np.asarray(Image.open(path))
    key = s.frames[len(s.frames) // 2].permute(1, 2, 0).numpy()
    assert np.abs(img[:, :32].astype(int) - key.astype(int)).max() <= 1  # K_t as stored


def test_the_recipe_is_refused_where_it_does_not_apply(flow_store, tmp_path):
    with pytest.raises(ConfigError, match=r"train\.f_first_epochs: .* has no G"):
        load_config(
            {**_config(flow_store), "model": {"name": "r2plus1d_tiny"}},
            overrides=["train.f_first_epochs=1"],
        )
    with pytest.raises(ConfigError, match=r"train\.f_first_epochs: 2 leaves no epoch"):
        load_config(_config(flow_store, f_first_epochs=2))
    plain = tmp_path / "plain"
    root = tmp_path / "videos"
    root.mkdir()
    make_segmentation_dataset(root, videos=4, frames=8, size=32, seed=1)
    build_store(root, plain, BuildOptions(size="none"), progress=False)
    with pytest.raises(ConfigError, match=r"train\.flow_pretrain_epochs: .* no optical flow"):
        run_training(_config(plain, flow_pretrain_epochs=1), tmp_path / "r", progress=False)
