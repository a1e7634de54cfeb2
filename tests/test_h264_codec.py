"""The h264 codec (issue 34 item 4): chunks of 8 stored frames as short H.264 streams, each its
own GOP, decoded with PyAV. A real clip (MPEG-4, 320x240, odd stored width) built as h264 and
as raw: every window, wherever it starts, decodes from its own chunks to the raw store's frames
within a few levels, in a fraction of jpeg's bytes; ``verify`` passes and finds damage."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from hyperframes import ConfigError
from hyperframes.build import BuildOptions, build_store
from hyperframes.store import create_codec, list_codecs, open_store, verify_store

VIDEOS = Path(__file__).resolve().parents[2] / "shared" / "videos"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    if not VIDEOS.is_dir():
        pytest.skip(f"{VIDEOS}: the real test videos are absent")
    root = tmp_path_factory.mktemp("h264")
    (root / "data" / "a").mkdir(parents=True)
    shutil.copyfile(VIDEOS / "test.avi", root / "data" / "a" / "clip.avi")
    stores = {}
    for codec in ("raw", "jpeg", "h264"):
        out = root / codec
        build_store(root / "data", out, BuildOptions(codec=codec, size="64"), progress=False)
        stores[codec] = out
    return stores


def test_h264_is_a_registered_codec_of_uint8_rgb():
    assert "h264" in list_codecs()
    codec = create_codec("h264")
    assert codec.chunk_frames == 8 and codec.channels == (3,) and not codec.lossless
    with pytest.raises(ConfigError, match="h264 stores uint8 only"):
        BuildOptions(codec="h264", dtype="float16")


def test_windows_anywhere_match_the_raw_store(built):
    h264, raw = open_store(built["h264"]), open_store(built["raw"])
    assert h264.codec_name == "h264" and h264.videos.shapes[0][2] % 2 == 1  # 64 x 85: odd
    n = h264.videos[0].num_frames
    assert n == raw.videos[0].num_frames == 164
    for start in (0, 3, 7, 8, 61, n - 16):  # in a chunk's middle, at its end, the last window
        got = h264.read_numpy(0, np.arange(start, start + 16)).astype(np.float32)
        want = raw.read_numpy(0, np.arange(start, start + 16))
        assert got.shape == want.shape
        assert np.abs(got - want).mean() < 3.0, start
    batch = h264.read_batch([(0, np.arange(5, 21)), (0, np.arange(100, 116))])
    assert (
        np.abs(batch[1].numpy().astype(np.float32) - raw.read_numpy(0, np.arange(100, 116))).mean()
        < 3
    )


def test_smaller_than_jpeg_and_verified(built, tmp_path):
    sizes = {c: open_store(p).manifest["store_bytes"] for c, p in built.items()}
    assert sizes["h264"] < 0.6 * sizes["jpeg"] < sizes["raw"]
    assert verify_store(built["h264"]) == []
    bad = tmp_path / "bad"
    shutil.copytree(built["h264"], bad)
    shard = next((bad / "shards").glob("*.bin"))
    data = bytearray(shard.read_bytes())
    data[len(data) // 2] ^= 0xFF
    shard.write_bytes(bytes(data))
    assert verify_store(bad)  # the damage is found
