"""BuildOptions, declared once: the model checks itself, stores record what they always did, and
``hyperframes build``'s options are generated from its fields."""

from __future__ import annotations

import argparse
import json
import pickle
import subprocess
import sys
import typing

import pytest
from pydantic import Field

from hyperframes import ConfigError
from hyperframes.build import BuildOptions
from hyperframes.cli._from_model import add_model_options, model_values
from hyperframes.cli._parser import build_parser

#: content() as the dataclass BuildOptions wrote it (before the model): a store records these
#: bytes, and a resumed build compares them
RECORDED = [
    (
        {},
        '{"fps": null, "size": "128", "codec": "raw", "dtype": "uint8", "decoder": "pyav", '
        '"stream": null, "frame_folder_fps": 30.0, "on_damaged": "keep"}',
    ),
    (
        {"fps": 2},
        '{"fps": 2, "size": "128", "codec": "raw", "dtype": "uint8", "decoder": "pyav", '
        '"stream": null, "frame_folder_fps": 30.0, "on_damaged": "keep", "max_gap": 5.0}',
    ),
    (
        {"fps": 12.5, "max_gap": None},
        '{"fps": 12.5, "size": "128", "codec": "raw", "dtype": "uint8", "decoder": "pyav", '
        '"stream": null, "frame_folder_fps": 30.0, "on_damaged": "keep", "max_gap": null}',
    ),
    (
        {"fps_max": 30, "codec": "lz4", "chunk_frames": 8},
        '{"fps": null, "fps_max": 30, "size": "128", "codec": "lz4", "dtype": "uint8", '
        '"decoder": "pyav", "stream": null, "chunk_frames": 8, "frame_folder_fps": 30.0, '
        '"on_damaged": "keep"}',
    ),
    (
        {"codec": "jpeg", "jpeg_quality": 80, "size": "112x112"},
        '{"fps": null, "size": "112x112", "codec": "jpeg", "dtype": "uint8", "decoder": "pyav", '
        '"stream": null, "jpeg_quality": 80, "frame_folder_fps": 30.0, "on_damaged": "keep"}',
    ),
    (
        {"dtype": "float16", "size": "none"},
        '{"fps": null, "size": "none", "codec": "raw", "dtype": "float16", "decoder": "pyav", '
        '"stream": null, "mean": [0.485, 0.456, 0.406], "std": [0.229, 0.224, 0.225], '
        '"frame_folder_fps": 30.0, "on_damaged": "keep"}',
    ),
    (
        {"audio": True, "audio_rate": 22050, "audio_channels": 2},
        '{"fps": null, "size": "128", "codec": "raw", "dtype": "uint8", "decoder": "pyav", '
        '"stream": null, "frame_folder_fps": 30.0, "on_damaged": "keep", "audio": true, '
        '"audio_rate": 22050, "audio_channels": 2}',
    ),
    (
        {"flow": "dis", "flow_size": "32", "flow_dtype": "int8"},
        '{"fps": null, "size": "128", "codec": "raw", "dtype": "uint8", "decoder": "pyav", '
        '"stream": null, "frame_folder_fps": 30.0, "on_damaged": "keep", "flow": "dis", '
        '"flow_size": "32", "flow_dtype": "int8"}',
    ),
    (
        {
            "workers": 3,
            "format": "hdf5",
            "max_frames": 10,
            "on_damaged": "fail",
            "stream": 1,
            "decoder": "opencv",
            "frame_folder_fps": 25,
        },
        '{"fps": null, "size": "128", "codec": "raw", "dtype": "uint8", "decoder": "opencv", '
        '"stream": 1, "frame_folder_fps": 25, "on_damaged": "fail"}',
    ),
]


@pytest.mark.parametrize(("kw", "recorded"), RECORDED)
def test_a_store_records_the_same_bytes_as_before(kw, recorded):
    assert json.dumps(BuildOptions(**kw).content()) == recorded


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"dtype": "float32"}, "^dtype: not an allowed value: 'float32'; allowed: one of uint8, "),
        ({"format": "zip"}, "^format: not an allowed value: 'zip'; allowed: one of store, hdf5"),
        ({"on_damaged": "skip"}, "^on_damaged: not an allowed value: 'skip'; allowed: one of k"),
        ({"audio": 1}, "^audio: expected true or false, got 1; allowed: true or false"),
        ({"audio_rate": 500}, r"^audio_rate: out of range: 500; allowed: an integer >= 1000 and"),
        ({"audio_channels": 3}, "^audio_channels: not an allowed value: 3; allowed: one of 1, 2"),
        ({"audio_channels": True}, "^audio_channels: not an allowed value: True;"),
        ({"flow": "raft"}, "^flow: not an allowed value: 'raft'; allowed: one of dis, farneback,"),
        ({"flow_size": "x"}, "^flow_size 'x' is not understood"),
        ({"flow_dtype": "int16"}, "^flow_dtype: not an allowed value: 'int16'; allowed: one of"),
        ({"jpeg_quality": 101}, "^jpeg_quality: out of range: 101; allowed: an integer >= 1 and"),
        ({"stream": -1}, "^stream: out of range: -1; allowed: an integer >= 0, or null"),
        ({"hdf5_compression": "zip"}, "^hdf5_compression: not an allowed value: 'zip'"),
        ({"fps": float("inf")}, "^fps must be a positive number, got inf$"),
        ({"fps_max": 0}, "^fps_max must be a positive number, got 0$"),
        ({"fps": 2, "fps_max": 3}, "^fps_max 3 given with fps 2: give one"),
        ({"max_pixels": 0}, "^max_pixels must be at least 1, got 0$"),
        ({"workers": 1.5}, "^workers must be at least 1, got 1.5$"),
        ({"size": 128}, "^size: expected a string, got 128"),
        ({"mean": [0.5, 0.5]}, r"^mean\[2\] is required: a number"),
        ({"fpss": 2}, r"^unknown key fpss; did you mean fps\? \(allowed keys in the mapping: fps,"),
    ],
)
def test_every_bad_option_names_itself_the_value_and_what_is_allowed(kw, message):
    with pytest.raises(ConfigError, match=message):
        BuildOptions(**kw)


def test_options_are_frozen_values_that_replace_checks_again():
    options = BuildOptions(fps=2, codec="lz4")
    with pytest.raises(Exception, match="frozen"):
        options.fps = 3  # type: ignore[misc]
    moved = options.replace(workers=4)
    assert (moved.workers, moved.fps, moved.codec) == (4, 2, "lz4")
    assert moved.content() == options.content()  # workers is RUNTIME
    with pytest.raises(ConfigError, match=r"^workers must be at least 1, got 0$"):
        options.replace(workers=0)
    assert pickle.loads(pickle.dumps(options)) == options  # to worker processes and Ray actors
    assert hash(options) == hash(BuildOptions(fps=2, codec="lz4"))
    assert BuildOptions(mean=[0.5, 0.5, 0.5]).mean == (0.5, 0.5, 0.5)


def test_the_choices_are_the_librarys():
    from hyperframes.build._flow import FLOW_METHODS
    from hyperframes.build._hdf5 import COMPRESSIONS
    from hyperframes.store import FLOW_DTYPES

    def choices(name):
        return tuple(typing.get_args(_field_type(name)))

    assert choices("flow") == FLOW_METHODS
    assert choices("flow_dtype") == FLOW_DTYPES
    assert choices("hdf5_compression") == COMPRESSIONS


def _field_type(name):
    from hyperframes._core._validate import field_type

    return field_type(BuildOptions.model_fields[name])[0]


def _build_actions(parser) -> dict[str, argparse.Action]:
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {a.dest: a for a in sub.choices["build"]._actions}


#: hyperframes build's flags, as they were before they were generated
FLAGS = [
    "--help",
    "--out",
    "--input-format",
    "--root",
    "--fps",
    "--fps-max",
    "--size",
    "--codec",
    "--dtype",
    "--decoder",
    "--stream",
    "--jpeg-quality",
    "--chunk-frames",
    "--frame-fps",
    "--format",
    "--hdf5-compression",
    "--workers",
    "--engine",
    "--ray-address",
    "--on-damaged",
    "--max-pixels",
    "--max-frames",
    "--allow-outside-root",
    "--boxes",
    "--max-gap",
    "--audio",
    "--audio-rate",
    "--audio-channels",
    "--flow",
    "--flow-size",
    "--flow-dtype",
    "--dry-run",
    "--json",
    "--quiet",
]


def test_the_command_line_offers_every_option_with_the_models_default_and_help():
    actions = _build_actions(build_parser())
    flags = {f for a in actions.values() for f in a.option_strings if f.startswith("--")}
    assert flags == set(FLAGS)
    for name, field in BuildOptions.model_fields.items():
        extra = field.json_schema_extra if isinstance(field.json_schema_extra, dict) else {}
        if extra.get("cli") is False:
            assert name not in actions, name
            continue
        action = actions[name]
        assert action.default == field.default, name
        assert action.help and action.help.startswith(field.description), name
    assert actions["frame_folder_fps"].option_strings == ["--frame-fps"]
    assert actions["audio_channels"].choices == [1, 2] and actions["audio_channels"].type is int
    assert isinstance(actions["audio"], argparse._StoreTrueAction)
    # what a command line gives, and nothing else, becomes the build's options
    args = build_parser().parse_args(["build", "d", "--out", "s", "--fps", "2", "--frame-fps", "9"])
    assert BuildOptions(**model_values(args, BuildOptions)) == BuildOptions(
        fps=2.0, frame_folder_fps=9.0
    )


def test_a_new_option_is_written_once():
    class More(BuildOptions):
        sharpen: float = Field(0.5, ge=0, description="unsharp mask amount")
        crisp: bool = Field(True, description="keep edges crisp")

    parser = argparse.ArgumentParser()
    add_model_options(parser, More)
    args = parser.parse_args(["--sharpen", "0.25", "--no-crisp", "--codec", "lz4"])
    assert (args.sharpen, args.crisp, args.codec) == (0.25, False, "lz4")
    assert "unsharp mask amount (default 0.5)" in " ".join(parser.format_help().split())
    assert More(**model_values(args, More)).sharpen == 0.25


@pytest.mark.parametrize("argv", [["--help"], ["info", "--help"], ["--version"]])
def test_the_quick_commands_import_no_model(argv):
    code = (
        "import sys\nfrom hyperframes.cli import main\ntry:\n    main(sys.argv[1:])\n"
        "except SystemExit:\n    pass\n"
        "print([m for m in ('pydantic', 'hyperframes.build') if m in sys.modules], "
        "file=sys.stderr)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, *argv], capture_output=True, text=True, timeout=120
    )
    assert done.stderr.strip().splitlines()[-1] == "[]"
