"""Checkpoints carry a checksum that every reader checks: a bit flipped in a weight of a real
``last.pt`` (torch itself loads it without a word: it does not check the zip's CRCs) is refused
by resume, eval, predict, export and ``model.pretrained``, naming the file; resume names the
previous checkpoint ``last.prev.pt``, from which ``--resume`` continues. Checkpoints from
before checksums (version 1) load with a note."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch
import yaml

from _stores import tiny_train_config
from hyperframes import ConfigError, InputError
from hyperframes.build import BuildOptions, build_store
from hyperframes.cli import main
from hyperframes.demo import make_motion_dataset
from hyperframes.infer import load_inference_model
from hyperframes.train import load_checkpoint, run_training, save_checkpoint


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> dict:
    """A real two-epoch run (last.pt at epoch 2, last.prev.pt at epoch 1) and its config file."""
    root = tmp_path_factory.mktemp("integrity")
    make_motion_dataset(root / "data", classes=("left", "right"), videos_per_class=2, frames=8)
    build_store(root / "data", root / "store", BuildOptions(size="none"), progress=False)
    config = tiny_train_config(root / "store", epochs=2)
    config["data"]["val_fraction"] = 0.5
    config_file = root / "config.yaml"
    config_file.write_text(yaml.safe_dump(config))
    run_training(config, root / "run", progress=False)
    video = next((root / "data").rglob("*.mp4"))
    return {"run": root / "run", "config": config_file, "video": video}


@pytest.fixture
def run(trained, tmp_path) -> Path:
    """A copy of the trained run folder, for a test to damage."""
    return Path(shutil.copytree(trained["run"], tmp_path / "run"))


def flip_weight_bit(path: Path) -> str:
    """Flip the top exponent bit of one float of the model's largest weight, in the bytes of
    the zip torch wrote (stored uncompressed), so that torch still loads the file; returns the
    weight's name. Asserts that torch.load reads the flipped value without complaint."""
    state = torch.load(path, weights_only=True)
    name, weight = max(state["model"].items(), key=lambda kv: kv[1].numel())
    raw = bytearray(path.read_bytes())
    start = raw.find(weight.contiguous().numpy().tobytes())
    assert start >= 0 and weight.dtype == torch.float32
    byte = start + 4 * (weight.numel() // 2) + 3  # little-endian: sign and exponent
    raw[byte] ^= 0x40
    path.write_bytes(bytes(raw))
    flipped = torch.load(path, weights_only=True)["model"][name]  # torch sees nothing wrong
    assert (flipped != weight).sum() == 1 and flipped.abs().max() > 1e30
    return name


def test_a_run_keeps_the_save_before_last_pt_as_last_prev_pt(trained):
    run = trained["run"]
    last, prev = load_checkpoint(run / "last.pt"), load_checkpoint(run / "last.prev.pt")
    assert (last["epoch"], prev["epoch"]) == (2, 1)
    assert last["checksum"]["algorithm"] == "sha256"
    assert last["checksum"]["digest"] != prev["checksum"]["digest"]
    assert not list(run.glob(".*.tmp"))  # written through temp files, none left behind


def test_a_flipped_weight_bit_is_refused_by_every_reader(run, trained, tmp_path, capsys):
    flip_weight_bit(run / "last.pt")
    (run / "best.pt").unlink()  # the run folder now resolves to last.pt, for every command
    damaged = f"checkpoint {run / 'last.pt'}: damaged: its contents do not match the checksum"
    with pytest.raises(InputError, match=damaged):
        load_checkpoint(run / "last.pt")
    commands = {
        "eval": ["eval", str(run)],
        "predict": ["predict", str(run), str(trained["video"])],
        "export": ["export", str(run), "--onnx", str(tmp_path / "m.onnx")],
    }
    for command, argv in commands.items():
        assert main(argv) == 1, command
        err = capsys.readouterr().err
        assert f"hyperframes {command}: error: {damaged}" in err, err
    assert not (tmp_path / "m.onnx").exists()
    # model.pretrained: the weights of a damaged checkpoint are not loaded
    argv = ["train", str(trained["config"]), "--out", str(tmp_path / "new"), "--quiet"]
    assert main([*argv, "--set", f"model.pretrained={run / 'last.pt'}"]) == 1
    err = capsys.readouterr().err
    assert f"pretrained weights {run / 'last.pt'}: damaged: its contents do not match" in err


@pytest.mark.slow  # trains one more epoch
def test_resume_from_a_damaged_last_pt_names_the_previous_one_which_resumes(run, trained, capsys):
    flip_weight_bit(run / "last.pt")
    argv = ["train", str(trained["config"]), "--out", str(run), "--resume", "--quiet"]
    argv += ["--set", "train.epochs=3"]
    assert main(argv) == 1
    err = capsys.readouterr().err
    prev, damaged = run / "last.prev.pt", run / "last.damaged.pt"
    assert f"resume: checkpoint {run / 'last.pt'}: damaged: its contents do not match" in err
    assert f"The previous checkpoint {prev} (epoch 1, step 1) is intact" in err, err
    assert f"mv {run / 'last.pt'} {damaged} && mv {prev} {run / 'last.pt'}" in err
    assert load_checkpoint(prev)["epoch"] == 1  # nothing was written
    # as the message says: set the damaged one aside, continue from the previous one
    (run / "last.pt").rename(damaged)
    prev.rename(run / "last.pt")
    assert main(argv) == 0, capsys.readouterr().err
    assert load_checkpoint(run / "last.pt")["epoch"] == 3
    assert load_checkpoint(run / "last.prev.pt")["epoch"] == 2


def test_resume_says_when_the_previous_checkpoint_is_damaged_or_missing(run):
    flip_weight_bit(run / "last.pt")
    flip_weight_bit(run / "last.prev.pt")
    with pytest.raises(InputError, match=r"And the previous checkpoint is unusable too \("):
        run_training(load_checkpoint(run / "best.pt")["config"], run, resume=True)
    (run / "last.prev.pt").unlink()
    with pytest.raises(InputError, match=r"there is no previous checkpoint \(.*last\.prev\.pt"):
        run_training(load_checkpoint(run / "best.pt")["config"], run, resume=True)


def test_a_checkpoint_from_before_checksums_loads_with_a_note(run, capsys):
    """Version 1 (no checksum) is read, unchecked, saying so once; a version-2 checkpoint whose
    checksum was removed is damaged, not old."""
    state = load_checkpoint(run / "best.pt")
    old = save_checkpoint(run / "old.pt", {**state, "version": 1})
    assert "checksum" not in torch.load(old, weights_only=True)
    assert load_checkpoint(old)["version"] == 1
    load_checkpoint(old)
    err = capsys.readouterr().err
    assert err.count(f"note: checkpoint {old} has no checksum") == 1, err
    assert "it is loaded as is" in err
    assert load_inference_model(old).path == str(old)  # predict's and export's loader
    # the same without its checksum but claiming version 2: refused
    stripped = {k: v for k, v in torch.load(old, weights_only=True).items()}
    stripped["version"] = 2
    torch.save(stripped, run / "stripped.pt")
    with pytest.raises(InputError, match=r"damaged: its checksum is missing \(format version 2"):
        load_checkpoint(run / "stripped.pt")
    with pytest.raises(ConfigError, match=r"stripped\.pt: damaged: its checksum is missing"):
        from hyperframes.models._weights import read_state_dict

        read_state_dict(run / "stripped.pt")


@pytest.mark.parametrize("links", [True, False], ids=["hard-link", "copy"])
def test_keep_previous_never_leaves_the_file_missing_or_partial(tmp_path, monkeypatch, links):
    from hyperframes._core._atomic import keep_previous, write_bytes_atomic

    if not links:  # a filesystem without hard links
        monkeypatch.setattr("os.link", lambda *a: (_ for _ in ()).throw(OSError("no links")))
    last, prev = tmp_path / "last.pt", tmp_path / "last.prev.pt"
    assert keep_previous(last, prev) is None and not prev.exists()  # nothing to keep yet
    write_bytes_atomic(last, b"first")
    assert keep_previous(last, prev) == prev
    write_bytes_atomic(last, b"second")
    assert (last.read_bytes(), prev.read_bytes()) == (b"second", b"first")
    assert last.stat().st_ino != prev.stat().st_ino  # the new last.pt is a new file
    assert sorted(p.name for p in tmp_path.iterdir()) == ["last.prev.pt", "last.pt"]
