"""Open a store and read frames from it: zero-copy memory maps for raw, chunk decoding otherwise."""

from __future__ import annotations

import json
import mmap
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from .._errors import DataError, StoreError
from ._codecs import create_codec
from ._format import (
    BUILD_PARAMS,
    CHANGE_FILE,
    CHUNKS_FILE,
    FORMAT_NAME,
    FORMAT_VERSION,
    FRAMES_FILE,
    INDEX_DIR,
    MANIFEST,
    SHARDS_DIR,
    STRINGS_FILE,
    VIDEOS_FILE,
)
from ._records import VideoList, VideoRecord

__all__ = ["Store", "open_store"]


def open_store(path: str | os.PathLike):
    """Open a store folder (or an HDF5 file written by ``convert``) for reading."""
    p = Path(path)
    if p.is_file() and p.suffix.lower() in (".h5", ".hdf5"):
        from ._hdf5 import H5Store

        return H5Store(p)
    return Store(p)


def _load_json(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise StoreError(f"{path}: cannot be read as JSON ({e}); the store is corrupt") from None


class Store:
    """A built store. ``videos`` describes every video; ``read`` returns frames."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        if not self.path.is_dir():
            raise StoreError(f"{self.path}: no store here (expected a folder with {MANIFEST})")
        manifest_path = self.path / MANIFEST
        if not manifest_path.exists():
            if (self.path / BUILD_PARAMS).exists():
                raise StoreError(
                    f"{self.path}: the store is incomplete (a build was interrupted or is "
                    "running); rerun the same `hyperframes build` command to finish it"
                )
            raise StoreError(f"{self.path}: no store here ({MANIFEST} is missing)")
        m = _load_json(manifest_path)
        if m.get("format") != FORMAT_NAME:
            raise StoreError(f"{manifest_path}: not a hyperframes store manifest")
        if m.get("format_version") != FORMAT_VERSION:
            raise StoreError(
                f"{manifest_path}: store format version {m.get('format_version')} is not "
                f"readable by this hyperframes, which reads version {FORMAT_VERSION}"
            )
        self.manifest = m
        for row in m["index"] + [
            {"name": f"{SHARDS_DIR}/{s['name']}", "bytes": s["bytes"]} for s in m["shards"]
        ]:
            f = self.path / row["name"]
            try:
                size = f.stat().st_size
            except FileNotFoundError:
                raise StoreError(f"{f}: missing; the store is incomplete or damaged") from None
            if size != row["bytes"]:
                raise StoreError(
                    f"{f}: is {size} bytes, the manifest says {row['bytes']}: the file is "
                    "truncated or damaged; rebuild the store or restore the file"
                )
        index = self.path / INDEX_DIR
        try:
            # memory-mapped, then viewed as plain arrays (no np.memmap overhead per access)
            self._videos, self._frames, self._chunks = (
                np.asarray(np.load(index / f, mmap_mode="r", allow_pickle=False))
                for f in (VIDEOS_FILE, FRAMES_FILE, CHUNKS_FILE)
            )
        except (OSError, ValueError) as e:
            raise StoreError(
                f"{index}: the index cannot be read ({e}); the store is corrupt"
            ) from None
        listed = {row["name"] for row in m["index"]}
        self._change = (
            np.asarray(np.load(index / CHANGE_FILE, mmap_mode="r", allow_pickle=False))
            if f"{INDEX_DIR}/{CHANGE_FILE}" in listed
            else None
        )
        strings = _load_json(index / STRINGS_FILE)
        self._shard_names = strings["shards"]
        self.classes: list[str] = strings["classes"]
        self.videos = VideoList(self._videos, self._frames, strings)
        self.codec_name: str = m["codec"]["name"]
        self.dtype = np.dtype(m["dtype"])
        self._codec = (
            None
            if self.codec_name == "raw"
            else create_codec(
                self.codec_name, **{k: v for k, v in m["codec"].items() if k != "name"}
            )
        )
        self._maps: dict[int, np.ndarray] = {}
        self._geoms: dict[int, tuple[int, ...]] = {}
        self._views: dict[int, np.ndarray] = {}

    # -- metadata -------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.videos)

    def __repr__(self) -> str:
        return (
            f"Store({str(self.path)!r}, videos={len(self)}, frames={self.num_frames}, "
            f"codec={self.codec_name!r}, dtype={self.dtype})"
        )

    @property
    def num_frames(self) -> int:
        return int(self.manifest["num_frames"])

    @property
    def failed(self) -> list[dict]:
        return list(self.manifest["failed"])

    def change_scores(self, video) -> np.ndarray | None:
        """The video's per-frame change scores recorded at build time (float32, one per stored
        frame; see :func:`hyperframes.sampling.change_score`), or None if the store has none."""
        return _change_slice(self._change, self._videos, self._video_id(video))

    def _video_id(self, video) -> int:
        i = video.id if isinstance(video, VideoRecord) else int(video)
        if not 0 <= i < len(self._videos):
            raise DataError(f"video {i} is out of range: {self.path} holds {len(self._videos)}")
        return i

    # -- raw access -----------------------------------------------------------------------
    def _shard(self, k: int) -> np.ndarray:
        arr = self._maps.get(k)
        if arr is None:
            f = self.path / SHARDS_DIR / self._shard_names[k]
            with open(f, "rb") as fh:
                mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
            arr = np.frombuffer(mm, dtype=np.uint8)
            self._maps[k] = arr
        return arr

    def _geom(self, i: int) -> tuple[int, ...]:
        """(shard, offset, nbytes, F, C, H, W) of video ``i``, cached as plain ints."""
        g = self._geoms.get(i)
        if g is None:
            r = self._videos[i]
            g = tuple(
                int(r[k])
                for k in ("shard", "offset", "nbytes", "num_frames", "channels", "height", "width")
            )
            self._geoms[i] = g
        return g

    def frames_view(self, video) -> np.ndarray:
        """Zero-copy ``(F, C, H, W)`` view of a video in a raw store (read-only memory map)."""
        if self._codec is not None:
            raise StoreError(
                f"frames_view needs a raw store; {self.path} uses codec {self.codec_name!r}"
            )
        i = self._video_id(video)
        view = self._views.get(i)
        if view is None:
            shard, off, nbytes, *shape = self._geom(i)
            buf = self._shard(shard)
            view = buf[off : off + nbytes].view(self.dtype).reshape(shape)
            self._views[i] = view
        return view

    # -- reads ----------------------------------------------------------------------------
    def _check_indices(self, i: int, idx: np.ndarray) -> np.ndarray:
        n = self._geom(i)[3]
        if idx.size and (idx.min() < 0 or idx.max() >= n):
            bad = idx[(idx < 0) | (idx >= n)][0]
            raise DataError(
                f"frame index {bad} is out of range for video {i} ({self.videos._paths[i]}), "
                f"which has {n} frames"
            )
        return idx

    def read_numpy(self, video, frame_indices, *, out: np.ndarray | None = None) -> np.ndarray:
        """Frames ``frame_indices`` of ``video`` as an ``(n, C, H, W)`` array (a copy)."""
        i = self._video_id(video)
        idx = self._check_indices(i, np.asarray(frame_indices, dtype=np.int64).reshape(-1))
        shape = (len(idx), *self._geom(i)[4:])
        if out is None:
            out = np.empty(shape, self.dtype)
        elif out.shape != shape or out.dtype != self.dtype:
            raise DataError(f"out has shape {out.shape} {out.dtype}; needs {shape} {self.dtype}")
        if self._codec is None:
            _take(self.frames_view(i), idx, out)
        else:
            self._read_chunks(i, idx, out)
        return out

    def _read_chunks(self, i: int, idx: np.ndarray, out: np.ndarray) -> None:
        r = self._videos[i]
        c0, k = int(r["chunk_start"]), int(r["num_chunks"])
        buf = self._shard(int(r["shard"]))
        decode = self._codec.decode_into
        if self._codec.chunk_frames == 1:  # one frame per chunk (jpeg): chunk j is frame j
            offsets = self._chunks["offset"][c0 : c0 + k]
            sizes = self._chunks["nbytes"][c0 : c0 + k]
            for j, f in enumerate(idx.tolist()):
                off = int(offsets[f])
                decode(buf[off : off + int(sizes[f])], out[j : j + 1])
            return
        chunks = self._chunks[c0 : c0 + k]
        which = np.searchsorted(chunks["first_frame"], idx, side="right") - 1
        frame_shape = out.shape[1:]
        for c in np.unique(which).tolist():
            row = chunks[c]
            n = int(row["num_frames"])
            block = np.empty((n, *frame_shape), self.dtype)
            off = int(row["offset"])
            decode(buf[off : off + int(row["nbytes"])], block)
            sel = np.nonzero(which == c)[0]
            out[sel] = block[idx[sel] - int(row["first_frame"])]

    def read(self, video, frame_indices):
        """Frames of ``video`` as a torch tensor ``(len(frame_indices), C, H, W)``."""
        import torch

        return torch.from_numpy(self.read_numpy(video, frame_indices))

    def read_batch(self, requests: Sequence[tuple], *, out=None):
        """Many ``(video, frame_indices)`` reads in one call, planned by location.

        Returns one ``(B, T, C, H, W)`` tensor when every request has the same shape (written
        into ``out`` when given), else a list of tensors.
        """
        import torch

        reqs = [(self._video_id(v), np.asarray(ix, np.int64).reshape(-1)) for v, ix in requests]
        geoms = [self._geom(v) for v, _ in reqs]
        shapes = {(len(ix), *g[4:]) for (_, ix), g in zip(reqs, geoms)}
        order = sorted(
            range(len(reqs)), key=lambda b: (geoms[b][0], geoms[b][1], reqs[b][1][:1].tolist())
        )
        if len(shapes) == 1:
            (shape,) = shapes
            if out is None:
                out = torch.empty((len(reqs), *shape), dtype=_torch_dtype(self.dtype))
            arr = out.numpy()
            for b in order:
                self.read_numpy(reqs[b][0], reqs[b][1], out=arr[b])
            return out
        result = [None] * len(reqs)
        for b in order:
            result[b] = torch.from_numpy(self.read_numpy(*reqs[b]))
        return result

    def close(self) -> None:
        self._maps.clear()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _change_slice(change, videos, i: int) -> np.ndarray | None:
    if change is None:
        return None
    f0, n = int(videos["frame_start"][i]), int(videos["num_frames"][i])
    return np.array(change[f0 : f0 + n], dtype=np.float32)


def _torch_dtype(dtype: np.dtype):
    import torch

    return {np.dtype(np.uint8): torch.uint8, np.dtype(np.float16): torch.float16}[np.dtype(dtype)]


def _take(view: np.ndarray, idx: np.ndarray, out: np.ndarray) -> None:
    """Copy ``view[idx]`` into ``out``; strided runs become one slice copy."""
    n = len(idx)
    if n == 0:
        return
    if n == 1:
        out[0] = view[idx[0]]
        return
    step = int(idx[1] - idx[0])
    if step > 0 and np.all(np.diff(idx) == step):
        out[...] = view[idx[0] : idx[-1] + 1 : step]
    else:
        np.take(view, idx, axis=0, out=out)
