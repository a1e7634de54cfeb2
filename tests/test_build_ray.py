"""The Ray build engine on a real Ray instance started on this machine (2 CPUs, 127.0.0.1) for
this module and shut down after: same content as a local build, failures listed as a local build
lists them, a killed actor or a killed driver loses nothing finished and stores nothing twice."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from _media import make_class_folder, write_video
from _stores import store_content
from hyperframes._core._errors import ConfigError, StoreError
from hyperframes.build import BuildOptions, build_store
from hyperframes.build._publish import staging_dir
from hyperframes.remote._files import RemoteFiles
from hyperframes.store import verify_store

CLI = [sys.executable, "-m", "hyperframes"]
OPTIONS = {"size": "none", "codec": "zstd", "chunk_frames": 3}
CLI_OPTIONS = ["--size", "none", "--codec", "zstd", "--chunk-frames", "3"]


@pytest.fixture(scope="module")
def actor_cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("actor-cache")


@pytest.fixture(scope="module")
def ray_address(s3_server, actor_cache):
    """A Ray instance for this module; its GCS address is what ``--ray-address`` takes. Started
    after the S3 server: its actors take the credentials from the environment Ray starts them
    in, as the nodes of a real cluster do. Its actors stage a build to a URL under
    ``actor_cache``, never the driver's folder (each test's ``s3_url`` gives the driver its own)."""
    import ray

    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    saved = os.environ.get("HYPERFRAMES_CACHE")
    os.environ["HYPERFRAMES_CACHE"] = str(actor_cache)  # what the actors start with
    ray.init(
        address="local",
        num_cpus=2,
        include_dashboard=False,
        _node_ip_address="127.0.0.1",
        object_store_memory=80 << 20,
        logging_level=logging.WARNING,
    )
    for sig, handler in handlers.items():  # Ray's core took them; the other tests want ours
        signal.signal(sig, handler)
    if saved is None:
        os.environ.pop("HYPERFRAMES_CACHE")
    else:
        os.environ["HYPERFRAMES_CACHE"] = saved
    try:
        yield ray.get_runtime_context().gcs_address
    finally:
        ray.shutdown()


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    """Two classes of three small videos each, and one file that is no video."""
    root = make_class_folder(
        tmp_path_factory.mktemp("raydata") / "data", classes=("a", "b"), per_class=3, frames=12
    )
    (root / "b" / "broken.mp4").write_bytes(b"\x00not a video\x00" * 64)
    return root


@pytest.fixture(scope="module")
def local(data, tmp_path_factory):
    out = tmp_path_factory.mktemp("raylocal") / "store"
    report = build_store(data, out, BuildOptions(**OPTIONS), progress=False)
    return out, report


def _journal_records(store: Path) -> list[dict]:
    """Every video record of every finished shard journal of ``store``."""
    records = []
    for p in sorted((store / "shards").glob("*.jsonl")):
        lines = [json.loads(x) for x in p.read_text().splitlines()]
        records += [r for r in lines if "path" in r]
    return records


def _index(store: Path) -> dict:
    """The index tables without what depends on shard naming: a video's shard and offset
    (its chunks' offsets are compared relative to their video's)."""
    videos = np.load(store / "index" / "videos.npy")
    keep = [n for n in videos.dtype.names if n not in ("shard", "offset")]
    chunks = np.load(store / "index" / "chunks.npy")
    for v in videos:
        chunks["offset"][v["chunk_start"] : v["chunk_start"] + v["num_chunks"]] -= v["offset"]
    strings = json.loads((store / "index" / "strings.json").read_text())
    strings.pop("shards")
    return {
        "videos": videos[keep].tolist(),
        "frames": np.load(store / "index" / "frames.npy").tolist(),
        "chunks": chunks.tolist(),
        "change": np.load(store / "index" / "change_score.npy").tolist(),
        "strings": strings,
        "details": (store / "index" / "details.jsonl").read_text(),
    }


def test_a_ray_build_holds_what_a_local_build_holds(ray_address, data, local, tmp_path):
    ref, ref_report = local
    out = tmp_path / "store"
    report = build_store(
        data, out, BuildOptions(**OPTIONS, workers=2), progress=False, engine="ray"
    )
    assert store_content(out) == store_content(ref)
    assert _index(out) == _index(ref)
    assert verify_store(out) == []
    # failures listed as a local build lists them, with the same exit status
    assert report.failed == ref_report.failed and len(report.failed) == 1
    assert report.failed[0]["path"].endswith("broken.mp4")
    assert (report.videos, report.frames, report.exit_code) == (6, ref_report.frames, 2)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["failed"] == json.loads((ref / "manifest.json").read_text())["failed"]
    # each actor its own deterministically named shard (an actor that started late may have
    # found nothing left to do); each video stored once
    names = {p.name for p in (out / "shards").glob("*.bin")}
    assert names and names <= {"r000-w000-00000.bin", "r000-w001-00000.bin"}
    paths = [r["path"] for r in _journal_records(out)]
    assert sorted(paths) == sorted(v.path for v in _videos(ref))


def test_a_ray_build_to_object_storage_holds_what_a_local_build_holds(
    ray_address, actor_cache, data, local, s3_url
):
    """``--engine ray --out s3://...``: each actor stages on its node and publishes its own
    shards; the driver uploads the index and the manifest (last); the store read back from the
    URL holds what the local build holds."""
    ref, ref_report = local
    report = build_store(
        data, s3_url, BuildOptions(**OPTIONS, workers=2), progress=False, engine="ray"
    )
    assert report.store == s3_url and report.failed == ref_report.failed
    assert store_content(s3_url) == store_content(ref)
    assert verify_store(s3_url) == []
    # each actor published its own shard; the URL holds what the manifest lists, and no more
    manifest = json.loads(RemoteFiles(s3_url).read("manifest.json"))
    shards = {r["name"] for r in manifest["shards"]}
    assert shards and shards <= {"r000-w000-00000.bin", "r000-w001-00000.bin"}
    assert set(RemoteFiles(s3_url).listing(refresh=True)) == {
        "manifest.json",
        "build.json",
        *(f"shards/{n}" for n in shards),
        *(f"shards/{n[:-4]}.jsonl" for n in shards),
        *(r["name"] for r in manifest["index"]),
    }
    assert not staging_dir(s3_url).exists()  # the driver's mirror (journals only) is gone
    # the actors staged in their own folders (not the driver's), removed once published
    stages = actor_cache / "staging" / f"{staging_dir(s3_url).name}.actors"
    assert stages.is_dir() and list(stages.iterdir()) == []


def _videos(store):
    from hyperframes.store import open_store

    s = open_store(store)
    try:
        return list(s.videos)
    finally:
        s.close()


def test_a_rerun_keeps_everything_and_decodes_only_the_failed(ray_address, data, tmp_path):
    out = tmp_path / "store"
    first = build_store(data, out, BuildOptions(**OPTIONS, workers=2), progress=False, engine="ray")
    again = build_store(data, out, BuildOptions(**OPTIONS, workers=2), progress=False, engine="ray")
    assert (first.reused, again.reused, again.videos) == (0, 6, 6)
    assert again.failed == first.failed  # tried again, failed again: listed again
    assert len(_journal_records(out)) == 6


def _actor_pids(title: bytes = b"ray::DecodeActor") -> set[int]:
    """Processes of the build's Ray actors (Ray titles them ``ray::DecodeActor...``)."""
    pids = set()
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                cmd = (d / "cmdline").read_bytes()
            except OSError:
                continue
            if cmd.startswith(title):
                pids.add(int(d.name))
    return pids


def _journal_lines(store: Path) -> int:
    n = 0
    for p in (store / "shards").glob("*.jsonl*"):
        with contextlib.suppress(FileNotFoundError):
            n += p.read_bytes().count(b"\n")
    return n


@pytest.fixture(scope="module")
def many(tmp_path_factory) -> Path:
    """Sixteen videos of 60 frames: long enough a build to kill something in the middle of."""
    root = tmp_path_factory.mktemp("raymany") / "data"
    for i in range(16):
        write_video(root / "ab"[i % 2] / f"v{i:02d}.mp4", frames=60, width=96, height=64)
    return root


@pytest.fixture(scope="module")
def many_local(many, tmp_path_factory):
    out = tmp_path_factory.mktemp("raymanylocal") / "store"
    build_store(many, out, BuildOptions(**OPTIONS), progress=False)
    return store_content(out)


def test_a_killed_actor_loses_nothing_and_nothing_is_stored_twice(
    ray_address, many, many_local, tmp_path
):
    out = tmp_path / "store"
    killed: list[int] = []
    stored_then: list[int] = []
    earlier = _actor_pids()  # of earlier builds, maybe still on their way out

    def kill_one_actor_mid_build() -> None:
        deadline = time.time() + 60
        while time.time() < deadline:
            pids = _actor_pids() - earlier
            if pids and (out / "shards").exists() and _journal_lines(out) >= 1:
                victim = min(pids)
                os.kill(victim, signal.SIGKILL)
                killed.append(victim)
                stored_then.append(_journal_lines(out))
                return
            time.sleep(0.002)

    killer = threading.Thread(target=kill_one_actor_mid_build)
    killer.start()
    report = build_store(
        many, out, BuildOptions(**OPTIONS, workers=2), progress=False, engine="ray"
    )
    killer.join()
    assert killed, "no actor was found to kill"
    assert stored_then[0] < 16, "the build was over before the kill; use more videos"
    assert report.failed == [] and report.videos == 16
    assert store_content(out) == many_local
    assert verify_store(out) == []
    assert list((out / "shards").glob("*.part")) == []  # the dead actor's shard was finished
    paths = [r["path"] for r in _journal_records(out)]
    assert len(paths) == len(set(paths)) == 16, "a video was stored twice"


def test_a_video_its_dead_actor_had_committed_is_not_decoded_again(ray_address, data, tmp_path):
    """The at-least-once case: the actor stored the video, then died before saying so."""
    import ray

    from hyperframes.build._lock import StoreLock
    from hyperframes.build._messages import Done, Frames
    from hyperframes.build._ray import DecodeActor, RayPool
    from hyperframes.inputs._scan import scan_inputs

    sources = [s for s in scan_inputs(data).sources if "broken" not in s.path]
    store = tmp_path / "store"
    (store / "shards").mkdir(parents=True)
    options = BuildOptions(**OPTIONS)
    with StoreLock(store / ".lock"):
        token = (store / ".lock").read_text()
        seen: list[tuple] = []
        # video 0 is in flight (as the pool's loop would have it), video 1 waits
        pool = RayPool(ray, store, options, 0, sources, [1], seen.append, token)
        pool.spawn()
        actor = pool.actors[0]
        messages = ray.get(actor.process.remote(0, sources[0]))
        assert isinstance(messages[0], Frames) and isinstance(messages[-1], Done)  # committed;
        # the reply is "lost" below
        ray.kill(actor, no_restart=True)
        with pytest.raises(ray.exceptions.RayActorError) as died:
            ray.get(actor.process.remote(1, sources[1]))
        pool.lost(0, 0, died.value)
        assert Done(0, 0, messages[0].count, messages[-1].nbytes) in seen
        assert list(pool.pending) == [1] and pool.tries[0] == 0  # 0 is not redone
        assert list(pool.actors) == [1]  # a fresh actor (rank 1) for what is left
        assert list((store / "shards").glob("*.part")) == []  # the dead shard was finished
        assert [r["path"] for r in _journal_records(store)] == [sources[0].path]
        pool.stop()
        assert DecodeActor.__name__ in repr(pool.remote)


def test_engine_options_are_checked_before_anything_runs(data, tmp_path):
    with pytest.raises(ConfigError, match="engine must be one of local, ray"):
        build_store(data, tmp_path / "s", engine="spark")
    with pytest.raises(ConfigError, match="ray_address is for engine 'ray'"):
        build_store(data, tmp_path / "s", ray_address="127.0.0.1:6379")
    with pytest.raises(ConfigError, match="build one, then convert it to HDF5"):
        build_store(data, tmp_path / "s.h5", BuildOptions(format="hdf5"), engine="ray")
    assert not (tmp_path / "s").exists() and not (tmp_path / "s.h5").exists()
    # the command line offers exactly the engines the library has
    import argparse

    from hyperframes.build._build import ENGINES
    from hyperframes.cli._parser import build_parser

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    engine = next(a for a in sub.choices["build"]._actions if a.dest == "engine")
    assert tuple(engine.choices) == ENGINES and engine.default == "local"


def _cli_build(data, out, address, *extra, quiet=True):
    cmd = [*CLI, "build", str(data), "--out", str(out), *CLI_OPTIONS, "--workers", "2"]
    cmd += ["--engine", "ray", "--ray-address", address, *extra]
    if quiet:
        cmd.append("--quiet")
    env = {k: v for k, v in os.environ.items() if k != "TQDM_DISABLE"}  # the bar is tested
    # a driver joining by address authenticates only when told to (the token is this user's)
    return cmd, {**env, "RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "token"}


@pytest.mark.slow
def test_cli_kill_9_of_the_driver_then_rerun_keeps_what_was_finished(
    ray_address, many, many_local, tmp_path
):
    out = tmp_path / "store"
    cmd, env = _cli_build(many, out, ray_address)
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.time() + 60
    while time.time() < deadline and proc.poll() is None:
        if (out / "shards").exists() and _journal_lines(out) >= 3:
            break
        time.sleep(0.002)
    assert proc.poll() is None, "the build finished before the kill point; use more videos"
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate()
    stored = _journal_lines(out)  # journal lines: videos committed (no summary lines yet)
    assert 3 <= stored < 16
    cmd, env = _cli_build(many, out, ray_address, quiet=False)
    rerun = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    kept = int(rerun.stdout.split(" kept from an earlier run")[0].rsplit(", ", 1)[1])
    assert kept >= stored  # what was finished was not decoded again
    if kept < 16:
        assert f"{16 - kept}/{16 - kept}" in rerun.stderr  # the progress bar counted the rest
    assert store_content(out) == many_local
    assert verify_store(out) == []
    paths = [r["path"] for r in _journal_records(out)]
    assert len(paths) == len(set(paths)) == 16, "a video was stored twice"


def test_an_actor_that_does_not_see_the_build_stops_it(ray_address, data, tmp_path):
    """An actor on a node where the store folder is another (not shared) stops the build."""
    import ray

    from hyperframes._core._errors import StoreError
    from hyperframes.build._ray import RayPool
    from hyperframes.inputs._scan import scan_inputs

    sources = scan_inputs(data).sources
    store = tmp_path / "store"
    (store / "shards").mkdir(parents=True)
    (store / ".lock").write_text('{"pid": 1, "host": "elsewhere", "since": 0}')
    pool = RayPool(ray, store, BuildOptions(**OPTIONS), 0, sources, [0, 1], print, "our build")
    try:
        with pytest.raises(StoreError, match="is not shared with the Ray node"):
            pool.run()
    finally:
        pool.stop()
    assert list((store / "shards").iterdir()) == []  # nothing written


@pytest.mark.slow
def test_cli_sigterm_stops_the_build_cleanly_and_a_rerun_finishes_it(
    ray_address, many, many_local, tmp_path
):
    out = tmp_path / "store"
    cmd, env = _cli_build(many, out, ray_address)
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.time() + 60
    while time.time() < deadline and proc.poll() is None:
        if (out / "shards").exists() and _journal_lines(out) >= 2:
            break
        time.sleep(0.002)
    assert proc.poll() is None, "the build finished before the signal; use more videos"
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 143, stderr
    assert b"stopped by SIGTERM; finished videos are kept" in stderr
    assert list((out / "shards").glob("*.part")) == []  # the stopped actors' shards finished
    rerun = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    assert " 0 kept from an earlier run" not in rerun.stdout
    assert store_content(out) == many_local
    paths = [r["path"] for r in _journal_records(out)]
    assert len(paths) == len(set(paths)) == 16, "a video was stored twice"


def test_a_video_whose_actor_keeps_dying_is_failed_with_the_reason(ray_address, data, tmp_path):
    import ray

    from hyperframes.build._lock import StoreLock
    from hyperframes.build._messages import Failed
    from hyperframes.build._ray import RETRIES, RayPool
    from hyperframes.inputs._scan import scan_inputs

    sources = scan_inputs(data).sources
    store = tmp_path / "store"
    (store / "shards").mkdir(parents=True)
    with StoreLock(store / ".lock"):
        seen: list[tuple] = []
        token = (store / ".lock").read_text()
        pool = RayPool(ray, store, BuildOptions(**OPTIONS), 0, sources, [], seen.append, token)
        pool.spawn()
        try:
            for attempt in range(1, RETRIES + 2):
                rank = max(pool.actors)
                actor = pool.actors[rank]
                ray.kill(actor, no_restart=True)
                with pytest.raises(ray.exceptions.RayActorError) as died:
                    ray.get(actor.process.remote(0, sources[0]))
                pool.lost(rank, 0, died.value)
                if attempt <= RETRIES:  # given to a fresh actor again
                    assert list(pool.pending) == [0] and seen == []
                    pool.pending.clear()
        finally:
            pool.stop()
    (why,) = seen
    assert isinstance(why, Failed) and (why.worker, why.item) == (rank, 0)
    assert f"the Ray actor decoding it died {RETRIES + 1} times" in why.error
    assert why.error.endswith("rerun to retry it")


def _process_tree(root: int) -> dict[int, tuple[bytes, bytes]]:
    """{pid: (start time, command line)} of every descendant of ``root`` now."""
    parent, seen = {}, {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            with contextlib.suppress(OSError):
                fields = (d / "stat").read_bytes().rsplit(b")", 1)[1].split()
                parent[int(d.name)] = int(fields[1])
                seen[int(d.name)] = fields[19]  # start time: tells a reused pid apart
    tree, todo = {}, [root]
    while todo:
        pid = todo.pop()
        for child, ppid in parent.items():
            if ppid == pid and child not in tree:
                with contextlib.suppress(OSError):
                    cmd = (Path("/proc") / str(child) / "cmdline").read_bytes()
                    tree[child] = (seen[child], cmd.replace(b"\0", b" ")[:80])
                todo.append(child)
    return tree


def _still_running(tree: dict[int, tuple[bytes, bytes]]) -> list[bytes]:
    alive = []
    for pid, (start, cmd) in tree.items():
        with contextlib.suppress(OSError):
            fields = Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()
            if fields[19] == start and fields[0] != b"Z":
                alive.append(cmd)
    return alive


@pytest.mark.slow
def test_cli_kill_9_of_a_driver_that_started_ray_leaves_no_ray_process(many, tmp_path):
    """A build that started its own Ray instance (no --ray-address): killed outright, every Ray
    process it started ends with it (the dashboard and runtime-env agents used to wait ~60 s
    for a GCS that was gone)."""
    out = tmp_path / "store"
    cmd = [*CLI, "build", str(many), "--out", str(out), *CLI_OPTIONS, "--workers", "2"]
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    env["RAY_USAGE_STATS_ENABLED"] = "0"
    proc = subprocess.Popen([*cmd, "--engine", "ray", "--quiet"], env=env, stderr=subprocess.PIPE)
    tree: dict[int, tuple[bytes, bytes]] = {}
    try:
        deadline = time.time() + 120
        while time.time() < deadline and proc.poll() is None:
            tree = _process_tree(proc.pid)
            names = b" ".join(cmd for _, cmd in tree.values())
            if all(n in names for n in (b"ray::DecodeActor", b"DashboardAgent", b"raylet")):
                break
            time.sleep(0.05)
        assert proc.poll() is None, "the build ended before its actors were seen"
        os.kill(proc.pid, signal.SIGKILL)
        proc.communicate()
        deadline = time.time() + 5
        while _still_running(tree) and time.time() < deadline:
            time.sleep(0.1)
        assert _still_running(tree) == [], "Ray processes outlived the killed driver"
    finally:
        for pid in tree:  # whatever is left, so as not to leave it to the other tests
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


def _remote_journal_paths(url: str) -> dict[str, list[str]]:
    """{shard name: source paths} of every journal published at ``url``."""
    remote = RemoteFiles(url)
    out = {}
    for rel in sorted(remote.listing(refresh=True)):
        if rel.startswith("shards/") and rel.endswith(".jsonl"):
            try:
                data = remote.read(rel)
            except StoreError:  # listed while its upload finishes (SeaweedFS does that)
                continue
            lines = [json.loads(x) for x in data.splitlines()]
            out[rel[7:-6]] = [r["path"] for r in lines if "path" in r]
    return out


def test_a_killed_publishing_actor_loses_nothing_and_stores_nothing_twice(
    ray_address, many, many_local, s3_url
):
    """One shard per video (``shard_bytes=1``): an actor publishes a shard while it decodes
    the next, so the one killed has published some videos and holds one unpublished; those
    are redone, the published ones are not, and the URL ends as its manifest lists."""
    from hyperframes.build._publish import leftovers

    killed: list[int] = []
    published_then: list[dict] = []
    earlier = _actor_pids(b"ray::PublishActor")

    def kill_one_actor_after_it_published() -> None:
        deadline = time.time() + 60
        while time.time() < deadline:
            pids = _actor_pids(b"ray::PublishActor") - earlier
            journals = _remote_journal_paths(s3_url) if pids else {}
            if len(journals) >= 3:
                victim = min(pids)
                os.kill(victim, signal.SIGKILL)
                killed.append(victim)
                published_then.append(journals)
                return
            time.sleep(0.02)

    killer = threading.Thread(target=kill_one_actor_after_it_published)
    killer.start()
    options = BuildOptions(**OPTIONS, workers=2, shard_bytes=1)
    report = build_store(many, s3_url, options, progress=False, engine="ray")
    killer.join()
    assert killed, "no actor was found to kill"
    assert sum(map(len, published_then[0].values())) < 16, "the build was over before the kill"
    assert report.failed == [] and report.videos == 16
    assert store_content(s3_url) == many_local
    assert verify_store(s3_url) == []
    journals = _remote_journal_paths(s3_url)
    assert {n: p for n, p in journals.items() if n in published_then[0]} == published_then[0]
    paths = [p for ps in journals.values() for p in ps]
    assert len(paths) == len(set(paths)) == 16, "a video was stored twice"
    assert leftovers(s3_url) == []


def _gc(url: str, *flags: str, capsys) -> tuple[int, str]:
    from hyperframes.cli._main import main

    code = main(["gc", url, *flags])
    out = capsys.readouterr()
    return code, out.out + out.err


def test_gc_lists_what_a_killed_run_left_and_a_rerun_deletes_it(
    ray_address, data, local, s3_url, capsys
):
    """The state a driver or actor killed mid-upload leaves: a payload whose journal never
    came, no manifest. ``gc`` lists the object (deletes it with --delete); a rerun decodes
    nothing that was published and leaves only what its manifest lists."""
    from hyperframes.build._publish import delete_objects, leftovers, publish_file

    ref, _ = local
    options = BuildOptions(**OPTIONS, workers=2)
    first = build_store(data, s3_url, options, progress=False, engine="ray")
    remote = RemoteFiles(s3_url)
    blob = remote.read("shards/" + json.loads(remote.read("manifest.json"))["shards"][0]["name"])
    orphan = Path(staging_dir(s3_url).parent / "orphan.bin")
    orphan.parent.mkdir(parents=True, exist_ok=True)
    orphan.write_bytes(blob)
    publish_file(orphan, f"{s3_url}/shards/r007-w001-00000.bin")  # its journal never came
    code, out = _gc(s3_url, capsys=capsys)
    assert code == 0 and f"unlisted  shards/r007-w001-00000.bin  {len(blob)} bytes" in out
    assert leftovers(s3_url) == [("shards/r007-w001-00000.bin", len(blob))]  # listed, kept

    delete_objects(s3_url, ["manifest.json"])  # killed before the manifest went up
    code, out = _gc(s3_url, capsys=capsys)
    assert code == 1 and "has no manifest.json" in out
    again = build_store(data, s3_url, options, progress=False, engine="ray")
    assert (again.reused, again.videos, again.failed) == (6, 6, first.failed)
    assert leftovers(s3_url) == []  # the orphan is gone
    assert store_content(s3_url) == store_content(ref)
    # runs are numbered past every name at the URL: the next run's shards are new objects
    from hyperframes.build._ray_url import _next_run

    assert _next_run({"shards/r007-w001-00000.bin": {}}) == 8

    publish_file(orphan, f"{s3_url}/index/old.npy")
    code, out = _gc(s3_url, "--delete", capsys=capsys)
    assert code == 0 and "deleted  index/old.npy" in out and "1 object(s) deleted" in out
    assert leftovers(s3_url) == [] and verify_store(s3_url) == []


@pytest.mark.slow
def test_kill_9_of_a_driver_publishing_to_a_url_then_rerun(ray_address, many, many_local, s3_url):
    """The driver killed while its actors publish (one shard per video): the rerun keeps every
    published video, stores none twice and leaves only what its manifest lists."""
    from hyperframes.build._publish import leftovers

    script = textwrap.dedent(
        f"""
        from hyperframes.build import BuildOptions, build_store
        build_store({str(many)!r}, {s3_url!r}, BuildOptions(**{OPTIONS!r}, workers=2,
                    shard_bytes=1), progress=False, engine="ray", ray_address={ray_address!r})
        """
    )
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "token"}
    proc = subprocess.Popen([sys.executable, "-c", script], env=env)
    deadline = time.time() + 60
    while time.time() < deadline and proc.poll() is None:
        if len(_remote_journal_paths(s3_url)) >= 3:
            break
        time.sleep(0.02)
    assert proc.poll() is None, "the build finished before the kill point; use more videos"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    time.sleep(2)  # Ray stops the actors of a driver that is gone
    published = _remote_journal_paths(s3_url)
    stored = sum(map(len, published.values()))
    assert 3 <= stored < 16
    options = BuildOptions(**OPTIONS, workers=2, shard_bytes=1)
    report = build_store(many, s3_url, options, progress=False, engine="ray")
    assert report.reused >= stored and report.videos == 16 and report.failed == []
    assert store_content(s3_url) == many_local
    paths = [p for ps in _remote_journal_paths(s3_url).values() for p in ps]
    assert len(paths) == len(set(paths)) == 16, "a video was stored twice"
    assert leftovers(s3_url) == []


def test_a_publishing_actor_that_dies_idle_gives_its_unpublished_videos_back(
    ray_address, data, s3_url, tmp_path
):
    """Decoded, staged, not yet published (the shard is still open) when the actor dies
    between videos: the driver hears of it only at ``close``, and gives both videos to a
    fresh actor, whose shard is the one published."""
    import ray

    from hyperframes.build._messages import Done, Frames
    from hyperframes.build._ray import RayPool
    from hyperframes.build._ray_publish import published
    from hyperframes.inputs._scan import scan_inputs

    sources = [s for s in scan_inputs(data).sources if "broken" not in s.path]
    seen: list[tuple] = []
    pool = RayPool(
        ray, tmp_path, BuildOptions(**OPTIONS), 0, sources, [0, 1], seen.append, "", s3_url
    )
    try:
        pool.spawn()
        pool.drain()
        assert [type(m) for m in seen] == [Frames, Frames]  # no Done before publishing
        assert dict(pool.unpublished) == {0: [0, 1]}
        ray.kill(pool.actors[0], no_restart=True)
        pool.close()
        assert sorted(pool.pending) == [0, 1] and list(pool.actors) == [1]
        pool.drain()
        pool.close()
        assert sorted(m.item for m in seen if isinstance(m, Done)) == [0, 1]
        assert published(s3_url, 0, 0) == {}
        assert set(published(s3_url, 0, 1)) == {sources[0].path, sources[1].path}
    finally:
        pool.stop()
