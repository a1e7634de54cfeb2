"""Golden stores of format version 1 (tests/data, see its README): today's reader opens them,
returns exactly the frames and timestamps the version-1 reader returned, and verify passes."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from hyperframes import StoreError
from hyperframes.build import convert_to_hdf5
from hyperframes.store import open_store, verify_store

DATA = Path(__file__).resolve().parent / "data"
CODECS = ("raw", "lz4")


@pytest.fixture(scope="module")
def expected() -> dict[str, np.ndarray]:
    with np.load(DATA / "store_v1_frames.npz") as z:
        return {k: z[k] for k in z.files}


@pytest.mark.parametrize("codec", CODECS)
def test_v1_store_reads_the_same_frames_and_pts(codec, expected):
    with open_store(DATA / f"store_v1_{codec}") as store:
        assert store.manifest["format_version"] == 1
        assert len(store) == 2 and store.num_frames == 42
        assert [v.label for v in store.videos] == ["a", "b"]
        for i, v in enumerate(store.videos):
            frames = store.read_numpy(i, np.arange(v.num_frames))
            assert frames.dtype == np.uint8 and frames.shape == expected[f"video{i}"].shape
            assert np.array_equal(frames, expected[f"video{i}"])
            assert np.array_equal(v.pts_seconds, expected[f"pts{i}"])
        # a batch read, in another order, returns the same bytes
        batch = store.read_batch([(1, [9, 0, 4]), (0, [31, 2])])
        assert np.array_equal(batch[0].numpy(), expected["video1"][[9, 0, 4]])
        assert np.array_equal(batch[1].numpy(), expected["video0"][[31, 2]])


@pytest.mark.parametrize("codec", CODECS)
def test_v1_store_verifies(codec):
    assert verify_store(DATA / f"store_v1_{codec}") == []


@pytest.mark.parametrize("codec", CODECS)
def test_v1_store_has_no_per_video_checksums_for_check_video(codec):
    store = DATA / f"store_v1_{codec}"
    with pytest.raises(
        StoreError,
        match=r"check='video' needs per-video payload checksums, which a store of format "
        r"version 1 does not record .* `hyperframes verify",
    ):
        open_store(store, check="video")


def test_v1_store_converts_to_a_verifiable_hdf5(tmp_path, expected):
    h5 = convert_to_hdf5(DATA / "store_v1_lz4", tmp_path / "v1.h5", progress=False)
    assert verify_store(h5) == []
    with open_store(h5, check="video") as store:
        assert np.array_equal(store.read_numpy(1, np.arange(10)), expected["video1"])


def test_v1_store_damage_is_named_by_verify(tmp_path):
    store = Path(shutil.copytree(DATA / "store_v1_raw", tmp_path / "v1"))
    shard = store / "shards" / "r000-w000-00000.bin"
    data = bytearray(shard.read_bytes())
    data[100] ^= 0xFF
    shard.write_bytes(bytes(data))
    problems = verify_store(store)
    assert len(problems) == 1 and shard.name in problems[0] and "checksum" in problems[0]
