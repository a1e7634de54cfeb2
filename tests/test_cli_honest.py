"""Every command is honest: it says what it did and did not do, describes its options, and ends
quietly. Most checks run the real command line in a subprocess, as a user would."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import hyperframes
from hyperframes.build import BuildOptions, build_store
from hyperframes.store import open_store


def hyperframes_cli(*argv, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "hyperframes", *map(str, argv)],
        capture_output=True,
        text=True,
        timeout=600,
        **kw,
    )


@pytest.fixture(scope="module")
def real_data(shared_videos, tmp_path_factory) -> Path:
    """Four real clips of three sizes: an AV1 one (decord and OpenCV cannot decode it here) and
    one whose widest video stream is its second (v:1)."""
    data = tmp_path_factory.mktemp("real") / "data"
    data.mkdir()
    for name in ("part_0.mp4", "h265_video.mp4", "av1_video.mkv", "nasa_13013.mp4"):
        shutil.copy(shared_videos / name, data / name)
    return data


@pytest.fixture(scope="module")
def real_store(real_data, tmp_path_factory):
    out = tmp_path_factory.mktemp("real") / "store"
    build_store(real_data, out, BuildOptions(size="32"), progress=False)
    return open_store(out)


# -- 1. bench ------------------------------------------------------------------------------
def test_bench_builds_like_build_and_keeps_stores_only_when_asked(
    class_folder, tmp_path, monkeypatch, capsys
):
    import tempfile

    from hyperframes.cli import main
    from hyperframes.cli._parser import build_parser

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    assert sub.choices["bench"].get_default("size") == sub.choices["build"].get_default("size")
    assert sub.choices["build"].get_default("size") == BuildOptions().size

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # where bench's temporary folder goes
    quick = ["--windows", "8", "--batch", "4", "--frames", "4", "--budget", "0.1", "--json"]
    assert main(["bench", str(class_folder), "--codecs", "raw", *quick]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["built"] and result["kept_in"] is None
    assert not list(tmp_path.glob("hyperframes-bench-*")), "temporary stores left behind"

    keep = tmp_path / "kept"
    assert main(["bench", str(class_folder), "--codecs", "raw", "--keep", str(keep), *quick]) == 0
    assert json.loads(capsys.readouterr().out)["kept_in"] == str(keep)
    kept = open_store(keep / "store-raw")
    assert kept.manifest["build"]["size"] == BuildOptions().size  # as build, not native
    assert kept.videos[0].shape[1] == int(BuildOptions().size)


def test_bench_memcpy_anchor_copies_the_bytes_the_windows_read(real_store):
    from hyperframes.bench import plan_windows, run_bench
    from hyperframes.bench._run import window_bytes

    result = run_bench(
        real_store.path, frames=4, batch=4, windows=24, decoders=[], budget_seconds=0.1
    )
    plan = plan_windows(real_store, windows=24, frames=4, seed=0)
    read = [real_store.read_numpy(v, ix).nbytes for v, ix in plan]
    assert len({tuple(real_store.videos[v].shape) for v, _ in plan}) > 1  # sizes differ
    assert window_bytes(real_store, plan).tolist() == read
    assert len(result["frame_shapes"]) > 1
    # mixed shapes are read through the crop path: each window's centred square of the side the
    # smallest frame allows, and the memcpy anchor copies those bytes, not the stored ones
    side = min(min(s[1:]) for s in result["frame_shapes"])
    assert result["crop"] == [side, side]
    c = real_store.videos[plan[0][0]].shape[0]
    assert result["plan_bytes"] == sum(len(ix) * c * side * side for _, ix in plan) < sum(read)


def test_bench_decoders_skip_what_they_cannot_decode_and_say_why(real_data, tmp_path):
    done = hyperframes_cli(
        "bench",
        real_data,
        "--codecs",
        "raw",
        "--windows",
        "24",
        "--batch",
        "4",
        "--frames",
        "4",
        "--budget",
        "30",
        "--keep",
        tmp_path / "stores",
        "--json",
    )
    assert done.returncode == 0, done.stderr
    assert "[av1 @" not in done.stderr  # the decoders' FFmpeg warnings do not flood the terminal
    rows = json.loads(done.stdout)["rows"]
    from hyperframes.bench._onthefly import available_window_decoders

    for name in available_window_decoders():
        row = rows[f"decode:{name}"]
        assert "error" not in row and row["windows_per_s"] > 0, (name, row)
        skipped = {Path(s["path"]).name: s["reason"] for s in row["skipped"]}
        if name in ("pyav", "torchcodec"):  # they decode every file and choose the stream
            assert skipped == {}, name
        if name == "opencv":  # it decodes v:0 of nasa_13013.mp4, the store holds v:1
            assert "cannot choose a video stream" in skipped["nasa_13013.mp4"]
        if name in ("decord", "opencv"):  # no AV1 decoder in their FFmpeg
            assert skipped["av1_video.mkv"]

    text = hyperframes_cli(
        "bench", tmp_path / "stores" / "store-raw", "--windows", "8", "--budget", "0.1",
        "--frames", "4", "--batch", "4",
    )  # fmt: skip
    assert text.returncode == 0 and "[av1 @" not in text.stderr
    if "opencv" in available_window_decoders():
        assert "skipped video" in text.stdout and "av1_video.mkv" in text.stdout


# -- 3. show, and every command's --help -----------------------------------------------------
def test_show_out_of_range_video_is_an_error_not_a_traceback(real_store, tmp_path):
    done = hyperframes_cli("show", real_store.path, "--video", "99", "--out", tmp_path / "w.png")
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert "hyperframes show: error: --video 99 is out of range" in done.stderr
    assert "holds 4 videos (0..3)" in done.stderr


def test_show_says_when_the_video_ends_before_the_window(real_store, tmp_path):
    v = next(r for r in real_store.videos if r.num_frames > 20)
    start = v.num_frames - 5
    out = tmp_path / "w.png"
    done = hyperframes_cli(
        "show", real_store.path, "--video", v.id, "--start", start, "--frames", 16, "--out", out
    )
    assert done.returncode == 0, done.stderr
    assert f"frames {start}..{v.num_frames - 1}" in done.stdout
    assert f"5 of the 16 frames asked for: video {v.id} has {v.num_frames} frames" in done.stdout
    assert out.exists()
    done = hyperframes_cli("show", real_store.path, "--video", v.id, "--start", v.num_frames)
    assert done.returncode == 1 and "past the end of video" in done.stderr


def test_show_title_is_wrapped_not_cut(tmp_path):
    from PIL import Image, ImageDraw

    from hyperframes._core._pictures import window_png, wrap_text

    measure = ImageDraw.Draw(Image.new("RGB", (1, 1))).textlength
    title = "/very/long/path/to/a/video/folder/clip_0001.mp4 [label] frames 0..3 stride 1"
    lines = wrap_text(title, 60, measure)
    assert "".join(lines) == title and len(lines) > 2
    assert all(measure(line) <= 60 for line in lines)
    frames = np.zeros((2, 3, 16, 16), np.uint8)
    with (
        Image.open(window_png(frames, tmp_path / "a.png", title="x")) as short,
        Image.open(window_png(frames, tmp_path / "b.png", title=title)) as long,
    ):
        assert long.width == short.width and long.height > short.height


def _subcommands(parser):
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return sub


def test_every_command_describes_every_option_with_an_example():
    from hyperframes.cli._parser import build_parser

    sub = _subcommands(build_parser())
    assert len(sub.choices) >= 12
    for name, parser in sub.choices.items():
        for action in parser._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            assert action.help, f"hyperframes {name}: {action.option_strings or action.dest}"
        assert parser.epilog and f"hyperframes {name}" in parser.epilog, name
        text = parser.format_help()
        assert "example:" in text, name


def test_choices_come_from_the_registries():
    from hyperframes.cli._parser import build_parser
    from hyperframes.decode import list_decoders
    from hyperframes.inputs import list_input_formats
    from hyperframes.store import list_codecs

    build = _subcommands(build_parser()).choices["build"]
    options = {a.dest: a for a in build._actions}
    assert list(options["codec"].choices) == list_codecs()
    assert list(options["decoder"].choices) == list_decoders(reads="video")
    assert list(options["input_format"].choices) == list_input_formats()
    text = " ".join(build.format_help().split())
    assert ", ".join(list_codecs()) in text and ", ".join(list_decoders(reads="video")) in text


# -- 5. a build where every input fails --------------------------------------------------------
def test_build_where_every_input_fails(tmp_path):
    data = tmp_path / "data" / "a"
    data.mkdir(parents=True)
    for name in ("x.mp4", "y.mp4"):
        (data / name).write_bytes(os.urandom(3000))
    done = hyperframes_cli("build", tmp_path / "data", "--out", tmp_path / "s", "--quiet")
    assert done.returncode == 2
    assert "nan" not in done.stdout.lower() and "Traceback" not in done.stderr
    assert "nothing was stored: all 2 inputs failed" in done.stdout
    assert "failed: 2" in done.stdout
    for name in ("x.mp4", "y.mp4"):
        assert str(data / name) in done.stdout


# -- 6. closed pipes, --version, streams --------------------------------------------------------
@pytest.mark.parametrize(
    "argv", [["info", "{store}", "--json"], ["info", "{store}"], ["verify", "{store}"], ["--help"]]
)
def test_a_closed_pipe_ends_the_command_quietly(real_store, argv):
    argv = [a.format(store=real_store.path) for a in argv]
    read, write = os.pipe()
    os.close(read)  # the reader has gone before the first line (like `| head` after it)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "hyperframes", *argv],
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
        )
    finally:
        os.close(write)
    assert done.stderr == ""
    assert done.returncode in (0, 141)


def test_version():
    done = hyperframes_cli("--version")
    assert done.returncode == 0 and done.stdout.strip() == f"hyperframes {hyperframes.__version__}"


def test_info_says_which_video_stream_each_video_came_from(real_store, tmp_path):
    done = hyperframes_cli("info", real_store.path, "--json")
    assert done.returncode == 0
    d = json.loads(done.stdout)
    streams = {Path(v["path"]).name: v["stream"] for v in d["videos_shown"]}
    assert streams == {
        "av1_video.mkv": 0,
        "h265_video.mp4": 0,
        "nasa_13013.mp4": 1,
        "part_0.mp4": 0,
    }
    assert d["streams"] == {"chosen_by": "widest", "videos_not_first_stream": 1}
    text = hyperframes_cli("info", real_store.path).stdout
    assert "streams        each file's widest video stream (build's default); 1 video" in text
    nasa = next(line for line in text.splitlines() if "nasa_13013.mp4" in line)
    assert "stream v:1" in nasa

    single = tmp_path / "first"
    src = Path(real_store.videos[2].path)
    build_store(src, single, BuildOptions(size="16", stream=0), progress=False)
    text = hyperframes_cli("info", single).stdout
    assert "streams        v:0 of each file (build --stream v:0); 0 videos" in text
