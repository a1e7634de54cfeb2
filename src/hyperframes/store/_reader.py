"""Open a store and read frames from it: zero-copy memory maps for raw, chunk decoding otherwise.

A store may come from elsewhere (copied, shared, downloaded), so opening checks it cannot reach
outside itself or return wrong frames silently: the manifest's shape, file names (plain names
inside the store), sizes, dtypes, every index file against the checksum the manifest records
for it (at every open: a label, an audio rate or a flow size edited in place is refused), and
every index row against the others and against the shard files' sizes (vectorised, see
``_records.check_table`` / ``check_payload``). Payload bytes are not read at open;
``check="video"`` verifies each video's payload checksum on its first read.
"""

from __future__ import annotations

import json
import mmap
import os
import stat
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import numpy as np
import xxhash

from .._core._device import batch_out
from .._core._errors import ConfigError, DataError, StoreError
from .._core._urls import is_url
from ..remote import LocalShards, frame_runs, read_ranges
from ._annotations import read_annotations
from ._codecs import create_codec, list_codecs
from ._records import (
    ALTERED,
    IndexFiles,
    StoreIndex,
    VideoList,
    VideoRecord,
    check_payload,
    check_table,
)
from ._tracks import TRACK_KINDS, TrackMethods, Tracks, check_track_payload, check_track_tables
from .format import (
    ALLOWED_DTYPES,
    AUDIO_FILE,
    BUILD_PARAMS,
    CHANGE_FILE,
    CHECKSUM_ALGORITHM,
    CHUNKS_FILE,
    FLOW_FILE,
    FLOW_SCORE_FILE,
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

__all__ = ["Store", "open_store"]

#: ``check=`` values of :func:`open_store`
CHECKS = ("video",)
Check = Literal["video"] | None


def open_store(
    path: str | os.PathLike,
    *,
    check: Check = None,
    cache_dir: str | os.PathLike | None = None,
    cache_limit: int | None = None,
):
    """Open a store folder (or an HDF5 file written by ``convert``) for reading.

    ``check="video"`` verifies each video's payload checksum (taken at build) the first time
    the video is read, and raises StoreError naming the file and the video on a mismatch.

    ``path`` may be a URL (``s3://bucket/prefix``): the manifest and index are fetched once,
    windows by byte ranges. ``cache_dir`` / ``cache_limit`` (bytes): a node-local cache of
    the shards' blocks, shared by the processes of a node (see ``hyperframes.remote``).
    """
    if is_url(path):
        from ._remote_store import open_remote

        return open_remote(str(path), check=check, cache_dir=cache_dir, cache_limit=cache_limit)
    if cache_dir is not None or cache_limit is not None:
        raise ConfigError(
            f"cache_dir/cache_limit: a cache serves stores at a URL (s3://...); {path} is local"
        )
    p = Path(path)
    if p.is_file() and p.suffix.lower() in (".h5", ".hdf5"):
        from ._hdf5 import H5Store

        return H5Store(p, check=check)
    return Store(p, check=check)


def is_store(path: str | os.PathLike) -> bool:
    """Whether ``path`` looks like a store (a folder with a manifest, or an HDF5 file), without
    opening it: ``open_store`` still checks everything."""
    if is_url(path):
        from ._remote_store import remote_is_store

        return remote_is_store(str(path))
    p = Path(path)
    if p.is_file():
        return p.suffix.lower() in (".h5", ".hdf5")
    return (p / MANIFEST).is_file()


def check_option(check) -> None:
    if check is not None and check not in CHECKS:
        raise ConfigError(
            f"check={check!r} is not known; use None (reads trust the build's checksums; "
            "`hyperframes verify` recomputes them) or 'video' (each video's payload is "
            "verified the first time it is read)"
        )


def parse_json(raw: bytes | str, where):
    """JSON of a store's file (``where`` names it): a StoreError when it is not JSON, or
    nests deeper than the parser's stack (a crafted file), never a RecursionError."""
    try:
        return json.loads(raw)
    except RecursionError:
        raise StoreError(
            f"{where}: nests deeper than a JSON reader follows (a crafted or corrupt file); "
            "a store's JSON nests a few levels: the store is corrupt"
        ) from None
    except ValueError as e:
        raise StoreError(f"{where}: cannot be read as JSON ({e}); the store is corrupt") from None


def _load_json(path: Path):
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise StoreError(f"{path}: cannot be read as JSON ({e}); the store is corrupt") from None
    return parse_json(raw, path)


_HEX = frozenset("0123456789abcdef")


def is_checksum(value) -> bool:
    """Whether ``value`` is a checksum as manifests record them (xxh3-128, 32 hex digits)."""
    return isinstance(value, str) and len(value) == 32 and _HEX.issuperset(value)


def index_checksum(row: dict, listed_in) -> str:
    """The checksum the manifest records for an index file (every store's manifest records
    one per file, format versions 1 and 2 alike); a StoreError saying how to re-sign the
    store when it records none."""
    want = row.get("checksum")
    if not isinstance(want, str) or not is_checksum(want):
        raise StoreError(
            f"{listed_in}: records no {CHECKSUM_ALGORITHM} checksum for {row['name']} (it has "
            f"{want!r}); every index file is checked against its checksum at open. If the "
            "manifest was edited or written by another tool and the files are as built, "
            "re-sign it with `hyperframes verify --resign STORE` (it records the missing "
            "checksums once the store opens; a store at a URL is re-signed as a folder, then "
            "uploaded again), or rebuild the store"
        )
    return want


def checksum_mapped(f: Path) -> str:
    """xxh3-128 of the file, hashed through a memory map (no copy of its bytes)."""
    with open(f, "rb") as fh:
        if os.fstat(fh.fileno()).st_size == 0:
            return xxhash.xxh3_128_hexdigest(b"")
        with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            return xxhash.xxh3_128_hexdigest(mm)


def checksum_mismatch(where, got: str, want: str, size: int) -> StoreError:
    return StoreError(
        f"{where}: has checksum {got} ({size} bytes), the manifest recorded {want}: the file "
        "was changed or damaged after the build; restore it (or rebuild the store), and run "
        "`hyperframes verify` to see what else changed"
    )


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
    algorithm = m.get("checksum_algorithm", CHECKSUM_ALGORITHM)
    if algorithm != CHECKSUM_ALGORITHM:
        raise StoreError(
            f"{path}: checksum_algorithm {algorithm!r} is unknown; this hyperframes reads "
            f"stores whose checksums are {CHECKSUM_ALGORITHM}: {ALTERED}"
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


#: flow scores are checked at open as change scores are (shape and dtype; values per video,
#: when read: :func:`_motion_slice`)
check_flow_scores = check_change_scores


def _motion_slice(motion, videos, i: int, where) -> np.ndarray | None:
    """Video ``i``'s flow scores (float32 copy), checked finite and >= 0 (a StoreError naming
    ``where``, the file, otherwise), or None when the store has none."""
    out = _change_slice(motion, videos, i)
    if out is not None and not (np.isfinite(out).all() and (out >= 0).all()):
        bad = int(np.flatnonzero(~(np.isfinite(out) & (out >= 0)))[0])
        raise StoreError(
            f"{where}: video {i}'s frame {bad} has flow score {out[bad]!r}; a flow score is a "
            f"finite length >= 0: {ALTERED}"
        )
    return out


class LocalFolder:
    """The files of a store folder, as ``Store`` opens them (``_remote_store.RemoteFolder``
    offers the same for a store at a URL)."""

    def __init__(self, path: Path):
        self.path = path

    def where(self, *parts: str) -> Path:
        return self.path.joinpath(*parts)

    def manifest(self) -> dict:
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
        return _load_json(manifest_path)

    def check_size(self, folder: str, name, listed: int, listed_in) -> int:
        return _file_size(own_file(self.path / folder, name, listed_in), listed)

    def check_index(self, name, listed: int, checksum: str, listed_in) -> None:
        f = own_file(self.path / INDEX_DIR, name, listed_in)
        _file_size(f, listed)
        try:
            got = checksum_mapped(f)
        except OSError as e:
            raise StoreError(f"{f}: cannot be read ({e.strerror})") from None
        if got != checksum:
            raise checksum_mismatch(f, got, checksum, listed)

    def npy(self, name: str) -> np.ndarray:
        return _load_npy(self.path / INDEX_DIR / name)

    def json(self, name: str):
        return _load_json(self.path / INDEX_DIR / name)

    def shards(self, names: list[str], sizes) -> LocalShards:
        return LocalShards([self.path / SHARDS_DIR / n for n in names])


class Store(TrackMethods):
    """A built store. ``videos`` describes every video; ``read`` returns frames.

    ``check="video"``: each video's payload is verified against its checksum (recorded at
    build, format version 2) the first time it is read. Version-1 stores record none, and
    refuse the option: ``hyperframes verify`` checks them shard by shard.

    Tracks (a store built with ``--audio`` / ``--flow``): ``has_audio``, ``audio_info``,
    ``read_audio``, ``has_flow``, ``flow_info``, ``read_flow``, ``homographies``
    (:class:`~hyperframes.store._tracks.TrackMethods`).
    """

    def __init__(self, path: str | os.PathLike, *, check: Check = None, files=None):
        check_option(check)
        #: where the files are: a local folder, or (``_remote_store``) the objects at a URL
        self._files = files = LocalFolder(Path(path)) if files is None else files
        self.path: Path = files.path  # (a URL, a str, for a store in object storage)
        manifest_path = files.where(MANIFEST)
        m = files.manifest()
        check_manifest(m, manifest_path)
        self.manifest = m
        listed = set()
        for row in m["index"]:
            folder, _, name = row["name"].partition("/")
            if folder != INDEX_DIR:
                raise StoreError(
                    f"{manifest_path}: the index file {row['name']!r} is not in {INDEX_DIR}/: "
                    f"{ALTERED}"
                )
            want = index_checksum(row, manifest_path)
            files.check_index(name, row["bytes"], want, manifest_path)
            listed.add(name)
        for name in (VIDEOS_FILE, FRAMES_FILE, CHUNKS_FILE, STRINGS_FILE):
            if name not in listed:
                raise StoreError(
                    f"{manifest_path}: 'index' does not list {INDEX_DIR}/{name}, which every "
                    f"store has: {ALTERED}"
                )
        self._shard_names = [row["name"] for row in m["shards"]]
        if len(set(self._shard_names)) != len(self._shard_names):
            raise StoreError(f"{manifest_path}: 'shards' lists a file twice: {ALTERED}")
        shard_bytes = np.array(
            [
                files.check_size(SHARDS_DIR, row["name"], row["bytes"], manifest_path)
                for row in m["shards"]
            ],
            np.int64,
        )
        self._videos, self._frames, self._chunks = (
            files.npy(f) for f in (VIDEOS_FILE, FRAMES_FILE, CHUNKS_FILE)
        )
        strings = files.json(STRINGS_FILE)
        named = IndexFiles(
            videos=str(files.where(INDEX_DIR, VIDEOS_FILE)),
            frames=str(files.where(INDEX_DIR, FRAMES_FILE)),
            strings=str(files.where(INDEX_DIR, STRINGS_FILE)),
            chunks=str(files.where(INDEX_DIR, CHUNKS_FILE)),
        )
        version = m["format_version"]
        check_table(self._videos, self._frames, strings, dtype=VIDEO_DTYPES[version], files=named)
        if strings.get("shards") != self._shard_names:
            raise StoreError(
                f"{named.strings}: lists the shards {strings.get('shards')!r}, "
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
            shard_files=[str(files.where(SHARDS_DIR, n)) for n in self._shard_names],
            shard_bytes=shard_bytes,
            codec=self.codec_name,
            chunk_frames=0 if self._codec is None else self._codec.chunk_frames,
            itemsize=self.dtype.itemsize,
            files=named,
        )
        if m["num_frames"] != len(self._frames):
            raise StoreError(
                f"{manifest_path}: says num_frames {m['num_frames']}, {named.frames} holds "
                f"{len(self._frames)}: {ALTERED}"
            )
        self._change = None
        if CHANGE_FILE in listed:
            self._change = files.npy(CHANGE_FILE)
            check_change_scores(
                self._change, len(self._frames), files.where(INDEX_DIR, CHANGE_FILE)
            )
        self._motion = None
        self._motion_file = files.where(INDEX_DIR, FLOW_SCORE_FILE)
        if FLOW_SCORE_FILE in listed:
            self._motion = files.npy(FLOW_SCORE_FILE)
            check_flow_scores(self._motion, len(self._frames), self._motion_file)
        self.classes: list[str] = strings["classes"]
        annotations = read_annotations(
            files.npy,
            listed,
            where=lambda name: str(files.where(INDEX_DIR, name)),
            paths=strings["paths"],
            num_classes=len(self.classes),
        )
        audio = files.npy(AUDIO_FILE) if AUDIO_FILE in listed else None
        flow = files.npy(FLOW_FILE) if FLOW_FILE in listed else None
        track_files = {
            "videos": named.videos,
            "audio": str(files.where(INDEX_DIR, AUDIO_FILE)),
            "flow": str(files.where(INDEX_DIR, FLOW_FILE)),
        }
        check_track_tables(audio, flow, self._videos, strings["paths"], files=track_files)
        check_track_payload(
            audio,
            flow,
            self._videos,
            strings["paths"],
            shard_files=[str(files.where(SHARDS_DIR, n)) for n in self._shard_names],
            shard_bytes=shard_bytes,
            files=track_files,
        )
        build = m.get("build")
        self._tracks = Tracks(
            audio,
            flow,
            build if isinstance(build, dict) else {},
            strings["paths"],
            self._track_bytes,
            lambda kind, i: str(self._shard_file(int(self._videos["shard"][i]))),
            check=check == "video",
        )
        #: the whole index (what ``convert_to_hdf5`` copies); ``videos`` reads it per video
        self.index = StoreIndex(
            self._videos, self._frames, strings, self._change, annotations, self._motion
        )
        self.videos = VideoList(self.index)
        #: the payload bytes: memory maps, or byte ranges of objects (``_source``)
        self._source = files.shards(self._shard_names, shard_bytes)
        self._geoms: dict[int, tuple[int, ...]] = {}
        self._views: dict[int, np.ndarray] = {}
        self.check = check
        self._verified: set[int] | None = None
        if check == "video":
            if "payload_xxh3_64" not in (self._videos.dtype.names or ()):
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

    @property
    def shard_names(self) -> list[str]:
        """File names of the payload shards in ``shards/``; the index's ``shard`` column
        numbers them."""
        return list(self._shard_names)

    def change_scores(self, video) -> np.ndarray | None:
        """The video's per-frame change scores recorded at build time (float32, one per stored
        frame; see :func:`hyperframes.sampling.change_score`), or None if the store has none."""
        return _change_slice(self._change, self._videos, self._video_id(video))

    def flow_scores(self, video) -> np.ndarray | None:
        """The video's per-frame flow scores recorded at a ``--flow`` build (float32, one per
        stored frame: frame k's is the mean length of the flow k-1 -> k in stored-frame
        pixels, 0 for frame 0), or None if the store has none (built without flow, or before
        they were recorded)."""
        i = self._video_id(video)
        return _motion_slice(self._motion, self._videos, i, self._motion_file)

    def _video_id(self, video) -> int:
        i = video.id if isinstance(video, VideoRecord) else int(video)
        if not 0 <= i < len(self._videos):
            raise DataError(f"video {i} is out of range: {self.path} holds {len(self._videos)}")
        return i

    # -- raw access -----------------------------------------------------------------------
    def _track_bytes(self, kind: str, i: int, lo: int = 0, hi: int | None = None) -> np.ndarray:
        """Bytes ``lo .. hi`` (None: the end) of video ``i``'s track payload ``kind`` (checked
        at open to lie in its shard): a view of the shard's map, or one ranged read of a
        store at a URL."""
        key, off, nb, _ = TRACK_KINDS[kind]
        table = self._tracks.audio if key == "audio" else self._tracks.flow
        assert table is not None
        o, n = int(table[off][i]), int(table[nb][i])
        hi = n if hi is None else min(hi, n)
        return self._bytes(int(self._videos["shard"][i]), o + lo, max(hi - lo, 0))

    def _shard_file(self, k: int) -> Path | str:
        return self._files.where(SHARDS_DIR, self._shard_names[k])

    def _shard(self, k: int) -> np.ndarray:
        return self._source.whole(k)

    def _bytes(self, k: int, off: int, nbytes: int) -> np.ndarray:
        """Bytes ``off .. off + nbytes`` of shard ``k``: a view of its map, or one ranged read."""
        buf, at = self._source.ranges(k, np.array([off]), np.array([nbytes]))
        return buf[int(at[0]) : int(at[0]) + nbytes]

    def payload_problem(self, video) -> str | None:
        """What is wrong with the video's payload bytes against the checksum taken at build
        (format version 2), or None when they match (``verify`` and ``convert`` ask this)."""
        i = self._video_id(video)
        shard, off, nbytes = self._geom(i)[:3]
        payload = self._bytes(shard, off, nbytes)
        # numpy's stubs give ndarray __buffer__ only for Python >= 3.12
        got = xxhash.xxh3_64_intdigest(memoryview(payload))  # type: ignore[arg-type]
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
        problem = self.payload_problem(i)
        if problem is not None:
            raise StoreError(problem)
        assert self._verified is not None  # only called with check="video"
        self._verified.add(i)

    def _geom(self, i: int) -> tuple[int, ...]:
        """(shard, offset, nbytes, F, C, H, W, chunk_start, num_chunks) of video ``i``, cached
        as plain ints."""
        g = self._geoms.get(i)
        if g is None:
            r = self._videos[i]
            g = tuple(int(r[k]) for k in _GEOMETRY)
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
            shard, off, nbytes, *shape = self._geom(i)[:7]
            view = self._bytes(shard, off, nbytes).view(self.dtype).reshape(shape)
            self._views[i] = view
        return view

    # -- reads ----------------------------------------------------------------------------
    def _check_indices(self, i: int, idx: np.ndarray) -> np.ndarray:
        n = self._geom(i)[3]
        if idx.size and (idx.min() < 0 or idx.max() >= n):
            bad = idx[(idx < 0) | (idx >= n)][0]
            raise DataError(
                f"frame index {bad} is out of range for video {i} ({self.videos.paths[i]}), "
                f"which has {n} frames"
            )
        return idx

    def read_numpy(self, video, frame_indices, *, out: np.ndarray | None = None) -> np.ndarray:
        """Frames ``frame_indices`` of ``video`` as an ``(n, C, H, W)`` array (a copy)."""
        i = self._video_id(video)
        idx = self._check_indices(i, np.asarray(frame_indices, dtype=np.int64).reshape(-1))
        shape = (len(idx), *self._geom(i)[4:7])
        if out is None:
            out = np.empty(shape, self.dtype)
        elif out.shape != shape or out.dtype != self.dtype:
            raise DataError(f"out has shape {out.shape} {out.dtype}; needs {shape} {self.dtype}")
        self._read_into(i, idx, out)
        return out

    def _read_into(self, i: int, idx: np.ndarray, out: np.ndarray) -> None:
        """Frames ``idx`` (checked) of video ``i`` into ``out`` (its shape and dtype checked)."""
        if self._verified is not None and i not in self._verified:
            self._verify_payload(i)
        if self._codec is None:
            if self._source.is_local:
                _take(self.frames_view(i), idx, out)
            else:
                self._read_raw_runs(i, idx, out)
        elif self._codec.decode_to_address is not None and out.flags.c_contiguous:
            self._read_batch_at([i], idx[None], out[None])
        else:
            self._read_chunks(i, idx, out)

    def _read_chunks(self, i: int, idx: np.ndarray, out: np.ndarray) -> None:
        """Decode the chunks holding frames ``idx`` of video ``i`` into ``out``.

        No array is allocated per chunk and no copy holds the GIL: a chunk whose frames are all
        wanted, in order, is decoded straight into ``out``; one partly wanted is decoded into
        a per-thread scratch array and its run of frames copied (contiguous numpy copies
        release the GIL; the fancy-indexed copy the reader used before did not)."""
        shard, c0, k = self._geom(i)[0], self._geom(i)[7], self._geom(i)[8]
        codec = self._codec
        assert codec is not None  # _read_into reads a raw store itself
        if not len(idx):
            return
        if codec.chunk_frames == 1:  # one frame per chunk (jpeg): chunk j is frame j
            rows = self._chunks[c0 + idx]
            buf, offs = self._source.ranges(shard, rows["offset"], rows["nbytes"])
            datas = [buf[o : o + n] for o, n in zip(offs.tolist(), rows["nbytes"].tolist())]
            if codec.decode_frames is not None:
                codec.decode_frames(datas, out)
            else:
                for j, data in enumerate(datas):
                    codec.decode_into(data, out[j : j + 1])
            return
        chunks = self._chunks[c0 : c0 + k]
        which = np.searchsorted(chunks["first_frame"], idx, side="right") - 1
        cuts = np.flatnonzero(np.diff(which)) + 1
        starts, ends = [0, *cuts.tolist()], [*cuts.tolist(), len(idx)]
        rows = chunks[which[starts]]
        buf, offs = self._source.ranges(shard, rows["offset"], rows["nbytes"])
        for p0, p1, off, nbytes, first, n in zip(
            starts,
            ends,
            offs.tolist(),
            rows["nbytes"].tolist(),
            rows["first_frame"].tolist(),
            rows["num_frames"].tolist(),
        ):
            data = buf[off : off + nbytes]
            local = idx[p0:p1] - first
            a, m = int(local[0]), p1 - p0
            run = int(local[-1]) - a == m - 1 and (m < 3 or bool(np.all(np.diff(local) == 1)))
            if run and a == 0 and m == n:  # the whole chunk, in order: straight into out
                codec.decode_into(data, out[p0:p1])
                continue
            block = _scratch((n, *out.shape[1:]), out.dtype)
            codec.decode_into(data, block)
            if run:
                out[p0:p1] = block[a : a + m]
            else:
                np.take(block, local, axis=0, out=out[p0:p1])

    def encoded_frames(self, video, frame_indices) -> list[np.ndarray]:
        """The stored JPEG of each of ``frame_indices`` (read-only views of the memory-mapped
        shard, nothing decoded): for decoding elsewhere, e.g. a batch at once on a GPU
        (``HyperframeDataset(decode_device="cuda")``). Only a jpeg store keeps frames apart."""
        if self.codec_name != "jpeg":
            raise StoreError(
                f"encoded_frames needs a jpeg store (one JPEG per frame); {self.path} uses codec "
                f"{self.codec_name!r}"
            )
        i = self._video_id(video)
        idx = self._check_indices(i, np.asarray(frame_indices, dtype=np.int64).reshape(-1))
        if self._verified is not None and i not in self._verified:
            self._verify_payload(i)
        rows = self._chunks[self._geom(i)[7] + idx]
        buf, offs = self._source.ranges(self._geom(i)[0], rows["offset"], rows["nbytes"])
        return [buf[o : o + n] for o, n in zip(offs.tolist(), rows["nbytes"].tolist())]

    def read(self, video, frame_indices):
        """Frames of ``video`` as a torch tensor ``(len(frame_indices), C, H, W)``."""
        import torch

        return torch.from_numpy(self.read_numpy(video, frame_indices))

    def read_batch(self, requests: Sequence[tuple], *, out=None, size=None, boxes=None):
        """Many ``(video, frame_indices)`` reads in one call, planned by location.

        Returns one ``(B, T, C, H, W)`` tensor when every request has the same shape (written
        into ``out`` when given), else a list of tensors. With ``size`` (h, w) every window is
        cropped to its box of ``boxes`` ((B, 4) ``(top, left, height, width)`` in its stored
        pixels; default: the centred box of ``size``) and resized to ``size`` into one
        (B, T, C, h, w) tensor, whatever the stored shapes (:mod:`hyperframes.store._crop`).
        """
        import torch

        reqs = [(self._video_id(v), np.asarray(ix, np.int64).reshape(-1)) for v, ix in requests]
        for v, ix in reqs:
            self._check_indices(v, ix)
        if size is not None or boxes is not None:
            return self._read_boxes(reqs, size, boxes, out)
        geoms = [self._geom(v) for v, _ in reqs]
        self.fetch_batch(reqs)
        shapes = {(len(ix), *g[4:7]) for (_, ix), g in zip(reqs, geoms)}
        order = sorted(
            range(len(reqs)), key=lambda b: (geoms[b][0], geoms[b][1], reqs[b][1][:1].tolist())
        )
        if len(shapes) == 1:
            (shape,) = shapes
            out = batch_out(out, (len(reqs), *shape), self.dtype)
            arr = out.numpy()
            if self._codec is not None and self._codec.decode_to_address and arr.flags.c_contiguous:
                self._read_batch_at([v for v, _ in reqs], np.stack([ix for _, ix in reqs]), arr)
                return out
            for b in order:
                self._read_into(reqs[b][0], reqs[b][1], arr[b])
            return out
        result: list[torch.Tensor | None] = [None] * len(reqs)
        for b in order:
            result[b] = torch.from_numpy(self.read_numpy(*reqs[b]))
        return result

    def _batch_plan(self, reqs) -> list:
        return [(self._geom(v)[0], *self._ranges(self._geom(v), ix)) for v, ix in reqs]

    def fetch_batch(self, requests: Sequence[tuple]) -> None:
        """A store at a URL: fetch every range the ``(video, frame_indices)`` reads of a batch
        need at once (or take them from the read-ahead), for this thread's next reads of
        them; nothing for a local store."""
        if not self._source.is_local:
            reqs = [(self._video_id(v), np.asarray(ix, np.int64).reshape(-1)) for v, ix in requests]
            self._source.prefetch(self._batch_plan(reqs))

    def read_ahead(self, batches: Sequence[Sequence[tuple]], *, budget: int) -> int:
        """Hand over the batches to be read next, in order (each a list of ``(video,
        frame_indices)``): a store at a URL fetches their ranges in the background while at
        most ``budget`` bytes are held (:mod:`~hyperframes.remote._ahead`). Returns how many
        were taken, from the first (offer the rest again once a batch was read)."""
        if self._source.is_local:
            return len(batches)
        for n, requests in enumerate(batches):
            try:
                reqs = [
                    (self._video_id(v), np.asarray(ix, np.int64).reshape(-1)) for v, ix in requests
                ]
                for v, ix in reqs:
                    self._check_indices(v, ix)
            except (DataError, StoreError, IndexError, TypeError, ValueError):
                return len(batches)  # (its read raises the error; nothing fetched for it)
            if not self._source.ahead(self._batch_plan(reqs), budget):
                return n
        return len(batches)

    def cancel_read_ahead(self) -> None:
        """Drop the batches handed to :meth:`read_ahead` and not read yet."""
        ahead = getattr(self._source, "_ahead", None)
        if ahead is not None:
            ahead.cancel()

    def _read_boxes(self, reqs, size, boxes, out):
        """``read_batch`` with ``size`` / ``boxes``."""
        import torch

        from ._crop import centre_boxes, read_boxes

        if size is None:
            raise DataError("read_batch: boxes= needs size= (h, w), the size they resize to")
        size = (int(size[0]), int(size[1]))
        shapes = {(len(ix), int(self._geom(v)[4])) for v, ix in reqs}
        if len(shapes) != 1:
            raise DataError(
                f"read_batch: windows of different lengths or channels {sorted(shapes)} cannot "
                "share one buffer"
            )
        ((t, c),) = shapes
        if boxes is None:
            boxes = centre_boxes([self._geom(v)[5:7] for v, _ in reqs], size)
        out = batch_out(out, (len(reqs), t, c, *size), self.dtype)
        read_boxes(self, reqs, boxes, out.numpy())
        return out if isinstance(out, torch.Tensor) else torch.from_numpy(out)

    def _read_batch_at(self, vids: list[int], idx: np.ndarray, arr: np.ndarray) -> None:
        """``read_batch`` for a codec that decodes between addresses (lz4): every window's runs
        of frames from one chunk are planned at once with numpy, then each run is one C call
        without the GIL, given integers: about a microsecond of Python per chunk, where the
        per-window path spent ~15 µs, as long as decoding the chunk (then two threads spent
        their time handing the GIL to each other and were slower than one). Measured on 2
        cores, loader: 4.0k windows/s before, 8.5-9.4k now in one thread; two threads ~1.1x
        that (a chunk decodes in ~20 µs, so the GIL still changes hands that often)."""
        if self._verified is not None:
            for i in set(vids) - self._verified:
                self._verify_payload(i)
        b, t = idx.shape
        n = b * t
        if not n:
            return
        videos = self._videos[np.asarray(vids, np.int64)]
        c0, k = videos["chunk_start"], videos["num_chunks"]
        chunk = np.empty((b, t), np.int64)
        for w in range(b):  # the chunk of each frame: the last whose first frame is <= it
            first = self._chunks["first_frame"][c0[w] : c0[w] + k[w]]
            chunk[w] = c0[w] - 1 + np.searchsorted(first, idx[w], side="right")
        chunk, flat = chunk.reshape(n), idx.reshape(n)
        starts = np.ones(n, bool)
        starts[1:] = chunk[1:] != chunk[:-1]
        starts[::t] = True  # a run never crosses windows
        rs = np.flatnonzero(starts)
        m = np.diff(np.append(rs, n))
        rows = self._chunks[chunk[rs]]
        a = flat[rs] - rows["first_frame"]
        step = np.ones(n, bool)
        step[1:] = flat[1:] - flat[:-1] == 1
        step[rs] = True
        in_order = np.logical_and.reduceat(step, rs)
        whole = in_order & (a == 0) & (m == rows["num_frames"])
        # maps held: the addresses stay valid
        maps, src = self._source.addresses(videos["shard"][rs // t], rows["offset"], rows["nbytes"])
        fb = arr[0, 0].nbytes
        dst = arr.ctypes.data + rs * fb
        frames = arr.reshape(n, *arr.shape[2:])
        # the callers check both
        assert self._codec is not None and self._codec.decode_to_address is not None
        decode = self._codec.decode_to_address
        scratch: np.ndarray | None = None
        scr = 0  # scratch's address, set with it
        for s_, nb, d, mr, w_, ordered, nf, a_, p0 in zip(
            src.tolist(),
            rows["nbytes"].tolist(),
            dst.tolist(),
            m.tolist(),
            whole.tolist(),
            in_order.tolist(),
            rows["num_frames"].tolist(),
            a.tolist(),
            rs.tolist(),
        ):
            if w_:  # the whole chunk, in order: straight into the batch
                _check_size(decode(s_, nb, d, mr * fb), mr * fb)
                continue
            if scratch is None:
                scratch = _scratch((self._codec.chunk_frames, *arr.shape[2:]), arr.dtype)
                scr = scratch.ctypes.data
            _check_size(decode(s_, nb, scr, nf * fb), nf * fb)
            if ordered:  # a run of the chunk's frames
                frames[p0 : p0 + mr] = scratch[a_ : a_ + mr]
            else:  # repeats or another order: picked frame by frame
                local = flat[p0 : p0 + mr] - (int(flat[p0]) - a_)
                np.take(scratch[:nf], local, axis=0, out=frames[p0 : p0 + mr])
        del maps

    def _ranges(self, geom, idx: np.ndarray):
        c, h, w = geom[4:7]
        fb = c * h * w * self.dtype.itemsize
        return read_ranges(geom, self._chunks, idx, frame_bytes=fb, chunked=self._codec is not None)

    def _read_raw_runs(self, i: int, idx: np.ndarray, out: np.ndarray) -> None:
        """A raw store at a URL: one byte range per run of consecutive frames wanted."""
        shard, off, _, _, c, h, w = self._geom(i)[:7]
        if not len(idx):
            return
        fb = c * h * w * self.dtype.itemsize
        frames, inverse, first, run, lengths = frame_runs(idx)
        buf, at = self._source.ranges(shard, off + frames[first] * fb, lengths * fb)
        pos = (at[run] + (frames - frames[first][run]) * fb) // fb
        stack = buf[: len(buf) // fb * fb].view(self.dtype).reshape(-1, c, h, w)
        np.take(stack, pos[inverse], axis=0, out=out)

    def close(self) -> None:
        self._views.clear()
        self._source.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _change_slice(change, videos, i: int) -> np.ndarray | None:
    if change is None:
        return None
    f0, n = int(videos["frame_start"][i]), int(videos["num_frames"][i])
    return np.array(change[f0 : f0 + n], dtype=np.float32)


#: the index columns ``Store._geom`` caches per video, in this order
_GEOMETRY = (
    "shard",
    "offset",
    "nbytes",
    "num_frames",
    "channels",
    "height",
    "width",
    "chunk_start",
    "num_chunks",
)

_local = threading.local()


def _scratch(shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """An array of ``shape`` owned by the calling thread, reused from call to call (a chunk
    decoded only in part lands here; one allocation per thread, not one per chunk)."""
    size = int(np.prod(shape)) * np.dtype(dtype).itemsize
    buf = getattr(_local, "scratch", None)
    if buf is None or buf.size < size:
        buf = _local.scratch = np.empty(size, np.uint8)
    return buf[:size].view(dtype).reshape(shape)


def _check_size(got: int, want: int) -> None:
    if got != want:
        raise ValueError(
            f"a chunk decompresses to {got} bytes (negative: corrupt data), the index says {want}"
        )


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
