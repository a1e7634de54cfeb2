"""Bad input to predict / export: clear errors naming what and where."""

from __future__ import annotations

import argparse

import numpy as np
import pytest
import torch

from hyperframes import ConfigError, DecodeError, InputError, models
from hyperframes.checkpoint._checkpoint import save_checkpoint
from hyperframes.demo._synthetic import make_motion_frames, write_h264
from hyperframes.infer import (
    InputContract,
    Predictor,
    export_onnx,
    load_inference_model,
    predict_video,
)

T = 4


def _state(name="cnn_lstm", classes=("a", "b")):
    torch.manual_seed(0)
    model = models.create(name, num_classes=len(classes), frames=T)
    config = {
        "data": {"frames": T, "mean": [0.5] * 3, "std": [0.25] * 3},
        "model": {"name": name, "num_classes": len(classes), "options": {}},
    }
    return {"model": model.state_dict(), "config": config, "classes": list(classes)}


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory):
    return save_checkpoint(tmp_path_factory.mktemp("c") / "best.pt", _state())


@pytest.fixture(scope="module")
def video(tmp_path_factory):
    clip = make_motion_frames("up", frames=6, size=32, rng=np.random.default_rng(0))
    return write_h264(tmp_path_factory.mktemp("v") / "v.mp4", clip, fps=10)


def test_random_bytes_are_not_a_checkpoint(tmp_path, video):
    bad = tmp_path / "best.pt"
    bad.write_bytes(np.random.default_rng(0).bytes(4096))
    cut = tmp_path / "cut.pt"
    cut.write_bytes(save_checkpoint(tmp_path / "ok.pt", _state()).read_bytes()[:300])
    with pytest.raises(
        InputError, match=r"cut\.pt: not a hyperframes checkpoint: torch\.load cannot"
    ):
        load_inference_model(cut)
    with pytest.raises(
        InputError,
        match=r"checkpoint .*best\.pt: not a hyperframes checkpoint: torch\.load cannot read it",
    ):
        predict_video(bad, video, out=tmp_path / "o")
    with pytest.raises(InputError, match=r"best\.pt: not a hyperframes checkpoint"):
        export_onnx(bad, tmp_path / "m.onnx")


def test_a_pickle_that_weights_only_refuses_is_rejected(tmp_path):
    bad = tmp_path / "evil.pt"
    torch.save({"format": "hyperframes-checkpoint", "model": argparse.Namespace(a=1)}, bad)
    with pytest.raises(
        InputError,
        match=r"checkpoint .*evil\.pt: not a hyperframes checkpoint: it holds Python objects "
        r"\(argparse\.Namespace\) that torch\.load\(weights_only=True\) refuses",
    ):
        load_inference_model(bad)


def test_a_plain_state_dict_is_not_a_checkpoint(tmp_path):
    path = tmp_path / "weights.pt"
    torch.save(models.create("cnn_lstm", num_classes=2, frames=T).state_dict(), path)
    with pytest.raises(
        InputError,
        match=r"weights\.pt: not a hyperframes checkpoint \(expected a dict with format 'hyperframes-checkpoint'",
    ):
        load_inference_model(path)


def test_missing_checkpoint_and_empty_run_folder(tmp_path):
    with pytest.raises(InputError, match=r"checkpoint .*nope\.pt: no such file"):
        load_inference_model(tmp_path / "nope.pt")
    with pytest.raises(InputError, match=r"a folder without best\.pt or last\.pt"):
        load_inference_model(tmp_path)


def test_run_folder_uses_best_pt(tmp_path, ckpt):
    save_checkpoint(tmp_path / "best.pt", _state())
    assert load_inference_model(tmp_path).path.endswith("best.pt")


def test_weights_that_do_not_fit_the_config(tmp_path):
    state = _state()
    state["config"]["model"]["options"] = {"hidden_size": 16}
    path = save_checkpoint(tmp_path / "edited.pt", state)
    with pytest.raises(InputError, match=r"edited\.pt: the weights do not fit model 'cnn_lstm'"):
        load_inference_model(path)


def test_unknown_model_and_version(tmp_path):
    state = _state()
    state["config"]["model"]["name"] = "cnn_lstn"
    path = save_checkpoint(tmp_path / "x.pt", state)
    with pytest.raises(InputError, match=r"x\.pt: config\.model\.name: unknown model 'cnn_lstn'"):
        load_inference_model(path)
    path = save_checkpoint(tmp_path / "v.pt", {**_state(), "version": 99})
    with pytest.raises(InputError, match=r"v\.pt: version 99 is not readable"):
        load_inference_model(path)


def test_unreadable_video(tmp_path, ckpt):
    bad = tmp_path / "broken.mp4"
    bad.write_bytes(b"\x00\x00\x00\x18ftypmp42" + np.random.default_rng(1).bytes(2000))
    with pytest.raises((InputError, DecodeError), match=r"broken\.mp4"):
        predict_video(ckpt, bad, out=tmp_path / "o")
    with pytest.raises(InputError, match=r"missing\.mp4: No such file or directory"):
        predict_video(ckpt, tmp_path / "missing.mp4", out=tmp_path / "o")
    assert not (tmp_path / "o").exists()  # nothing written before the video is known good


@pytest.mark.parametrize("stride", [0, -2, 1.5, True])
def test_bad_stride(tmp_path, ckpt, video, stride):
    with pytest.raises(ConfigError, match=r"stride .*: allowed: an integer >= 1"):
        predict_video(ckpt, video, stride=stride, out=tmp_path / "o")


@pytest.mark.parametrize("ema", [-0.1, 1.0, float("nan")])
def test_bad_ema(ckpt, ema):
    with pytest.raises(ConfigError, match=r"ema .*: allowed: a number with 0 <= ema < 1"):
        Predictor.from_checkpoint(ckpt, ema=ema)


def test_bad_frames_pushed():
    model = models.create("cnn_lstm", num_classes=2, frames=T)
    p = Predictor(model, InputContract(frames=T, layout="temporal", size="16"))
    with pytest.raises(InputError, match=r"frame 0: expected an \(H, W, 3\) uint8 RGB array"):
        p.push(np.zeros((16, 16), np.uint8), 0.0)
    with pytest.raises(InputError, match=r"frame 0: give its time"):
        p.push(np.zeros((16, 16, 3), np.uint8))
    p.push(np.zeros((16, 16, 3), np.uint8), 1.0)
    with pytest.raises(InputError, match=r"frame 1: times must increase"):
        p.push(np.zeros((16, 16, 3), np.uint8), 1.0)
    with pytest.raises(
        InputError, match=r"frame 1: becomes 16x32 model input, earlier frames 16x16"
    ):
        p.push(np.zeros((16, 32, 3), np.uint8), 2.0)


def test_bad_size_option(ckpt):
    with pytest.raises(ConfigError, match=r"frame size '12y' is not understood"):
        load_inference_model(ckpt, size="12y")
