"""A store folder's files as opening reads them, and the folder's part of the open sequence.

The files: JSON and ``.npy`` index files read with every failure a StoreError, checksums of
index files against the manifest's (:func:`index_checksum`, :func:`checksum_mapped`), file
names that must stay inside the store (:func:`own_file`) and sizes that must be the listed
ones. :class:`LocalFolder` offers them for a local folder (``_remote_store.RemoteFolder`` the
same for objects at a URL). :class:`FolderIndex` is the folder's
:class:`~hyperframes.store._open.IndexSource`: the index files listed and checksummed, the
shards' sizes, the codec, and where each payload lies in the shards.
"""

from __future__ import annotations

import mmap
import os
import re
import stat
from pathlib import Path

import numpy as np
import xxhash

from .._core._errors import ConfigError, StoreError
from .._core._json import loads_json
from .._core._limits import MAX_MANIFEST_BYTES
from ..remote import LocalShards
from ._codecs import Codec, create_codec
from ._open import IndexSource
from ._table_checks import ALTERED, IndexFiles, check_payload
from ._track_checks import check_track_payload
from .format import (
    BUILD_PARAMS,
    CHECKSUM_ALGORITHM,
    CHUNKS_FILE,
    FRAMES_FILE,
    GENERATIONS_DIR,
    INDEX_DIR,
    MANIFEST,
    SHARDS_DIR,
    STRINGS_FILE,
    VIDEOS_FILE,
)


def parse_json(raw: bytes | str, where):
    """JSON of a store's file (``where`` names it): a StoreError when it is not JSON, or
    nests deeper than the parser's stack (a crafted file), never a RecursionError."""
    try:
        return loads_json(
            raw, where, StoreError, hint="a store's JSON nests a few levels: the store is corrupt"
        )
    except ValueError as e:  # StoreError is not one: a too-deep file is said as such
        raise StoreError(f"{where}: cannot be read as JSON ({e}); the store is corrupt") from None


def check_manifest_bytes(size: int, where) -> None:
    """A manifest is read whole: one over :data:`MAX_MANIFEST_BYTES` is refused before it is
    read (a crafted or corrupt file; a real one is kilobytes to a few MiB)."""
    if size > MAX_MANIFEST_BYTES:
        raise StoreError(
            f"{where}: is {size:,} bytes; allowed: a manifest of at most "
            f"{MAX_MANIFEST_BYTES >> 20} MiB (it is read whole at every open): the file is "
            "corrupt or not a hyperframes manifest; rebuild the store"
        )


def load_manifest(path: Path):
    """The JSON of a local ``manifest.json``, its size bounded before it is read."""
    try:
        size = path.stat().st_size
    except OSError as e:
        raise StoreError(f"{path}: cannot be read as JSON ({e}); the store is corrupt") from None
    check_manifest_bytes(size, path)
    return _load_json(path)


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
        return load_manifest(manifest_path)

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

    def index_bytes(self, name: str) -> bytes:
        """The bytes of the index file ``name`` (what ``convert --codec`` copies)."""
        return (self.path / INDEX_DIR / name).read_bytes()

    def shards(self, names: list[str], sizes) -> LocalShards:
        return LocalShards([self.path / SHARDS_DIR / n for n in names])


class FolderIndex(IndexSource):
    """A store folder's index as :func:`~hyperframes.store._open.open_index` reads it, from
    ``files`` (a :class:`LocalFolder`, or ``_remote_store.RemoteFolder``). After the open:
    ``shard_names``, ``shard_bytes`` (as checked), ``chunks`` (the chunk table) and ``codec``
    (None for raw)."""

    def __init__(self, files) -> None:
        self.files = files
        self.manifest_where = files.where(MANIFEST)
        self.listed: set[str] = set()
        self.codec: Codec | None = None

    def read_manifest(self):
        return self.files.manifest()

    def check_files(self, m: dict) -> dict:
        """Every index file in ``index/``, against its size and checksum, the four every store
        has among them; the shards listed once each, at their sizes."""
        files, manifest_path = self.files, self.manifest_where
        for row in m["index"]:
            folder, _, name = row["name"].partition("/")
            if folder != INDEX_DIR:
                raise StoreError(
                    f"{manifest_path}: the index file {row['name']!r} is not in {INDEX_DIR}/: "
                    f"{ALTERED}"
                )
            want = index_checksum(row, manifest_path)
            files.check_index(name, row["bytes"], want, manifest_path)
            self.listed.add(name)
        for name in (VIDEOS_FILE, FRAMES_FILE, CHUNKS_FILE, STRINGS_FILE):
            if name not in self.listed:
                raise StoreError(
                    f"{manifest_path}: 'index' does not list {INDEX_DIR}/{name}, which every "
                    f"store has: {ALTERED}"
                )
        self.shard_names = [row["name"] for row in m["shards"]]
        if len(set(self.shard_names)) != len(self.shard_names):
            raise StoreError(f"{manifest_path}: 'shards' lists a file twice: {ALTERED}")
        self.shard_bytes = np.array(
            [
                files.check_size(SHARDS_DIR, row["name"], row["bytes"], manifest_path)
                for row in m["shards"]
            ],
            np.int64,
        )
        self.shard_files = [str(files.where(SHARDS_DIR, n)) for n in self.shard_names]
        self.manifest = m
        return m

    def tables(self):
        files = self.files
        videos, frames, self.chunks = (
            files.npy(f) for f in (VIDEOS_FILE, FRAMES_FILE, CHUNKS_FILE)
        )
        strings = files.json(STRINGS_FILE)
        self.named = IndexFiles(
            videos=self.where(VIDEOS_FILE),
            frames=self.where(FRAMES_FILE),
            strings=self.where(STRINGS_FILE),
            chunks=self.where(CHUNKS_FILE),
        )
        return videos, frames, strings

    def has(self, name: str) -> bool:
        return name in self.listed

    def npy(self, name: str) -> np.ndarray:
        return self.files.npy(name)

    def where(self, name: str) -> str:
        return str(self.files.where(INDEX_DIR, name))

    def frames_mismatch(self, said: int, held: int) -> StoreError:
        return StoreError(
            f"{self.manifest_where}: says num_frames {said}, {self.named.frames} holds "
            f"{held}: {ALTERED}"
        )

    def check_payload(self, videos: np.ndarray, strings: dict) -> None:
        """The shards the strings list are the manifest's; the codec can be made; each
        video's payload and chunk rows lie in its shard (``check_payload``)."""
        m, manifest_path = self.manifest, self.manifest_where
        if strings.get("shards") != self.shard_names:
            raise StoreError(
                f"{self.named.strings}: lists the shards {strings.get('shards')!r}, "
                f"{manifest_path} lists {self.shard_names!r}: {ALTERED}"
            )
        codec_name = m["codec"]["name"]
        if codec_name != "raw":
            params = {k: v for k, v in m["codec"].items() if k != "name"}
            try:
                self.codec = create_codec(codec_name, **params)
            except (ConfigError, TypeError, ValueError) as e:
                raise StoreError(f"{manifest_path}: codec {m['codec']!r}: {e}") from None
            if self.codec.chunk_frames < 1:
                raise StoreError(
                    f"{manifest_path}: codec {m['codec']!r} has chunks of "
                    f"{self.codec.chunk_frames} frames: {ALTERED}"
                )
        check_payload(
            videos,
            self.chunks,
            strings["paths"],
            shard_files=self.shard_files,
            shard_bytes=self.shard_bytes,
            codec=codec_name,
            chunk_frames=0 if self.codec is None else self.codec.chunk_frames,
            itemsize=np.dtype(m["dtype"]).itemsize,
            files=self.named,
            channels=None if self.codec is None else self.codec.channels,
            max_chunk_bytes=None if self.codec is None else self.codec.max_chunk_bytes,
            chunk_bytes=None if self.codec is None else self.codec.chunk_bytes,
        )

    def check_track_payload(self, audio, flow, videos: np.ndarray, paths, files: dict) -> None:
        check_track_payload(
            audio,
            flow,
            videos,
            paths,
            shard_files=self.shard_files,
            shard_bytes=self.shard_bytes,
            files=files,
        )


def generation_prefix(manifest: dict, where) -> str:
    """``generations/G/`` for a manifest naming its ``generation`` G, else ""."""
    g = manifest.get("generation")
    if g is None:
        return ""
    if not isinstance(g, str) or not re.fullmatch(r"[0-9a-f]{16}", g):
        raise StoreError(
            f"{where}: 'generation' is {g!r}, expected 16 hex digits (the build's own name "
            f"for its objects): {ALTERED}"
        )
    return f"{GENERATIONS_DIR}/{g}/"
