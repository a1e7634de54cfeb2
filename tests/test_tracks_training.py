"""Training on the aligned tracks (issue 12): the audio-visual model fed ``batch.audio`` from a
store built with ``--audio``, a channel model fed flow planes from ``--flow``; their
checkpoints' contracts carry the tracks to eval and export; the predictor refuses them."""

from __future__ import annotations

import importlib.util

import pytest
import torch

from _media import make_beep_video
from _stores import tiny_train_config
from hyperframes import ConfigError
from hyperframes.infer import Predictor, load_inference_model
from hyperframes.train import evaluate, load_checkpoint, resolve_contract, run_training


@pytest.fixture(scope="module")
def av_store(tmp_path_factory):
    from hyperframes.build import BuildOptions, build_store

    tmp = tmp_path_factory.mktemp("av")
    for cls, at in (("early", 0.1), ("late", 0.5)):
        for k in range(2):
            make_beep_video(
                tmp / "src" / cls / f"{k}.mkv",
                seconds=0.8,
                fps=20,
                beeps=[(at + 0.05 * k, at + 0.05 * k + 0.15)],
            )
    out = tmp / "store"
    build_store(tmp / "src", out, BuildOptions(size="none", audio=True, flow="dis"), progress=False)
    return out


def _config(store, model: str, **data) -> dict:
    cfg = tiny_train_config(store, epochs=1)
    cfg["model"] = {"name": model}
    cfg["data"].update(data, check_leakage=False)
    return cfg


@pytest.mark.slow
def test_the_audio_visual_model_trains_on_store_audio(av_store, tmp_path):
    cfg = _config(
        av_store,
        "av_channel_resnet18",
        audio="logmel",
        audio_options={"n_mels": 32, "columns_per_frame": 2},
    )
    cfg["data"]["val_sampler_options"] = {"clips": 1}
    run = tmp_path / "run"
    summary = run_training(cfg, run, progress=False)
    assert summary["epochs"] == 1
    ck = load_checkpoint(run / "best.pt")
    assert ck["contract"]["audio"] == {"n_mels": 32, "window_ms": 25.0, "columns_per_frame": 2}
    assert "flow" not in ck["contract"]
    contract = resolve_contract(ck)
    assert contract.model_options() == {"n_mels": 32, "columns_per_frame": 2}
    with pytest.raises(ConfigError, match="audio"):
        Predictor(torch.nn.Identity(), contract)


@pytest.mark.slow
def test_a_channel_model_trains_on_flow_planes_and_evaluates(av_store, tmp_path):
    cfg = _config(av_store, "channel_resnet18", flow=True, register="homography")
    run = tmp_path / "run"
    run_training(cfg, run, progress=False)
    ck = load_checkpoint(run / "best.pt")
    assert ck["contract"]["flow"] is True and ck["contract"]["register"] == "homography"
    m = evaluate(run, verbose=False)
    assert m["videos"] >= 1 and 0.0 <= m["accuracy"] <= 1.0
    loaded = load_inference_model(run / "best.pt")
    assert loaded.model.backbone.conv1.in_channels == 3 * 4 + 2 * 3
    with pytest.raises(ConfigError, match="optical flow"):
        Predictor(loaded.model, loaded.contract)
    if importlib.util.find_spec("onnx") and importlib.util.find_spec("onnxscript"):
        from hyperframes.infer import export_onnx

        export_onnx(loaded, tmp_path / "m.onnx", check=False)
        assert (tmp_path / "m.onnx").stat().st_size > 1000


@pytest.mark.parametrize(
    ("model", "data", "match"),
    [
        ("r2plus1d_tiny", {"flow": True}, "data.flow: model 'r2plus1d_tiny' cannot take flow"),
        ("av_channel_resnet18", {}, "data.audio: model 'av_channel_resnet18' takes a log-mel"),
        ("channel_resnet18", {"audio_options": {"n_mels": 8}}, "given without data.audio"),
        (
            "channel_resnet18",
            {"audio": "logmel", "audio_options": {"mels": 8}},
            r"data.audio_options: .*unknown keys \['mels'\]",
        ),
        ("channel_resnet18", {"register": "affine"}, "data.register: not an allowed value"),
    ],
)
def test_track_options_are_checked_against_the_model(av_store, tmp_path, model, data, match):
    from hyperframes.train import config_from_dict

    with pytest.raises(ConfigError, match=match):
        config_from_dict(_config(av_store, model, **data))


def test_a_checkpoint_from_before_the_track_keys_resumes():
    from hyperframes.train import config_from_dict
    from hyperframes.train._loop._setup import check_resume_config

    cfg = config_from_dict({"data": {"store": "s"}})
    saved = cfg.to_dict()
    for key in ("audio", "audio_options", "audio_missing", "flow", "register"):
        del saved["data"][key]
    check_resume_config(saved, cfg)  # the new keys at their defaults: the same run
    with pytest.raises(ConfigError, match=r"data\.flow: False -> True"):
        check_resume_config(saved, config_from_dict({"data": {"store": "s", "flow": True}}))
