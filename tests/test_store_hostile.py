"""Stores from elsewhere (copied, shared, downloaded, crafted) cannot reach outside themselves
or return wrong frames silently: each attack is made from a real built store, as an attacker
would (same-size edits of the index, the manifest's sizes and checksums updated to match), and
must end in a StoreError naming the file and the video."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from _media import write_video
from _stores import reseal, reseal_h5, unsign_h5
from hyperframes import ConfigError, StoreError
from hyperframes.build import BuildOptions, build_store, convert_to_hdf5
from hyperframes.store import open_store, verify_store

CLI = [sys.executable, "-m", "hyperframes"]


@pytest.fixture(scope="module")
def sources(tmp_path_factory) -> Path:
    """Three videos of one shape and length (so one can pass for another), two classes."""
    root = tmp_path_factory.mktemp("hostile") / "data"
    for name, colour in (("a/x", (200, 30, 30)), ("a/y", (30, 200, 30)), ("b/z", (30, 30, 200))):
        write_video(root / f"{name}.mp4", frames=12, width=32, height=24, colour=colour)
    return root


@pytest.fixture(scope="module")
def built(sources, tmp_path_factory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("built")
    stores = {}
    for codec in ("raw", "lz4"):
        stores[codec] = out / codec
        build_store(sources, stores[codec], BuildOptions(size="none", codec=codec), progress=False)
    return stores


@pytest.fixture
def raw(built, tmp_path) -> Path:
    """A fresh copy of the raw store, to damage."""
    return Path(shutil.copytree(built["raw"], tmp_path / "raw"))


@pytest.fixture
def lz4(built, tmp_path) -> Path:
    return Path(shutil.copytree(built["lz4"], tmp_path / "lz4"))


def _all_frames(store, i: int) -> np.ndarray:
    return store.read_numpy(i, np.arange(store.videos[i].num_frames))


# -- what an attacker does ----------------------------------------------------------------
def _edit_npy(store: Path, name: str, edit) -> None:
    """``edit(array)`` changes the array in place (a same-size edit) or returns a new one."""
    f = store / "index" / name
    arr = np.load(f)
    new = edit(arr)
    np.save(f, arr if new is None else new)
    reseal(store)


def _edit_rows(store: Path, name: str, **changes) -> None:
    """Same-size edit of ``index/NAME``: ``column=(row, value)``."""

    def edit(arr):
        for column, (row, value) in changes.items():
            arr[row][column] = value

    _edit_npy(store, name, edit)


def _edit_json(path: Path, edit) -> None:
    data = json.loads(path.read_text())
    edit(data)
    path.write_text(json.dumps(data))


def _paths(store: Path) -> list[str]:
    return json.loads((store / "index" / "strings.json").read_text())["paths"]


def _names(file: Path | str, video: int, path: str) -> str:
    """The pattern of a message naming the file and the video."""
    return rf"{re.escape(str(file))}: .*video {video} \({re.escape(repr(path))}\)"


# -- names that lead outside the store ----------------------------------------------------
@pytest.mark.parametrize("name", ["/etc/passwd", "../../../etc/passwd", "..", "x/../../y.bin"])
def test_shard_name_outside_the_store_is_refused(raw, name):
    outside = Path("/etc/passwd")
    size = outside.stat().st_size if outside.exists() else 0

    def point(m):
        m["shards"][0].update(name=name, bytes=size)

    _edit_json(raw / "manifest.json", point)
    _edit_json(raw / "index" / "strings.json", lambda s: s.update(shards=[name]))
    reseal(raw)
    with pytest.raises(
        StoreError, match=rf"manifest\.json: names the file {re.escape(repr(name))}"
    ):
        open_store(raw)
    problems = verify_store(raw)
    assert problems and "not a plain file name" in problems[0]
    r = subprocess.run(
        [*CLI, "show", str(raw), "--video", "0", "--out", str(raw.parent / "w.png")],
        capture_output=True,
        text=True,
    )
    assert r.returncode != 0 and "not a plain file name" in r.stderr + r.stdout
    assert not (raw.parent / "w.png").exists()


def test_shard_name_in_strings_only_is_refused(raw):
    _edit_json(raw / "index" / "strings.json", lambda s: s.update(shards=["/etc/passwd"]))
    reseal(raw)
    with pytest.raises(StoreError, match=r"strings\.json: lists the shards \['/etc/passwd'\]"):
        open_store(raw)


def test_index_name_outside_the_store_is_refused(raw):
    def point(m):
        m["index"][0]["name"] = "index/../../../etc/passwd"

    _edit_json(raw / "manifest.json", point)
    with pytest.raises(StoreError, match=r"names the file '\.\./\.\./\.\./etc/passwd'"):
        open_store(raw)


def test_shard_linked_outside_the_store_is_refused(raw, tmp_path):
    shard = next((raw / "shards").glob("*.bin"))
    elsewhere = tmp_path / "elsewhere.bin"
    shutil.copyfile(shard, elsewhere)  # same size and checksum: only the place is wrong
    shard.unlink()
    shard.symlink_to(elsewhere)
    with pytest.raises(StoreError, match=rf"{re.escape(shard.name)}: leads to .*outside"):
        open_store(raw)


def test_shards_folder_linked_outside_the_store_is_refused(raw, tmp_path):
    """A store whose shards/ is a link to /etc could name 'passwd' as a plain shard name."""
    elsewhere = Path(shutil.move(raw / "shards", tmp_path / "elsewhere"))
    (raw / "shards").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(StoreError, match=r"\.bin: leads to .*elsewhere.*, outside .*shards"):
        open_store(raw)


# -- index rows that point at the wrong bytes ---------------------------------------------
def test_negative_offset_is_refused(raw):
    _edit_rows(raw, "videos.npy", offset=(1, -4096))
    with pytest.raises(StoreError, match=_names(raw / "index/videos.npy", 1, _paths(raw)[1])) as e:
        open_store(raw)
    assert "bytes -4096.." in str(e.value) and "lies outside" in str(e.value)


def test_a_video_pointing_at_another_videos_bytes_is_refused(raw):
    first = np.load(raw / "index" / "videos.npy")[0]
    _edit_rows(raw, "videos.npy", offset=(2, int(first["offset"])))
    # every other check holds: same shape and frame count, inside the shard
    with pytest.raises(StoreError, match=_names(raw / "index/videos.npy", 2, _paths(raw)[2])) as e:
        open_store(raw)
    assert f"overlaps that of video 0 ({_paths(raw)[0]!r})" in str(e.value)


def test_a_taller_frame_shape_is_refused(raw):
    """A taller frame would read past the video's bytes into the next video's."""
    _edit_rows(raw, "videos.npy", height=(0, 48))
    with pytest.raises(StoreError, match=_names(raw / "index/videos.npy", 0, _paths(raw)[0])) as e:
        open_store(raw)
    assert "nbytes" in str(e.value)


def test_huge_frame_count_is_refused_before_allocating(raw):
    _edit_rows(raw, "videos.npy", num_frames=(0, 10**12))
    with pytest.raises(StoreError, match=_names(raw / "index/videos.npy", 0, _paths(raw)[0])) as e:
        open_store(raw)
    assert "lie outside the 36 rows of" in str(e.value)


@pytest.mark.parametrize("side", ["height", "channels"])
def test_absurd_frame_shape_is_refused(raw, side):
    _edit_rows(raw, "videos.npy", **{side: (1, 2**31 - 1)})
    with pytest.raises(StoreError, match=_names(raw / "index/videos.npy", 1, _paths(raw)[1])) as e:
        open_store(raw)
    assert "frame shape" in str(e.value) and "is not allowed" in str(e.value)


def test_frames_table_shorter_than_the_index_claims(raw):
    _edit_npy(raw, "frames.npy", lambda f: f[:-3])
    with pytest.raises(StoreError, match=_names(raw / "index/videos.npy", 2, _paths(raw)[2])) as e:
        open_store(raw)
    assert f"lie outside the 33 rows of {raw / 'index/frames.npy'}" in str(e.value)


def test_label_out_of_range_is_refused(raw):
    _edit_rows(raw, "videos.npy", label_id=(1, 7))
    with pytest.raises(StoreError, match=_names(raw / "index/videos.npy", 1, _paths(raw)[1])) as e:
        open_store(raw)
    assert "label_id 7" in str(e.value)


def test_fewer_paths_than_videos_is_refused(raw):
    _edit_json(raw / "index" / "strings.json", lambda s: s["paths"].pop())
    reseal(raw)
    with pytest.raises(StoreError, match=r"strings\.json: lists 2 paths, .*videos\.npy has 3"):
        open_store(raw)


@pytest.mark.parametrize(
    "row, column, value, what",
    [
        (2, "num_chunks", 99, "lie outside the"),  # chunk rows past the end of chunks.npy
        (1, "chunk_start", 0, "chunk_start 0 should be"),  # video 1 reuses video 0's chunks
    ],
)
def test_chunk_rows_out_of_range_are_refused(lz4, row, column, value, what):
    _edit_rows(lz4, "videos.npy", **{column: (row, value)})
    with pytest.raises(
        StoreError, match=_names(lz4 / "index/videos.npy", row, _paths(lz4)[row])
    ) as e:
        open_store(lz4)
    assert what in str(e.value)


@pytest.mark.parametrize(
    "column, value, what",
    [
        ("offset", 10**9, "lie outside the video's payload"),
        ("first_frame", 0, "does not continue the video's frames"),
        ("num_frames", 50, "are not 1 to 4 frames"),
    ],
)
def test_chunk_row_pointing_elsewhere_is_refused(lz4, column, value, what):
    _edit_rows(lz4, "chunks.npy", **{column: (1, value)})
    with pytest.raises(StoreError, match=_names(lz4 / "index/chunks.npy", 0, _paths(lz4)[0])) as e:
        open_store(lz4)
    assert "chunk row 1 of video 0" in str(e.value) and what in str(e.value)


# -- the manifest -------------------------------------------------------------------------
@pytest.mark.parametrize("key", ["index", "shards", "codec", "dtype", "num_frames"])
def test_manifest_without_a_key_is_a_store_error(raw, key):
    _edit_json(raw / "manifest.json", lambda m: m.pop(key))
    with pytest.raises(StoreError, match=rf"manifest\.json: lacks '{key}'"):
        open_store(raw)
    assert f"lacks '{key}'" in verify_store(raw)[0]


@pytest.mark.parametrize("dtype", ["O", "float64", "V8"])
def test_dtype_outside_the_allow_list_is_refused_and_verify_says_so(raw, dtype):
    _edit_json(raw / "manifest.json", lambda m: m.update(dtype=dtype))
    with pytest.raises(StoreError, match=rf"manifest\.json: dtype '{dtype}' is not a stored"):
        open_store(raw)
    problems = verify_store(raw)
    assert len(problems) == 1 and f"dtype '{dtype}'" in problems[0]


def test_index_table_of_another_dtype_is_refused(raw):
    """A version-2 store's videos.npy must have the version-2 columns (not, say, version 1's)."""
    from hyperframes.store.format import VIDEO_DTYPE_V1

    v = np.load(raw / "index" / "videos.npy")
    np.save(raw / "index" / "videos.npy", v[list(VIDEO_DTYPE_V1.names)].astype(VIDEO_DTYPE_V1))
    reseal(raw)
    with pytest.raises(StoreError, match=r"videos\.npy: holds columns \(shard, .*\) in 1 dim"):
        open_store(raw)


def test_verify_reports_a_crafted_index_the_checksums_agree_with(raw):
    _edit_rows(raw, "videos.npy", offset=(1, -4096))
    problems = verify_store(raw)
    assert len(problems) == 1 and "video 1" in problems[0] and "videos.npy" in problems[0]


def test_unknown_check_option_is_a_config_error(raw):
    with pytest.raises(ConfigError, match=r"check='all' is not known; use None .* or 'video'"):
        open_store(raw, check="all")


# -- payload damage: check="video" -------------------------------------------------------
def _flip_payload_byte(store: Path, video: int) -> Path:
    row = np.load(store / "index" / "videos.npy")[video]
    shard = store / "shards" / json.loads((store / "index/strings.json").read_text())["shards"][0]
    data = bytearray(shard.read_bytes())
    data[int(row["offset"]) + int(row["nbytes"]) // 2] ^= 0x5A
    shard.write_bytes(bytes(data))
    return shard


@pytest.mark.parametrize("codec", ["raw", "lz4"])
def test_bit_flip_is_caught_by_check_video_not_by_a_plain_open(built, tmp_path, codec):
    store = Path(shutil.copytree(built[codec], tmp_path / codec))
    good = [_all_frames(open_store(store), i) for i in range(3)]
    shard = _flip_payload_byte(store, 1)
    path = _paths(store)[1]
    plain = open_store(store)  # opening reads no payload: the damage is not seen
    if codec == "raw":
        assert not np.array_equal(_all_frames(plain, 1), good[1]), "silently wrong frames"
    checked = open_store(store, check="video")
    assert np.array_equal(_all_frames(checked, 0), good[0])
    with pytest.raises(StoreError, match=_names(shard, 1, path)) as e:
        checked.read_numpy(1, [0])
    assert "xxh3-64" in str(e.value)
    with pytest.raises(StoreError, match=_names(shard, 1, path)):
        checked.read_numpy(1, [5])  # still refused: a failed check is not remembered as passed
    assert np.array_equal(_all_frames(checked, 2), good[2])
    problems = verify_store(store)
    assert len(problems) == 1 and shard.name in problems[0]
    assert f"damaged videos: 1 ({path!r})" in problems[0]


def test_check_video_on_frames_view_and_under_threads(raw):
    plain = open_store(raw)
    want = [_all_frames(plain, i) for i in range(3)]
    checked = open_store(raw, check="video")
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lambda i: _all_frames(checked, i % 3), range(24)))
    assert all(np.array_equal(g, want[i % 3]) for i, g in enumerate(got))
    assert checked._verified == {0, 1, 2}
    shard = _flip_payload_byte(raw, 2)
    with pytest.raises(StoreError, match=_names(shard, 2, _paths(raw)[2])):
        open_store(raw, check="video").frames_view(2)


# -- HDF5 ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def h5_stores(built, tmp_path_factory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("h5")
    return {
        c: convert_to_hdf5(built["raw"], out / f"{c}.h5", compression=c, progress=False)
        for c in ("none", "lzf")
    }


def _flip_h5_byte(h5: Path, video: int) -> None:
    import h5py

    with h5py.File(h5, "r") as f:
        ds = f[f"videos/{video:08d}"]
        if ds.chunks is None:  # uncompressed: one contiguous block; the 4th frame's middle
            frame = int(np.prod(ds.shape[1:])) * ds.dtype.itemsize
            at = ds.id.get_offset() + 3 * frame + frame // 2
        else:  # the middle of the chunk holding the video's 4th frame
            info = ds.id.get_chunk_info(3 // ds.chunks[0])
            at = info.byte_offset + info.size // 2
    with open(h5, "r+b") as f:
        f.seek(at)
        b = f.read(1)
        f.seek(-1, os.SEEK_CUR)
        f.write(bytes([b[0] ^ 0x5A]))


@pytest.mark.parametrize("compression", ["none", "lzf"])
def test_hdf5_flipped_byte_is_named_by_verify(h5_stores, tmp_path, compression):
    h5 = Path(shutil.copyfile(h5_stores[compression], tmp_path / "s.h5"))
    assert verify_store(h5) == []
    with open_store(h5) as s:
        path = s.videos.paths[1]
    _flip_h5_byte(h5, 1)
    problems = verify_store(h5)
    assert len(problems) == 1
    assert re.match(_names(f"{h5}:/videos/00000001", 1, path), problems[0]), problems[0]
    with open_store(h5, check="video") as s:
        s.read_numpy(0, [0])
        with pytest.raises(StoreError, match=_names(f"{h5}:/videos/00000001", 1, path)):
            s.read_numpy(1, [0])


def test_hdf5_crafted_index_is_refused_at_open(h5_stores, tmp_path):
    import h5py

    h5 = Path(shutil.copyfile(h5_stores["none"], tmp_path / "s.h5"))
    with h5py.File(h5, "r+") as f:
        v = f["index/videos"][()]
        v[0]["num_frames"] = 10**12
        f["index/videos"][...] = v
        path = json.loads(f["index/strings"][()])["paths"][0]
    reseal_h5(h5)
    with pytest.raises(StoreError, match=_names(f"{h5}:/index/videos", 0, path)):
        open_store(h5)
    assert "video 0" in verify_store(h5)[0]


def test_hdf5_without_checksums_says_it_cannot_be_verified(h5_stores, tmp_path):

    h5 = Path(shutil.copyfile(h5_stores["none"], tmp_path / "s.h5"))
    unsign_h5(h5, frames=True)  # a file written before either checksum
    assert "has no per-video checksums" in verify_store(h5)[0]
    with pytest.raises(StoreError, match="check='video' needs per-video checksums"):
        open_store(h5, check="video")
    open_store(h5).read_numpy(0, [0])  # still readable
