"""The HDF5 form of a store, for the HDF5 ecosystem (h5py, h5ls, HDFView).

Layout of ``OUT.h5``::

    /                      attrs: format="hyperframes-hdf5", format_version, manifest (JSON)
    /index/videos          the store's per-video table (same columns as index/videos.npy)
    /index/frames          per stored frame: pts_seconds, source_index
    /index/change_score    per stored frame: the keyframes sampler's change score (optional)
    /index/strings         JSON: paths, classes, splits
    /index/frames_xxh3_64  per video: xxh3-64 of its frames [F, C, H, W] as stored (C-order
                           bytes); ``verify`` and ``check="video"`` recompute it (absent from
                           files written before it existed: those cannot be verified)
    /videos/NNNNNNNN       frames [F, C, H, W], chunked one frame per chunk, lzf or blosc

The same reader API (``open_store``) opens it, and checks the index as for a folder store.

Why a checksum of the frames rather than HDF5's own ``fletcher32`` filter: it is the same
algorithm as the folder store's, 64 bits instead of 32, end to end (it covers decompression
and which dataset holds which video, not only the stored chunk bytes), and a mismatch names
the video; fletcher32 would only fail a read with HDF5's "filter returned failure".
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import xxhash

from .._atomic import fsync_dir, remove_stale_temps, temp_path
from .._errors import ConfigError, DataError, StoreError
from ._format import VIDEO_DTYPES
from ._reader import Check, Store, check_change_scores, check_manifest, check_option
from ._records import IndexFiles, VideoList, VideoRecord, check_table

H5_FORMAT = "hyperframes-hdf5"
H5_VERSION = 1
COMPRESSIONS = ("lzf", "blosc", "gzip", "none")
#: frames hashed per read when a video is verified (bounded memory for long videos)
_HASH_FRAMES = 64


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

    src = store if isinstance(store, Store) else Store(store)
    # frames copied from a damaged shard would get checksums of damaged frames: verify first
    verify = "payload_xxh3_64" in src._videos.dtype.names
    out = Path(out)
    remove_stale_temps(out.parent, out.name)  # of conversions that were killed
    tmp = temp_path(out)
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
            sums = np.zeros(len(src), np.uint64)
            for v in range(len(src)):
                rec = src.videos[v]
                problem = src._payload_problem(v) if verify else None
                if problem is not None:
                    raise StoreError(f"cannot convert to {out}: {problem}")
                frames = src.read_numpy(v, np.arange(rec.num_frames))
                sums[v] = xxhash.xxh3_64_intdigest(memoryview(frames))
                ds = grp.create_dataset(
                    f"{v:08d}", data=frames, chunks=(1, *frames.shape[1:]), **filt
                )
                ds.attrs["path"] = rec.path
                ds.attrs["label"] = rec.label or ""
                ds.attrs["fps"] = rec.fps
                bar.advance()
                bar.add_frames(rec.num_frames)
            idx.create_dataset("frames_xxh3_64", data=sums)
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        os.replace(tmp, out)
        fsync_dir(out.parent)
    finally:
        bar.close()
        tmp.unlink(missing_ok=True)
    return out


class H5Store:
    """Reads the HDF5 form with the same API as ``Store`` (``check="video"`` included)."""

    def __init__(self, path: str | os.PathLike, *, check: Check = None):
        import h5py

        check_option(check)
        self.path = Path(path)
        try:
            self._h5 = h5py.File(self.path, "r")
        except OSError as e:
            raise StoreError(f"{self.path}: cannot be opened as HDF5 ({e})") from None
        try:
            self._open(check)
        except BaseException:
            self._h5.close()
            raise

    def _open(self, check: Check) -> None:
        import h5py

        h5, where = self._h5, str(self.path)
        fmt = h5.attrs.get("format")
        if np.ndim(fmt) != 0 or fmt != H5_FORMAT:
            raise StoreError(f"{where}: not a hyperframes HDF5 store")
        version = h5.attrs.get("format_version")
        if np.ndim(version) != 0 or version != H5_VERSION:
            raise StoreError(
                f"{where}: HDF5 store version {version} is "
                f"not readable; this hyperframes reads version {H5_VERSION}"
            )
        try:
            self.manifest = json.loads(h5.attrs["manifest"])
        except (KeyError, TypeError, ValueError) as e:
            raise StoreError(f"{where}: its manifest attribute cannot be read ({e})") from None
        check_manifest(self.manifest, f"{where}: attribute 'manifest'")
        self._videos = self._dataset("index/videos")
        self._frames = self._dataset("index/frames")
        try:
            strings = json.loads(self._dataset("index/strings"))
        except (TypeError, ValueError) as e:
            raise StoreError(f"{where}:/index/strings cannot be read as JSON ({e})") from None
        files = IndexFiles(
            videos=f"{where}:/index/videos",
            frames=f"{where}:/index/frames",
            strings=f"{where}:/index/strings",
        )
        version = self.manifest["format_version"]
        check_table(self._videos, self._frames, strings, dtype=VIDEO_DTYPES[version], files=files)
        if self.manifest["num_frames"] != len(self._frames):
            raise StoreError(
                f"{where}: the manifest says num_frames {self.manifest['num_frames']}, "
                f"{files.frames} holds {len(self._frames)}; the file is damaged or altered"
            )
        n = len(self._videos)
        group = h5.get("videos")
        if not isinstance(group, h5py.Group) or len(group) != n:
            raise StoreError(
                f"{where}:/videos: holds {len(group) if group is not None else 'no'} videos, "
                f"{files.videos} describes {n}; the file is damaged or altered"
            )
        self._change = None
        if "change_score" in h5["index"]:
            self._change = self._dataset("index/change_score")
            check_change_scores(self._change, len(self._frames), f"{where}:/index/change_score")
        self._sums = None
        if "frames_xxh3_64" in h5["index"]:
            self._sums = self._dataset("index/frames_xxh3_64")
            if self._sums.dtype != np.uint64 or self._sums.shape != (n,):
                raise StoreError(
                    f"{where}:/index/frames_xxh3_64: holds {self._sums.dtype} of shape "
                    f"{self._sums.shape}, expected uint64, one per video ({n})"
                )
        self.classes = strings["classes"]
        self.videos = VideoList(self._videos, self._frames, strings)
        self.codec_name = "hdf5"
        self.dtype = np.dtype(self.manifest["dtype"])
        self.check = check
        self._verified: set[int] | None = None
        if check == "video":
            if self._sums is None:
                raise StoreError(
                    f"{where}: check='video' needs per-video checksums (/index/frames_xxh3_64),"
                    " which this file, written by an older hyperframes, lacks; convert the "
                    "store to HDF5 again"
                )
            self._verified = set()

    def _dataset(self, name: str):
        try:
            return self._h5[name][()]
        except (KeyError, OSError, ValueError) as e:
            raise StoreError(f"{self.path}:/{name}: cannot be read ({e})") from None

    def _video_dataset(self, i: int):
        """Video ``i``'s dataset, whose shape and dtype must be what the index says."""
        name = f"videos/{i:08d}"
        ds = self._h5.get(name)
        r = self._videos[i]
        want = tuple(int(r[k]) for k in ("num_frames", "channels", "height", "width"))
        shape, dtype = getattr(ds, "shape", None), getattr(ds, "dtype", None)
        if shape != want or dtype != self.dtype:
            raise StoreError(
                f"{self.path}:/{name}: video {i} ({self.videos.paths[i]!r}): holds "
                f"{dtype} of shape {shape}, the index says {self.dtype} of shape {want}; the "
                "file is damaged or altered"
            )
        return ds

    def _frames_problem(self, i: int) -> str | None:
        """What is wrong with video ``i``'s frames against the checksum written by
        ``convert_to_hdf5``, or None when they match. Reads the video in blocks."""
        ds = self._video_dataset(i)
        h = xxhash.xxh3_64()
        try:
            for a in range(0, ds.shape[0], _HASH_FRAMES):
                h.update(memoryview(np.ascontiguousarray(ds[a : a + _HASH_FRAMES])))
        except OSError as e:
            return (
                f"{self.path}:/videos/{i:08d}: video {i} ({self.videos.paths[i]!r}): cannot be "
                f"read ({e}); the file is damaged"
            )
        got, want = h.intdigest(), int(self._sums[i])
        if got == want:
            return None
        return (
            f"{self.path}:/videos/{i:08d}: video {i} ({self.videos.paths[i]!r}): its frames "
            f"have xxh3-64 {got:016x}, the file recorded {want:016x}: the file is damaged; "
            "convert the store again or restore the file"
        )

    def __len__(self) -> int:
        return len(self.videos)

    @property
    def num_frames(self) -> int:
        return int(self.manifest["num_frames"])

    @property
    def failed(self) -> list[dict]:
        return list(self.manifest.get("failed", []))

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
        if self._verified is not None and i not in self._verified:
            problem = self._frames_problem(i)
            if problem is not None:
                raise StoreError(problem)
            self._verified.add(i)
        ds = self._video_dataset(i)
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
