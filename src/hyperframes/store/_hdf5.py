"""The HDF5 form of a store, for the HDF5 ecosystem (h5py, h5ls, HDFView).

Layout of ``OUT.h5``::

    /                      attrs: format="hyperframes-hdf5", format_version, manifest (JSON)
    /index/videos          the store's per-video table (same columns as index/videos.npy)
    /index/frames          per stored frame: pts_seconds, source_index
    /index/change_score    per stored frame: the keyframes sampler's change score (optional)
    /index/strings         JSON: paths, classes, splits
    /videos/NNNNNNNN       frames [F, C, H, W], chunked one frame per chunk, lzf or blosc

The same reader API (``open_store``) opens it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from .._atomic import fsync_dir
from .._errors import ConfigError, DataError, StoreError
from ._records import VideoList, VideoRecord

H5_FORMAT = "hyperframes-hdf5"
H5_VERSION = 1
COMPRESSIONS = ("lzf", "blosc", "gzip", "none")


def _filter(compression: str) -> dict:
    if compression == "lzf":
        return {"compression": "lzf"}
    if compression == "gzip":
        return {"compression": "gzip", "compression_opts": 4}
    if compression == "blosc":
        import hdf5plugin

        return dict(hdf5plugin.Blosc(cname="lz4", clevel=5, shuffle=hdf5plugin.Blosc.SHUFFLE))
    if compression == "none":
        return {}
    raise ConfigError(f"unknown HDF5 compression {compression!r}; use one of {COMPRESSIONS}")


def convert_to_hdf5(store, out: str | os.PathLike, *, compression: str = "lzf", progress=True):
    """Write ``store`` (a folder store or its path) as one HDF5 file, atomically."""
    import h5py

    from .._progress import Progress
    from ._reader import Store

    src = store if isinstance(store, Store) else Store(store)
    out = Path(out)
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    filt = _filter(compression)
    manifest = dict(src.manifest, hdf5={"compression": compression})
    bar = Progress(total=len(src), unit="videos", enabled=progress, desc="convert")
    try:
        with h5py.File(tmp, "w") as h5:
            h5.attrs["format"] = H5_FORMAT
            h5.attrs["format_version"] = H5_VERSION
            h5.attrs["manifest"] = json.dumps(manifest)
            idx = h5.create_group("index")
            idx.create_dataset("videos", data=np.asarray(src._videos))
            idx.create_dataset("frames", data=np.asarray(src._frames))
            if src._change is not None:
                idx.create_dataset("change_score", data=np.asarray(src._change))
            strings = {
                "paths": src.videos._paths,
                "classes": src.classes,
                "splits": src.videos._splits,
            }
            idx.create_dataset("strings", data=json.dumps(strings))
            grp = h5.create_group("videos")
            for v in range(len(src)):
                rec = src.videos[v]
                frames = src.read_numpy(v, np.arange(rec.num_frames))
                ds = grp.create_dataset(
                    f"{v:08d}", data=frames, chunks=(1, *frames.shape[1:]), **filt
                )
                ds.attrs["path"] = rec.path
                ds.attrs["label"] = rec.label or ""
                ds.attrs["fps"] = rec.fps
                bar.advance()
                bar.add_frames(rec.num_frames)
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        os.replace(tmp, out)
        fsync_dir(out.parent)
    finally:
        bar.close()
        tmp.unlink(missing_ok=True)
    return out


class H5Store:
    """Reads the HDF5 form with the same API as ``Store``."""

    def __init__(self, path: str | os.PathLike):
        import h5py

        self.path = Path(path)
        try:
            self._h5 = h5py.File(self.path, "r")
        except OSError as e:
            raise StoreError(f"{self.path}: cannot be opened as HDF5 ({e})") from None
        if self._h5.attrs.get("format") != H5_FORMAT:
            raise StoreError(f"{self.path}: not a hyperframes HDF5 store")
        if int(self._h5.attrs.get("format_version", -1)) != H5_VERSION:
            raise StoreError(
                f"{self.path}: HDF5 store version {self._h5.attrs.get('format_version')} is "
                f"not readable; this hyperframes reads version {H5_VERSION}"
            )
        self.manifest = json.loads(self._h5.attrs["manifest"])
        self._videos = self._h5["index/videos"][()]
        self._frames = self._h5["index/frames"][()]
        self._change = (
            self._h5["index/change_score"][()] if "change_score" in self._h5["index"] else None
        )
        strings = json.loads(self._h5["index/strings"][()])
        self.classes = strings["classes"]
        self.videos = VideoList(self._videos, self._frames, strings)
        self.codec_name = "hdf5"
        self.dtype = np.dtype(self.manifest["dtype"])

    def __len__(self) -> int:
        return len(self.videos)

    @property
    def num_frames(self) -> int:
        return int(self.manifest["num_frames"])

    @property
    def failed(self) -> list[dict]:
        return list(self.manifest["failed"])

    def change_scores(self, video) -> np.ndarray | None:
        """As :meth:`hyperframes.store.Store.change_scores`."""
        from ._reader import _change_slice

        i = video.id if isinstance(video, VideoRecord) else int(video)
        if not 0 <= i < len(self):
            raise DataError(f"video {i} is out of range: {self.path} holds {len(self)}")
        return _change_slice(self._change, self._videos, i)

    def read_numpy(self, video, frame_indices, *, out=None) -> np.ndarray:
        i = video.id if isinstance(video, VideoRecord) else int(video)
        if not 0 <= i < len(self):
            raise DataError(f"video {i} is out of range: {self.path} holds {len(self)}")
        ds = self._h5[f"videos/{i:08d}"]
        idx = np.asarray(frame_indices, np.int64).reshape(-1)
        if idx.size and (idx.min() < 0 or idx.max() >= ds.shape[0]):
            raise DataError(f"frame indices out of range for video {i}, which has {ds.shape[0]}")
        if out is None:
            out = np.empty((len(idx), *ds.shape[1:]), ds.dtype)
        if idx.size:
            lo, hi = int(idx.min()), int(idx.max()) + 1
            block = ds[lo:hi]
            out[...] = block[idx - lo]
        return out

    def read(self, video, frame_indices):
        import torch

        return torch.from_numpy(self.read_numpy(video, frame_indices))

    def read_batch(self, requests: Sequence[tuple], *, out=None):
        import torch

        arrays = [self.read_numpy(v, ix) for v, ix in requests]
        if len({a.shape for a in arrays}) == 1:
            stacked = torch.from_numpy(np.stack(arrays))
            if out is not None:
                out.copy_(stacked)
                return out
            return stacked
        return [torch.from_numpy(a) for a in arrays]

    def close(self) -> None:
        self._h5.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def build_hdf5(data, out, options, *, progress=True):
    """``build --format hdf5``: build a folder store beside ``out`` (resumable), convert it to
    one HDF5 file, then remove the folder store."""
    import dataclasses

    from ._build import build_store, remove_store

    out = Path(out)
    staging = out.with_name(out.name + ".staging")
    report = build_store(
        data, staging, dataclasses.replace(options, format="store"), progress=progress
    )
    convert_to_hdf5(staging, out, compression=options.hdf5_compression, progress=progress)
    remove_store(staging)
    report.store = str(out)
    report.store_bytes = out.stat().st_size
    return report
