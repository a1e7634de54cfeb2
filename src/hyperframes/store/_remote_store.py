"""Open a store at a URL: the objects under ``s3://bucket/prefix`` read as a store folder.

At open, one LIST gives every object's size and ETag, then the manifest and each index file
are fetched once; an index file is checked against the manifest's size and checksum (xxh3-128)
before it is used, then the reader makes the same checks as for a folder (``_open``).
Payload bytes are read later, by ranges (``_source.RemoteShards``).

A URL without ``manifest.json`` is not a store: an incomplete one when other objects lie under
it (the manifest is uploaded last, see ``_publish``).
"""

from __future__ import annotations

import io
import math
import os

import numpy as np
import xxhash

from .._core._errors import ConfigError, StoreError
from ..remote import BLOCK_BYTES, BlockCache, RemoteFiles, RemoteShards, is_url, join_url
from ._folder import check_manifest_bytes, checksum_mismatch, parse_json
from ._open import check_manifest
from ._reader import Store
from ._table_checks import ALTERED
from .format import INDEX_DIR, MANIFEST

__all__ = ["RemoteFolder", "open_remote", "remote_is_store"]


def open_remote(
    url: str,
    *,
    check=None,
    cache_dir: str | os.PathLike | None = None,
    cache_limit: int | None = None,
    cache_block_bytes: int | None = None,
):
    """A :class:`~hyperframes.store.Store` reading the store at ``url`` (see the module)."""
    if url.lower().endswith((".h5", ".hdf5")):
        raise ConfigError(
            f"{url}: an HDF5 store is read from a local file; copy it from object storage first, "
            "or keep the store as a folder store at the URL (convert writes HDF5 to URLs too)"
        )
    cache = None
    if cache_dir is not None:
        cache = BlockCache(cache_dir, cache_limit, block_bytes=cache_block_bytes or BLOCK_BYTES)  # type: ignore[arg-type]  # (checked there, with the message naming cache_limit)
    elif cache_limit is not None:
        raise ConfigError(f"cache_limit={cache_limit!r} needs a cache_dir (where to keep it)")
    return Store(url, check=check, files=RemoteFolder(url, cache=cache))


def npy_from_bytes(data: bytes, where) -> np.ndarray:
    """The array of an ``.npy`` file's bytes, its header checked against the bytes it has
    before anything is allocated: a header claiming more rows than the data holds (a
    crafted file asking for terabytes) is a StoreError, not a MemoryError."""
    try:
        f = io.BytesIO(data)  # (shares the bytes: no copy)
        version = np.lib.format.read_magic(f)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(f)
        elif version in ((2, 0), (3, 0)):
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(f)
        else:
            raise ValueError(f"npy format version {version} is unknown")
        if dtype.hasobject:
            raise ValueError(f"dtype {dtype} holds Python objects")
        body = len(data) - f.tell()
        want = math.prod(shape) * dtype.itemsize
        if want != body:
            raise ValueError(
                f"its header says shape {shape} of {dtype} ({want} bytes), it holds {body}"
            )
        flat = np.frombuffer(data, dtype, offset=f.tell())
        return flat.reshape(shape, order="F") if fortran else flat.reshape(shape)
    except (OSError, ValueError, TypeError) as e:
        raise StoreError(f"{where}: cannot be read as an index ({e}); {ALTERED}") from None


def remote_is_store(url: str) -> bool:
    return MANIFEST in RemoteFiles(url).listing()


def _plain(name, listed_in) -> str:
    if (
        not isinstance(name, str)
        or name in ("", ".", "..")
        or any(c in name for c in ("/", "\\", "\0"))
    ):
        raise StoreError(
            f"{listed_in}: names the file {name!r}, which is not a plain file name; a store "
            f"reads only its own files: {ALTERED}"
        )
    return name


class RemoteFolder:
    """What ``Store`` needs of its files (as ``_folder.LocalFolder``), for a URL."""

    def __init__(self, url: str, *, cache=None):
        if not is_url(url):
            raise ConfigError(f"{url!r} is not a store URL (s3://bucket/prefix)")
        self.path = url.rstrip("/")
        self.files = RemoteFiles(self.path)
        self.cache = cache
        self._manifest: dict = {}
        self._index: dict[str, bytes] = {}

    @property
    def traffic(self):
        return self.files.traffic

    def where(self, *parts: str) -> str:
        return join_url(self.path, *parts)

    def manifest(self) -> dict:
        listing = self.files.listing()
        if MANIFEST not in listing:
            if listing:
                raise StoreError(
                    f"{self.path}: the store is incomplete ({MANIFEST} is missing: an upload was "
                    "interrupted or is running); rerun the same `hyperframes build` (or "
                    "`convert`) command to finish it"
                )
            raise StoreError(f"{self.path}: no store here (no object under this URL)")
        check_manifest_bytes(listing[MANIFEST]["size"], self.where(MANIFEST))
        m = parse_json(self.files.read(MANIFEST), self.where(MANIFEST))
        self._manifest = m if isinstance(m, dict) else {}
        return m

    def check_size(self, folder: str, name, listed: int, listed_in) -> int:
        rel = f"{folder}/{_plain(name, listed_in)}"
        info = self.files.listing().get(rel)
        if info is None:
            raise StoreError(f"{self.where(rel)}: missing; the store is incomplete or damaged")
        if info["size"] != listed:
            raise StoreError(
                f"{self.where(rel)}: is {info['size']} bytes, the manifest says {listed}: the "
                "object is truncated or damaged; rebuild the store or upload it again"
            )
        return listed

    def check_index(self, name, listed: int, checksum: str, listed_in) -> None:
        """The index object, fetched once, against its size and the manifest's checksum."""
        self.check_size(INDEX_DIR, name, listed, listed_in)
        data = self.files.read(f"{INDEX_DIR}/{name}")
        got = xxhash.xxh3_128_hexdigest(data)
        if len(data) != listed or got != checksum:
            raise checksum_mismatch(self.where(INDEX_DIR, name), got, checksum, len(data))
        self._index[name] = data

    def npy(self, name: str) -> np.ndarray:
        where = self.where(INDEX_DIR, name)
        try:
            return npy_from_bytes(self._index[name], where)
        except KeyError:
            raise StoreError(f"{where}: not listed in the manifest; {ALTERED}") from None

    def json(self, name: str):
        where = self.where(INDEX_DIR, name)
        if name not in self._index:
            raise StoreError(f"{where}: not listed in the manifest; {ALTERED}")
        return parse_json(self._index[name], where)

    def shards(self, names: list[str], sizes) -> RemoteShards:
        listing = self.files.listing()
        return RemoteShards(
            self.files,
            names,
            [int(s) for s in sizes],
            [listing[f"shards/{n}"]["etag"] for n in names],
            cache=self.cache,
        )


def verify_remote(url: str) -> list[str]:
    """``verify_store`` for a URL: every object the manifest lists against its size and
    checksum (each read once, streamed), then the checks of opening the store."""
    folder = RemoteFolder(url)
    m = folder.manifest()
    try:
        check_manifest(m, folder.where(MANIFEST))
    except StoreError as e:
        return [str(e)]
    listing = folder.files.listing()
    problems: list[str] = []
    rows = [r["name"] for r in m["index"]] + [f"shards/{r['name']}" for r in m["shards"]]
    sums = {r["name"]: r.get("checksum") for r in m["index"]}
    sums.update({f"shards/{r['name']}": r.get("checksum") for r in m["shards"]})
    sizes = {r["name"]: r["bytes"] for r in m["index"]}
    sizes.update({f"shards/{r['name']}": r["bytes"] for r in m["shards"]})
    unreadable = False
    fs = folder.files.fs
    for rel in rows:
        info = listing.get(rel)
        if info is None:
            problems.append(f"{folder.where(rel)}: missing")
            unreadable = True
            continue
        if info["size"] != sizes[rel]:
            problems.append(
                f"{folder.where(rel)}: {info['size']} bytes, expected {sizes[rel]} (truncated "
                "or damaged)"
            )
            unreadable = True
            continue
        h = xxhash.xxh3_128()
        with fs.open(folder.where(rel).partition("://")[2], "rb", block_size=8 << 20) as f:
            while data := f.read(8 << 20):
                h.update(data)
        if h.hexdigest() != sums[rel]:
            problems.append(
                f"{folder.where(rel)}: checksum {h.hexdigest()} does not match the manifest's "
                f"{sums[rel]} ({m.get('checksum_algorithm')})"
            )
    if unreadable or problems:
        return problems
    try:
        Store(url, files=RemoteFolder(url)).close()
    except StoreError as e:
        return [str(e)]
    return problems
