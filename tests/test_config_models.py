"""The training config's sections as pydantic models: the words of their errors, a partial
(checkpoint) config, null sections, the saved form, and model options checked by the registry."""

from __future__ import annotations

import copy
import pickle

import pytest
import yaml

from hyperframes import ConfigError
from hyperframes._core._config_models import DataConfig, EvalConfig
from hyperframes._core._config_values import check_config_values, check_field
from hyperframes.models import create, get_spec
from hyperframes.train import Config, config_from_dict, precheck_config
from hyperframes.train._config._config import config_defaults

S = {"store": "s"}


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (
            {"data": {**S, "workers": -1}},
            "data.workers: out of range: -1; allowed: an integer >= 0 and <= 256, or auto (",
        ),
        ({"data": {**S, "workers": "many"}}, "data.workers: not an allowed value: 'many'; "),
        ({"data": {**S, "workers": True}}, "data.workers: expected an integer, got True; "),
        ({"data": {**S, "clips_per_video": None}}, "data.clips_per_video: not an allowed value"),
        (
            {"data": S, "eval": {"crops": True}},
            "eval.crops: expected an integer, got True; allowed: one of 1, 3",
        ),
        ({"data": S, "eval": {"crops": 3.0}}, "eval.crops: expected an integer, got 3.0"),
        (
            {"data": S, "train": {"loggers": ["wandb"]}},
            "train.loggers[0]: not an allowed value: 'wandb'; allowed: one of tensorboard, mlflow",
        ),
        (
            {"data": S, "train": {"loggers": "mlflow"}},
            "train.loggers: expected a list, got 'mlflow'; allowed: a list, each one of "
            "tensorboard, mlflow",
        ),
        (
            {"data": S, "train": {"checkpointing": [1]}},
            "train.checkpointing[0]: expected a string, got 1; allowed: a string",
        ),
        (
            {"data": S, "train": {"checkpointing": "x"}},
            "train.checkpointing: expected true or false, got 'x'; allowed: true or false or a "
            "list of strings",
        ),
        ({"data": S, "train": {"lr": float("inf")}}, "train.lr: expected a finite number, got inf"),
        (
            {"data": {**S, "decode_device": "gpu"}},
            "data.decode_device: not an allowed value: 'gpu'; allowed: one of cuda, cpu, or null",
        ),
        (
            {"data": S, "mdl": {}},
            "unknown config section 'mdl'; did you mean model? (allowed sections: data, model, "
            "train, eval)",
        ),
        ({"data": 3}, "data: expected a mapping of keys to values, got 3"),
        ({"data": None}, "data.store is required: a string (path (or s3:// URL)"),
    ],
)
def test_the_sections_errors_name_the_key_the_value_and_what_is_allowed(raw, message):
    with pytest.raises(ConfigError) as err:
        precheck_config(raw)
    assert str(err.value).startswith(message), str(err.value)


def test_a_null_section_is_its_defaults_and_a_tuple_a_list():
    raw = {"data": {**S, "augmentation": None, "mean": (0.5, 0.5, 0.5)}, "train": None}
    cfg = config_from_dict(raw)
    assert cfg.data.augmentation.scale == [0.35, 1.0] and cfg.data.mean == [0.5] * 3
    assert cfg.train.lr == 0.01 and isinstance(cfg.data.mean, list)


def test_the_config_is_a_plain_dict_copies_and_pickles():
    cfg = config_from_dict({"data": S, "train": {"lr": 1}})
    d = cfg.to_dict()
    assert list(d) == ["data", "model", "train", "eval"]
    assert d["train"]["lr"] == 1.0 and isinstance(d["train"]["lr"], float)
    assert d["data"]["augmentation"]["hflip"] == 0.0 and d["data"]["workers"] == "auto"
    assert yaml.safe_load(yaml.safe_dump(d)) == d  # plain values only
    for again in (copy.deepcopy(cfg), pickle.loads(pickle.dumps(cfg))):
        assert isinstance(again, Config) and again.to_dict() == d
    other = cfg.model_copy(update={"model": cfg.model.model_copy(update={"name": "tsn_resnet18"})})
    assert other.model.name == "tsn_resnet18" and cfg.model.name == "channel_resnet18"


def test_a_partial_config_checks_the_known_values_only():
    check_config_values({"train": {"lr": 0.1, "newer_key": 1}, "extra": {}}, prefix="config.")
    check_config_values({"data": {"mean": (0.5, 0.5, 0.5), "augmentation": None}})
    for raw, message in [
        ({"train": {"lr": -1}}, "config.train.lr: out of range: -1.0; allowed: a number > 0.0"),
        ({"data": {"augmentation": {"hflip": 3}}}, "config.data.augmentation.hflip: out of range"),
        ({"data": {"sampler_options": {"clips": 5000}}}, "config.data.sampler_options.clips: "),
        ({"model": 3}, "config.model: expected a mapping of keys to values, got 3"),
        ({"data": {"workers": "x"}}, "config.data.workers: not an allowed value: 'x'"),
    ]:
        with pytest.raises(ConfigError) as err:
            check_config_values(raw, prefix="config.")
        assert str(err.value).startswith(message), str(err.value)


def test_one_field_checked_alone():
    assert check_field("frames", 8, DataConfig, "frames") == 8
    assert check_field("eval.crops", 3, EvalConfig, "crops") == 3
    with pytest.raises(ConfigError, match=r"^frames: out of range: 0; allowed: an integer >= 1"):
        check_field("frames", 0, DataConfig, "frames")
    with pytest.raises(ConfigError, match=r"^eval\.crops: not an allowed value: 2"):
        check_field("eval.crops", 2, EvalConfig, "crops")


def test_defaults_of_the_plain_keys():
    d = config_defaults()
    assert d["train.lr"] == 0.01 and d["data.workers"] == "auto" and d["eval.crops"] == 1
    assert d["train.loggers"] == ["tensorboard"] and len(d["data.mean"]) == 3
    assert "data.store" not in d and "data.augmentation" not in d and "model.options" not in d


def test_model_options_are_checked_once_by_the_registry():
    spec = get_spec("channel_resnet18")
    spec.check_options({"extra_channels": 2})
    message = (
        "channel_resnet18 has no option(s) 'extra_chanels'; did you mean extra_channels? "
        "(allowed: checkpointing, extra_channels, dropout)"
    )
    with pytest.raises(ConfigError) as err:
        spec.check_options({"extra_chanels": 2})
    assert str(err.value) == message
    with pytest.raises(ConfigError) as err:
        create("channel_resnet18", extra_chanels=2)
    assert str(err.value) == message
    with pytest.raises(ConfigError) as err:
        config_from_dict({"data": S, "model": {"options": {"extra_chanels": 2}}})
    assert str(err.value) == f"model.options: {message}"
    get_spec("channel_timm").check_options({"drop_rate": 0.1})  # **timm_kwargs: any name


def test_model_option_values_are_checked_by_their_builders_annotations():
    spec = get_spec("cnn_lstm")
    spec.check_options({"dropout": 0, "hidden_size": 16, "norm": "group"})
    for options, message in [
        ({"dropout": "x"}, "model.options.dropout: expected a number, got 'x'; allowed: a number"),
        ({"hidden_size": 2.0}, "model.options.hidden_size: expected an integer, got 2.0"),
    ]:
        with pytest.raises(ConfigError) as err:
            config_from_dict({"data": S, "model": {"name": "cnn_lstm", "options": options}})
        assert str(err.value).startswith(message), str(err.value)
    with pytest.raises(ConfigError, match=r"^options\.dropout: expected a number, got 'x'"):
        create("cnn_lstm", dropout="x")
