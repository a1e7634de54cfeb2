"""Training configs: every example config validates; bad keys, types and ranges are ConfigErrors
naming the key and what is allowed; --set overrides; the resolved config round-trips."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from hyperframes import ConfigError
from hyperframes.train import Config, apply_overrides, config_from_dict, load_config, save_config
from hyperframes.train._loop._schedule import lr_at, scaled_lr

CONFIGS = sorted((Path(__file__).resolve().parents[1] / "configs").glob("*.yaml"))
BASE = {"data": {"store": "some/store"}}


def test_the_example_configs_exist():
    names = {p.name for p in CONFIGS}
    assert {
        "demo.yaml",
        "tsm_r50_kinetics.yaml",
        "channel_r18.yaml",
        "keyframe_segmentation.yaml",
    } <= names


@pytest.mark.parametrize("path", CONFIGS, ids=[p.name for p in CONFIGS])
def test_every_config_in_configs_validates(path):
    cfg = load_config(path)
    assert isinstance(cfg, Config)
    assert Path(cfg.data.store).is_absolute()
    # and the resolved form validates again, unchanged
    assert config_from_dict(cfg.to_dict()).to_dict() == cfg.to_dict()


def test_defaults_fill_every_key():
    cfg = load_config(BASE)
    assert cfg.train.optimizer == "sgd"
    assert cfg.data.frames == 8
    assert cfg.data.augmentation.hflip == 0.0
    assert cfg.eval.clips == 1


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (
            {"data": {"store": "s", "framez": 8}},
            r"unknown key data\.framez; did you mean data\.frames",
        ),
        (
            {"data": {"store": "s"}, "trian": {}},
            r"unknown config section 'trian'; did you mean train",
        ),
        (
            {"data": {"store": "s"}, "train": {"epochs": "ten"}},
            r"train\.epochs: expected an integer, got 'ten'; allowed: an integer >= 1",
        ),
        (
            {"data": {"store": "s"}, "train": {"epochs": 0}},
            r"train\.epochs: out of range: 0; allowed: an integer >= 1",
        ),
        (
            {"data": {"store": "s"}, "train": {"lr": -1}},
            r"train\.lr: out of range: -1\.0; allowed: a number > 0",
        ),
        (
            {"data": {"store": "s"}, "train": {"optimizer": "adam"}},
            r"train\.optimizer: not an allowed value: 'adam'; allowed: one of sgd, adamw",
        ),
        ({"data": {"store": "s"}, "train": {"amp": "yes"}}, r"train\.amp: expected true or false"),
        (
            {"data": {"store": "s"}, "train": {"label_smoothing": 1.0}},
            r"train\.label_smoothing: out of range: 1\.0; allowed: a number >= 0\.0 and < 1",
        ),
        ({"data": {"store": "s", "mean": [0.5, 0.5]}}, r"data\.mean: expected 3 values"),
        (
            {"data": {"store": "s", "augmentation": {"hflip": 2}}},
            r"data\.augmentation\.hflip: out of range: 2\.0; allowed: a number >= 0\.0 and <= 1\.0",
        ),
        (
            {"data": {"store": "s", "augmentation": {"sizes": 3}}},
            r"unknown key data\.augmentation\.sizes",
        ),
        (
            {"data": {"store": "s", "layout": "conv3d"}},
            r"data\.layout: 'conv3d' does not fit model 'channel_resnet18'.*allowed: auto, channel",
        ),
        (
            {"data": {"store": "s"}, "model": {"name": "resnet18"}},
            r"model\.name: unknown model 'resnet18'",
        ),
        (
            {"data": {"store": "s"}, "model": {"options": {"width": 3}}},
            r"model\.options: channel_resnet18 has no option\(s\) 'width'",
        ),
        (
            {"data": {"store": "s", "sampler": "randm"}},
            r"data\.sampler: unknown sampler 'randm'; known: .*random.*; did you mean random",
        ),
        (
            {"data": {"store": "s", "sampler_options": {"strid": 2}}},
            r"data\.sampler: random sampler: unknown parameter\(s\) strid",
        ),
        (
            {"data": {"store": "s"}, "model": {"name": "keyframe_unet"}, "train": {"mixup": 0.2}},
            r"train\.mixup / train\.cutmix apply to classification only",
        ),
        (
            {"data": {"store": "s"}, "eval": {"crops": 2}},
            r"eval\.crops: not an allowed value: 2; allowed: one of 1, 3",
        ),
        ({"data": {}}, r"data\.store is required"),
        ({"model": {}}, r"needs a data section"),
        (
            {"data": {"store": "s"}, "train": {"min_lr": 1.0, "lr": 0.1}},
            r"train\.min_lr: 1\.0 is above train\.lr=0\.1",
        ),
    ],
)
def test_bad_values_name_the_key_and_the_allowed_values(raw, message):
    with pytest.raises(ConfigError, match=message):
        load_config(raw)


def test_yaml_file_errors(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("data: [unclosed\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(bad)
    with pytest.raises(ConfigError, match="cannot read the config"):
        load_config(tmp_path / "missing.yaml")
    bad.write_text("- a\n- b\n")
    with pytest.raises(ConfigError, match="a config is a mapping"):
        load_config(bad)


def test_set_overrides(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(BASE))
    cfg = load_config(
        path,
        [
            "train.lr=0.5",
            "data.frames=4",
            "data.sampler_options.stride=2",
            "model.options={}",
            "train.amp=true",
            "data.augmentation.scale=[0.5, 1.0]",
        ],
    )
    assert cfg.train.lr == 0.5 and cfg.data.frames == 4 and cfg.train.amp is True
    assert cfg.data.sampler_options == {"stride": 2}
    assert cfg.data.augmentation.scale == [0.5, 1.0]
    with pytest.raises(ConfigError, match=r"unknown key train\.lrr; did you mean train\.lr"):
        load_config(path, ["train.lrr=1"])
    with pytest.raises(ConfigError, match="expected KEY=VALUE"):
        load_config(path, ["train.lr"])
    with pytest.raises(ConfigError, match="the key needs a section"):
        load_config(path, ["lr=1"])
    with pytest.raises(ConfigError, match=r"train\.lr is a value, not a section"):
        load_config(path, ["train.lr=1", "train.lr.x=2"])
    # the raw mapping given is not modified
    raw = {"data": {"store": "s"}}
    apply_overrides(raw, ["data.frames=2"])
    assert raw == {"data": {"store": "s"}}


def test_saved_config_is_resolved_and_reloads(tmp_path):
    cfg = load_config(BASE, ["train.epochs=3"])
    path = save_config(cfg, tmp_path / "run" / "config.yaml")
    text = path.read_text()
    assert "augmentation:" in text and "epochs: 3" in text
    again = load_config(path)
    assert again.to_dict() == cfg.to_dict()


def test_learning_rate_schedule_and_scaling():
    assert scaled_lr(0.1, 512, 256) == pytest.approx(0.2)
    assert scaled_lr(0.1, 512, None) == pytest.approx(0.1)
    # warmup 2 of 10 steps: 0.5, 1.0 of peak; then cosine from peak to min_lr
    assert lr_at(0, 10, peak=1.0, warmup=2) == pytest.approx(0.5)
    assert lr_at(1, 10, peak=1.0, warmup=2) == pytest.approx(1.0)
    assert lr_at(2, 10, peak=1.0, warmup=2) == pytest.approx(1.0)
    assert lr_at(6, 10, peak=1.0, warmup=2, min_lr=0.0) == pytest.approx(0.5)
    assert lr_at(10, 10, peak=1.0, warmup=2, min_lr=0.1) == pytest.approx(0.1)
    assert lr_at(7, 10, peak=0.3, schedule="constant") == pytest.approx(0.3)


def test_a_task_without_a_model_names_the_registry_models_for_it():
    """train.task: interpolation with no model.name: the error says the default model was
    used and names the models that do fit (frame_unet)."""
    with pytest.raises(ConfigError) as e:
        load_config({**BASE, "train": {"task": "interpolation"}})
    msg = str(e.value)
    assert "does not fit model 'channel_resnet18' (model.name not set: the default)" in msg
    assert "the models for interpolation: frame_unet" in msg and "(set model.name)" in msg
    with pytest.raises(ConfigError, match=r"the models for masked_video: video_mae \(set"):
        load_config({**BASE, "model": {"name": "tsn_resnet18"}, "train": {"task": "masked_video"}})
