"""One decoder from build to prediction: the input contract records the store's decoder and
version, predict decodes with it unless told otherwise (and warns then), eval reports it."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from hyperframes import ConfigError, InputError
from hyperframes import models as M
from hyperframes.build import BuildOptions, build_store
from hyperframes.checkpoint._checkpoint import save_checkpoint
from hyperframes.cli import main
from hyperframes.decode import create_decoder
from hyperframes.demo import make_motion_dataset
from hyperframes.demo._synthetic import make_motion_frames, write_h264
from hyperframes.infer import InputContract, predict_video
from hyperframes.infer._video import choose_decoder
from hyperframes.store import open_store
from hyperframes.train import evaluate, load_config, resolve_contract

CLASSES = ("left", "right")


@pytest.fixture(scope="module")
def videos(tmp_path_factory):
    root = tmp_path_factory.mktemp("dec") / "motion"
    make_motion_dataset(root, classes=CLASSES, videos_per_class=2, frames=12, size=32, seed=2)
    return root


@pytest.fixture(scope="module")
def store(videos, tmp_path_factory):
    out = tmp_path_factory.mktemp("dec") / "pyav_store"
    build_store(videos, out, BuildOptions(size="none"), progress=False)
    return out


def _config(store) -> dict:
    return {
        "data": {"store": str(store), "frames": 4, "batch_size": 2, "workers": 0},
        "model": {"name": "cnn_lstm", "options": {"base_width": 4, "hidden_size": 8}},
    }


@pytest.fixture(scope="module")
def ckpt(store, tmp_path_factory):
    """A checkpoint of an (untrained) cnn_lstm whose contract comes from the store."""
    raw = _config(store)
    contract = resolve_contract(load_config(raw), store=store)
    contract = contract.replace(classes=CLASSES)
    torch.manual_seed(0)
    model = M.create("cnn_lstm", num_classes=2, frames=4, base_width=4, hidden_size=8)
    path = tmp_path_factory.mktemp("dec") / "best.pt"
    state = {"model": model.state_dict(), "config": raw, "contract": contract.to_dict()}
    save_checkpoint(path, {**state, "classes": list(CLASSES), "task": "classification"})
    return path


@pytest.fixture(scope="module")
def video(tmp_path_factory):
    clip = make_motion_frames("right", frames=10, size=32, rng=np.random.default_rng(0))
    return write_h264(tmp_path_factory.mktemp("v") / "clip.mp4", clip, fps=10)


def test_the_contract_records_the_store_decoder(store, ckpt):
    recorded = json.loads((store / "manifest.json").read_text())["decoder"]
    contract = resolve_contract(load_config(_config(store)), store=store)
    assert contract.decoder == {"name": "pyav", "version": create_decoder("pyav").version()}
    assert contract.decoder == {"name": recorded["name"], "version": recorded["version"]}
    back = InputContract.from_dict(contract.to_dict())
    assert back.decoder == contract.decoder
    with pytest.raises(ConfigError, match=r"contract\.decoder\.version is required: a string"):
        InputContract.from_dict({**contract.to_dict(), "decoder": {"name": "pyav"}})
    old = {k: v for k, v in contract.to_dict().items() if k != "decoder"}
    assert InputContract.from_dict(old).decoder is None  # older checkpoints stay readable


def test_predict_decodes_with_the_recorded_decoder(ckpt, video, tmp_path, capfd):
    report = predict_video(ckpt, video, out=tmp_path / "a")
    meta = json.loads((tmp_path / "a" / "timeline.json").read_text())["meta"]
    assert meta["decoder"] == "pyav" and meta["contract"]["decoder"]["name"] == "pyav"
    assert "warning" not in capfd.readouterr().err and not report.notes
    other = predict_video(ckpt, video, out=tmp_path / "b", decoder="opencv")
    err = capfd.readouterr().err
    assert "warning: decoder opencv differs from the one that built the model's store" in err
    assert any("pixels differ" in n for n in other.notes)
    assert json.loads((tmp_path / "b" / "timeline.json").read_text())["meta"]["decoder"] == (
        "opencv"
    )
    assert other.windows == report.windows  # the same windows, another decoder's pixels
    argv = ["predict", str(ckpt), str(video), "--out", str(tmp_path / "c"), "--quiet"]
    assert main([*argv, "--decoder", "opencv"]) == 0
    assert "decoder opencv differs" in capfd.readouterr().err


def test_choose_decoder_says_what_differs(capfd):
    version = create_decoder("pyav").version()
    assert choose_decoder({"name": "pyav", "version": version}, None) == ("pyav", [])
    name, notes = choose_decoder({"name": "pyav", "version": "av 0.1"}, None)
    assert name == "pyav" and notes == [
        f"decoder pyav {version} here, pyav av 0.1 built the model's store"
    ]
    assert "warning: decoder pyav" in capfd.readouterr().err
    with pytest.raises(
        InputError,
        match=r"built by nosuch 1\.0, which cannot be used here.*"
        r"--decoder",
    ):
        choose_decoder({"name": "nosuch", "version": "1.0"}, None)
    name, notes = choose_decoder(None, None)
    assert name == "pyav" and "does not record its store's decoder" in notes[0]


def test_eval_reports_the_decoder(ckpt, store, videos, tmp_path, capsys):
    r = evaluate(ckpt, store, split="all", clips=1, crops=1, out=tmp_path / "m.json")
    assert r["decoder"]["name"] == "pyav" and r["store_decoder"] == r["decoder"]
    out = capsys.readouterr().out
    assert f"decoder: model's store pyav {r['decoder']['version']}, this store pyav" in out
    cv_store = tmp_path / "cv_store"
    build_store(videos, cv_store, BuildOptions(size="none", decoder="opencv"), progress=False)
    assert open_store(cv_store).manifest["decoder"]["name"] == "opencv"
    r = evaluate(ckpt, cv_store, split="all", clips=1, crops=1, out=tmp_path / "n.json")
    assert r["store_decoder"]["name"] == "opencv"
    assert any("built by opencv" in n and "pixels differ" in n for n in r["notes"])
