"""One checkpoint module for train and infer: what a run folder resolves to, one reader, one
model-rebuild path (wrapper prefixes stripped), old checkpoints still load."""

from __future__ import annotations

import pytest
import torch

from hyperframes import ConfigError, InputError, models
from hyperframes._core._contract import InputContract
from hyperframes.checkpoint._checkpoint import (
    load_checkpoint,
    load_weights,
    rebuild_model,
    resolve_checkpoint,
    save_checkpoint,
    strip_wrappers,
)
from hyperframes.infer import load_inference_model

T = 4


def _state(**extra) -> dict:
    torch.manual_seed(0)
    model = models.create("cnn_lstm", num_classes=2, frames=T)
    config = {
        "data": {"frames": T, "mean": [0.5] * 3, "std": [0.25] * 3},
        "model": {"name": "cnn_lstm", "num_classes": 2, "options": {}},
    }
    return {"model": model.state_dict(), "config": config, "classes": ["a", "b"], **extra}


def test_a_run_folder_means_best_pt_else_last_pt_and_resume_means_last_pt(tmp_path):
    with pytest.raises(InputError, match=r"a folder without best\.pt or last\.pt"):
        resolve_checkpoint(tmp_path)
    save_checkpoint(tmp_path / "last.pt", _state())
    assert resolve_checkpoint(tmp_path) == tmp_path / "last.pt"
    save_checkpoint(tmp_path / "best.pt", _state())
    assert resolve_checkpoint(tmp_path) == tmp_path / "best.pt"
    assert resolve_checkpoint(tmp_path, resume=True) == tmp_path / "last.pt"
    assert resolve_checkpoint(tmp_path / "last.pt") == tmp_path / "last.pt"  # a file: itself
    # every reader follows the rule: train's reader, predict/export's loader
    assert load_checkpoint(tmp_path)["path"] == str(tmp_path / "best.pt")
    assert load_checkpoint(tmp_path, resume=True)["path"] == str(tmp_path / "last.pt")
    assert load_inference_model(tmp_path).path == str(tmp_path / "best.pt")
    (tmp_path / "last.pt").unlink()
    with pytest.raises(InputError, match=r"a folder without last\.pt"):
        resolve_checkpoint(tmp_path, resume=True)
    with pytest.raises(InputError, match=r"checkpoint .*nope\.pt: no such file; give a run"):
        load_checkpoint(tmp_path / "nope.pt")


@pytest.mark.parametrize("prefix", ["module.", "_orig_mod.", "module._orig_mod."])
def test_wrapper_prefixes_are_stripped_on_every_path(tmp_path, prefix):
    state = _state()
    plain = dict(state["model"])
    state["model"] = {prefix + k: v for k, v in plain.items()}
    assert strip_wrappers(state["model"]).keys() == plain.keys()
    path = save_checkpoint(tmp_path / "ddp.pt", state)
    model, contract = rebuild_model(load_checkpoint(path))  # eval, predict, export
    assert not model.training and contract.classes == ("a", "b")
    assert all(torch.equal(v, plain[k]) for k, v in model.state_dict().items())
    fresh = models.create("cnn_lstm", num_classes=2, frames=T)
    load_weights(fresh, load_checkpoint(path))  # --resume
    assert all(torch.equal(v, plain[k]) for k, v in fresh.state_dict().items())


def test_weights_that_do_not_fit_are_an_input_error(tmp_path):
    path = save_checkpoint(tmp_path / "x.pt", _state())
    other = models.create("cnn_lstm", num_classes=3, frames=T)
    with pytest.raises(InputError, match=r"x\.pt: the weights do not fit model"):
        load_weights(other, load_checkpoint(path))


def test_an_old_checkpoint_without_a_contract_still_loads(tmp_path):
    state = _state(input={"size": "40", "fps": 5.0})
    state["config"]["data"]["augmentation"] = {"size": 32}
    path = save_checkpoint(tmp_path / "old.pt", state)
    _, contract = rebuild_model(load_checkpoint(path))
    assert (contract.size, contract.fps, contract.crop, contract.frames) == ("40", 5.0, 32, T)
    assert (contract.mean, contract.layout) == ((0.5,) * 3, "temporal")
    assert contract.source.startswith("checkpoint input.size")
    # and one with a contract: the contract wins over the config
    new = InputContract(frames=T, layout="temporal", size="64", crop=48, classes=("a", "b"))
    path = save_checkpoint(tmp_path / "new.pt", _state(contract=new.to_dict()))
    loaded = load_inference_model(path, size="80")  # an argument still overrides
    assert (loaded.contract.size, loaded.contract.crop) == ("80", 48)
    assert loaded.contract.source == "size argument, checkpoint contract"


def test_a_crafted_contract_is_refused_before_anything_is_built(tmp_path):
    bad = {**InputContract(frames=T, layout="temporal").to_dict(), "frames": 10**9}
    path = save_checkpoint(tmp_path / "crafted.pt", _state(contract=bad))
    pattern = r"^checkpoint .*crafted\.pt: contract\.frames: out of range: 1000000000"
    with pytest.raises(ConfigError, match=pattern):
        load_checkpoint(path)
    with pytest.raises(ConfigError, match=pattern):
        load_inference_model(path)
    huge = {**InputContract(frames=T, layout="temporal").to_dict(), "size": "1024"}
    state = _state(contract=huge)
    state["config"]["data"].update(frames=64, batch_size=4096)
    path = save_checkpoint(tmp_path / "wide.pt", state)
    with pytest.raises(ConfigError, match=r"wide\.pt: config\.data\.batch_size x .*\(contract"):
        load_checkpoint(path)
