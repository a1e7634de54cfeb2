"""The HDF5 form tells the truth about itself: ``convert`` says that a jpeg (lz4, zstd) store's
frames are stored decoded and what that does to the size, and ``info`` reports the file's own
size, its datasets' real HDF5 compression and the store it came from, never that store's codec
or size as if they were the file's (also for files written before convert recorded this)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from _stores import reseal_h5, store_content, unsign_h5
from hyperframes.build import BuildOptions, build_store, convert_to_hdf5
from hyperframes.build._hdf5 import COMPRESSIONS
from hyperframes.store import H5Store, open_store, verify_store

CLI = [sys.executable, "-m", "hyperframes"]


def _cli(*argv) -> subprocess.CompletedProcess:
    r = subprocess.run([*CLI, *map(str, argv)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    return r


@pytest.fixture(scope="module")
def stores(class_folder, tmp_path_factory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("h5honest")
    built = {}
    for codec in ("jpeg", "lz4", "raw"):
        built[codec] = out / codec
        build_store(
            class_folder, built[codec], BuildOptions(codec=codec, size="none"), progress=False
        )
    return built


def test_convert_of_a_jpeg_store_says_it_stores_frames_decoded_and_info_reports_the_file(
    stores, tmp_path
):
    src = stores["jpeg"]
    with open_store(src) as s:
        jpeg_bytes, jpeg_codec = s.manifest["store_bytes"], s.manifest["codec"]
        source_bytes = s.manifest["source_bytes"]
    h5 = tmp_path / "j.h5"
    said = _cli("convert", src, "--out", h5, "--quiet").stdout
    size = h5.stat().st_size
    assert said.startswith(f"wrote {h5} ({size / 1e6:.2f} MB): converted from codec jpeg: ")
    assert "frames stored decoded (uint8) with lzf compression (chunks of 8 frames)" in said
    assert f"{jpeg_bytes / 1e6:.2f} MB of jpeg shards -> " in said

    d = json.loads(_cli("info", h5, "--json").stdout)
    assert d["form"] == "hdf5"
    assert d["store_bytes"] == size != jpeg_bytes  # the file, not the jpeg store
    assert d["codec"] == {"name": "raw"} and d["shards"] == []
    h = d["hdf5"]
    assert h["file_bytes"] == size and h["compression"] == {"lzf": 6} and h["chunk_frames"] == [8]
    assert h["frames"] == "decoded uint8 arrays [F, C, H, W], one dataset per video"
    assert 0 < h["frames_stored_bytes"] < size
    assert h["frames_decoded_bytes"] == 129 * 3 * 48 * 64
    assert d["checksum_algorithm"] == "xxh3_64 of each video's frames"
    c = d["converted_from"]
    assert c["codec"] == jpeg_codec and c["store_bytes"] == jpeg_bytes and c["shards"] == 1
    assert c["note"] in said

    text = _cli("info", h5).stdout
    lines = {line[:15].strip(): line[15:] for line in text.splitlines()}
    assert lines["format"].startswith("v2 (HDF5 form), hyperframes ")
    assert lines["codec"] == (
        "raw, no frame codec (HDF5 form): decoded uint8 arrays [F, C, H, W], one dataset per video"
    )
    assert lines["hdf5"].startswith("compression lzf (6 videos); chunks of 8 frames; frames ")
    assert lines["converted from"].startswith(
        f"a jpeg store (quality=90, subsampling=420, library=libjpeg-turbo) of "
        f"{jpeg_bytes / 1e6:.2f} MB in 1 shard(s)"
    )
    assert lines["size"] == (
        f"{size / 1e6:.2f} MB (the file), {size / source_bytes:.2f}x the source's "
        f"{source_bytes / 1e6:.2f} MB"
    )
    # the frames are the jpeg store's, as its reader decodes them
    assert store_content(h5) == store_content(src)


@pytest.mark.parametrize("compression", COMPRESSIONS)
def test_storage_reads_the_compression_from_the_datasets_filters(stores, tmp_path, compression):
    h5 = convert_to_hdf5(stores["lz4"], tmp_path / "s.h5", compression=compression, progress=False)
    with H5Store(h5) as s:
        got = s.storage()
        assert got["compression"] == {compression: 6}
        assert got["chunk_frames"] == ([0] if compression == "none" else [8])
        if compression == "none":  # the memory-mapped fast path is kept
            assert got["frames_stored_bytes"] == got["frames_decoded_bytes"]
            assert s._contiguous_view(0) is not None
        else:
            assert s._contiguous_view(0) is None
        assert s.manifest["hdf5"] == (
            {"compression": "none"}
            if compression == "none"
            else {"compression": compression, "chunk_frames": 8}
        )
        assert s.manifest["converted_from"]["codec"]["name"] == "lz4"
        assert s.manifest["store_bytes"] == got["file_bytes"] == h5.stat().st_size
    assert verify_store(h5) == []


def test_a_raw_store_converted_says_so_too(stores, tmp_path):
    h5 = tmp_path / "r.h5"
    said = _cli("convert", stores["raw"], "--out", h5, "--compression", "none", "--quiet").stdout
    assert "converted from codec raw: frames stored decoded (uint8) with no compression " in said
    assert "(one contiguous block per video)" in said
    text = _cli("info", h5).stdout
    assert "compression none (6 videos); one contiguous block; frames " in text


def test_a_file_written_before_converted_from_existed_is_described_as_the_file(stores, tmp_path):
    """Older files carried the jpeg store's manifest as their own: codec jpeg, its size."""
    import h5py

    h5 = convert_to_hdf5(stores["jpeg"], tmp_path / "old.h5", progress=False)
    with open_store(stores["jpeg"]) as s:
        old = dict(s.manifest, hdf5={"compression": "lzf", "chunk_frames": 8})
        want = s.read_numpy(1, [0, 3])
    with h5py.File(h5, "r+") as f:
        f.attrs["manifest"] = json.dumps(old)
    unsign_h5(h5)  # written before the index checksum too
    size = h5.stat().st_size
    d = json.loads(_cli("info", h5, "--json").stdout)
    assert d["store_bytes"] == size != old["store_bytes"]
    assert d["codec"] == {"name": "raw"} and d["hdf5"]["compression"] == {"lzf": 6}
    c = d["converted_from"]
    assert c["codec"]["name"] == "jpeg" and c["store_bytes"] == old["store_bytes"]
    assert "by an older hyperframes" in c["note"]
    with open_store(h5) as s:
        assert np.array_equal(s.read_numpy(1, [0, 3]), want)


def test_an_altered_converted_from_is_refused_at_open(stores, tmp_path):
    import h5py

    from hyperframes import StoreError

    h5 = convert_to_hdf5(stores["raw"], tmp_path / "x.h5", progress=False)
    with h5py.File(h5, "r+") as f:
        m = json.loads(f.attrs["manifest"])
        f.attrs["manifest"] = json.dumps(dict(m, converted_from="jpeg"))
    reseal_h5(h5)
    with pytest.raises(StoreError, match=r"'converted_from' is 'jpeg', expected an object"):
        open_store(h5)


def test_a_file_built_as_hdf5_says_it_was_built_not_converted(class_folder, tmp_path):
    """build --format hdf5 stages a raw folder store; the file must not call that staging
    "a raw store" it was converted from."""
    h5 = tmp_path / "b.h5"
    build_store(class_folder, h5, BuildOptions(format="hdf5", size="16"), progress=False)
    text = _cli("info", h5).stdout
    assert "built          as HDF5 directly (build --format hdf5), not converted" in text
    assert "converted from" not in text
    with H5Store(h5) as s:
        c = s.manifest["converted_from"]
    assert c["built"] is True and c["note"].startswith("built as HDF5 (build --format hdf5): ")
