"""``hyperframes build`` on a user's own inputs, from the command line: the stream as ``info``
writes it (``v:K``), a frame rate above the source's said aloud (and ``--fps-max``, which never
upsamples), and a symlink's failure reported under the path the user gave."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from hyperframes.store import open_store

CLI = [sys.executable, "-m", "hyperframes"]


def cli(*argv) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*CLI, *map(str, argv)], capture_output=True, text=True, timeout=300, check=False
    )


# -- --stream v:K ----------------------------------------------------------------------------
def test_build_takes_the_stream_as_info_writes_it(shared_videos, tmp_path):
    """nasa_13013.mp4 holds two video streams; its widest is v:1."""
    src = shared_videos / "nasa_13013.mp4"
    for given, want in (("v:0", 0), ("1", 1)):
        out = tmp_path / f"s{given.replace(':', '')}"
        done = cli("build", src, "--out", out, "--size", "16", "--quiet", "--stream", given)
        assert done.returncode == 0, done.stderr
        assert open_store(out).videos[0].stream == want
    info = cli("info", tmp_path / "sv0").stdout
    assert "stream v:0" in info and "v:0 of each file (build --stream v:0)" in info

    bad = cli("build", src, "--out", tmp_path / "bad", "--stream", "video1")
    assert bad.returncode == 2
    assert "'video1' is not a video stream; allowed: v:K or K" in bad.stderr
    assert not (tmp_path / "bad").exists()
    assert "--stream v:K" in cli("build", "--help").stdout


# -- --fps above the source's rate, --fps-max --------------------------------------------------
@pytest.fixture(scope="module")
def two_rates(shared_videos, tmp_path_factory) -> Path:
    """A 10 fps clip (h265_video.mp4, 10 frames) and a 30 fps one (part_0.mp4, 32 frames)."""
    data = tmp_path_factory.mktemp("rates") / "data"
    data.mkdir()
    for name in ("h265_video.mp4", "part_0.mp4"):
        shutil.copy(shared_videos / name, data / name)
    return data


def test_fps_above_a_sources_rate_is_said_in_the_summary_and_info(two_rates, tmp_path):
    out = tmp_path / "up"
    done = cli("build", two_rates, "--out", out, "--fps", "15", "--size", "16", "--quiet")
    assert done.returncode == 0, done.stderr
    assert "upsampled (the source is slower than --fps: frames repeated" in done.stdout
    slow = f"{two_rates / 'h265_video.mp4'}: 10 decoded frames stored as 15 at 15 fps (5 repeats)"
    assert slow in done.stdout
    assert "part_0.mp4" not in done.stdout.split("upsampled")[1]  # 30 fps: resampled down

    info = cli("info", out)
    assert "upsampled      1 (stored at a rate above the source's: frames repeated)" in info.stdout
    assert slow in info.stdout
    d = json.loads(cli("info", out, "--json").stdout)
    assert d["upsampled"] == [
        {
            "path": str(two_rates / "h265_video.mp4"),
            "fps": 15.0,
            "frames_decoded": 10,
            "frames_stored": 15,
            "frames_repeated": 5,
        }
    ]


def test_fps_max_resamples_only_faster_videos_and_never_up(two_rates, tmp_path):
    out = tmp_path / "capped"
    done = cli("build", two_rates, "--out", out, "--fps-max", "15", "--size", "16", "--quiet")
    assert done.returncode == 0, done.stderr
    assert "upsampled" not in done.stdout
    videos = {Path(v.path).name: v for v in open_store(out).videos}
    slow, fast = videos["h265_video.mp4"], videos["part_0.mp4"]
    assert (slow.num_frames, slow.fps) == (10, 10.0)  # kept as it is: every frame once
    assert slow.source_frame_indices.tolist() == list(range(10))
    assert fast.fps == 15.0 and fast.num_frames_decoded == 32
    assert fast.num_frames in (16, 17)  # every other frame of 32 at 30 fps
    assert len(set(fast.source_frame_indices.tolist())) == fast.num_frames  # none repeated
    assert "upsampled" not in cli("info", out).stdout
    assert json.loads(cli("info", out, "--json").stdout)["build"]["fps_max"] == 15.0

    both = cli("build", two_rates, "--out", tmp_path / "x", "--fps", "5", "--fps-max", "15")
    assert both.returncode != 0
    assert "--fps-max 15 given with fps 5: give one" in both.stderr
    assert "Traceback" not in both.stderr


# -- a symlink out of DATA ---------------------------------------------------------------------
def test_a_symlinks_failure_is_reported_under_the_path_given(shared_videos, tmp_path):
    data = tmp_path / "DATA"
    (data / "cats").mkdir(parents=True)
    shutil.copy(shared_videos / "part_0.mp4", data / "cats" / "ok.mp4")
    outside = tmp_path / "elsewhere" / "notes.txt"
    outside.parent.mkdir()
    outside.write_text("not a video\n")
    os.symlink(outside, data / "cats" / "x.mp4")

    out = tmp_path / "store"
    done = cli("build", data, "--out", out, "--size", "16", "--quiet")
    assert done.returncode == 2, done.stderr
    given = data / "cats" / "x.mp4"
    line = next(x for x in done.stdout.splitlines() if "cannot be opened as a video" in x)
    assert line.startswith(f"  {given}: InputError: {given} -> {outside}: cannot be opened")
    failed = open_store(out).manifest["failed"]
    assert [(f["path"], f["target"]) for f in failed] == [(str(given), str(outside))]
    assert f"  {given}: InputError: {given} -> {outside}:" in cli("info", out).stdout

    dry = json.loads(cli("build", data, "--out", tmp_path / "dry", "--dry-run", "--json").stdout)
    assert [(u["path"], u["target"]) for u in dry["unreadable"]] == [(str(given), str(outside))]


def test_a_fast_video_with_a_timestamp_gap_is_not_called_upsampled(tmp_path):
    """A 28 fps clip with a 1 s hole in its timestamps, built at --fps 10: the hole is filled
    with repeats (under max_gap), but the source is faster than 10 fps, so the summary lists
    it under the gaps filled, not as upsampled; a 5 fps clip is still upsampled."""
    from _media import write_video
    from hyperframes.build import BuildOptions, build_store

    pts = [i / 28 for i in range(28)] + [2 + i / 28 for i in range(28)]
    write_video(tmp_path / "d" / "fast.mp4", frames=len(pts), pts_seconds=pts)
    write_video(tmp_path / "d" / "slow.mp4", frames=10, fps=5)
    report = build_store(
        tmp_path / "d", tmp_path / "s", BuildOptions(fps=10, size="none"), progress=False
    )
    text = report.summary()
    up, _, filled = text.partition("upsampled (the source is slower than --fps")[2].partition(
        "frames repeated over timestamp gaps (the source is not slower than --fps"
    )
    assert "slow.mp4" in up and "fast.mp4" not in up
    assert filled.startswith("; gaps shorter than max_gap are filled): 1")
    assert "fast.mp4: 56 decoded frames stored as" in filled
