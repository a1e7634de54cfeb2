"""What a store refuses at every open, local and at a URL: index files that do not match the
manifest's checksums (edited in place, same size), a manifest without them (re-signed with
``hyperframes verify --resign``), JSON nested too deep, an index header claiming more rows
than it holds; and the CLI's clean errors for names with any bytes and for a URL it cannot
write."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from _media import make_beep_video, write_video
from _stores import reseal
from hyperframes import StoreError
from hyperframes.build import BuildOptions, build_store
from hyperframes.build._publish import publish_store, staging_dir
from hyperframes.remote._files import filesystem
from hyperframes.store import open_store, resign_store, verify_store

SRC = str(Path(__file__).resolve().parents[1] / "src")
DATA = Path(__file__).resolve().parent / "data"


def _hf(*args, env=None, cwd=None):
    return subprocess.run(
        [sys.executable, "-m", "hyperframes", *map(os.fsdecode, args)],
        capture_output=True,
        text=True,
        errors="surrogateescape",
        env={**os.environ, "PYTHONPATH": SRC, **(env or {})},
        cwd=cwd,
        timeout=120,
    )


@pytest.fixture(scope="module")
def tracked(tmp_path_factory) -> Path:
    """A raw store of two short videos with audio and flow (every index file there is)."""
    root = tmp_path_factory.mktemp("integrity")
    for name in ("a/x", "b/y"):
        make_beep_video(root / "data" / f"{name}.mkv", seconds=0.4, width=32, height=24)
    out = root / "store"
    opts = BuildOptions(size="none", audio=True, flow="dis")
    build_store(root / "data", out, opts, progress=False)
    return out


@pytest.fixture
def store(tracked, tmp_path) -> Path:
    """A fresh copy of the tracked store, to tamper with."""
    return Path(shutil.copytree(tracked, tmp_path / "store"))


def _edit_rows(store: Path, name: str, column: str, value) -> None:
    """Change one value of row 0 of ``index/NAME`` in place (same size), manifest untouched."""
    f = store / "index" / name
    arr = np.load(f)
    arr[0][column] = value
    np.save(f, arr)


def _manifest(store: Path) -> dict:
    return json.loads((store / "manifest.json").read_text())


def _write_manifest(store: Path, m: dict) -> None:
    (store / "manifest.json").write_text(json.dumps(m))


# -- index files against the manifest, at every open --------------------------------------
EDITS = {
    "videos.npy": ("label_id", 1),  # video 0 relabelled as the other class
    "audio.npy": ("sample_rate", 44100),
    "flow.npy": ("scale", 2.0),
}


@pytest.mark.parametrize("name", sorted(EDITS))
@pytest.mark.parametrize("check", [None, "video"])
def test_index_file_edited_in_place_is_refused_at_open(store, name, check):
    column, value = EDITS[name]
    _edit_rows(store, name, column, value)
    with pytest.raises(
        StoreError, match=rf"index/{name}: has checksum \w+ .* the manifest recorded"
    ):
        open_store(store, check=check)


def test_every_index_file_is_checked_at_open(store):
    listed = [row["name"] for row in _manifest(store)["index"]]
    assert {"index/audio.npy", "index/flow.npy", "index/details.jsonl"} <= set(listed)
    for name in listed:
        f = store / name
        good = f.read_bytes()
        f.write_bytes(good[:-1] + bytes([good[-1] ^ 1]))
        with pytest.raises(StoreError, match=rf"{name}: has checksum"):
            open_store(store)
        f.write_bytes(good)
    open_store(store).close()


def test_url_index_object_edited_is_refused(tracked, s3_url, tmp_path):
    gen = publish_store(tracked, s3_url)["generation"]
    fs = filesystem(s3_url)
    key = f"{s3_url}/generations/{gen}/index/audio.npy"[5:]
    arr = np.load(io.BytesIO(fs.cat_file(key)))
    arr[0]["start_seconds"] += 0.5
    np.save(tmp_path / "audio.npy", arr)
    fs.put_file(str(tmp_path / "audio.npy"), key)
    with pytest.raises(StoreError, match=r"audio\.npy: has checksum"):
        open_store(s3_url)


@pytest.mark.parametrize("where", ["local", "url"])
def test_manifest_without_index_checksums_is_refused(tracked, tmp_path, s3_url, where):
    store = Path(shutil.copytree(tracked, tmp_path / "store"))
    m = _manifest(store)
    for row in m["index"]:
        del row["checksum"]
    _write_manifest(store, m)
    target = str(store)
    if where == "url":
        publish_store(store, s3_url)
        target = s3_url
    with pytest.raises(
        StoreError,
        match=r"records no xxh3_128 checksum for index/videos\.npy.*"
        r"`hyperframes verify --resign STORE`",
    ):
        open_store(target)


def test_verify_resign_records_missing_checksums(store):
    want = open_store(store).read_numpy(1, [0, 3])
    m = _manifest(store)
    for row in m["index"]:
        row.pop("checksum")
    m["shards"][0]["checksum"] = "-"
    _write_manifest(store, m)
    bad = _hf("verify", store)
    assert bad.returncode != 0 and "--resign" in bad.stdout
    done = _hf("verify", store, "--resign")
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"{len(m['index']) + 1} checksum(s) recorded" in done.stdout
    assert verify_store(store) == []
    with open_store(store, check="video") as s:
        assert np.array_equal(s.read_numpy(1, [0, 3]), want)
    assert _hf("verify", store, "--resign").stdout.strip().endswith("nothing to re-sign")


def test_resign_never_signs_a_damaged_file(store):
    m = _manifest(store)
    m["index"][0].pop("checksum")  # videos.npy: to be signed
    _write_manifest(store, m)
    _edit_rows(store, "audio.npy", "sample_rate", 44100)  # its checksum is in the manifest
    before = (store / "manifest.json").read_bytes()
    signed, problems = resign_store(store)
    assert signed == [] and len(problems) == 1
    assert "audio.npy" in problems[0] and "damaged (not re-signed" in problems[0]
    assert (store / "manifest.json").read_bytes() == before  # nothing written
    out = _hf("verify", store, "--resign")
    assert out.returncode != 0 and "nothing re-signed" in out.stdout


def test_resign_refuses_a_store_that_does_not_open(store):
    m = _manifest(store)
    for row in m["index"]:
        row.pop("checksum")
    _write_manifest(store, m)
    _edit_rows(store, "videos.npy", "label_id", 7)  # no class 7: open refuses it
    before = (store / "manifest.json").read_bytes()
    signed, problems = resign_store(store)
    assert signed == [] and "label" in problems[0]
    assert (store / "manifest.json").read_bytes() == before


@pytest.mark.parametrize("codec", ["raw", "lz4"])
def test_v1_golden_stores_open_with_their_index_checksums(codec):
    m = json.loads((DATA / f"store_v1_{codec}" / "manifest.json").read_text())
    assert m["format_version"] == 1 and all("checksum" in r for r in m["index"])
    open_store(DATA / f"store_v1_{codec}").close()


# -- crafted input: refused, never a crash -------------------------------------------------
DEEP = "[" * 200_000 + "]" * 200_000


@pytest.mark.parametrize("where", ["local", "url"])
@pytest.mark.parametrize("name", ["manifest.json", "index/strings.json"])
def test_deeply_nested_json_is_a_store_error(store, s3_url, where, name):
    (store / name).write_text(DEEP)
    if name != "manifest.json":
        reseal(store)  # (a crafted store's manifest matches its files)
    target = str(store)
    if where == "url":
        _upload_all(store, s3_url)
        target = s3_url
    with pytest.raises(StoreError, match="nests deeper than a JSON reader follows"):
        open_store(target)
    out = _hf("info", target)
    assert out.returncode != 0 and "Traceback" not in out.stderr
    assert "nests deeper" in out.stderr + out.stdout


def _upload_all(store: Path, url: str) -> None:
    """Every file of the folder to the URL as it is (publish_store reads the manifest)."""
    fs = filesystem(url)
    for f in store.rglob("*"):
        if f.is_file():
            fs.put_file(str(f), f"{url}/{f.relative_to(store)}"[5:])


def _claim_rows(f: Path, rows: int) -> None:
    """Rewrite the .npy header of ``f`` to claim ``rows`` rows, the data left as it is."""
    data = f.read_bytes()
    arr = np.load(f)
    header = np.lib.format.header_data_from_array_1_0(arr)
    header["shape"] = (rows,)
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, header)
    start = len(data) - arr.nbytes
    f.write_bytes(buf.getvalue() + data[start:])


def test_npy_header_claiming_a_trillion_rows_is_refused(store, s3_url):
    _claim_rows(store / "index" / "frames.npy", 10**12)
    reseal(store)
    with pytest.raises(StoreError, match=r"frames\.npy: cannot be read as an index"):
        open_store(store)
    publish_store(store, s3_url)
    with pytest.raises(
        StoreError,
        match=r"frames\.npy: cannot be read as an index \(its "
        r"header says shape \(1000000000000,\)",
    ):
        open_store(s3_url)
    for command in ("info", "verify"):
        out = _hf(command, s3_url)
        assert out.returncode != 0 and "Traceback" not in out.stderr, out.stderr
        assert "MemoryError" not in out.stderr + out.stdout
        assert "frames.npy" in out.stderr + out.stdout


@pytest.fixture(scope="module")
def odd_names(tmp_path_factory) -> Path:
    """A store of a video whose file name is not UTF-8 and holds an ESC sequence."""
    root = tmp_path_factory.mktemp("names")
    (root / "data" / "a").mkdir(parents=True)
    ok = root / "data" / "a" / "ok.mp4"
    write_video(ok, frames=6, width=32, height=24)
    os.rename(ok, os.fsencode(ok.parent) + b"/red\xff\x1b[31mtext.mp4")
    build_store(root / "data", root / "store", BuildOptions(size="none"), progress=False)
    return root / "store"


def test_info_escapes_control_bytes_of_file_names(odd_names):
    out = _hf("info", odd_names)
    assert out.returncode == 0, out.stderr
    assert "\x1b" not in out.stdout and "\udcff" not in out.stdout
    assert "red\\xff\\x1b[31mtext.mp4" in out.stdout


def test_convert_a_store_of_non_utf8_file_names(odd_names, tmp_path):
    out = _hf("convert", odd_names, "--out", tmp_path / "s.h5")
    assert out.returncode == 0, out.stderr
    with open_store(tmp_path / "s.h5") as h5, open_store(odd_names) as folder:
        assert h5.videos.paths == folder.videos.paths  # the exact name, kept in the index
        assert np.array_equal(h5.read_numpy(0, [0, 5]), folder.read_numpy(0, [0, 5]))
    assert verify_store(tmp_path / "s.h5") == []


def test_build_to_a_url_without_write_access_fails_before_decoding(s3_url, tmp_path):
    data = tmp_path / "data" / "a"
    data.mkdir(parents=True)
    write_video(data / "v.mp4", frames=6, width=32, height=24)
    out = _hf("build", tmp_path / "data", "--out", s3_url, env={"AWS_SECRET_ACCESS_KEY": "wrong"})
    assert out.returncode != 0 and "Traceback" not in out.stderr, out.stderr
    assert f"{s3_url}: cannot be written" in out.stderr and "nothing was built" in out.stderr
    assert "AWS_SECRET_ACCESS_KEY" in out.stderr and "wrong" not in out.stderr
    assert not staging_dir(s3_url).exists()  # no video was decoded
