"""The private core shared by every package (``hyperframes._core``): sizes, device and dtype
resolution; and the command line saying a library error's parameter as the option given."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from hyperframes import ConfigError
from hyperframes._core._device import resolve_device, torch_dtype
from hyperframes._core._sizes import parse_size, target_size
from hyperframes.decode import list_decoders


def test_sizes_read_one_way_and_name_the_parameter():
    assert parse_size("128") == ("short", 128, 128)
    assert parse_size("112x96") == ("exact", 112, 96)
    assert parse_size("none") is None and parse_size(None) is None
    assert target_size(240, 320, "128") == (128, 171)
    assert target_size(320, 240, "112x96") == (112, 96)
    with pytest.raises(ConfigError, match=r"^size 'big' is not understood; use a short side"):
        parse_size("big")
    with pytest.raises(ConfigError, match=r"^frame size 'x' is not understood"):
        parse_size("x", where="frame size")


def test_devices_resolve_one_way():
    want = "cuda" if torch.cuda.is_available() else "cpu"
    assert resolve_device("auto").type == want
    assert resolve_device("cpu") == torch.device("cpu")
    assert resolve_device(torch.device("cpu")) == torch.device("cpu")
    with pytest.raises(ConfigError, match=r"^device 'gpu0' is not a device; allowed: auto, cpu"):
        resolve_device("gpu0")
    if not torch.cuda.is_available():
        with pytest.raises(
            ConfigError, match=r"^train\.device: 'cuda' but no CUDA GPU is available; allowed"
        ):
            resolve_device("cuda", where="train.device")


def test_pixel_types_map_to_torch():
    assert torch_dtype(np.uint8) is torch.uint8
    assert torch_dtype(np.dtype("float16")) is torch.float16
    assert torch_dtype("float32") is torch.float32
    with pytest.raises(ConfigError, match=r"^dtype 'int64' is not a pixel type"):
        torch_dtype(np.int64)


def test_decoders_say_what_they_read():
    video = list_decoders(reads="video")
    assert video[0] == "pyav" and "frames" not in video
    assert list_decoders(reads="frames") == ["frames"]
    assert sorted(list_decoders()) == sorted([*video, "frames"])
    with pytest.raises(ConfigError, match=r"^reads must be one of video, frames or None"):
        list_decoders(reads="audio")


def test_the_command_line_says_the_option_the_user_gave():
    from hyperframes.cli._flags import as_option
    from hyperframes.cli._parser import build_parser

    parser = build_parser()
    argv = ["eval", "ck.pt", "--split", "tset", "--set"]
    said = as_option("split 'tset' is not a split of s", parser, "eval", argv)
    assert said == "--split 'tset' is not a split of s"
    # a parameter the user did not give stays a parameter (it came from a default or a config)
    assert as_option("clips must be >= 1, got 0", parser, "eval", argv) == (
        "clips must be >= 1, got 0"
    )
    # one named differently from its option
    train = ["train", "c.yaml", "--set", "lr"]
    assert as_option("override 'lr': expected KEY=VALUE", parser, "train", train) == (
        "--set 'lr': expected KEY=VALUE"
    )
    assert as_option("store s: corrupt", parser, "eval", argv) == "store s: corrupt"


def test_build_errors_name_the_option_on_the_command_line(tmp_path, capsys):
    from hyperframes.cli import main

    data = tmp_path / "data"
    data.mkdir()
    argv = ["build", str(data), "--out", str(tmp_path / "s"), "--workers", "0", "--quiet"]
    assert main(argv) == 1
    assert (
        "hyperframes build: error: --workers must be at least 1, got 0" in capsys.readouterr().err
    )
