"""Outputs written whole (issue 40, item 3): predict's timeline takes its final names only when
the run has finished, and a full disk while a checkpoint is saved is one line naming the folder
and the space needed."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

import hyperframes
from hyperframes import DecodeError, InputError, models
from hyperframes.checkpoint._checkpoint import save_checkpoint
from hyperframes.demo._synthetic import make_motion_frames, write_h264
from hyperframes.infer import predict_video
from test_hostile_inputs import T, _state

#: the code under test, for the child processes (the tree this process imported)
SRC = str(Path(hyperframes.__file__).resolve().parents[1])
FINAL = ("timeline.csv", "timeline.json", "timeline.png")


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    return save_checkpoint(tmp_path_factory.mktemp("ck") / "best.pt", _state())


def _damaged_after_half(path: Path) -> Path:
    """``path`` with the second half of its frame data overwritten: the first frames decode,
    then the decoder fails (after predict has opened its outputs)."""
    data = bytearray(path.read_bytes())
    at = data.find(b"mdat")
    size = int.from_bytes(data[at - 4 : at], "big")
    data[at + size // 2 : at - 4 + size] = b"\xff" * (size - 4 - size // 2)
    damaged = path.with_name("damaged.mp4")
    damaged.write_bytes(bytes(data))
    return damaged


def test_a_video_that_fails_midway_leaves_no_timeline(checkpoint, tmp_path):
    clip = make_motion_frames("up", frames=20, size=32, rng=np.random.default_rng(0))
    video = _damaged_after_half(write_h264(tmp_path / "v.mp4", clip, fps=10))
    out = tmp_path / "o"
    with pytest.raises((DecodeError, InputError), match="damaged"):
        predict_video(checkpoint, video, out=out)
    assert sorted(os.listdir(out)) == []  # no header-only CSV, no temporary file left


def test_a_failed_run_keeps_the_previous_timeline(checkpoint, tmp_path):
    clip = make_motion_frames("up", frames=12, size=32, rng=np.random.default_rng(0))
    video = write_h264(tmp_path / "v.mp4", clip, fps=10)
    out = tmp_path / "o"
    predict_video(checkpoint, video, out=out)
    before = {n: (out / n).read_bytes() for n in FINAL}
    with pytest.raises((DecodeError, InputError)):
        predict_video(checkpoint, _damaged_after_half(video), out=out)
    assert {n: (out / n).read_bytes() for n in FINAL} == before
    assert sorted(os.listdir(out)) == sorted(FINAL)


def _wide_checkpoint(path: Path, classes: int) -> Path:
    """A checkpoint of ``classes`` classes: a timeline row of ~9 bytes a class, so the CSV's
    first 8 KiB (what its buffer writes out at once) hold a few windows, not a hundred."""
    import torch

    names = [f"class_{i:02d}" for i in range(classes)]
    state = _state(num_classes=classes, classes=names, **{"config.model.num_classes": classes})
    torch.manual_seed(0)
    state["model"] = models.create("cnn_lstm", num_classes=classes, frames=T).state_dict()
    return save_checkpoint(path, state)


def test_kill_9_during_predict_leaves_nothing_at_the_final_names(checkpoint, tmp_path):
    clip = make_motion_frames("up", frames=250, size=32, rng=np.random.default_rng(0))
    video = write_h264(tmp_path / "long.mp4", clip, fps=25)
    out = tmp_path / "o"
    wide = _wide_checkpoint(tmp_path / "wide.pt", classes=48)  # ~15 windows fill 8 KiB
    code = textwrap.dedent(
        f"""
        from hyperframes.infer import predict_video
        predict_video({str(wide)!r}, {str(video)!r}, out={str(out)!r}, batch_size=1)
        """
    )
    env = {**os.environ, "PYTHONPATH": SRC}
    child = subprocess.Popen([sys.executable, "-c", code], env=env)
    try:
        deadline = time.monotonic() + 120
        written = None
        while written is None and time.monotonic() < deadline:  # rows being streamed
            for p in out.glob("*timeline.csv*") if out.is_dir() else ():
                if p.stat().st_size > 4096:  # more than the header (~600 bytes): rows
                    written = p
            time.sleep(0.005)
        assert written is not None and child.poll() is None, "predict ended before the kill"
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
    assert written.name != "timeline.csv"  # rows go to a temporary name while it runs
    assert not any((out / n).exists() for n in FINAL)
    # the next run removes the killed run's temporary files and writes whole files
    predict_video(checkpoint, write_h264(tmp_path / "s.mp4", clip[:12], fps=10), out=out)
    assert sorted(os.listdir(out)) == sorted(FINAL)


def _mount_tmpfs(folder: Path) -> bool:
    """A 2 MiB tmpfs at ``folder`` where this process may mount one (root), else False."""
    if os.geteuid() != 0:
        return False
    folder.mkdir(parents=True)
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(folder)], capture_output=True
    )
    return done.returncode == 0


def test_a_full_disk_while_saving_is_one_line_and_loses_nothing(tmp_path):
    """A real full disk (a 2 MiB tmpfs) where mounting one is permitted; elsewhere the same
    write fails on the file size limit (RLIMIT_FSIZE, in a child process)."""
    import torch

    state = {**_state(), "pad": torch.zeros(3 << 20, dtype=torch.uint8)}  # 3 MiB: never fits
    run = tmp_path / "run"
    if _mount_tmpfs(run):
        try:
            save_checkpoint(run / "last.pt", _state())  # an earlier save that fits
            with pytest.raises(InputError) as info:
                save_checkpoint(run / "last.pt", state, keep=run / "last.prev.pt")
            message = str(info.value)
            assert "(disk full)" in message
            assert sorted(os.listdir(run)) == ["last.prev.pt", "last.pt"]  # no temp file left
            assert torch.load(run / "last.pt", weights_only=True)["frames"] == 4
        finally:
            subprocess.run(["umount", str(run)], check=False)
    else:
        code = textwrap.dedent(
            f"""
            import resource, signal, sys
            import torch
            sys.path.insert(0, {str(Path(__file__).parent)!r})
            from test_hostile_inputs import T, _state
            from hyperframes.checkpoint._checkpoint import save_checkpoint
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG, not a signal
            resource.setrlimit(resource.RLIMIT_FSIZE, (2 << 20, resource.RLIM_INFINITY))
            state = {{**_state(), "pad": torch.zeros(3 << 20, dtype=torch.uint8)}}
            try:
                save_checkpoint({str(run / "last.pt")!r}, state)
            except Exception as e:
                print(type(e).__name__, e)
            """
        )
        env = {**os.environ, "PYTHONPATH": SRC}
        done = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300
        )
        message = done.stdout.strip()
        assert message.startswith("InputError") and "(file too large)" in message
        assert not run.exists() or os.listdir(run) == []
    assert f"not saved: no room in {run} (" in message
    assert re.search(r"it needs about [3-5]\.\d MiB, [\d.]+ MiB free", message)
    assert "\n" not in message and "The checkpoints already there are intact" in message
