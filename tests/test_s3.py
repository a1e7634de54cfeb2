"""Stores in object storage, against a real S3 server (SeaweedFS on 127.0.0.1, see
tests/_s3server.py): build --out s3://, reading by byte ranges, the CLI on URLs, the
node-local cache (limit, concurrency, crashes, damage), manifest last, no secret written."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
import torch
import xxhash

from _stores import store_content
from hyperframes._core._errors import ConfigError, StoreError
from hyperframes.build import BuildOptions, build_store
from hyperframes.build._publish import publish_store, staging_dir
from hyperframes.remote._bytes import coalesce
from hyperframes.remote._cache import (
    PIECE_BYTES,
    RETRY_SECONDS,
    BlockCache,
    CacheWarning,
    entry_bytes,
)
from hyperframes.remote._files import filesystem
from hyperframes.store import open_store
from hyperframes.store._remote_store import open_remote

SRC = str(Path(__file__).resolve().parents[1] / "src")
WINDOWS = [(0, [0, 1, 2, 3]), (1, [5, 7, 9, 11]), (3, [4, 3, 2, 2]), (5, [0, 19, 1, 18])]


def _hf(*args, **kw):
    env = {**os.environ, "PYTHONPATH": SRC}
    return subprocess.run(
        [sys.executable, "-m", "hyperframes", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        **kw,
    )


@pytest.fixture(scope="module")
def built(class_folder, s3_server, tmp_path_factory):
    """A raw, an lz4 and a jpeg store of the class folder, each at a URL and in a local
    folder (the raw one built with ``--out s3://``, the others uploaded after a local build)."""
    root = tmp_path_factory.mktemp("s3stores")
    os.environ["HYPERFRAMES_CACHE"] = str(root / "hf-cache")
    out = {}
    for codec in ("raw", "lz4", "jpeg"):
        url = f"s3://{s3_server['bucket']}/built-{codec}"
        opts = BuildOptions(codec=codec, size="32")
        local = build_store(class_folder, root / codec, opts, progress=False)
        if codec == "raw":  # build --out URL: staged, then uploaded
            report = build_store(class_folder, url, opts, progress=False)
            assert report.store == url and report.exit_code == 0
        else:  # the same upload, from the local build
            publish_store(local.store, url)
        out[codec] = (url, Path(local.store))
    # the staging folder of a finished upload is gone
    assert not staging_dir(out["raw"][0]).exists()
    return out


@pytest.mark.parametrize("codec", ["raw", "lz4", "jpeg"])
def test_url_store_reads_equal_local(built, codec):
    url, local = built[codec]
    assert store_content(url) == store_content(local)
    r, loc = open_store(url), open_store(local)
    for v, ix in WINDOWS:
        assert np.array_equal(r.read_numpy(v, ix), loc.read_numpy(v, ix))
        assert np.array_equal(r.read(v, ix).numpy(), loc.read(v, ix).numpy())
    assert np.array_equal(r.read_batch(WINDOWS).numpy(), loc.read_batch(WINDOWS).numpy())
    if codec == "jpeg":
        a, b = r.encoded_frames(2, [3, 1]), loc.encoded_frames(2, [3, 1])
        assert [x.tobytes() for x in a] == [y.tobytes() for y in b]
    assert r.index.videos.tobytes() == loc.index.videos.tobytes()


def test_dataset_reads_a_url_through_its_cache(built, tmp_path):
    """HyperframeDataset(URL, cache_dir=..., cache_limit=...): the same samples as from the
    local store, read through a node cache that fills and stays under its limit."""
    from hyperframes import HyperframeDataset

    url, local = built["lz4"]
    cache = tmp_path / "cache"
    remote = HyperframeDataset(url, frames=4, seed=3, cache_dir=cache, cache_limit=64 << 20)
    here = HyperframeDataset(local, frames=4, seed=3)
    for i in range(len(here)):
        a, b = remote[i], here[i]
        assert torch.equal(a.frames, b.frames)
        assert np.array_equal(a.meta["frame_indices"], b.meta["frame_indices"])
    used = sum(f.stat().st_size for f in cache.rglob("*") if f.is_file())
    assert 0 < used <= 64 << 20
    with pytest.raises(ConfigError, match="cache_dir/cache_limit"):
        HyperframeDataset(open_store(local), frames=4, cache_dir=cache)


@pytest.mark.parametrize("codec", ["raw", "lz4"])
def test_window_fetches_only_its_ranges(built, codec):
    url, _ = built[codec]
    store = open_store(url)
    traffic = store._files.traffic
    before = traffic.bytes, traffic.requests
    v, ix = 1, [2, 3, 4, 5]
    store.read_numpy(v, ix)
    got = traffic.bytes - before[0], traffic.requests - before[1]
    g = store._geom(v)
    if codec == "raw":  # one run of 4 frames: exactly those bytes, in one request
        assert got == (4 * int(np.prod(g[4:7])), 1)
    else:  # the chunks holding frames 2..5, nothing else
        rows = store._chunks[g[7] : g[7] + g[8]]
        first = rows["first_frame"]
        used = (first <= 5) & (first + rows["num_frames"] > 2)
        assert got[0] == int(rows["nbytes"][used].sum())
        assert got[1] == 1  # adjacent chunks: one coalesced request
    assert got[0] < sum(s["bytes"] for s in store.manifest["shards"]) / 4


def test_track_reads_fetch_only_their_span(s3_url, tmp_path):
    """Audio and flow at a URL: a window's audio and flow pairs equal the local store's and
    fetch only their own bytes (the span of the asked pairs; per channel the asked samples),
    not the video's whole track."""
    from _media import make_beep_video

    data = tmp_path / "data"
    data.mkdir()
    make_beep_video(data / "beep.mkv", seconds=2.0, width=48, height=32)
    opts = BuildOptions(size="none", audio=True, flow="dis")
    local = build_store(data, tmp_path / "store", opts, progress=False).store
    publish_store(local, s3_url)
    here, remote = open_store(local), open_store(s3_url)
    traffic = remote._files.traffic
    before = traffic.bytes
    flow = remote.read_flow(0, [10, 12])
    assert np.array_equal(flow, here.read_flow(0, [10, 12]))
    per_pair = 2 * 32 * 48 * 2  # float16 (dx, dy) planes at the stored size
    assert traffic.bytes - before == 3 * per_pair  # pairs 10..12, not the video's 49
    before = traffic.bytes
    got, rate, _ = remote.read_audio(0, 0.5, 0.6)
    assert np.array_equal(got, here.read_audio(0, 0.5, 0.6)[0]) and rate == 16000
    assert traffic.bytes - before == got.size * 4  # 0.1 s of mono float32
    assert np.array_equal(remote.homographies(0), here.homographies(0))


@pytest.mark.parametrize("codec", ["raw", "jpeg"])
def test_batch_fetches_its_ranges_at_once(built, codec):
    url, local = built[codec]
    store = open_store(url)
    traffic = store._files.traffic
    before = traffic.bytes, traffic.requests
    got = store.read_batch(WINDOWS).numpy()
    assert np.array_equal(got, open_store(local).read_batch(WINDOWS).numpy())
    wanted = set()  # (offset, nbytes) of every range the windows need, each once
    for v, ix in WINDOWS:
        g = store._geom(v)
        offsets, nbytes = store._ranges(g, np.asarray(ix))
        if codec == "raw":  # runs of frames: count frames, not overlapping runs
            fb = int(np.prod(g[4:7]))
            offsets = np.concatenate([np.arange(o, o + n, fb) for o, n in zip(offsets, nbytes)])
            nbytes = np.full(len(offsets), fb)
        wanted |= {(g[0], int(o), int(n)) for o, n in zip(offsets, nbytes)}
    assert traffic.bytes - before[0] == sum(n for _, _, n in wanted)
    runs = 0  # one request per run of adjacent ranges, all sent at once
    for shard in {k for k, _, _ in wanted}:
        o = np.array(sorted(x for k, x, _ in wanted if k == shard))
        n = np.array([n for _, x, n in sorted(w for w in wanted if w[0] == shard)])
        runs += len(coalesce(o, o + n)[0])
    assert traffic.requests - before[1] == runs


@pytest.mark.slow  # (CLI subprocesses)
def test_cli_info_verify_show_convert_on_urls(built, s3_url, tmp_path):
    url, local = built["lz4"]
    info = _hf("info", url, "--json")
    assert info.returncode == 0, info.stderr
    assert json.loads(info.stdout)["store"] == url
    ok = _hf("verify", url)
    assert ok.returncode == 0 and "every checksum matches" in ok.stdout, ok.stdout + ok.stderr
    png = tmp_path / "w.png"
    cache = tmp_path / "cache"
    shown = _hf(
        "show", url, "--video", "1", "--frames", "4", "--out", str(png),
        "--cache-dir", str(cache), "--cache-limit", "10000000",
    )  # fmt: skip
    assert shown.returncode == 0 and png.stat().st_size > 0, shown.stderr
    assert any((cache / "blocks").iterdir())
    h5url = f"{s3_url}/store.h5"
    conv = _hf("convert", url, "--format", "hdf5", "--out", h5url, "--quiet")
    assert conv.returncode == 0 and h5url in conv.stdout, conv.stderr
    fs = filesystem(h5url)
    fs.get_file(h5url.partition("://")[2], str(tmp_path / "back.h5"))
    assert store_content(tmp_path / "back.h5") == store_content(local)
    # damage one shard object: verify names it
    shard = json.loads((local / "manifest.json").read_text())["shards"][0]["name"]
    bad = f"{s3_url}/bad"
    gen = publish_store(local, bad)["generation"]
    key = f"{bad}/generations/{gen}/shards/{shard}".partition("://")[2]
    data = bytearray(fs.cat_file(key))
    data[len(data) // 2] ^= 0xFF
    fs.pipe_file(key, bytes(data))
    res = _hf("verify", bad)
    assert res.returncode == 1 and shard in res.stdout and "checksum" in res.stdout


def test_manifest_last_interrupted_upload_then_rerun(built, s3_url):
    _, local = built["raw"]
    m = json.loads((local / "manifest.json").read_text())
    gen = xxhash.xxh3_64_hexdigest((local / "manifest.json").read_bytes())
    fs = filesystem(s3_url)
    # an upload killed after the shards: no manifest, so the URL is incomplete
    for row in m["shards"]:
        key = f"{s3_url}/generations/{gen}/shards/{row['name']}"[5:]
        fs.put_file(str(local / "shards" / row["name"]), key)
    with pytest.raises(StoreError, match="incomplete"):
        open_store(s3_url)
    done = publish_store(local, s3_url)  # the rerun sends only what is missing
    assert done["skipped"] == len(m["shards"]) and done["uploaded"] == len(m["index"]) + 1
    assert store_content(s3_url) == store_content(local)
    again = publish_store(local, s3_url)
    assert again["uploaded"] == 0
    with pytest.raises(StoreError, match="no store here"):
        open_store(f"{s3_url}-nothing")


def test_damaged_index_object_refused(built, s3_url):
    _, local = built["raw"]
    gen = publish_store(local, s3_url)["generation"]
    fs = filesystem(s3_url)
    key = f"{s3_url}/generations/{gen}/index/frames.npy"[5:]
    data = bytearray(fs.cat_file(key))
    data[-1] ^= 0xFF
    fs.pipe_file(key, bytes(data))
    with pytest.raises(StoreError, match=r"frames\.npy: has checksum"):
        open_store(s3_url)


def test_cache_serves_and_refetches_damaged_entries(built, tmp_path):
    url, local = built["lz4"]
    cache = tmp_path / "cache"
    a = open_remote(url, cache_dir=cache, cache_limit=10**7, cache_block_bytes=4096)
    want = open_store(local).read_batch(WINDOWS).numpy()
    assert np.array_equal(a.read_batch(WINDOWS).numpy(), want)
    entries = sorted((cache / "blocks").iterdir())
    assert entries and a._source.cache.misses == len(entries)
    b = open_remote(url, cache_dir=cache, cache_limit=10**7, cache_block_bytes=4096)
    before = b._files.traffic.bytes
    assert np.array_equal(b.read_batch(WINDOWS).numpy(), want)
    assert b._files.traffic.bytes == before  # every block from the cache
    # a damaged entry is detected, dropped and fetched again
    victim = entries[0]
    data = bytearray(victim.read_bytes())
    data[10] ^= 0xFF
    victim.write_bytes(bytes(data))
    c = open_remote(url, cache_dir=cache, cache_limit=10**7, cache_block_bytes=4096)
    assert np.array_equal(c.read_batch(WINDOWS).numpy(), want)
    assert c._source.cache.misses == 1 and c._files.traffic.bytes > before
    assert BlockCache(cache, 10**7).get(victim.name) is not None  # good again


def _flip(path: Path, at: int) -> None:
    """Invert one byte of ``path`` in place (same file, same inode, same size)."""
    with open(path, "r+b") as f:
        f.seek(at)
        b = f.read(1)
        f.seek(at)
        f.write(bytes([b[0] ^ 0xFF]))


def test_cache_entry_flipped_under_a_live_store_is_refetched(built, tmp_path, monkeypatch):
    """A byte changed in a cache entry after this very Store object read and checked it is
    detected on the next read (every read checks what it serves) and fetched again."""
    url, local = built["lz4"]
    cache = tmp_path / "cache"
    want = open_store(local).read_batch(WINDOWS).numpy()
    s = open_remote(url, cache_dir=cache, cache_limit=10**7, cache_block_bytes=4096)
    assert np.array_equal(s.read_batch(WINDOWS).numpy(), want)  # fills the cache
    calls = _count_plans(s, monkeypatch)
    assert np.array_equal(s.read_batch(WINDOWS).numpy(), want)  # served from its maps
    assert calls["plans"] == 0
    entries = sorted((cache / "blocks").iterdir())
    before, misses = s._files.traffic.bytes, s._source.cache.misses
    for e in entries:  # every entry damaged in place, inside the bytes it serves
        _flip(e, 10)
    assert np.array_equal(s.read_batch(WINDOWS).numpy(), want)
    assert s._source.cache.misses == misses + len(entries)  # each refetched
    assert s._files.traffic.bytes > before
    assert np.array_equal(s.read_batch(WINDOWS).numpy(), want)  # good entries again


def test_cache_checks_only_the_pieces_a_read_serves(tmp_path):
    c = BlockCache(tmp_path, 10**8)
    data = np.random.default_rng(0).bytes(5 * PIECE_BYTES + 123)
    assert c.put("b", data)
    entry = tmp_path / "blocks" / "b"
    assert entry.stat().st_size == entry_bytes(len(data))
    assert (
        c.get("b", PIECE_BYTES + 7, 3 * PIECE_BYTES + 1)
        == data[PIECE_BYTES + 7 : 3 * PIECE_BYTES + 1]
    )
    _flip(entry, 4 * PIECE_BYTES + 3)
    assert c.get("b", 0, 100) == data[:100]  # a piece that still checks is served
    assert c.get("b", 4 * PIECE_BYTES, 4 * PIECE_BYTES + 8) is None  # the damaged one never
    assert not entry.exists()
    assert c.put("b", data)
    _flip(entry, entry.stat().st_size - 20)  # the seal itself
    assert c.get("b", 0, 100) is None


@pytest.fixture
def full_tmpfs(tmp_path):
    """A 1 MiB tmpfs mounted under tmp_path, filled to the last byte (a full cache disk)."""
    mnt = tmp_path / "small"
    mnt.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mnt)], capture_output=True, text=True
    )
    if done.returncode != 0:
        pytest.skip(f"a tmpfs cannot be mounted here ({done.stderr.strip()}): needs root")
    try:
        (mnt / "cache").mkdir()
        BlockCache(mnt / "cache", 10**9)  # its folders exist before the disk is full
        with open(mnt / "filler", "wb") as f, pytest.raises(OSError, match="No space"):
            while True:
                f.write(b"\0" * 65536)
                f.flush()
        yield mnt / "cache"
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=True)


def _reads_warn_once(store, want) -> None:
    with pytest.warns(CacheWarning, match="reading from object storage directly") as caught:
        for _ in range(3):
            assert np.array_equal(store.read_batch(WINDOWS).numpy(), want)
    assert len([w for w in caught if w.category is CacheWarning]) == 1


def test_full_cache_disk_reads_from_object_storage(built, full_tmpfs):
    url, local = built["lz4"]
    want = open_store(local).read_batch(WINDOWS).numpy()
    s = open_remote(url, cache_dir=full_tmpfs, cache_limit=10**9, cache_block_bytes=4096)
    _reads_warn_once(s, want)
    assert s._source.cache.bypassed > 0 and "No space" in s._source.cache.failure[1]
    assert not list((full_tmpfs / "tmp").iterdir())  # no partial entry left behind


def test_cache_folder_removed_under_an_open_store(built, tmp_path):
    url, local = built["lz4"]
    cache = tmp_path / "cache"
    want = open_store(local).read_batch(WINDOWS).numpy()
    s = open_remote(url, cache_dir=cache, cache_limit=10**7, cache_block_bytes=4096)
    assert np.array_equal(s.read_batch(WINDOWS[:2]).numpy(), want[:2])
    shutil.rmtree(cache)
    _reads_warn_once(s, want)
    assert s._source.cache.bypassed > 0
    cache_ = s._source.cache
    cache_.failure = (cache_.failure[0] - RETRY_SECONDS, cache_.failure[1])  # a minute later
    assert np.array_equal(s.read_batch(WINDOWS).numpy(), want)
    assert any((cache / "blocks").iterdir())  # the folder made anew, the cache in use again


_READER = textwrap.dedent(
    """
    import sys, numpy as np
    from hyperframes.store._remote_store import open_remote
    url, cache, limit, seed = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    s = open_remote(url, cache_dir=cache, cache_limit=limit, cache_block_bytes=8192)
    rng = np.random.default_rng(seed)
    worst = 0
    for _ in range(20):
        v = int(rng.integers(len(s)))
        n = int(s.videos[v].num_frames)
        s.read_numpy(v, rng.integers(0, n, 4))
        worst = max(worst, s._source.cache.used_bytes())
    print(worst)
    """
)


def test_cache_limit_holds_under_concurrent_processes(built, tmp_path):
    url, _ = built["raw"]
    cache, limit = tmp_path / "cache", 5 * entry_bytes(8192) + 100
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _READER, url, str(cache), str(limit), str(seed)],
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": SRC},
        )
        for seed in range(3)
    ]
    worst = [int(p.communicate(timeout=120)[0]) for p in procs]
    assert all(p.returncode == 0 for p in procs)
    assert max(worst) <= limit
    assert 0 < BlockCache(cache, limit).used_bytes() <= limit


def test_reader_holding_an_entry_blocks_its_eviction(tmp_path):
    import fcntl

    c = BlockCache(tmp_path, 3 * entry_bytes(100))
    for i in range(3):
        assert c.put(f"k-{i}", bytes([i]) * 100)
    oldest = tmp_path / "blocks" / "k-0"
    with open(oldest, "rb") as held:
        fcntl.flock(held, fcntl.LOCK_SH)  # what get() holds while it reads
        assert c.put("k-3", b"x" * 100)  # evicted k-1 instead
        assert oldest.exists() and not (tmp_path / "blocks" / "k-1").exists()
        for i in (4, 5):
            c.put(f"k-{i}", b"y" * 100)
        assert oldest.exists()
        assert not c.put("k-6", b"z" * 300)  # no room without evicting k-0: skipped
    assert c.put("k-6", b"z" * 300) and not oldest.exists()
    assert c.used_bytes() <= c.limit


_FILLER = textwrap.dedent(
    """
    import os, sys
    from hyperframes.remote._cache import BlockCache
    c = BlockCache(sys.argv[1], 10**9)
    real = os.fsync
    def stall(fd):
        print("writing", flush=True)
        import time; time.sleep(60)
    os.fsync = stall
    c.put("half", b"h" * 3_000_000)
    """
)


def test_killed_cache_fill_leaves_no_served_entry(tmp_path):
    p = subprocess.Popen(
        [sys.executable, "-c", _FILLER, str(tmp_path)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": SRC},
    )
    assert p.stdout is not None and p.stdout.readline().strip() == "writing"
    os.kill(p.pid, signal.SIGKILL)
    p.wait()
    p.stdout.close()
    c = BlockCache(tmp_path, 10**9)
    assert list((tmp_path / "tmp").iterdir())  # the killed writer's temp is there
    assert c.get("half") is None  # never served
    assert c.put("other", b"o" * 10)
    assert not list((tmp_path / "tmp").iterdir())  # stale temp removed by the next insert
    # a truncated entry (e.g. copied in by hand) is refused too
    (tmp_path / "blocks" / "cut").write_bytes(b"o" * 5)
    assert c.get("cut") is None and not (tmp_path / "blocks" / "cut").exists()


# -- warm reads: served from the blocks' maps as they are (issue 34 item 7) -----------------

#: a cache block size under which the sharded store's chunks (71-358 bytes) cross boundaries
_SMALL_BLOCK = 1000


@pytest.fixture(scope="module")
def sharded(class_folder, s3_server, tmp_path_factory):
    """An lz4 store of the class folder in several shards, in a local folder and at a URL."""
    root = tmp_path_factory.mktemp("sharded")
    opts = BuildOptions(codec="lz4", size="32", shard_bytes=5_000)
    local = Path(build_store(class_folder, root / "lz4", opts, progress=False).store)
    url = f"s3://{s3_server['bucket']}/sharded-lz4"
    publish_store(local, url)
    return url, local


def _count_plans(store, monkeypatch) -> dict[str, int]:
    """Count the batch plans ``store`` makes from now on."""
    calls = {"plans": 0}
    plan = store._batch_plan

    def counted(reqs):
        calls["plans"] += 1
        return plan(reqs)

    monkeypatch.setattr(store, "_batch_plan", counted)
    return calls


def test_warm_batches_are_served_from_the_blocks_without_a_plan(sharded, tmp_path, monkeypatch):
    """Once every block a batch needs is in the cache, read_batch makes no batch plan and
    fetches nothing: each chunk is addressed in its block's map (one across a block boundary
    joined), across shards, and the frames are the local store's, batch by batch and window
    by window."""
    url, local = sharded
    loc = open_store(local)
    rows = loc._chunks
    ends = rows["offset"] + rows["nbytes"] - 1
    assert ((rows["offset"] // _SMALL_BLOCK) != (ends // _SMALL_BLOCK)).any()
    assert len(loc.manifest["shards"]) > 1
    windows = _windows(loc)  # every 4-frame window of every video: every chunk
    want = loc.read_batch(windows).numpy()
    s = open_remote(
        url, cache_dir=tmp_path / "c", cache_limit=10**7, cache_block_bytes=_SMALL_BLOCK
    )
    assert np.array_equal(s.read_batch(windows).numpy(), want)  # fills the cache
    calls = _count_plans(s, monkeypatch)
    before, hits = s._files.traffic.bytes, s._source.cache.hits
    for b in range(0, len(windows), 8):
        assert np.array_equal(s.read_batch(windows[b : b + 8]).numpy(), want[b : b + 8])
    assert calls["plans"] == 0 and s._source.cache.hits > hits
    for v, ix in windows:
        assert np.array_equal(s.read_numpy(v, ix), loc.read_numpy(v, ix))
    boxed = s.read_batch(windows[:8], size=(16, 16)).numpy()  # cropped and resized
    assert np.array_equal(boxed, loc.read_batch(windows[:8], size=(16, 16)).numpy())
    assert s._files.traffic.bytes == before  # nothing fetched


_EVICTOR = textwrap.dedent(
    """
    import sys
    from hyperframes.remote._cache import BlockCache, entry_bytes
    cache, block = sys.argv[1], int(sys.argv[2])
    c = BlockCache(cache, entry_bytes(block), block_bytes=block)
    print(c.put("other", bytes(block)))  # room for this one only: every other entry must go
    """
)

_FILLER_READER = textwrap.dedent(
    """
    import sys, json
    from hyperframes.store._remote_store import open_remote
    url, cache, block, windows = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    s = open_remote(url, cache_dir=cache, cache_limit=10**7, cache_block_bytes=block)
    s.read_batch(json.loads(windows))
    """
)


def _run(code: str, *args) -> str:
    env = {**os.environ, "PYTHONPATH": SRC}
    done = subprocess.run(
        [sys.executable, "-c", code, *map(str, args)], capture_output=True, text=True, env=env
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def _warm(url, local, cache, monkeypatch):
    """``(store, windows, want)``: a store at ``url`` whose cache in ``cache`` holds (and whose
    process maps) every block of twelve windows, which it read twice; plans counted."""
    windows = _windows(open_store(local))[:12]
    want = open_store(local).read_batch(windows).numpy()
    s = open_remote(url, cache_dir=cache, cache_limit=10**7, cache_block_bytes=_SMALL_BLOCK)
    for _ in range(2):  # filled, then served from the maps
        assert np.array_equal(s.read_batch(windows).numpy(), want)
    return s, windows, want


def test_blocks_mapped_here_are_not_evicted_by_another_process(sharded, tmp_path, monkeypatch):
    """Another process that needs room cannot evict the blocks this process has mapped (the
    map keeps the shared lock taken while mapping): its insert is skipped, and reads here go
    on from the maps, fetching nothing."""
    url, local = sharded
    cache = tmp_path / "cache"
    s, windows, want = _warm(url, local, cache, monkeypatch)
    mapped = set(s._source.cache._maps)
    assert _run(_EVICTOR, cache, _SMALL_BLOCK) == "False"
    assert {p.name for p in (cache / "blocks").iterdir()} == mapped
    calls = _count_plans(s, monkeypatch)
    before = s._files.traffic.bytes
    assert np.array_equal(s.read_batch(windows).numpy(), want)
    assert s._files.traffic.bytes == before and calls["plans"] == 0


def test_blocks_removed_under_this_process_are_fetched_again(sharded, tmp_path, monkeypatch):
    """Blocks removed from the cache folder after this process mapped them (by hand, or by
    any cleaner) are not served from the maps it kept: the next batch finds each gone,
    fetches it again and caches it anew; frames right."""
    url, local = sharded
    cache = tmp_path / "cache"
    s, windows, want = _warm(url, local, cache, monkeypatch)
    entries = sorted((cache / "blocks").iterdir())
    for e in entries:
        e.unlink()
    before, misses = s._files.traffic.bytes, s._source.cache.misses
    assert np.array_equal(s.read_batch(windows).numpy(), want)
    assert s._source.cache.misses == misses + len(entries)  # each block fetched again
    assert s._files.traffic.bytes > before
    assert sorted((cache / "blocks").iterdir()) == entries


def test_blocks_filled_again_by_another_process_are_mapped_anew(sharded, tmp_path, monkeypatch):
    """Blocks removed under this process and then filled again by another process's read
    are mapped anew (their files are new) and served from there: nothing fetched here,
    frames right, and none of the maps made before is used."""
    import json

    url, local = sharded
    cache = tmp_path / "cache"
    s, windows, want = _warm(url, local, cache, monkeypatch)
    old = dict(s._source.cache._maps)
    for e in (cache / "blocks").iterdir():
        e.unlink()
    _run(_FILLER_READER, url, cache, _SMALL_BLOCK, json.dumps(windows))
    assert {p.name for p in (cache / "blocks").iterdir()} == set(old)  # filled again
    before, misses = s._files.traffic.bytes, s._source.cache.misses
    assert np.array_equal(s.read_batch(windows).numpy(), want)
    assert s._files.traffic.bytes == before and s._source.cache.misses == misses
    now = s._source.cache._maps
    assert all(now[name] is not m for name, m in old.items())  # every one mapped anew


def test_read_ahead_through_a_warm_cache_takes_its_jobs(built, tmp_path):
    """With batches read ahead, a read through a warm cache still takes its batch's job (a
    batch served around it would leave the job holding the budget until it went stale)."""
    from hyperframes import HyperframeDataset, loader

    url, local = built["lz4"]
    remote = HyperframeDataset(url, frames=4, seed=3, cache_dir=tmp_path / "c", cache_limit=10**7)
    for _ in loader(remote, 2, workers=2, seed=3, read_ahead=0):  # fills the cache
        pass
    ahead = remote.store._source.read_ahead
    want = [b.frames.clone() for b in loader(HyperframeDataset(local, frames=4, seed=3), 2, seed=3)]
    got = [b.frames.clone() for b in loader(remote, 2, workers=2, seed=3, read_ahead=1 << 20)]
    assert all(torch.equal(a, b) for a, b in zip(got, want)) and len(got) == len(want)
    _settled(ahead)
    assert ahead.accepted == ahead.taken == len(got) and ahead.dropped == 0
    assert ahead.held == 0 and not ahead._jobs


@pytest.mark.slow  # (a training run)
def test_credentials_never_written(built, s3_server, tmp_path, capfd):
    """No object, run file or line of output holds the secret key; the training run is the
    command in this process (a subprocess cost a minute of imports and worker start-ups; the
    train command runs as a subprocess in test_train_preempt and test_install)."""
    from hyperframes.cli import main

    secret = s3_server["secret"].encode()
    fs = filesystem(built["raw"][0])
    for url, _ in built.values():
        for key in fs.find(url.partition("://")[2]):
            assert secret not in fs.cat_file(key), key
    cfg = tmp_path / "run.yaml"
    url = built["raw"][0]
    cfg.write_text(
        json.dumps(
            {
                "data": {
                    "store": url,
                    "frames": 4,
                    "batch_size": 2,
                    "cache_dir": str(tmp_path / "cache"),
                    "cache_limit": 10**7,
                    "check_leakage": False,
                    "sampler_options": {"stride": 2},
                    "val_sampler_options": {"clips": 1, "stride": 2},
                },
                "model": {"name": "r2plus1d_tiny", "options": {"base_width": 8}},
                "train": {"epochs": 1, "optimizer": "adamw", "lr": 0.003, "log_every": 1},
            }
        )
    )
    run = tmp_path / "run"
    capfd.readouterr()
    code = main(["train", str(cfg), "--out", str(run), "--quiet"])
    out, err = capfd.readouterr()
    assert code == 0, err[-2000:]
    assert secret.decode() not in out + err
    files = [f for f in run.rglob("*") if f.is_file()]
    assert any(f.suffix == ".pt" for f in files)
    for f in files:
        assert secret not in f.read_bytes(), f
    assert any((tmp_path / "cache" / "blocks").iterdir())  # the run read through its cache


def _read_in_child(store, v, ix, q) -> None:
    q.put(store.read_numpy(v, ix).tobytes())


def test_store_opened_before_fork_reads_in_forked_child(built):
    """DataLoader workers fork: a store opened (and read) in the parent reads in the child
    through a client made there (an s3fs instance refuses use after fork)."""
    import multiprocessing as mp

    url, local = built["lz4"]
    store = open_store(url)
    store.read_numpy(2, [0, 1])
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    p = ctx.Process(target=_read_in_child, args=(store, 2, [3, 4, 5], q))
    p.start()
    got = q.get(timeout=60)
    p.join(timeout=60)
    assert p.exitcode == 0
    assert got == open_store(local).read_numpy(2, [3, 4, 5]).tobytes()


def _settled(ahead, timeout: float = 10.0) -> None:
    """Wait until the read-ahead's dropped jobs in flight have let their bytes go."""
    import time

    end = time.monotonic() + timeout
    while ahead.held and time.monotonic() < end:
        time.sleep(0.01)


def test_loader_reads_ahead_within_its_budget(built):
    """A thread loader over a URL store hands the store the next batches' plans: their ranges
    are fetched in the background (taken by the reads, nothing fetched twice), never more
    than the byte budget held at once, and dropped when the loop is left or the epoch set."""
    from hyperframes import HyperframeDataset, loader

    url, local = built["lz4"]
    here = HyperframeDataset(local, frames=4, seed=3)
    want = [b.frames.clone() for b in loader(here, 4, workers=2, seed=3)]
    plain = HyperframeDataset(url, frames=4, seed=3)
    at_open = plain.store._files.traffic.bytes
    for _ in loader(plain, 4, workers=2, seed=3, read_ahead=0):
        pass
    fetched_plain = plain.store._files.traffic.bytes - at_open
    remote = HyperframeDataset(url, frames=4, seed=3)
    ahead = remote.store._source.read_ahead
    budget = 3 * fetched_plain // len(want)  # about three batches
    at_open = remote.store._files.traffic.bytes
    ld = loader(remote, 4, workers=2, seed=3, read_ahead=budget)
    got = [b.frames.clone() for b in ld]
    assert len(got) == len(want) and all(torch.equal(a, b) for a, b in zip(got, want))
    assert remote.store._files.traffic.bytes - at_open == fetched_plain  # each byte once
    assert ahead.taken >= len(want) // 2 and ahead.accepted >= ahead.taken
    assert 0 < ahead.peak <= budget
    _settled(ahead)
    assert ahead.held == 0 and not ahead._jobs
    # batches of 1: six in the epoch, so batches remain to be read ahead after the first
    # (with two batches of 4, the second could be read, its job taken, before the check)
    ld = loader(remote, 1, workers=1, prefetch_factor=1, seed=3, read_ahead=budget)
    for _ in ld:  # left after one batch: the batches read ahead are dropped
        break
    _settled(ahead)
    # every job accepted was taken or dropped (how many were still ahead depends on timing)
    assert ahead.held == 0 and not ahead._jobs
    assert ahead.accepted == ahead.taken + ahead.dropped
    it = iter(ld)
    next(it)
    assert ahead._jobs
    ld.set_epoch(1)  # a new order: what was read ahead for the old one goes
    assert not ahead._jobs
    it.close()
    with pytest.raises(ConfigError, match="read_ahead"):
        loader(remote, 4, read_ahead=-1)


def test_a_large_file_is_published_in_parts_and_not_sent_again(s3_url, tmp_path, monkeypatch):
    """A file over twice the part size goes up as a multipart upload (its ETag says so); a
    second publish of it (a rerun) finds it there by that ETag and sends nothing."""
    from hyperframes.build import _publish

    monkeypatch.setattr(_publish, "PART_BYTES", 5 << 20)  # the S3 minimum part size
    local = tmp_path / "big.bin"
    local.write_bytes(np.random.default_rng(0).integers(0, 256, 11 << 20, np.uint8).tobytes())
    url = f"{s3_url}/shards/big.bin"
    assert _publish.publish_file(local, url) is True
    info = filesystem(url).info(url[5:])
    assert str(info["ETag"]).strip('"').endswith("-3") and info["size"] == 11 << 20
    assert _publish.publish_file(local, url) is False


# -- a store rebuilt under its readers (issue 40): reads pinned to what they opened ----------


def _windows(store) -> list[tuple[int, list[int]]]:
    """Every 4-frame window of every video of ``store`` (stride 3)."""
    out = []
    for v in range(len(store)):
        n = int(store.videos[v].num_frames)
        out += [(v, list(range(s, s + 4))) for s in range(0, n - 3, 3)]
    return out


def _read_all(reader, local) -> tuple[int, int, list[str]]:
    """``(right, wrong, errors)`` over every window of the local store ``local``, read by
    ``reader`` one window at a time; a StoreError is kept, anything else raised."""
    right = wrong = 0
    errors = []
    want = open_store(local)
    for v, ix in _windows(want):
        try:
            got = reader.read_numpy(v, ix)
        except StoreError as e:
            errors.append(str(e))
            continue
        if np.array_equal(got, want.read_numpy(v, ix)):
            right += 1
        else:
            wrong += 1
    return right, wrong, errors


@pytest.fixture(scope="module")
def fewer_videos(class_folder, tmp_path_factory):
    """The class folder's last class only: a store of it lays every video out elsewhere."""
    other = tmp_path_factory.mktemp("fewer") / "data"
    shutil.copytree(class_folder, other)
    for name in sorted(p.name for p in other.iterdir())[:-1]:
        shutil.rmtree(other / name)
    return other


@pytest.mark.parametrize("cached", [False, True])
def test_reader_open_across_a_rebuild_never_reads_other_videos(
    built, fewer_videos, s3_url, tmp_path, cached
):
    """A reader opened before ``build --out URL`` is run again with other inputs, with and
    without the node cache: each window is the one it opened or a StoreError saying the
    store changed, never another video's pixels."""
    _, local = built["raw"]
    publish_store(local, s3_url)
    kw = {"cache_dir": tmp_path / "cache", "cache_limit": 10**8, "cache_block_bytes": 8192}
    reader = open_remote(s3_url, **(kw if cached else {}))
    v, ix = _windows(reader)[0]  # a first read (fills the cache's first blocks)
    assert np.array_equal(reader.read_numpy(v, ix), open_store(local).read_numpy(v, ix))
    report = build_store(fewer_videos, s3_url, BuildOptions(codec="raw", size="32"), progress=False)
    assert report.videos == 2
    right, wrong, errors = _read_all(reader, local)
    assert wrong == 0, f"{wrong} windows of other videos' pixels"
    # the rebuild wrote a new generation: the one the reader opened is read whole, as it was
    assert not errors and right == len(_windows(open_store(local)))
    fresh = open_remote(s3_url)  # opened again: the new build
    assert len(fresh) == 2


def test_rerun_of_a_complete_url_build_decodes_nothing_and_gc_deletes_old_generations(
    built, fewer_videos, s3_url, capsys
):
    """``build --out URL`` run again with the same inputs and options keeps the store there
    (no video decoded, no object written); ``hyperframes gc URL`` lists the generation of
    the build before, which a reader opened on it reads until ``gc --delete`` deletes it."""
    from hyperframes.build._publish import leftovers
    from hyperframes.cli import main

    _, local = built["raw"]
    old = publish_store(local, s3_url)["generation"]
    reader = open_remote(s3_url)
    opts = BuildOptions(codec="raw", size="32")
    first = build_store(fewer_videos, s3_url, opts, progress=False)
    assert first.reused == 0 and first.videos == 2
    fs = filesystem(s3_url)
    before = {
        k: (i["ETag"], i["LastModified"]) for k, i in fs.find(s3_url[5:], detail=True).items()
    }
    again = build_store(fewer_videos, s3_url, opts, progress=False)
    assert (again.reused, again.videos, again.frames) == (2, 2, first.frames)
    assert not staging_dir(s3_url).exists()  # nothing staged, nothing decoded
    fs.invalidate_cache()
    after = {k: (i["ETag"], i["LastModified"]) for k, i in fs.find(s3_url[5:], detail=True).items()}
    assert after == before  # not one object written again
    stale = leftovers(s3_url)
    assert stale and all(rel.startswith(f"generations/{old}/") for rel, _ in stale)
    assert _read_all(reader, local)[1:] == (0, [])  # the old generation, still read whole
    assert main(["gc", s3_url, "--delete"]) == 0
    assert f"{len(stale)} object(s) deleted" in capsys.readouterr().out
    assert leftovers(s3_url) == []
    right, wrong, errors = _read_all(reader, local)
    assert (right, wrong) == (0, 0) and "the store changed since it was opened" in errors[0]
    assert len(open_remote(s3_url)) == 2


@pytest.mark.parametrize("cached", [False, True])
def test_shard_replaced_in_place_is_a_store_changed_error(built, s3_url, tmp_path, cached):
    """A shard object overwritten at its own name (by hand, or by an older hyperframes) under
    an open reader: every read of it that is not already in the reader's cache is refused
    with a StoreError naming the store (``If-Match`` on the open-time ETag); the cache never
    stores the new bytes under the old version's key."""
    _, local = built["raw"]
    publish_store(local, s3_url)
    kw = {"cache_dir": tmp_path / "cache", "cache_limit": 10**8, "cache_block_bytes": 4096}
    reader = open_remote(s3_url, **(kw if cached else {}))
    fs = filesystem(s3_url)
    for rel in map(reader._source._rel, range(len(reader._source.names))):
        key = f"{s3_url}/{rel}"[5:]
        data = bytearray(fs.cat_file(key))
        data[::2] = bytes(len(data[::2]))  # other bytes, same size
        fs.pipe_file(key, bytes(data))
    right, wrong, errors = _read_all(reader, local)
    assert wrong == 0 and right == 0 and errors
    assert "the store changed since it was opened" in errors[0] and s3_url in errors[0]
    assert "open the store again" in errors[0]
    with pytest.raises(StoreError, match="the store changed"):
        reader.read_batch(WINDOWS)
    if cached:
        assert not list((tmp_path / "cache" / "blocks").iterdir())


_HOLDER = textwrap.dedent(
    """
    import sys, time
    from hyperframes.build._url_lock import UrlLock
    with UrlLock(sys.argv[1]):
        print("held", flush=True)
        time.sleep(120)
    """
)


def test_a_second_build_of_a_url_is_refused_naming_the_first(fewer_videos, s3_url):
    """Two builds of one URL: while one holds the URL's lock object (a real process, killed
    -9 later), a second ``build --out URL`` is refused with a StoreError naming the holder,
    writes nothing, and so is ``gc``; once the holder is dead (this machine: its process is
    gone; another machine: its lease ran out), the next build takes the lock over, and lets
    it go when done."""
    from hyperframes.build import gc_store
    from hyperframes.build._url_lock import LEASE_SECONDS, UrlLock

    opts = BuildOptions(codec="raw", size="32")
    p = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, s3_url],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": SRC},
    )
    try:
        assert p.stdout is not None and p.stdout.readline().strip() == "held"
        with pytest.raises(StoreError, match=rf"another build of this URL is running.*pid {p.pid}"):
            build_store(fewer_videos, s3_url, opts, progress=False)
        with pytest.raises(StoreError, match=rf"a build of this URL is running.*pid {p.pid}"):
            gc_store(s3_url, delete=True)
    finally:
        p.kill()
        p.wait()
        p.stdout.close()
    fs = filesystem(s3_url)
    assert sorted(fs.find(s3_url[5:])) == [f"{s3_url[5:]}/.lock"]  # nothing built
    report = build_store(fewer_videos, s3_url, opts, progress=False)  # its holder is dead
    assert report.videos == 2 and not fs.exists(f"{s3_url[5:]}/.lock")  # taken, let go
    # a lock of a build on another machine: refused while its lease holds, taken once past
    other = {"holder": "hyperframes build on gpu-node-7 (boot 1234abcd), pid 4242"}
    lock = f"{s3_url[5:]}/.lock"
    live = {**other, "host": "gpu-node-7", "pid": 4242, "lease_until": time.time() + 600}
    fs.pipe_file(lock, json.dumps(live).encode())
    with pytest.raises(StoreError, match=r"another build.*gpu-node-7.*pid 4242.*lease ends in"):
        build_store(fewer_videos, s3_url, opts, progress=False)
    fs.pipe_file(lock, json.dumps({**other, "lease_until": 1.0}).encode())
    with UrlLock(s3_url) as held:
        assert f"pid {os.getpid()}" in json.loads(fs.cat_file(lock))["holder"]
        assert held.lost is None
    assert not fs.exists(lock) and LEASE_SECONDS >= 60


def test_a_build_that_lost_its_lock_publishes_no_manifest(s3_url, monkeypatch):
    """A holder whose renewal finds the lock object rewritten by another build (its own lease
    ran out while it was stopped) says so before publishing, and never deletes the other's
    lock."""
    from hyperframes.build import _url_lock

    monkeypatch.setattr(_url_lock, "RENEW_SECONDS", 0.05)
    fs = filesystem(s3_url)
    lock = f"{s3_url[5:]}/.lock"
    theirs = {"holder": "hyperframes build on gpu-node-9, pid 77", "lease_until": time.time() + 600}
    with _url_lock.UrlLock(s3_url) as held:
        fs.pipe_file(lock, json.dumps(theirs).encode())  # taken over meanwhile
        deadline = time.monotonic() + 20
        while held.lost is None and time.monotonic() < deadline:
            time.sleep(0.05)
        with pytest.raises(StoreError, match=r"lost its lock .*gpu-node-9, pid 77.*no manifest"):
            held.check()
    assert json.loads(fs.cat_file(lock)) == theirs  # theirs, untouched
