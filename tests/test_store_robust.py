"""Builds that are interrupted, locked, fed bad input, or whose stores get damaged."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from _media import write_audio_only, write_video
from _stores import store_content
from hyperframes import StoreError
from hyperframes.build import BuildOptions, build_store
from hyperframes.build._lock import StoreLock
from hyperframes.store import open_store, verify_store

CLI = [sys.executable, "-m", "hyperframes"]


def _build(data, out, **kw):
    return build_store(data, out, BuildOptions(**kw), progress=False)


@pytest.fixture(scope="module")
def many_videos(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("many") / "data"
    for i in range(12):
        write_video(
            root / ("p" if i % 2 else "q") / f"v{i:02d}.mp4", frames=60, width=160, height=120
        )
    return root


def test_kill_9_then_resume_equals_uninterrupted(many_videos, tmp_path):
    ref = tmp_path / "ref"
    _build(many_videos, ref, size="none", codec="zstd")
    out = tmp_path / "killed"
    cmd = [
        *CLI,
        "build",
        str(many_videos),
        "--out",
        str(out),
        "--size",
        "none",
        "--codec",
        "zstd",
        "--quiet",
    ]
    proc = subprocess.Popen(cmd, start_new_session=True)
    journal_lines = 0
    deadline = time.time() + 60
    while time.time() < deadline and proc.poll() is None:
        parts = list((out / "shards").glob("*.jsonl.part")) if out.exists() else []
        journal_lines = sum(p.read_bytes().count(b"\n") for p in parts)
        if journal_lines >= 3:
            break
        time.sleep(0.01)
    assert proc.poll() is None, "the build finished before it could be killed; use more videos"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert not (out / "manifest.json").exists()
    with pytest.raises(StoreError, match="incomplete"):
        open_store(out)
    report = _build(many_videos, out, size="none", codec="zstd")
    assert report.reused >= 3, "videos journalled before the kill must be kept"
    assert report.reused < 12
    assert store_content(out) == store_content(ref)
    assert verify_store(out) == []


def test_changed_source_is_rebuilt_and_other_params_refused(tmp_path):
    data = tmp_path / "data"
    write_video(data / "a" / "x.mp4", frames=10)
    write_video(data / "a" / "y.mp4", frames=12)
    out = tmp_path / "s"
    _build(data, out, size="none")
    write_video(data / "a" / "y.mp4", frames=15)  # new content, size and mtime
    report = _build(data, out, size="none")
    assert report.reused == 1
    assert [v.num_frames for v in open_store(out).videos] == [10, 15]
    with pytest.raises(StoreError, match=r"other parameters \(.*codec: stored 'raw', asked 'lz4'"):
        _build(data, out, size="none", codec="lz4")


def test_a_parameter_left_out_on_resume_is_named_not_shown_as_none(tmp_path):
    """Built with --fps-max, built again without: the refusal says what was asked (the
    option not given), never 'asked None'."""
    data = tmp_path / "data"
    write_video(data / "a" / "x.mp4", frames=10)
    out = tmp_path / "s"
    _build(data, out, size="none", fps_max=10)
    with pytest.raises(StoreError) as e:
        _build(data, out, size="none")
    assert "fps_max: stored 10, asked not given (no --fps-max)" in str(e.value)
    assert "None" not in str(e.value)


def test_second_builder_is_refused_naming_the_holder(class_folder, tmp_path):
    out = tmp_path / "locked"
    out.mkdir()
    with StoreLock(out / ".lock"), pytest.raises(StoreError, match=f"locked by pid {os.getpid()}"):
        _build(class_folder, out)


def test_verify_names_a_corrupted_shard_and_open_names_a_truncated_one(class_folder, tmp_path):
    out = tmp_path / "s"
    _build(class_folder, out, size="none")
    assert verify_store(out) == []
    shard = next((out / "shards").glob("*.bin"))
    data = bytearray(shard.read_bytes())
    data[len(data) // 2] ^= 0xFF
    shard.write_bytes(bytes(data))
    problems = verify_store(out)
    assert len(problems) == 1 and shard.name in problems[0] and "checksum" in problems[0]
    r = subprocess.run([*CLI, "verify", str(out)], capture_output=True, text=True)
    assert r.returncode == 1 and shard.name in r.stdout
    shard.write_bytes(bytes(data[:-100]))
    with pytest.raises(StoreError, match=rf"{shard.name}: is \d+ bytes, the manifest says"):
        open_store(out)


def test_corrupt_manifest_and_missing_store(tmp_path, class_folder):
    with pytest.raises(StoreError, match="no store here"):
        open_store(tmp_path / "nothing")
    out = tmp_path / "s"
    _build(class_folder, out, size="none")
    (out / "manifest.json").write_text("{not json")
    with pytest.raises(StoreError, match=r"manifest\.json: cannot be read as JSON"):
        open_store(out)


def test_bad_inputs_never_stop_the_build(tmp_path, shared_videos):
    data = tmp_path / "data" / "cls"
    write_video(data / "good.mp4", frames=12)
    (data / "empty.mp4").write_bytes(b"")
    (data / "text.mp4").write_text("this is not a video\n" * 20)
    (data / "folder.mp4").mkdir()
    truncated = (shared_videos / "test.mp4").read_bytes()
    (data / "truncated.mp4").write_bytes(truncated[: len(truncated) // 3])
    write_audio_only(data / "audio.mp4")
    write_video(data / "short.mp4", frames=1, fps=30)  # 1/30 s: shorter than one frame at 15 fps
    lst = tmp_path / "data" / "list.txt"
    lst.write_text(
        "".join(
            f"cls/{n} 0\n"
            for n in [
                "good.mp4",
                "empty.mp4",
                "text.mp4",
                "folder.mp4",
                "truncated.mp4",
                "audio.mp4",
                "short.mp4",
                "missing.mp4",
            ]
        )
    )
    out = tmp_path / "s"
    r = subprocess.run(
        [*CLI, "build", str(lst), "--out", str(out), "--fps", "15", "--quiet"],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 2, r.stderr
    info = subprocess.run([*CLI, "info", str(out), "--json"], capture_output=True, text=True)
    failed = {Path(f["path"]).name: f["error"] for f in json.loads(info.stdout)["failed"]}
    assert set(failed) == {
        "empty.mp4",
        "text.mp4",
        "folder.mp4",
        "truncated.mp4",
        "audio.mp4",
        "short.mp4",
        "missing.mp4",
    }
    assert "0 bytes" in failed["empty.mp4"]
    assert "no such file" in failed["missing.mp4"]
    assert "is a directory" in failed["folder.mp4"]
    assert "shorter than one frame" in failed["short.mp4"]
    for name, err in failed.items():
        assert err, name
        assert name in err or name in ("empty.mp4", "missing.mp4", "folder.mp4") or "/" in err
    s = open_store(out)
    assert [Path(v.path).name for v in s.videos] == ["good.mp4"]
    assert "1 videos" in r.stdout and "failed: 7" in r.stdout
    for name in failed:
        assert name in r.stdout  # the summary lists every failed file


def test_unwritable_output_is_fatal(class_folder, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    r = subprocess.run(
        [*CLI, "build", str(class_folder), "--out", str(blocker / "s"), "--quiet"],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 1 and "cannot create the store folder" in r.stderr


def test_missing_data_is_fatal(tmp_path):
    r = subprocess.run(
        [*CLI, "build", str(tmp_path / "nope"), "--out", str(tmp_path / "s")],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 1 and "no such file or folder" in r.stderr


def test_bounded_memory_independent_of_length(tmp_path):
    """Peak memory of a build stays far below the decoded size of the video."""
    long = write_video(tmp_path / "d" / "long.mp4", frames=400, width=640, height=360)
    script = (
        "import sys\n"
        "from hyperframes.build import BuildOptions, build_store\n"
        "build_store(sys.argv[1], sys.argv[2], BuildOptions(size='none'), progress=False)\n"
        "print(int(open('/proc/self/status').read().split('VmHWM:')[1].split()[0]))\n"
    )
    base = subprocess.run(
        [
            sys.executable,
            "-c",
            "import hyperframes.store, av, numpy;"
            "print(int(open('/proc/self/status').read().split('VmHWM:')[1].split()[0]))",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    r = subprocess.run(
        [sys.executable, "-c", script, str(long), str(tmp_path / "s")],
        capture_output=True,
        text=True,
        check=True,
    )
    peak_kb = int(r.stdout.split()[-1]) - int(base.stdout.split()[-1])
    stored = 400 * 640 * 360 * 3
    assert open_store(tmp_path / "s").videos[0].num_frames == 400
    assert peak_kb * 1024 < stored / 4, f"build used {peak_kb} KiB above baseline"


def test_hdf5_convert_and_build_read_the_same(class_folder, tmp_path):
    import h5py

    out = tmp_path / "s"
    _build(class_folder, out, size="none")
    h5 = tmp_path / "s.h5"
    subprocess.run(
        [*CLI, "convert", str(out), "--format", "hdf5", "--out", str(h5), "--quiet"], check=True
    )
    with h5py.File(h5, "r") as f:
        assert f["videos/00000002"].shape[1:] == (3, 48, 64)
        assert f.attrs["format"] == "hyperframes-hdf5"
    a, b = open_store(out), open_store(h5)
    assert [v.path for v in a.videos] == [v.path for v in b.videos]
    np.testing.assert_array_equal(a.read_numpy(2, [4, 1, 3]), b.read_numpy(2, [4, 1, 3]))
    built = tmp_path / "b.h5"
    report = build_store(
        class_folder,
        built,
        BuildOptions(size="none", format="hdf5", hdf5_compression="blosc"),
        progress=False,
    )
    assert report.exit_code == 0 and built.is_file()
    assert not (tmp_path / "b.h5.staging").exists()
    c = open_store(built)
    np.testing.assert_array_equal(c.read(5, [0, 9]).numpy(), a.read_numpy(5, [0, 9]))
    shutil.rmtree(out)


def test_unreadable_file_is_reported_not_fatal(tmp_path):
    data = tmp_path / "data" / "cls"
    write_video(data / "good.mp4", frames=8)
    locked = write_video(data / "locked.mp4", frames=8)
    locked.chmod(0)
    cmd = [*CLI, "build", str(tmp_path / "data"), "--out", str(tmp_path / "s"), "--quiet"]
    if os.geteuid() == 0:  # root reads anything: drop the capabilities that allow it
        if not shutil.which("setpriv"):
            pytest.skip("running as root without setpriv: cannot make a file unreadable")
        cmd = ["setpriv", "--bounding-set=-dac_override,-dac_read_search", "--inh-caps=-all", *cmd]
    r = subprocess.run(cmd, capture_output=True, text=True)
    assert r.returncode == 2, r.stderr
    failed = open_store(tmp_path / "s").failed
    assert [Path(f["path"]).name for f in failed] == ["locked.mp4"]
    assert "permission denied" in failed[0]["error"].lower()
    assert [Path(v.path).name for v in open_store(tmp_path / "s").videos] == ["good.mp4"]
