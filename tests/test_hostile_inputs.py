"""Bounded work on hostile input: configs and checkpoints that ask for absurd work are refused
quickly, before anything is allocated, with an error naming the file and the key."""

from __future__ import annotations

import re
import time
import tracemalloc

import numpy as np
import pytest
import torch

from hyperframes import ConfigError, InputError, models
from hyperframes.checkpoint._checkpoint import save_checkpoint
from hyperframes.cli import main
from hyperframes.demo._synthetic import make_motion_frames, write_h264
from hyperframes.infer import export_onnx, load_inference_model, predict_video
from hyperframes.infer._load import Preprocess
from hyperframes.train import load_checkpoint, load_config
from hyperframes.train._config._config import (
    MAX_BATCH_BYTES,
    MAX_CONFIG_DEPTH,
    MAX_CONFIG_VALUES,
    read_yaml,
)

T = 4
ABSURD = 1_000_000_000


def _bomb(levels: int = 9, width: int = 9, *, merge: bool = False) -> str:
    """A "billion laughs": ``width ** levels`` values from a few hundred bytes of aliases."""
    if merge:  # the same through merge keys: each level merges the one below `width` times
        lines = ["m0: &m0 {a: 1, b: 2}"]
        for i in range(1, levels + 1):
            lines.append(f"m{i}: &m{i} {{<<: [{', '.join([f'*m{i - 1}'] * width)}]}}")
        return "\n".join(lines) + "\n"
    lines = ["a0: &a0 [" + ", ".join(['"x"'] * width) + "]"]
    for i in range(1, levels + 1):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * width) + "]")
    return "\n".join(lines) + "\n"


def _cpu_seconds() -> float:
    """CPU time of this process (every thread): the work done, which a machine busy with other
    processes does not inflate the way it inflates the wall clock."""
    return time.process_time()


def _refused_fast(call, error=ConfigError, match=None, seconds=5.0, mib=64):
    """``call()`` raises ``error`` within ``seconds`` of CPU time (traced by tracemalloc,
    ~4x slower than untraced) and ``mib`` MiB of Python memory."""
    tracemalloc.start()
    start = _cpu_seconds()
    try:
        with pytest.raises(error, match=match) as info:
            call()
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    assert _cpu_seconds() - start < seconds
    assert peak < mib << 20
    return info.value


# --------------------------------------------------------------------------- YAML files


@pytest.mark.parametrize("merge", [False, True], ids=["aliases", "merge-keys"])
def test_an_alias_bomb_is_refused_at_once(tmp_path, merge):
    path = tmp_path / "bomb.yaml"
    path.write_text(_bomb(merge=merge))
    assert path.stat().st_size < 600  # 9 ** 9 = 387 million values from a few hundred bytes
    err = _refused_fast(lambda: load_config(path), seconds=2.0)
    assert str(path) in str(err)
    assert f"expands to more than {MAX_CONFIG_VALUES} values" in str(err)
    assert "allowed: a config of at most 1 MiB" in str(err)


def test_the_training_command_refuses_an_alias_bomb(tmp_path, capsys):
    path = tmp_path / "bomb.yaml"
    path.write_text(_bomb())
    start = _cpu_seconds()
    assert main(["train", str(path), "--out", str(tmp_path / "run"), "--quiet"]) == 1
    assert _cpu_seconds() - start < 5.0
    err = capsys.readouterr().err
    assert "bomb.yaml: refused: the document expands to more than" in err
    assert "Traceback" not in err and not (tmp_path / "run").exists()


def test_a_few_legitimate_aliases_still_load(tmp_path):
    path = tmp_path / "ok.yaml"
    path.write_text(
        "opts: &opts {stride: 2, short: pad}\n"
        "data:\n"
        "  store: s\n"
        "  sampler_options: *opts\n"
        "  val_sampler_options: {<<: *opts, clips: 2}\n"
        "  mean: &m [0.5, 0.5, 0.5]\n"
        "  std: [0.25, 0.25, 0.25]\n"
        "model: {name: tsn_resnet18}\n"  # reads the mask: short pad allowed
    )
    raw = read_yaml(path)
    raw.pop("opts")
    cfg = load_config(raw)
    assert cfg.data.sampler_options == {"stride": 2, "short": "pad"}
    assert cfg.data.val_sampler_options == {"stride": 2, "short": "pad", "clips": 2}
    assert cfg.data.mean == [0.5] * 3


@pytest.mark.parametrize(
    "text, why",
    [
        ("[" * 200_000, f"is nested deeper than {MAX_CONFIG_DEPTH} levels"),
        (
            "a: [" + "1, " * (3 * MAX_CONFIG_VALUES) + "]",
            f"has more than {MAX_CONFIG_VALUES} values",
        ),
        ("".join(f"k{i}: {i}\n" for i in range(3 * MAX_CONFIG_VALUES)), "has more than"),
        ("a: &a [1, *a]", "contains itself"),
    ],
    ids=["deep", "long-list", "many-keys", "cycle"],
)
def test_deep_long_or_cyclic_documents_are_refused_quickly(tmp_path, text, why):
    path = tmp_path / "c.yaml"
    path.write_text(text)
    # bounded, not timed to the millisecond: an unbounded expansion takes minutes or all memory
    err = _refused_fast(lambda: read_yaml(path), seconds=10.0)
    assert str(err).startswith(f"{path}: refused: the document {why}")
    # the work, counted: refused where the bound is crossed (many-keys: line 5,000 of 30,000)
    line = re.search(r"\(line (\d+)\)", str(err))
    assert line is None or int(line[1]) <= MAX_CONFIG_VALUES // 2 + 1


def test_a_config_file_over_a_mebibyte_is_not_read(tmp_path):
    path = tmp_path / "big.yaml"
    path.write_text("data: {store: s}\n#" + "x" * (1 << 20))
    with pytest.raises(ConfigError, match=r"big\.yaml: refused: the file is larger than 1048576"):
        load_config(path)
    (tmp_path / "bin.yaml").write_bytes(b"data: \xff\xfe")
    with pytest.raises(ConfigError, match=r"bin\.yaml: not UTF-8 text \(byte 6\)"):
        load_config(tmp_path / "bin.yaml")


def test_overrides_and_mappings_are_bounded_too():
    with pytest.raises(ConfigError, match=r"^override .*: the value is refused: the document"):
        load_config({"data": {"store": "s"}}, ["data.sampler_options=" + "[" * 100])
    shared: list = ["x"]
    for _ in range(40):  # 2 ** 40 values, 41 objects
        shared = [shared, shared]
    _refused_fast(
        lambda: load_config({"data": {"store": "s", "sampler_options": {"a": shared}}}),
        match=r"the config is nested deeper than 32 levels; allowed: at most 10000 values",
    )
    wide = [["x"] * 20] * 20
    wide = [wide] * 30  # 12000 values, 3 levels
    with pytest.raises(ConfigError, match=r"the config expands to more than 10000 values"):
        load_config({"data": {"store": "s", "sampler_options": {"a": wide}}})


# --------------------------------------------------------------------------- sizes


@pytest.mark.parametrize(
    "key, value, allowed",
    [
        ("data.frames", ABSURD, "<= 4096"),
        ("data.batch_size", ABSURD, "<= 65536"),
        ("data.val_batch_size", ABSURD, "<= 65536"),
        ("data.augmentation.size", ABSURD, "<= 8192"),
        ("data.workers", 100_000, "<= 256"),
        ("model.num_classes", ABSURD, "<= 100000"),
        ("train.epochs", ABSURD, "<= 100000"),
        ("train.seed", 2**70, "<= 9223372036854775807"),
        ("eval.clips", ABSURD, "<= 1024"),
        ("data.val_sampler_options.clips", ABSURD, "<= 1024"),
    ],
)
def test_absurd_sizes_are_refused_before_anything_is_allocated(tmp_path, key, value, allowed):
    path = tmp_path / "c.yaml"
    path.write_text("data: {store: s}\n")
    err = _refused_fast(lambda: load_config(path, [f"{key}={value}"]), seconds=2.0)
    assert str(err).startswith(f"{key}: out of range")
    assert str(value) in str(err) and allowed in str(err)


def test_one_batch_of_frames_is_bounded(tmp_path):
    raw = {"data": {"store": "s", "frames": 64, "batch_size": 4096, "augmentation": {"size": 1024}}}
    with pytest.raises(
        ConfigError,
        match=r"data\.batch_size x data\.frames x 3 x H x W \(data\.augmentation\.size\) = 4096 x "
        r"64 x 3 x 1024 x 1024 = 768\.0 GiB .*allowed: at most 64 GiB",
    ):
        load_config(raw)
    raw["data"] |= {"batch_size": 8, "val_batch_size": 8192}
    with pytest.raises(ConfigError, match=r"^data\.val_batch_size x data\.frames"):
        load_config(raw)
    # a large real configuration is well inside: 256 x 32 x 3 x 224 x 224 = 1.1 GiB
    big = {"data": {"store": "s", "frames": 32, "batch_size": 256, "augmentation": {"size": 224}}}
    assert load_config(big).data.batch_size == 256
    assert MAX_BATCH_BYTES > 256 * 32 * 3 * 224 * 224


# --------------------------------------------------------------------------- checkpoints


def _state(**edits) -> dict:
    torch.manual_seed(0)
    model = models.create("cnn_lstm", num_classes=2, frames=T)
    config = {
        "data": {"frames": T, "mean": [0.5] * 3, "std": [0.25] * 3},
        "model": {"name": "cnn_lstm", "num_classes": 2, "options": {}},
    }
    state = {
        "model": model.state_dict(),
        "config": config,
        "classes": ["a", "b"],
        "frames": T,
        "num_classes": 2,
        "input": {"size": "32", "fps": 0.0},
    }
    for key, value in edits.items():
        *parents, last = key.split(".")
        node = state
        for p in parents:
            node = node.setdefault(p, {})
        node[last] = value
    return state


@pytest.fixture(scope="module")
def video(tmp_path_factory):
    clip = make_motion_frames("up", frames=6, size=32, rng=np.random.default_rng(0))
    return write_h264(tmp_path_factory.mktemp("v") / "v.mp4", clip, fps=10)


def test_a_sound_checkpoint_loads(tmp_path):
    path = save_checkpoint(tmp_path / "best.pt", _state())
    loaded = load_inference_model(path)
    assert loaded.preprocess.frames == T and loaded.preprocess.size == "32"
    assert load_checkpoint(path)["frames"] == T


@pytest.mark.parametrize(
    "edit, value, message",
    [
        ("config.data.frames", ABSURD, r"config\.data\.frames: out of range: 1000000000"),
        ("config.data.augmentation.size", ABSURD, r"config\.data\.augmentation\.size: out of"),
        ("config.model.num_classes", ABSURD, r"config\.model\.num_classes: out of range"),
        ("config.data.batch_size", "8", r"config\.data\.batch_size: expected an integer"),
        ("frames", ABSURD, r"frames: out of range: 1000000000; allowed: an integer >= 1"),
        ("num_classes", -3, r"num_classes: out of range: -3"),
        ("input.size", "100000x100000", r"input\.size: '100000x100000' asks for frames of"),
        ("input.size", "12y", r"input\.size '12y' is not understood"),
        ("input.fps", 1e12, r"input\.fps: 1000000000000\.0 is not a frame rate"),
        ("input.fps", float("nan"), r"input\.fps: nan is not a frame rate"),
    ],
)
def test_a_checkpoint_asking_for_absurd_sizes_is_refused(tmp_path, edit, value, message):
    path = save_checkpoint(tmp_path / "crafted.pt", _state(**{edit: value}))
    pattern = rf"^checkpoint .*crafted\.pt: {message}"
    _refused_fast(lambda: load_inference_model(path), match=pattern, mib=256)
    with pytest.raises(ConfigError, match=pattern):
        load_checkpoint(path)  # what eval and --resume read


def test_a_checkpoint_whose_batch_would_not_fit_is_refused(tmp_path):
    state = _state(**{"config.data.frames": 64, "config.data.batch_size": 4096})
    state["input"]["size"] = "1024"
    path = save_checkpoint(tmp_path / "wide.pt", state)
    with pytest.raises(
        ConfigError,
        match=r"^checkpoint .*wide\.pt: config\.data\.batch_size x config\.data\.frames x 3 x H x W "
        r"\(input\.size\) = 4096 x 64 x 3 x 1024 x 1024 = 768\.0 GiB",
    ):
        load_checkpoint(path)


def test_predict_export_and_eval_commands_name_the_file_and_the_key(tmp_path, video, capsys):
    path = save_checkpoint(tmp_path / "crafted.pt", _state(**{"config.data.frames": ABSURD}))
    want = f"checkpoint {path}: config.data.frames: out of range: 1000000000"
    for argv in (
        ["predict", str(path), str(video), "--out", str(tmp_path / "o"), "--quiet"],
        ["export", str(path), "--onnx", str(tmp_path / "m.onnx")],
    ):
        assert main(argv) == 1
        err = capsys.readouterr().err
        assert want in err and "Traceback" not in err
    assert main(["eval", str(path)]) == 1
    err = capsys.readouterr().err
    assert want in err and "Traceback" not in err
    assert not (tmp_path / "o").exists() and not (tmp_path / "m.onnx").exists()
    with pytest.raises(ConfigError, match=r"config\.data\.frames"):
        predict_video(path, video, out=tmp_path / "o")
    with pytest.raises(ConfigError, match=r"config\.data\.frames"):
        export_onnx(path, tmp_path / "m.onnx")


@pytest.mark.parametrize(
    "hidden, message",
    [
        # options within their bound that do not fit: shapes compared on meta, nothing allocated
        (
            4096,
            r"the weights do not fit model 'cnn_lstm' built from its config \(size "
            r"mismatch for lstm\.weight_ih_l0: the checkpoint has \(512, 128\), the model "
            r"\(16384, 128\)\)",
        ),
        # 16 * 10**12 bytes of LSTM weights: refused by value, before even the meta build
        (10**6, r"its config does not build a model: hidden_size must be at most 65536"),
    ],
)
def test_model_options_that_do_not_fit_the_weights_are_not_allocated(tmp_path, hidden, message):
    path = save_checkpoint(
        tmp_path / "huge.pt", _state(**{"config.model.options": {"hidden_size": hidden}})
    )
    start = _cpu_seconds()
    with pytest.raises(InputError, match=rf"^checkpoint .*huge\.pt: {message}"):
        load_inference_model(path)
    assert _cpu_seconds() - start < 5.0


@pytest.mark.parametrize("name", models.list_models())
def test_every_family_builds_on_the_meta_device(name):
    # load_inference_model checks a checkpoint's options on meta before the real build
    with torch.device("meta"):
        model = models.create(name, num_classes=3, frames=T)
    assert all(p.is_meta for p in model.parameters())


def test_size_and_frame_rate_arguments_are_bounded(tmp_path):
    path = save_checkpoint(tmp_path / "best.pt", _state())
    with pytest.raises(ConfigError, match=r"frame size: '99999' asks for frames of 99999 x 99999"):
        load_inference_model(path, size="99999")
    with pytest.raises(ConfigError, match=r"fps must be a number >= 0 and <= 1000"):
        load_inference_model(path, fps=1e9)
    with pytest.raises(
        ConfigError, match=r"frames: out of range: 1000000000; allowed: an integer >= 1 and <= 4096"
    ):
        Preprocess(frames=ABSURD, layout="temporal")
    with pytest.raises(
        ConfigError, match=r"crop: out of range: 1000000000; allowed: an integer >= 1 and <= 8192"
    ):
        Preprocess(frames=T, layout="temporal", crop=ABSURD)
    with pytest.raises(ConfigError, match=r"size: '8193x8' asks for frames of 8193 x 8 pixels"):
        Preprocess(frames=T, layout="temporal", size="8193x8")
