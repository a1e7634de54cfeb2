"""A crafted store whose index and manifest agree (the checksums re-signed after the edit)
gets no further than a damaged one: ``verify`` reads every payload where the index says it
lies, as a ``check="video"`` read does, and opening refuses index values no build writes
(pts that are not finite or go back, shapes a codec's chunks cannot hold), in every reader
that opens an index (a folder, an HDF5 file, a store at a URL)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from _media import make_beep_video, write_video
from _stores import reseal, reseal_h5
from hyperframes import StoreError
from hyperframes.build import BuildOptions, build_store, convert_to_hdf5
from hyperframes.remote._files import filesystem
from hyperframes.store import _table_checks, list_codecs, open_store, verify_store


@pytest.fixture(scope="module")
def sources(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("rules") / "data"
    for name, colour in (("a/x", (200, 30, 30)), ("b/y", (30, 200, 30))):
        write_video(root / f"{name}.mp4", frames=9, width=32, height=24, colour=colour)
    return root


@pytest.fixture(scope="module")
def built(sources, tmp_path_factory) -> dict[str, Path]:
    """One store per codec the store supports."""
    out = tmp_path_factory.mktemp("built")
    for codec in list_codecs():
        build_store(sources, out / codec, BuildOptions(size="none", codec=codec), progress=False)
    return {codec: out / codec for codec in list_codecs()}


@pytest.fixture(scope="module")
def tracked(tmp_path_factory) -> Path:
    """A raw store of one short video with audio and flow."""
    root = tmp_path_factory.mktemp("tracked")
    make_beep_video(
        root / "data" / "a" / "x.mkv", seconds=0.3, width=32, height=24, beeps=((0.0, 0.3),)
    )
    opts = BuildOptions(size="none", audio=True, flow="dis")
    build_store(root / "data", root / "store", opts, progress=False)
    return root / "store"


def _copy(store: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(store, tmp_path / store.name))


def _edit(store: Path, name: str, edit) -> None:
    """``edit(array)`` changes ``index/NAME`` in place; the manifest re-signed to match."""
    f = store / "index" / name
    arr = np.load(f)
    edit(arr)
    np.save(f, arr)
    reseal(store)


def _named(file, video: int, path: str) -> str:
    return rf"{re.escape(str(file))}: .*video {video} \({re.escape(repr(path))}\)"


def _shard(store) -> Path:
    with open_store(store) as s:
        return Path(s._shard_file(0))


# -- verify checks what a checked read checks ---------------------------------------------
def _shift_payload(store: Path, video: int) -> None:
    """Point the index one byte further into the shard for the video's payload (its chunk
    rows with it): every index rule still holds, only the payload's checksum can tell."""
    v = np.load(store / "index" / "videos.npy")
    first, count = int(v["chunk_start"][video]), int(v["num_chunks"][video])

    def chunks(c):
        c["offset"][first : first + count] += 1

    _edit(store, "videos.npy", lambda v: v["offset"].__setitem__(video, v["offset"][video] + 1))
    _edit(store, "chunks.npy", chunks)


@pytest.mark.parametrize("codec", list_codecs())
def test_verify_reads_each_video_where_the_index_says(built, tmp_path, codec):
    store = _copy(built[codec], tmp_path)
    _shift_payload(store, 0)
    with open_store(store) as s:  # the index is consistent: it opens
        path = s.videos.paths[0]
    with open_store(store, check="video") as s:
        s.read_numpy(1, [0])
        with pytest.raises(StoreError, match=_named(_shard(store), 0, path)):
            s.read_numpy(0, [0])
    problems = verify_store(store)
    assert len(problems) == 1, problems
    assert re.match(_named(_shard(store), 0, path), problems[0]) and "xxh3-64" in problems[0]


@pytest.mark.parametrize("kind", ["audio", "flow", "homography"])
def test_verify_reads_each_track_where_the_index_says(tracked, tmp_path, kind):
    store = _copy(tracked, tmp_path)
    # (the homographies end the shard: one byte back, into the flow's padding)
    column, by = ("homography_offset", -1) if kind == "homography" else ("offset", 1)
    _edit(store, "audio.npy" if kind == "audio" else "flow.npy", lambda t: t[column].__iadd__(by))
    with open_store(store) as s:
        path = s.videos.paths[0]
    with open_store(store, check="video") as s:
        read = {
            "audio": lambda: s.read_audio(0, 0.0, 0.1),
            "flow": lambda: s.read_flow(0, [0, 1]),
            "homography": lambda: s.homographies(0),
        }[kind]
        with pytest.raises(StoreError, match=_named(_shard(store), 0, path)):
            read()
    problems = verify_store(store)
    assert len(problems) == 1 and f"its {kind}," in problems[0], problems
    assert re.match(_named(_shard(store), 0, path), problems[0])


def _swap_sides(v):
    v["height"][1], v["width"][1] = v["width"][1], v["height"][1]


def _halve_height(v):
    v["height"][1] //= 2


#: per codec: an edit of video 1's shape its chunks' bytes do not hold, what a read says
UNDECODABLE = {
    "jpeg": (_swap_sides, "a JPEG chunk holds a (24, 32, 3) image where (32, 24, 3) is stored"),
    "lz4": (_halve_height, "a chunk decompresses to -"),
    "zstd": (_halve_height, "a zstd chunk decompresses to 9216 bytes, the index says 4608"),
}


@pytest.mark.parametrize("codec", UNDECODABLE)
def test_chunks_that_are_not_the_frames_the_index_says_are_named_by_read_and_verify(
    built, tmp_path, codec
):
    """A shape the index gives that its chunks do not hold (a JPEG's height and width
    swapped, a shape halved within the compressor's bound): payload bytes are not read at
    open, so the first read names it (a StoreError, not the codec's ValueError), and verify
    reads every chunk's header (lz4: decodes it)."""
    store = _copy(built[codec], tmp_path)
    edit, said = UNDECODABLE[codec]
    _edit(store, "videos.npy", edit)
    with open_store(store) as s:
        path = s.videos.paths[1]
        s.read_numpy(0, [0])
        for frames in ([0], [1, 2, 3, 4, 5]):
            with pytest.raises(StoreError, match=_named(_shard(store), 1, path)) as e:
                s.read_numpy(1, frames)
            assert said in str(e.value)
    (problem,) = verify_store(store)
    assert re.match(_named(_shard(store), 1, path), problem), problem
    if codec == "jpeg":
        assert "holds a 24 x 32 image, the index says 32 x 24" in problem


@pytest.mark.parametrize("codec", ["lz4", "zstd"])
def test_a_chunk_longer_than_its_codec_makes_it_is_refused_at_open(built, tmp_path, codec):
    """A compressed chunk is never longer than the compressor's bound for its frames' raw
    bytes: a shape shrunk to 1 x 1 is refused at open, not decoded into garbage."""
    store = _copy(built[codec], tmp_path)
    _edit(store, "videos.npy", lambda v: [v[k].__setitem__(0, 1) for k in ("height", "width")])
    with pytest.raises(StoreError, match=r"chunks\.npy: chunk row 0 of video 0 .*bound"):
        open_store(store)


def test_a_jpeg_store_of_one_channel_frames_is_refused_at_open(built, tmp_path):
    store = _copy(built["jpeg"], tmp_path)
    _edit(store, "videos.npy", lambda v: v["channels"].__setitem__(1, 1))
    with pytest.raises(StoreError, match=r"videos\.npy: video 1 .*'jpeg' stores frames of 3"):
        open_store(store)


# -- the frames table: pts finite and in order, in every reader ----------------------------
def _nan_pts(f):
    f["pts_seconds"][11] = np.nan


def _pts_back(f):
    f["pts_seconds"][12] = f["pts_seconds"][10]


def _source_back(f):
    f["source_index"][13] = 2


def _source_negative(f):
    f["source_index"][9] = -1


RULES = {
    "nan": (_nan_pts, r"frame 2 of video 1 .*pts_seconds nan is not a finite time"),
    "back": (_pts_back, r"frame 3 of video 1 .*is before the previous frame's"),
    "negative": (_source_negative, r"frame 0 of video 1 .*source_index -1 is negative"),
    "source": (_source_back, r"frame 4 of video 1 .*source_index 2 is below the previous"),
}


@pytest.mark.parametrize("block", [None, 5])
@pytest.mark.parametrize("rule", RULES)
def test_frames_out_of_time_order_are_refused_at_open(built, tmp_path, monkeypatch, rule, block):
    """Each rule, with the table checked in one block and in blocks of 5 rows (a rule
    across two blocks is still seen; a good index still opens)."""
    if block is not None:
        monkeypatch.setattr(_table_checks, "_FRAME_BLOCK", block)
    store = _copy(built["raw"], tmp_path)
    open_store(store).close()
    edit, message = RULES[rule]
    _edit(store, "frames.npy", edit)
    with pytest.raises(StoreError, match=rf"frames\.npy: {message}"):
        open_store(store, check="video")
    assert re.search(message, verify_store(store)[0])


def test_pts_before_zero_in_order_open_and_out_of_order_are_refused(built, tmp_path):
    """(pts below 0 are compared as numbers, not by their bits)"""
    store = _copy(built["raw"], tmp_path)
    _edit(store, "frames.npy", lambda f: f["pts_seconds"].__isub__(100.0))
    open_store(store).close()
    _edit(store, "frames.npy", _pts_back)
    with pytest.raises(StoreError, match=rf"frames\.npy: {RULES['back'][1]}"):
        open_store(store)


def test_an_hdf5_store_refuses_frames_out_of_time_order(built, tmp_path):
    import h5py

    h5 = convert_to_hdf5(built["raw"], tmp_path / "s.h5", compression="none", progress=False)
    with h5py.File(h5, "r+") as f:
        frames = f["index/frames"][()]
        _nan_pts(frames)
        f["index/frames"][...] = frames
    reseal_h5(h5)  # an index consistent with its own checksum: the rule must refuse it
    with pytest.raises(StoreError, match=rf"/index/frames: {RULES['nan'][1]}"):
        open_store(h5)


def test_a_store_at_a_url_is_refused_and_verified_as_a_folder(built, tmp_path, s3_url):
    """The same open checks, and verify reading each video where its index says."""
    bad_pts, shifted = _copy(built["raw"], tmp_path / "a"), _copy(built["lz4"], tmp_path / "b")
    _edit(bad_pts, "frames.npy", _nan_pts)
    _shift_payload(shifted, 0)
    fs = filesystem(s3_url)
    for store in (bad_pts, shifted):
        for f in store.rglob("*"):
            if f.is_file():
                fs.put_file(str(f), f"{s3_url}/{store.name}/{f.relative_to(store)}"[5:])
    with pytest.raises(StoreError, match=rf"frames\.npy: {RULES['nan'][1]}"):
        open_store(f"{s3_url}/raw")
    problems = verify_store(f"{s3_url}/lz4")
    assert len(problems) == 1 and "video 0" in problems[0] and "xxh3-64" in problems[0]
