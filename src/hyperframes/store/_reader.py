"""Open a store and read frames from it: zero-copy memory maps for raw, chunk decoding otherwise.

A store may come from elsewhere (copied, shared, downloaded), so opening checks it cannot reach
outside itself or return wrong frames silently: the manifest's shape, file names (plain names
inside the store), sizes, dtypes, and every index row against the others and against the shard
files' sizes (vectorised, see ``_records.check_table`` / ``check_payload``). Payload bytes are
not read at open; ``check="video"`` verifies each video's payload checksum on its first read.
"""

from __future__ import annotations

import json
import mmap
import os
import stat
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import numpy as np
import xxhash

from .._errors import ConfigError, DataError, StoreError
from ._codecs import create_codec, list_codecs
from ._format import (
    ALLOWED_DTYPES,
    BUILD_PARAMS,
    CHANGE_FILE,
    CHUNKS_FILE,
    FORMAT_NAME,
    FRAMES_FILE,
    INDEX_DIR,
    MANIFEST,
    READABLE_VERSIONS,
    SHARDS_DIR,
    STRINGS_FILE,
    VIDEO_DTYPES,
    VIDEOS_FILE,
)
from ._records import ALTERED, IndexFiles, VideoList, VideoRecord, check_payload, check_table

__all__ = ["Store", "open_store"]

#: ``check=`` values of :func:`open_store`
CHECKS = ("video",)
Check = Literal["video"] | None


def open_store(path: str | os.PathLike, *, check: Check = None):
    """Open a store folder (or an HDF5 file written by ``convert``) for reading.

    ``check="video"`` verifies each video's payload checksum (taken at build) the first time
    the video is read, and raises StoreError naming the file and the video on a mismatch.
    """
    p = Path(path)
    if p.is_file() and p.suffix.lower() in (".h5", ".hdf5"):
        from ._hdf5 import H5Store

        return H5Store(p, check=check)
    return Store(p, check=check)


def check_option(check) -> None:
    if check is not None and check not in CHECKS:
        raise ConfigError(
            f"check={check!r} is not known; use None (reads trust the build's checksums; "
            "`hyperframes verify` recomputes them) or 'video' (each video's payload is "
            "verified the first time it is read)"
        )


def _load_json(path: Path):
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise StoreError(f"{path}: cannot be read as JSON ({e}); the store is corrupt") from None


#: manifest keys a reader relies on, and their JSON types
_REQUIRED = {
    "format_version": int,
    "codec": dict,
    "dtype": str,
    "shards": list,
    "index": list,
    "num_frames": int,
}


def check_manifest(m, path: str | os.PathLike) -> None:
    """The manifest's own shape: format, a readable version, the keys a reader relies on with
    their types, the stored dtype (from ``ALLOWED_DTYPES``) and a known codec. StoreError
    naming ``path`` and the key, never a KeyError."""
    if not isinstance(m, dict) or m.get("format") != FORMAT_NAME:
        raise StoreError(f"{path}: not a hyperframes store manifest")
    version = m.get("format_version")
    if isinstance(version, bool) or version not in READABLE_VERSIONS:
        raise StoreError(
            f"{path}: store format version {version} is not readable by this hyperframes, "
            f"which reads versions {', '.join(map(str, READABLE_VERSIONS))}"
        )
    for key, kind in _REQUIRED.items():
        if key not in m:
            raise StoreError(
                f"{path}: lacks {key!r}; a store manifest has {', '.join(_REQUIRED)}: {ALTERED}"
            )
        if not isinstance(m[key], kind) or isinstance(m[key], bool):
            raise StoreError(
                f"{path}: {key!r} is {type(m[key]).__name__} {m[key]!r}, expected "
                f"{kind.__name__}: {ALTERED}"
            )
    for key in ("shards", "index"):
        for row in m[key]:
            ok = isinstance(row, dict) and isinstance(row.get("name"), str)
            size = row.get("bytes") if ok else None
            if not (isinstance(size, int) and not isinstance(size, bool) and size >= 0):
                raise StoreError(
                    f"{path}: the {key!r} entry {row!r} does not name a file and its size in "
                    f"bytes: {ALTERED}"
                )
    if m["dtype"] not in ALLOWED_DTYPES:
        raise StoreError(
            f"{path}: dtype {m['dtype']!r} is not a stored element type; a store holds "
            f"{' or '.join(ALLOWED_DTYPES)}: {ALTERED}"
        )
    codec = m["codec"].get("name")
    if codec not in list_codecs():
        raise StoreError(
            f"{path}: codec {codec!r} is unknown; this hyperframes reads {', '.join(list_codecs())}"
        )
    if codec == "jpeg" and m["dtype"] != "uint8":
        raise StoreError(f"{path}: codec 'jpeg' stores uint8 frames, not {m['dtype']}")


def own_file(folder: Path, name, listed_in: str | os.PathLike) -> Path:
    """``folder / name`` for a plain file name that really lies in ``folder`` (a store's
    ``shards/`` or ``index/``). A name with a separator, ``..``, an absolute path or a NUL is a
    StoreError, and so is a file or a folder that is a link leading elsewhere: a store copied,
    shared or downloaded reads only its own files."""
    if (
        not isinstance(name, str)
        or name in ("", ".", "..")
        or "/" in name
        or "\\" in name
        or "\0" in name
        or os.path.isabs(name)
    ):
        raise StoreError(
            f"{listed_in}: names the file {name!r}, which is not a plain file name in "
            f"{folder}; a store reads only its own files: {ALTERED}"
        )
    f = folder / name
    real = f.resolve()
    if real.parent != folder.parent.resolve() / folder.name:
        raise StoreError(
            f"{f}: leads to {real}, outside {folder}; a store reads only its own files (links "
            f"leading out of its {folder.name}/ folder are refused): {ALTERED}"
        )
    return f


def _file_size(f: Path, listed: int) -> int:
    """Size of the regular file ``f``, which must be what the manifest says."""
    try:
        st = f.stat()
    except FileNotFoundError:
        raise StoreError(f"{f}: missing; the store is incomplete or damaged") from None
    except OSError as e:
        raise StoreError(f"{f}: cannot be read ({e.strerror})") from None
    if not stat.S_ISREG(st.st_mode):
        raise StoreError(f"{f}: is not a regular file: {ALTERED}")
    if st.st_size != listed:
        raise StoreError(
            f"{f}: is {st.st_size} bytes, the manifest says {listed}: the file is "
            "truncated or damaged; rebuild the store or restore the file"
        )
    return st.st_size


def _load_npy(f: Path) -> np.ndarray:
    try:
        # memory-mapped, then viewed as a plain array (no np.memmap overhead per access)
        return np.asarray(np.load(f, mmap_mode="r", allow_pickle=False))
    except (OSError, ValueError) as e:
        raise StoreError(f"{f}: cannot be read as an index ({e}); {ALTERED}") from None


def check_change_scores(change: np.ndarray, n_frames: int, where) -> None:
    if change.ndim != 1 or change.dtype != np.float32 or len(change) != n_frames:
        raise StoreError(
            f"{where}: holds {change.dtype} of shape {change.shape}; expected float32, one per "
            f"stored frame ({n_frames}): {ALTERED}"
        )


class Store:
    """A built store. ``videos`` describes every video; ``read`` returns frames.

    ``check="video"``: each video's payload is verified against its checksum (recorded at
    build, format version 2) the first time it is read. Version-1 stores record none, and
    refuse the option: ``hyperframes verify`` checks them shard by shard.
    """

    def __init__(self, path: str | os.PathLike, *, check: Check = None):
        check_option(check)
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
        check_manifest(m, manifest_path)
        self.manifest = m
        index = self.path / INDEX_DIR
        listed = set()
        for row in m["index"]:
            folder, _, name = row["name"].partition("/")
            if folder != INDEX_DIR:
                raise StoreError(
                    f"{manifest_path}: the index file {row['name']!r} is not in {INDEX_DIR}/: "
                    f"{ALTERED}"
                )
            _file_size(own_file(index, name, manifest_path), row["bytes"])
            listed.add(name)
        for name in (VIDEOS_FILE, FRAMES_FILE, CHUNKS_FILE, STRINGS_FILE):
            if name not in listed:
                raise StoreError(
                    f"{manifest_path}: 'index' does not list {INDEX_DIR}/{name}, which every "
                    f"store has: {ALTERED}"
                )
        shards = self.path / SHARDS_DIR
        self._shard_names = [row["name"] for row in m["shards"]]
        if len(set(self._shard_names)) != len(self._shard_names):
            raise StoreError(f"{manifest_path}: 'shards' lists a file twice: {ALTERED}")
        shard_bytes = np.array(
            [
                _file_size(own_file(shards, row["name"], manifest_path), row["bytes"])
                for row in m["shards"]
            ],
            np.int64,
        )
        self._videos, self._frames, self._chunks = (
            _load_npy(index / f) for f in (VIDEOS_FILE, FRAMES_FILE, CHUNKS_FILE)
        )
        strings = _load_json(index / STRINGS_FILE)
        files = IndexFiles(
            videos=str(index / VIDEOS_FILE),
            frames=str(index / FRAMES_FILE),
            strings=str(index / STRINGS_FILE),
            chunks=str(index / CHUNKS_FILE),
        )
        version = m["format_version"]
        check_table(self._videos, self._frames, strings, dtype=VIDEO_DTYPES[version], files=files)
        if strings.get("shards") != self._shard_names:
            raise StoreError(
                f"{files.strings}: lists the shards {strings.get('shards')!r}, "
                f"{manifest_path} lists {self._shard_names!r}: {ALTERED}"
            )
        self.codec_name: str = m["codec"]["name"]
        self.dtype = np.dtype(m["dtype"])
        self._codec = None
        if self.codec_name != "raw":
            params = {k: v for k, v in m["codec"].items() if k != "name"}
            try:
                self._codec = create_codec(self.codec_name, **params)
            except (ConfigError, TypeError, ValueError) as e:
                raise StoreError(f"{manifest_path}: codec {m['codec']!r}: {e}") from None
            if self._codec.chunk_frames < 1:
                raise StoreError(
                    f"{manifest_path}: codec {m['codec']!r} has chunks of "
                    f"{self._codec.chunk_frames} frames: {ALTERED}"
                )
        check_payload(
            self._videos,
            self._chunks,
            strings["paths"],
            shard_files=[str(shards / n) for n in self._shard_names],
            shard_bytes=shard_bytes,
            codec=self.codec_name,
            chunk_frames=0 if self._codec is None else self._codec.chunk_frames,
            itemsize=self.dtype.itemsize,
            files=files,
        )
        if m["num_frames"] != len(self._frames):
            raise StoreError(
                f"{manifest_path}: says num_frames {m['num_frames']}, {files.frames} holds "
                f"{len(self._frames)}: {ALTERED}"
            )
        self._change = None
        if CHANGE_FILE in listed:
            self._change = _load_npy(index / CHANGE_FILE)
            check_change_scores(self._change, len(self._frames), index / CHANGE_FILE)
        self.classes: list[str] = strings["classes"]
        self.videos = VideoList(self._videos, self._frames, strings)
        self._maps: dict[int, np.ndarray] = {}
        self._geoms: dict[int, tuple[int, ...]] = {}
        self._views: dict[int, np.ndarray] = {}
        self.check = check
        self._verified: set[int] | None = None
        if check == "video":
            if "payload_xxh3_64" not in self._videos.dtype.names:
                raise StoreError(
                    f"{self.path}: check='video' needs per-video payload checksums, which a "
                    f"store of format version {version} does not record (version 2 does); "
                    f"verify it shard by shard with `hyperframes verify {self.path}`, or "
                    "rebuild it with this hyperframes"
                )
            self._verified = set()

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
        return list(self.manifest.get("failed", []))

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
    def _shard_file(self, k: int) -> Path:
        return self.path / SHARDS_DIR / self._shard_names[k]

    def _shard(self, k: int) -> np.ndarray:
        arr = self._maps.get(k)
        if arr is None:
            f = self._shard_file(k)
            with open(f, "rb") as fh:
                if os.fstat(fh.fileno()).st_size == 0:  # (mmap refuses an empty file)
                    arr = np.zeros(0, np.uint8)
                else:
                    mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
                    arr = np.frombuffer(mm, dtype=np.uint8)
            self._maps[k] = arr
        return arr

    def _payload_problem(self, i: int) -> str | None:
        """What is wrong with video ``i``'s payload bytes against the checksum taken at build
        (format version 2), or None when they match."""
        shard, off, nbytes = self._geom(i)[:3]
        got = xxhash.xxh3_64_intdigest(memoryview(self._shard(shard)[off : off + nbytes]))
        want = int(self._videos["payload_xxh3_64"][i])
        if got == want:
            return None
        return (
            f"{self._shard_file(shard)}: video {i} ({self.videos.paths[i]!r}): its payload, "
            f"bytes {off}..{off + nbytes}, has xxh3-64 {got:016x}, the index recorded "
            f"{want:016x} at build: the shard is damaged; rebuild the store or restore the file"
        )

    def _verify_payload(self, i: int) -> None:
        """``check="video"``, on a video's first read. Verified ids are remembered; two threads
        racing on one video may both verify it (harmless)."""
        problem = self._payload_problem(i)
        if problem is not None:
            raise StoreError(problem)
        self._verified.add(i)

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
        if self._verified is not None and i not in self._verified:
            self._verify_payload(i)
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
        if self._verified is not None and i not in self._verified:
            self._verify_payload(i)
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
