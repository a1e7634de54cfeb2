"""Every form of store is a ``StoreReader`` and returns the same windows: the folder store (each
codec), the HDF5 form (uncompressed and compressed, new chunking and the old one frame per
chunk) and the in-memory store. Also: the HDF5 layout that makes a window few chunk reads, and
the typed index row ``assemble`` packs."""

from __future__ import annotations

import dataclasses
import threading

import numpy as np
import pytest
import torch

from hyperframes import DataError
from hyperframes.build import BuildOptions, build_store, convert_to_hdf5
from hyperframes.data import HyperframeDataset, InMemoryStore
from hyperframes.store import StoreReader, open_store
from hyperframes.store.format import VIDEO_DTYPE, VideoRow, pack_video_row

LOSSLESS = ("raw", "lz4", "zstd")


@pytest.fixture(scope="module")
def stores(class_folder, tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("protocol")
    paths = {}
    for codec in (*LOSSLESS, "jpeg"):
        paths[codec] = root / codec
        build_store(
            class_folder, paths[codec], BuildOptions(size="none", codec=codec), progress=False
        )
    for name, kw in {
        "h5-none": {"compression": "none"},
        "h5-lzf": {"compression": "lzf"},
        "h5-lzf-per-frame": {"compression": "lzf", "chunk_frames": 1},  # the layout of before
    }.items():
        paths[name] = convert_to_hdf5(paths["raw"], root / f"{name}.h5", progress=False, **kw)
    return paths


def _readers(stores) -> dict:
    out = {name: open_store(path) for name, path in stores.items()}
    out["memory"] = InMemoryStore(open_store(stores["raw"]))
    return out


#: windows of every kind: a run, a stride, repeats (padding), reversed, a single frame
WINDOWS = [
    (0, np.arange(4, 12)),
    (3, np.arange(0, 16, 2)),
    (5, np.array([0, 0, 1, 19, 19])),
    (2, np.array([9, 8, 7, 3])),
    (1, np.array([13])),
]


def test_every_form_is_a_store_reader_and_reads_the_same_windows(stores):
    readers = _readers(stores)
    ref = readers["raw"]
    want = [ref.read_numpy(v, ix) for v, ix in WINDOWS]
    for name, r in readers.items():
        assert isinstance(r, StoreReader), name
        assert len(r) == len(ref) and r.classes == ref.classes, name
        assert r.videos.paths == ref.videos.paths and r.dtype == np.uint8, name
        assert r.manifest["num_frames"] == ref.manifest["num_frames"], name
        if name == "jpeg":  # lossy: close to the raw frames, not equal
            for (v, ix), w in zip(WINDOWS, want):
                got = r.read_numpy(v, ix).astype(np.int16)
                assert got.shape == w.shape and np.abs(got - w).mean() < 6, name
            continue
        for (v, ix), w in zip(WINDOWS, want):
            np.testing.assert_array_equal(r.read_numpy(v, ix), w, err_msg=name)
            np.testing.assert_array_equal(r.read(v, ix).cpu().numpy(), w, err_msg=name)
        same = [(v, ix[:4] if len(ix) >= 4 else np.resize(ix, 4)) for v, ix in WINDOWS]
        batch = torch.stack([torch.from_numpy(ref.read_numpy(v, ix)) for v, ix in same])
        assert torch.equal(r.read_batch(same).cpu(), batch), name
        out = torch.empty_like(batch)
        assert r.read_batch(same, out=out) is out and torch.equal(out, batch), name
        columns = ([v for v, _ in same], np.stack([ix for _, ix in same]))
        assert torch.equal(r.read_windows(*columns).cpu(), batch), name  # the pipeline's call
        assert r.read_windows(*columns, out=out) is out and torch.equal(out, batch), name
        with pytest.raises(DataError, match="out has shape"):  # a buffer of the wrong size
            r.read_batch(same, out=out[:1])
        mixed = r.read_batch(WINDOWS)  # different lengths: a list
        assert [tuple(t.shape) for t in mixed] == [w.shape for w in want], name
        s = r.change_scores(2)
        np.testing.assert_array_equal(s, ref.change_scores(2), err_msg=name)
        with pytest.raises(DataError, match="out of range"):
            r.read_numpy(0, [10_000])
    for r in readers.values():
        r.close()


@pytest.mark.parametrize("codec", [*LOSSLESS, "jpeg"])
def test_compressed_reads_under_threads_equal_single_reads(stores, codec):
    """Chunks decoded straight into the batch, or through each thread's scratch array, give
    the same frames from 4 threads as from one."""
    store = open_store(stores[codec])
    rng = np.random.default_rng(0)
    reqs = [(int(v), np.sort(rng.integers(0, 20, 8))) for v in rng.integers(0, 6, 64)]
    want = [store.read_numpy(v, ix) for v, ix in reqs]
    got = [None] * len(reqs)

    def work(k):
        for b in range(k, len(reqs), 4):
            got[b] = store.read_batch([reqs[b]])[0].numpy()

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    assert all(np.array_equal(g, w) for g, w in zip(got, want))


def test_dataset_reads_the_same_from_every_form(stores):
    windows = {}
    for name in ("raw", "lz4", "h5-none", "h5-lzf", "h5-lzf-per-frame"):
        ds = HyperframeDataset(stores[name], sampler="random", frames=8, seed=1)
        windows[name] = torch.stack([h.frames for h in ds.__getitems__(range(len(ds)))])
    ram = HyperframeDataset(stores["raw"], sampler="random", frames=8, seed=1, memory="ram")
    windows["memory"] = torch.stack([h.frames for h in ram.__getitems__(range(len(ram)))])
    for name, w in windows.items():
        assert torch.equal(w, windows["raw"]), name


def test_hdf5_layout_matches_window_reads(stores):
    import h5py

    with h5py.File(stores["h5-none"], "r") as f:
        ds = f["videos/00000000"]
        assert ds.chunks is None and ds.id.get_offset() is not None  # one contiguous block
    with h5py.File(stores["h5-lzf"], "r") as f:
        ds = f["videos/00000000"]
        assert ds.chunks == (8, 3, 48, 64)  # a 16-frame window is 2 or 3 chunk reads
    with open_store(stores["h5-lzf"]) as s:
        assert s.manifest["hdf5"] == {"compression": "lzf", "chunk_frames": 8}


def test_video_row_is_packed_by_name():
    names = [f.name for f in dataclasses.fields(VideoRow)]
    assert set(names) == set(VIDEO_DTYPE.names)
    row = VideoRow(**{n: i for i, n in enumerate(VIDEO_DTYPE.names)})
    packed = np.zeros(1, VIDEO_DTYPE)
    packed[0] = pack_video_row(row)
    for i, n in enumerate(VIDEO_DTYPE.names):
        assert packed[0][n] == i, n
