"""The HDF5 form of a store, for the HDF5 ecosystem (h5py, h5ls, HDFView).

Layout of ``OUT.h5``::

    /                      attrs: format="hyperframes-hdf5", format_version, manifest (JSON),
                           index_xxh3_64 (the index's checksum; below)
    /index/videos          the store's per-video table (same columns as index/videos.npy)
    /index/frames          per stored frame: pts_seconds, source_index
    /index/change_score    per stored frame: the keyframes sampler's change score (optional)
    /index/flow_score      per stored frame: the flow's motion score (optional, as the folder
                           store's index/flow_score.npy)
    /index/strings         JSON: paths, classes, splits
    /index/segments, /index/segment_labels, /index/video_labels, /index/signatures
                           the folder store's optional index files of the same names
                           (``store.format``), when it has them
    /index/audio, /index/flow  the folder store's track tables (``store.format``), when it has
                           them; their shard and offset columns are 0 here
    /audio/NNNNNNNN        a video's audio [C, N] float32 (videos with audio only)
    /flow/NNNNNNNN         a video's flow [F-1, 2, h, w] as stored (float16, or int8 x scale)
    /homography/NNNNNNNN   its homographies [F-1, 3, 3] float32; each track dataset is
                           uncompressed and keeps the folder store's xxh3-64 (in the tables),
                           which ``verify`` and ``check="video"`` recompute
    /index/frames_xxh3_64  per video: xxh3-64 of its frames [F, C, H, W] as stored (C-order
                           bytes); ``verify`` and ``check="video"`` recompute it (absent from
                           files written before it existed: those cannot be verified)
    /videos/NNNNNNNN       frames [F, C, H, W]: uncompressed (``compression="none"``), one
                           contiguous block; compressed (lzf, blosc, gzip), chunks of
                           ``chunk_frames`` consecutive frames (default 8), so a window of 16
                           frames is 2 or 3 chunk reads. Files written before chunked one frame
                           per chunk (a window was 16 chunk reads); they stay readable.

**Frames are stored decoded, whatever the store's codec.** Converting a ``jpeg``, ``lz4`` or
``zstd`` store writes its frames as the reader returns them (uint8 arrays, or float16 for a
normalised store) under the HDF5 compression asked for; the codec's bytes are not kept. That
is what the HDF5 form is for: h5py, h5ls and HDFView see each video as an array, with no
hyperframes codec needed to read it, and an uncompressed file is read through a memory map.
The price is size: JPEG frames decoded take several times the JPEG bytes (keep the folder
store when size matters); the JPEG loss is in the frames already and conversion adds none.
Convert says what it changed, and so does the manifest it writes: the source store's codec
moves to ``converted_from`` (``codec``, ``store_bytes``, ``shards``, ``note``: "converted
from codec jpeg: frames stored decoded (uint8) with lzf compression (chunks of 8 frames);
15.79 MB of jpeg shards -> 126.10 MB of HDF5 frame datasets") and the manifest's own ``codec`` is ``raw``; ``shards`` and ``index`` (folder files) are
empty. The reader's ``manifest`` has ``store_bytes`` = the file's size, and gives a file
written before ``converted_from`` existed (whose manifest was the source store's) the same
shape, so nothing reports the source store's codec or size as the file's.
:meth:`H5Store.storage` reads what the file holds from the file itself: its size, each
video dataset's HDF5 filters and chunking, the frames' bytes stored and decoded.

The same reader API (``open_store``) opens it, and checks the index with the folder store's
sequence (``_open.open_index``; :class:`H5Index` gives it the datasets).
An uncompressed, contiguous video is read like a raw folder store: the file is memory-mapped
and its frames copied from where HDF5 placed them (``get_offset``), with no HDF5 call and no
lock per read (h5py serialises its calls behind one lock); the offsets are checked against
the file's size at open. Compressed videos are read through h5py, one call per window.

The index is signed too: the root attribute ``index_xxh3_64`` is the xxh3-64 of the root's
``format``, ``format_version`` and ``manifest`` attributes and of every dataset under /index/
(names, shapes and bytes, :func:`h5_index_checksum`), the frames' checksums among them; every open
recomputes it, so a changed bit in the index or manifest is refused before anything is served.
A file written before it (or before the frames' checksums) opens with a one-line note, and
``hyperframes verify --resign FILE`` records what it lacks (``_hdf5_sign``). Whatever HDF5
itself raises on a damaged file (``OSError``, ``RuntimeError``, ...) reaches callers as a
:class:`StoreError` naming the file (:func:`h5_errors`).

Why a checksum of the frames rather than HDF5's own ``fletcher32`` filter: it is the same
algorithm as the folder store's, 64 bits instead of 32, end to end (it covers decompression
and which dataset holds which video, not only the stored chunk bytes), and a mismatch names
the video; fletcher32 would only fail a read with HDF5's "filter returned failure".
"""

from __future__ import annotations

import contextlib
import json
import mmap
import os
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import xxhash

from .._core._device import batch_out
from .._core._errors import DataError, HyperframesError, StoreError
from ._base import StoreBase, take
from ._open import Check, IndexSource, check_option
from ._table_checks import IndexFiles

H5_FORMAT = "hyperframes-hdf5"
H5_VERSION = 1
#: frames hashed per read when a video is verified (bounded memory for long videos)
_HASH_FRAMES = 64
#: the root attribute holding the index's checksum (module doc)
H5_INDEX_SUM_ATTR = "index_xxh3_64"
#: the root attributes the index's checksum covers, with the datasets under /index/
_SIGNED_ATTRS = ("format", "format_version", "manifest")
#: what h5py raises on a damaged file, by the call that met the damage
_H5PY_ERRORS = (OSError, RuntimeError, KeyError, ValueError, TypeError, IndexError)
_noted: set[str] = set()


@contextlib.contextmanager
def h5_errors(where: object) -> Iterator[None]:
    """Turn what h5py raises inside the block into a :class:`StoreError` naming ``where``
    (our own errors pass through)."""
    try:
        yield
    except HyperframesError:
        raise
    except _H5PY_ERRORS as e:
        raise StoreError(
            f"{where}: HDF5 cannot read it ({type(e).__name__}: {e}); the file is damaged or "
            "altered: restore it, or convert the store to HDF5 again"
        ) from None


def h5_index_checksum(h5) -> str:
    """The xxh3-64 (hex) of the open file ``h5``'s index: its signed root attributes and every
    dataset under /index/ (name, shape and bytes as read), in name order."""
    h = xxhash.xxh3_64()
    for name in _SIGNED_ATTRS:
        h.update(f"{name}={h5.attrs.get(name)}\0".encode())
    index = h5["index"]
    for name in sorted(index):
        data = index[name][()]
        if isinstance(data, str):
            data = data.encode()
        if isinstance(data, bytes):
            h.update(f"{name}:bytes\0".encode())
            h.update(data)
        else:
            arr = np.ascontiguousarray(data)
            h.update(f"{name}:{arr.shape}\0".encode())
            # numpy's stubs give ndarray __buffer__ only for Python >= 3.12
            h.update(memoryview(arr).cast("B"))  # type: ignore[arg-type]
    return h.hexdigest()


def frames_digest(ds) -> int:
    """The xxh3-64 of dataset ``ds``'s frames as stored (C-order bytes), read in blocks."""
    h = xxhash.xxh3_64()
    for a in range(0, ds.shape[0], _HASH_FRAMES):
        block = np.ascontiguousarray(ds[a : a + _HASH_FRAMES])
        # numpy's stubs give ndarray __buffer__ only for Python >= 3.12
        h.update(memoryview(block))  # type: ignore[arg-type]
    return h.intdigest()


def _note_unsigned(path: Path, what: str) -> None:
    """Say once per file (stderr) that a file written before these checksums opens unchecked."""
    if str(path) in _noted:
        return
    _noted.add(str(path))
    print(
        f"hyperframes: note: {path} records no checksum of its {what} (written by an older "
        "hyperframes), so damage to it cannot be detected; `hyperframes verify --resign "
        f"{path}` records them",
        file=sys.stderr,
        flush=True,
    )


def _file_manifest(stored: dict, file_bytes: int, where: str) -> dict:
    """The reader's manifest (module doc): ``store_bytes`` the file's size; a file written
    before ``converted_from`` existed holds the source store's manifest, moved the same way."""
    m = dict(stored)
    source = m.get("converted_from")
    if source is None:
        source = {
            "codec": m["codec"],
            "store_bytes": m.get("store_bytes"),
            "shards": len(m["shards"]),
            "note": f"converted from codec {m['codec']['name']}: frames stored decoded "
            f"({m['dtype']}) by an older hyperframes, which kept the source store's manifest",
        }
        m.update(codec={"name": "raw"}, shards=[], index=[], converted_from=source)
    elif not (isinstance(source, dict) and isinstance(source.get("codec"), dict)):
        raise StoreError(
            f"{where}: 'converted_from' is {source!r}, expected an object with the source "
            "store's 'codec': the file is damaged or altered"
        )
    m["store_bytes"] = file_bytes
    return m


#: HDF5 filter ids by the names ``convert --compression`` takes (others: HDF5's own name)
_FILTER_NAMES = {1: "gzip", 32000: "lzf", 32001: "blosc", 2: "shuffle", 3: "fletcher32"}


def _block_offset(ds) -> int | None:
    """Where HDF5 placed dataset ``ds`` in the file when it is one uncompressed block (read
    through the memory map), else None (read through h5py)."""
    plist = ds.id.get_create_plist()
    return ds.id.get_offset() if ds.chunks is None and plist.get_nfilters() == 0 else None


def _stem(name: str) -> str:
    """The dataset under /index/ holding the folder store's index file ``name``."""
    return name.removesuffix(".npy")


class H5Index(IndexSource):
    """The HDF5 file's index as :func:`~hyperframes.store._open.open_index` reads it: the
    root's attributes and the datasets under /index/ of ``h5``. After the open: ``sums``, the
    frames' checksums (None in a file written before them)."""

    def __init__(self, h5, path: Path):
        self.h5, self.path, self.at = h5, path, str(path)
        self.manifest_where = f"{self.at}: attribute 'manifest'"
        self.named = IndexFiles(
            videos=f"{self.at}:/index/videos",
            frames=f"{self.at}:/index/frames",
            strings=f"{self.at}:/index/strings",
        )
        self.sums: np.ndarray | None = None
        #: what the file records no checksum of (a file written before them), or None
        self.unsigned: str | None = None

    def read_manifest(self):
        h5, where = self.h5, self.at
        fmt = h5.attrs.get("format")
        if np.ndim(fmt) != 0 or fmt != H5_FORMAT:
            raise StoreError(f"{where}: not a hyperframes HDF5 store")
        version = h5.attrs.get("format_version")
        if np.ndim(version) != 0 or version != H5_VERSION:
            raise StoreError(
                f"{where}: HDF5 store version {version} is "
                f"not readable; this hyperframes reads version {H5_VERSION}"
            )
        self._check_index_sum()
        try:
            return json.loads(h5.attrs["manifest"])
        except (KeyError, TypeError, ValueError, RecursionError) as e:
            raise StoreError(f"{where}: its manifest attribute cannot be read ({e})") from None

    def _check_index_sum(self) -> None:
        """Refuse an index whose bytes differ from the checksum the file records (module
        doc); a file without one is noted as unsigned."""
        want = self.h5.attrs.get(H5_INDEX_SUM_ATTR)
        if want is None:
            self.unsigned = "index"
            return
        got = h5_index_checksum(self.h5)
        if want != got:
            raise StoreError(
                f"{self.at}: its index (the datasets under /index/ and the manifest) has "
                f"xxh3-64 {got}, the file recorded {want!r} (attribute {H5_INDEX_SUM_ATTR}): the "
                "file is damaged or altered; restore it, or convert the store to HDF5 again"
            )

    def check_files(self, m: dict) -> dict:
        return _file_manifest(m, self.path.stat().st_size, self.at)

    def dataset(self, name: str):
        try:
            return self.h5[name][()]
        except (KeyError, OSError, ValueError) as e:
            raise StoreError(f"{self.path}:/{name}: cannot be read ({e})") from None

    def tables(self):
        videos, frames = self.dataset("index/videos"), self.dataset("index/frames")
        try:
            strings = json.loads(self.dataset("index/strings"))
        except (TypeError, ValueError, RecursionError) as e:
            raise StoreError(f"{self.at}:/index/strings cannot be read as JSON ({e})") from None
        return videos, frames, strings

    def has(self, name: str) -> bool:
        return _stem(name) in self.h5["index"]

    def npy(self, name: str) -> np.ndarray:
        return self.dataset(f"index/{_stem(name)}")

    def where(self, name: str) -> str:
        return f"{self.at}:/index/{_stem(name)}"

    def frames_mismatch(self, said: int, held: int) -> StoreError:
        return StoreError(
            f"{self.at}: the manifest says num_frames {said}, {self.named.frames} holds "
            f"{held}; the file is damaged or altered"
        )

    def check_datasets(self, n_videos: int) -> None:
        import h5py  # deferred: optional/heavy dependency

        group = self.h5.get("videos")
        if not isinstance(group, h5py.Group) or len(group) != n_videos:
            raise StoreError(
                f"{self.at}:/videos: holds {len(group) if group is not None else 'no'} videos, "
                f"{self.named.videos} describes {n_videos}; the file is damaged or altered"
            )

    def check_checksums(self, n_videos: int) -> None:
        if "frames_xxh3_64" in self.h5["index"]:
            self.sums = sums = self.dataset("index/frames_xxh3_64")
            if sums.dtype != np.uint64 or sums.shape != (n_videos,):
                raise StoreError(
                    f"{self.at}:/index/frames_xxh3_64: holds {sums.dtype} of shape "
                    f"{sums.shape}, expected uint64, one per video ({n_videos})"
                )
        else:
            self.unsigned = "index or frames"


class H5Store(StoreBase):
    """Reads the HDF5 form with the same API as ``Store`` (``check="video"`` included): a
    :class:`~hyperframes.store.StoreReader`, with the same track reads."""

    path: Path
    #: what the file records no checksum of ("index", "index or frames"), or None
    unsigned: str | None

    def __init__(self, path: str | os.PathLike, *, check: Check = None):
        import h5py  # deferred: optional/heavy dependency

        check_option(check)
        self.path = Path(path)
        try:
            self._h5 = h5py.File(self.path, "r")
        except _H5PY_ERRORS as e:
            raise StoreError(f"{self.path}: cannot be opened as HDF5 ({e})") from None
        self._map: np.ndarray | None = None
        try:
            with h5_errors(self.path):
                self._open(check)
        except BaseException:
            with contextlib.suppress(*_H5PY_ERRORS):
                self._h5.close()
            raise

    def _open(self, check: Check) -> None:
        src = H5Index(self._h5, self.path)
        self._open_index(src, check)
        self._sums: np.ndarray | None = src.sums
        self.unsigned = src.unsigned
        if src.unsigned is not None:
            _note_unsigned(self.path, src.unsigned)
        self.codec_name = "hdf5"
        self._datasets: dict[int, object] = {}
        self._views: dict[int, np.ndarray | None] = {}
        if check == "video":
            if self._sums is None:
                raise StoreError(
                    f"{self.path}: check='video' needs per-video checksums (/index/frames_xxh3_64),"
                    " which this file, written by an older hyperframes, lacks; `hyperframes "
                    f"verify --resign {self.path}` records them"
                )
            self._verified = set()

    def _track_where(self, kind: str, i: int) -> str:
        return f"{self.path}:/{kind}/{i:08d}"

    def _track_bytes(self, kind: str, i: int, lo: int = 0, hi: int | None = None) -> np.ndarray:
        """Bytes ``lo .. hi`` (None: the end) of video ``i``'s track payload ``kind``: its
        dataset, whose shape and dtype must be what the index says; a view of the memory map
        when contiguous."""
        return self._track_payload(kind, i)[lo:hi]

    def _track_payload(self, kind: str, i: int) -> np.ndarray:
        name = f"{kind}/{i:08d}"
        with h5_errors(f"{self.path}:/{name}"):
            return self._track_dataset_bytes(kind, i, name)

    def _track_dataset_bytes(self, kind: str, i: int, name: str) -> np.ndarray:
        ds = self._h5.get(name)
        shape, dtype = self._tracks.spec(kind, i)
        got_shape, got_dtype = getattr(ds, "shape", None), getattr(ds, "dtype", None)
        if got_shape != shape or got_dtype != dtype:
            raise StoreError(
                f"{self.path}:/{name}: video {i} ({self.videos.paths[i]!r}): holds {got_dtype} "
                f"of shape {got_shape}, the index says {dtype} of shape {shape}; the file is "
                "damaged or altered"
            )
        nbytes = int(np.prod(shape)) * dtype.itemsize
        if nbytes == 0:
            return np.zeros(0, np.uint8)
        offset = _block_offset(ds)
        if offset is None:
            return np.ascontiguousarray(ds[()]).reshape(-1).view(np.uint8)
        mapped = self._mapped()
        if not 0 <= offset <= len(mapped) - nbytes:
            raise StoreError(
                f"{self.path}:/{name}: video {i} ({self.videos.paths[i]!r}): bytes "
                f"{offset}..{offset + nbytes} lie outside the file ({len(mapped)} bytes); the "
                "file is truncated or altered"
            )
        return mapped[offset : offset + nbytes]

    def _mapped(self) -> np.ndarray:
        if self._map is None:
            with open(self.path, "rb") as f:
                self._map = np.frombuffer(
                    mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ), np.uint8
                )
        return self._map

    def _video_dataset(self, i: int):
        """Video ``i``'s dataset, whose shape and dtype must be what the index says."""
        ds = self._datasets.get(i)
        if ds is not None:
            return ds
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
        self._datasets[i] = ds
        return ds

    def _contiguous_view(self, i: int) -> np.ndarray | None:
        """Video ``i`` as a read-only ``(F, C, H, W)`` view of the memory-mapped file when HDF5
        stored it as one uncompressed block, else None (read it through h5py)."""
        if i in self._views:
            return self._views[i]
        ds = self._video_dataset(i)
        view = None
        offset = _block_offset(ds)
        if offset is not None:
            nbytes = int(np.prod(ds.shape)) * self.dtype.itemsize
            mapped = self._mapped()
            if not 0 <= offset <= len(mapped) - nbytes:
                raise StoreError(
                    f"{self.path}:/videos/{i:08d}: video {i} ({self.videos.paths[i]!r}): its "
                    f"frames, bytes {offset}..{offset + nbytes}, lie outside the file "
                    f"({len(mapped)} bytes); the file is truncated or altered"
                )
            view = mapped[offset : offset + nbytes].view(self.dtype).reshape(ds.shape)
        self._views[i] = view
        return view

    def frames_problem(self, video) -> str | None:
        """What is wrong with the video's frames against the checksum written by
        ``convert_to_hdf5``, or None when they match. Reads the video in blocks."""
        i = self._video_id(video)
        where = f"{self.path}:/videos/{i:08d}: video {i} ({self.videos.paths[i]!r})"
        with h5_errors(where):
            ds = self._video_dataset(i)
        try:
            with h5_errors(where):
                got = frames_digest(ds)
        except StoreError as e:
            return str(e)
        assert self._sums is not None  # callers check has_checksums (or check="video" did)
        want = int(self._sums[i])
        if got == want:
            return None
        return (
            f"{self.path}:/videos/{i:08d}: video {i} ({self.videos.paths[i]!r}): its frames "
            f"have xxh3-64 {got:016x}, the file recorded {want:016x}: the file is damaged; "
            "convert the store again or restore the file"
        )

    def storage(self) -> dict:
        """What the file holds, read from the file itself, not from the manifest:
        ``file_bytes``; ``frames`` (their stored form); ``compression``: videos per HDF5 filter
        chain of their datasets (named as ``convert --compression`` names them: lzf, blosc,
        gzip, none; another filter by its HDF5 name); ``chunk_frames``: the frames per chunk
        used (0: one contiguous block); ``frames_stored_bytes`` (the video datasets' bytes in
        the file) and ``frames_decoded_bytes`` (as read); ``checksums``: what ``verify``
        checks (None for a file without them)."""
        with h5_errors(self.path):
            return self._storage()

    def _storage(self) -> dict:
        compression: dict[str, int] = {}
        chunk_frames: set[int] = set()
        stored = decoded = 0
        for i in range(len(self)):
            ds = self._video_dataset(i)
            plist = ds.id.get_create_plist()
            names = []
            for k in range(plist.get_nfilters()):
                code, _, _, name = plist.get_filter(k)
                names.append(_FILTER_NAMES.get(code, name.decode(errors="replace") or str(code)))
            chain = "+".join(n for n in names if n != "fletcher32") or "none"
            compression[chain] = compression.get(chain, 0) + 1
            chunk_frames.add(int(ds.chunks[0]) if ds.chunks else 0)
            stored += ds.id.get_storage_size()
            decoded += ds.size * ds.dtype.itemsize
        return {
            "file_bytes": self.path.stat().st_size,
            "frames": f"decoded {self.dtype} arrays [F, C, H, W], one dataset per video",
            "compression": compression,
            "chunk_frames": sorted(chunk_frames),
            "frames_stored_bytes": int(stored),
            "frames_decoded_bytes": int(decoded),
            "checksums": "xxh3_64 of each video's frames" if self.has_checksums else None,
        }

    @property
    def has_checksums(self) -> bool:
        """Whether the file records per-video checksums (``verify`` needs them)."""
        return self._sums is not None

    def __repr__(self) -> str:
        return f"H5Store({str(self.path)!r}, videos={len(self)}, frames={self.num_frames})"

    def _check_indices(self, i: int, idx: np.ndarray) -> np.ndarray:
        n = int(self._videos["num_frames"][i])
        if idx.size and (idx.min() < 0 or idx.max() >= n):
            raise DataError(f"frame indices out of range for video {i}, which has {n}")
        return idx

    def _frame_shape(self, i: int) -> tuple[int, ...]:
        r = self._videos[i]
        return int(r["channels"]), int(r["height"]), int(r["width"])

    def _read_into(self, i: int, idx: np.ndarray, out: np.ndarray) -> None:
        with h5_errors(f"{self.path}:/videos/{i:08d}"):
            self._read_frames_into(i, idx, out)

    def _read_frames_into(self, i: int, idx: np.ndarray, out: np.ndarray) -> None:
        if self._verified is not None and i not in self._verified:
            problem = self.frames_problem(i)
            if problem is not None:
                raise StoreError(problem)
            self._verified.add(i)
        view = self._contiguous_view(i)
        if view is not None:
            take(view, idx, out)
        elif idx.size:
            ds = self._video_dataset(i)
            lo, hi = int(idx.min()), int(idx.max()) + 1
            run = hi - lo == len(idx) and bool(np.all(np.diff(idx) == 1))
            if run and out.flags.c_contiguous:
                ds.read_direct(out, np.s_[lo:hi])  # a run of frames: straight into out
            else:
                out[...] = ds[lo:hi][idx - lo]

    def read_batch(self, requests: Sequence[tuple], *, out=None):
        """As :meth:`hyperframes.store.Store.read_batch`."""
        import torch  # deferred: optional/heavy dependency

        reqs = [(self._video_id(v), np.asarray(ix, np.int64).reshape(-1)) for v, ix in requests]
        reqs = [(i, self._check_indices(i, ix)) for i, ix in reqs]
        shapes = {(len(ix), *self.videos.shapes[i].tolist()) for i, ix in reqs}
        if len(shapes) != 1:
            return [torch.from_numpy(self.read_numpy(i, ix)) for i, ix in reqs]
        out = batch_out(out, (len(reqs), *shapes.pop()), self.dtype)
        arr = out.numpy()
        for b, (i, ix) in enumerate(reqs):
            self._read_into(i, ix, arr[b])
        return out

    def close(self) -> None:
        self._views.clear()
        self._datasets.clear()
        self._map = None
        with contextlib.suppress(*_H5PY_ERRORS):
            self._h5.close()
