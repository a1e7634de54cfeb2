"""Builds with several workers that lose their parent, lose a worker, meet a full disk, or
find their store damaged: nothing finished is lost, nothing missing is trusted."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from _media import write_video
from _stores import store_content
from hyperframes._core._errors import StoreError
from hyperframes.build import BuildOptions, build_store
from hyperframes.build._shard import ShardBusy, ShardWriter, recover_all
from hyperframes.build._workers import run_parallel
from hyperframes.store import open_store, verify_store

pytestmark = pytest.mark.slow  # kill -9, full disks and interrupted builds: subprocess builds

CLI = [sys.executable, "-m", "hyperframes"]
BUILD_ARGS = ["--size", "none", "--codec", "zstd", "--quiet"]


@pytest.fixture(scope="module")
def videos(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("crash") / "data"
    for i in range(24):
        write_video(
            root / ("p" if i % 2 else "q") / f"v{i:02d}.mp4", frames=40, width=160, height=120
        )
    return root


@pytest.fixture(scope="module")
def reference(videos, tmp_path_factory):
    out = tmp_path_factory.mktemp("ref") / "store"
    build_store(videos, out, BuildOptions(size="none", codec="zstd"), progress=False)
    return store_content(out)


def _journal_lines(out: Path) -> int:
    if not (out / "shards").exists():
        return 0
    n = 0
    for p in (out / "shards").glob("*.jsonl*"):
        with contextlib.suppress(FileNotFoundError):
            n += p.read_bytes().count(b"\n")
    return n


def _workers_of(pid: int) -> list[int]:
    """Build worker processes (multiprocessing spawn children) of ``pid``."""
    found = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            stat = (d / "stat").read_text()
            cmd = (d / "cmdline").read_bytes()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == pid and b"spawn_main" in cmd:
            found.append(int(d.name))
    return found


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _start_build(videos, out, workers=2):
    cmd = [*CLI, "build", str(videos), "--out", str(out), "--workers", str(workers), *BUILD_ARGS]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_for(proc, out, lines, timeout=90):
    deadline = time.time() + timeout
    while time.time() < deadline and proc.poll() is None:
        if _journal_lines(out) >= lines:
            return
        time.sleep(0.005)
    assert proc.poll() is None, "the build finished before the kill point; use more videos"


def _rerun(videos, out):
    cmd = [*CLI, "build", str(videos), "--out", str(out), "--workers", "2", *BUILD_ARGS]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("kill_after", [0, 3, 10])
def test_kill_9_of_the_parent_then_rerun_at_once(videos, reference, tmp_path, kill_after):
    out = tmp_path / "store"
    proc = _start_build(videos, out)
    _wait_for(proc, out, kill_after)
    deadline = time.time() + 30
    workers = []
    while not workers and time.time() < deadline:
        workers = _workers_of(proc.pid)
    assert workers, "no build worker processes found"
    os.kill(proc.pid, signal.SIGKILL)  # the parent only: its workers must not outlive it
    proc.communicate()
    rerun = _rerun(videos, out)  # at once
    assert rerun.returncode == 0, rerun.stderr
    deadline = time.time() + 10
    while any(_alive(w) for w in workers) and time.time() < deadline:
        time.sleep(0.05)
    assert not any(_alive(w) for w in workers), "workers outlived the killed build"
    time.sleep(0.5)  # anything an orphan could still do to the store would happen now
    assert verify_store(out) == []
    assert store_content(out) == reference
    again = _rerun(videos, out)
    assert again.returncode == 0 and "24 kept" in again.stdout
    assert store_content(out) == reference


def test_kill_9_of_one_worker_fails_only_its_video_then_rerun(videos, reference, tmp_path):
    out = tmp_path / "store"
    proc = _start_build(videos, out)
    _wait_for(proc, out, 4)
    victim = _workers_of(proc.pid)[0]
    os.kill(victim, signal.SIGKILL)
    stdout, stderr = proc.communicate(timeout=300)
    assert proc.returncode in (0, 2), stderr
    assert "Traceback" not in stderr
    if proc.returncode == 2:  # the worker was decoding a video: that one failed, named
        assert "the build worker decoding it died (killed by SIGKILL)" in stdout
    assert verify_store(out) == []
    rerun = _rerun(videos, out)
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    assert verify_store(out) == []
    assert store_content(out) == reference


def test_kill_9_of_workers_again_and_again_never_hangs(videos, reference, tmp_path):
    """Workers killed at any moment (between two videos, as one is handed over, mid-message):
    the build still ends, failing only videos that were being decoded, each named."""
    out = tmp_path / "store"
    proc = _start_build(videos, out)
    _wait_for(proc, out, 1)
    rng = np.random.default_rng(0)
    kills, deadline = 0, time.time() + 60
    while kills < 8 and proc.poll() is None and time.time() < deadline:
        time.sleep(float(rng.uniform(0.0, 0.3)))
        found = _workers_of(proc.pid)
        if found:
            with contextlib.suppress(ProcessLookupError):
                os.kill(found[int(rng.integers(len(found)))], signal.SIGKILL)
                kills += 1
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode in (0, 2), stderr
    assert "Traceback" not in stderr
    failed = stdout.count("the build worker decoding it died")
    assert failed <= kills
    assert verify_store(out) == []
    rerun = _rerun(videos, out)
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    assert store_content(out) == reference


class _DiesOnArrival:
    """Sources that kill the worker process that unpickles them (exit status 3)."""

    def __reduce__(self):
        return (os._exit, (3,))


def test_workers_that_die_before_starting_stop_the_build_with_the_reason(tmp_path):
    """A worker that cannot start (here its arguments kill it) is not replaced forever."""
    (tmp_path / "shards").mkdir()
    seen = []
    with pytest.raises(StoreError, match=r"die before they start a video \(exit status 3, 3 in"):
        run_parallel(tmp_path, BuildOptions(), 0, 2, [_DiesOnArrival()] * 4, range(4), seen.append)
    assert seen == []  # no video was failed for it: none was begun


def test_a_script_that_builds_unguarded_is_told_of_the_main_guard(videos, tmp_path):
    """The workers start by spawn, which imports the calling script again: a build at its top
    level runs again in each worker, which Python stops (status 1). The build stops with the
    reason and names the script and the guard it needs, instead of replacing workers forever."""
    script = tmp_path / "unguarded.py"
    script.write_text(
        "import sys\n"
        "from hyperframes.build import BuildOptions, build_store\n"
        "build_store(sys.argv[1], sys.argv[2], BuildOptions(size='none', workers=2), "
        "progress=False)\n"
    )
    out = tmp_path / "store"
    got = subprocess.run(
        [sys.executable, str(script), str(videos), str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert got.returncode != 0
    last = got.stderr.strip().splitlines()[-1]
    assert "die before they start a video (exit status 1, 3 in a row)" in last, got.stderr
    assert f"{script} builds with workers" in last and 'if __name__ == "__main__":' in last
    with pytest.raises(StoreError, match="incomplete"):  # nothing that looks complete
        open_store(out)


def test_sigterm_stops_a_build_like_ctrl_c_and_keeps_what_is_finished(videos, reference, tmp_path):
    out = tmp_path / "store"
    proc = _start_build(videos, out)
    _wait_for(proc, out, 3)
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 143, stderr
    assert "stopped by SIGTERM" in stderr and "rerun the same command" in stderr
    assert "Traceback" not in stderr
    assert not list((out / "shards").glob("*.part")), "finished work is recovered at once"
    rerun = _rerun(videos, out)
    assert rerun.returncode == 0
    kept = int(rerun.stdout.split(" kept")[0].rsplit(" ", 1)[1])
    assert kept >= 3
    assert store_content(out) == reference


def test_damaged_or_missing_payload_is_decoded_again(videos, reference, tmp_path):
    out = tmp_path / "store"
    build_store(videos, out, BuildOptions(size="none", codec="zstd", workers=2), progress=False)
    store = open_store(out)
    rows = store.index.videos
    shards = store.shard_names
    # flip one byte inside video 0's payload
    v0 = rows[0]
    path0 = out / "shards" / shards[int(v0["shard"])]
    with open(path0, "r+b") as f:
        f.seek(int(v0["offset"]) + int(v0["nbytes"]) // 2)
        b = f.read(1)
        f.seek(-1, os.SEEK_CUR)
        f.write(bytes([b[0] ^ 0x40]))
    # and remove the other worker's shard entirely (its records stay)
    other = [n for n in shards if n != shards[int(v0["shard"])]]
    assert other, "expected two shards from two workers"
    (out / "shards" / other[0]).unlink()
    lost = int((rows["shard"] == shards.index(other[0])).sum())
    store.close()
    report = build_store(
        videos, out, BuildOptions(size="none", codec="zstd", workers=2), progress=False
    )
    assert report.reused == 24 - 1 - lost
    assert report.exit_code == 0
    assert verify_store(out) == []
    assert store_content(out) == reference


def test_recovery_never_touches_a_live_writers_shard(tmp_path):
    shards = tmp_path / "shards"
    shards.mkdir()
    w = ShardWriter(shards, "r000-w000-00000")
    w._write(b"x" * 100)
    before = sorted(p.name for p in shards.iterdir())
    with pytest.raises(ShardBusy, match="live process"):
        recover_all(shards, wait_seconds=0.2)
    assert sorted(p.name for p in shards.iterdir()) == before
    w.close()


def test_a_writer_whose_files_were_recovered_walks_away(tmp_path):
    shards = tmp_path / "shards"
    shards.mkdir()
    w = ShardWriter(shards, "r000-w000-00000")
    sink = w.begin_video(_RawCodec())
    sink.add(np.zeros((3, 4, 4), np.uint8))
    off, n, digest = sink.finish()
    w.commit({"path": "a", "offset": off, "nbytes": n, "payload_xxh3_64": digest})
    w._bin.close()  # as if the writer were gone: its lock drops ...
    recover_all(shards)  # ... and another build recovers its shard
    finished = sorted(p.name for p in shards.iterdir())
    assert finished == ["r000-w000-00000.bin", "r000-w000-00000.jsonl"]
    w._bin = open(os.devnull, "wb")  # noqa: SIM115 - the writer wakes up and closes
    assert w.close() is None
    assert sorted(p.name for p in shards.iterdir()) == finished, "the orphan deleted files"


class _RawCodec:
    chunk_frames = 0


@pytest.fixture
def small_disk(tmp_path):
    mnt = tmp_path / "disk"
    mnt.mkdir()
    r = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mnt)], capture_output=True
    )
    if r.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here (needs root): {r.stderr.decode().strip()}")
    yield mnt
    subprocess.run(["umount", "-l", str(mnt)], check=False)


@pytest.mark.parametrize("workers", [1, 2])
def test_full_disk_is_fatal_blames_no_input_and_the_rerun_continues(
    videos, reference, small_disk, workers
):
    out = small_disk / "store"  # raw frames: 55 MB, on a 1 MB disk
    args = ["--size", "none", "--codec", "raw", "--quiet"]
    cmd = [*CLI, "build", str(videos), "--out", str(out), "--workers", str(workers), *args]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "no space left on" in r.stderr and "MB free" in r.stderr
    assert str(out) in r.stderr
    assert "Traceback" not in r.stderr
    assert "failed: " not in r.stdout, "no input may be blamed for a full disk"
    subprocess.run(["mount", "-o", "remount,size=96m", str(small_disk)], check=True)
    r2 = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert r2.returncode == 0, r2.stdout + r2.stderr
    assert "failed: 0" in r2.stdout
    assert verify_store(out) == []
    assert store_content(out) == reference


def test_killed_convert_leaves_no_temp_file_behind_the_next_run(videos, tmp_path):
    store = tmp_path / "store"
    build_store(videos, store, BuildOptions(size="none", codec="raw"), progress=False)
    out = tmp_path / "out.h5"
    cmd = [*CLI, "convert", str(store), "--out", str(out), "--compression", "gzip", "--quiet"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 60
    temps: list[Path] = []
    while time.time() < deadline and not temps and proc.poll() is None:
        temps = list(tmp_path.glob(".out.h5.*.tmp"))
        time.sleep(0.01)
    assert temps, "convert finished before it could be killed"
    proc.kill()
    proc.wait()
    assert temps[0].exists() and not out.exists()
    # a live writer's temp file is not touched: a second, running conversion is left alone
    live = tmp_path / f".out.h5.{os.getpid()}.tmp"
    live.write_bytes(b"in progress")
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert not temps[0].exists(), "the killed convert's temp file was left behind"
    assert live.exists()
    assert verify_store(out) == []
