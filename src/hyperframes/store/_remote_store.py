"""Open a store at a URL: the objects under ``s3://bucket/prefix`` read as a store folder.

At open, one LIST gives every object's size and ETag, then the manifest and each index file
are fetched once; an index file is checked against the manifest's size and checksum (xxh3-128)
before it is used, then the reader makes the same checks as for a folder (``_open``).
Payload bytes are read later, by ranges (``_source.RemoteShards``).

A URL without ``manifest.json`` is not a store: an incomplete one when other objects lie under
it (the manifest is uploaded last, see ``_publish``). A manifest naming a ``generation`` has its
shards and index files under ``generations/G/`` (``format.GENERATIONS_DIR``): a rebuild writes
a new generation and then replaces the manifest, so a store opened before reads the objects it
opened, untouched, until ``hyperframes gc`` deletes them.
"""

from __future__ import annotations

import io
import math
import os

import numpy as np
import xxhash

from .._core._errors import ConfigError, StoreError
from ..remote import BLOCK_BYTES, BlockCache, RemoteFiles, RemoteShards, is_url, join_url
from ._folder import check_manifest_bytes, checksum_mismatch, generation_prefix, parse_json
from ._open import check_manifest
from ._reader import Store
from ._table_checks import ALTERED
from .format import INDEX_DIR, MANIFEST, SHARDS_DIR

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
        #: where shards/ and index/ lie under the URL ("" or "generations/G/")
        self.prefix = ""

    @property
    def traffic(self):
        return self.files.traffic

    def rel(self, folder: str, name: str) -> str:
        """The object name of ``folder/name`` (shards, index) under the URL."""
        return f"{self.prefix}{folder}/{name}"

    def where(self, *parts: str) -> str:
        if len(parts) > 1 and parts[0] in (SHARDS_DIR, INDEX_DIR):
            return join_url(self.path, self.rel(parts[0], "/".join(parts[1:])))
        return join_url(self.path, *parts)

    def manifest(self) -> dict:
        """The manifest, read as listed: a manifest replaced between the listing and its read
        (a build publishing meanwhile) is listed and read again, so the objects this store
        reads are those of one build."""
        for attempt in range(3):
            listing = self.files.listing(refresh=attempt > 0)
            if MANIFEST not in listing:
                if listing:
                    raise StoreError(
                        f"{self.path}: the store is incomplete ({MANIFEST} is missing: an upload "
                        "was interrupted or is running); rerun the same `hyperframes build` (or "
                        "`convert`) command to finish it"
                    )
                raise StoreError(f"{self.path}: no store here (no object under this URL)")
            check_manifest_bytes(listing[MANIFEST]["size"], self.where(MANIFEST))
            try:
                data = self.files.read(MANIFEST, etag=listing[MANIFEST]["etag"] or None)
                break
            except StoreError:
                if attempt == 2:
                    raise
        m = parse_json(data, self.where(MANIFEST))
        self._manifest = m if isinstance(m, dict) else {}
        self.prefix = generation_prefix(self._manifest, self.where(MANIFEST))
        return m

    def check_size(self, folder: str, name, listed: int, listed_in) -> int:
        rel = self.rel(folder, _plain(name, listed_in))
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
        rel = self.rel(INDEX_DIR, name)
        data = self.files.read(rel, etag=self.files.listing()[rel]["etag"] or None)
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

    def index_bytes(self, name: str) -> bytes:
        """The bytes of the index file ``name``, as checked at open."""
        if name not in self._index:
            raise StoreError(
                f"{self.where(INDEX_DIR, name)}: not listed in the manifest; {ALTERED}"
            )
        return self._index[name]

    def shards(self, names: list[str], sizes) -> RemoteShards:
        listing = self.files.listing()
        return RemoteShards(
            self.files,
            names,
            [int(s) for s in sizes],
            [listing[self.rel(SHARDS_DIR, n)]["etag"] for n in names],
            cache=self.cache,
            folder=self.rel(SHARDS_DIR, "").rstrip("/"),
        )


def verify_remote(url: str) -> list[str]:
    """``verify_store`` for a URL: every object the manifest lists against its size and
    checksum (each read once, streamed), then the checks of opening the store, then every
    video's payloads where the index says they lie (``Store.video_problems``, ranged reads)."""
    folder = RemoteFolder(url)
    m = folder.manifest()
    try:
        check_manifest(m, folder.where(MANIFEST))
    except StoreError as e:
        return [str(e)]
    listing = folder.files.listing()
    problems: list[str] = []
    p = folder.prefix
    rows = [p + r["name"] for r in m["index"]] + [p + f"shards/{r['name']}" for r in m["shards"]]
    sums = {p + r["name"]: r.get("checksum") for r in m["index"]}
    sums.update({p + f"shards/{r['name']}": r.get("checksum") for r in m["shards"]})
    sizes = {p + r["name"]: r["bytes"] for r in m["index"]}
    sizes.update({p + f"shards/{r['name']}": r["bytes"] for r in m["shards"]})
    unreadable = False
    fs = folder.files.fs
    for rel in rows:
        info = listing.get(rel)
        if info is None:
            problems.append(f"{folder.files.url_of(rel)}: missing")
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
        store = Store(url, files=RemoteFolder(url))
    except StoreError as e:
        return [str(e)]
    with store:  # every video's payloads where the index says they lie (as verify_store)
        return [p for i in range(len(store)) for p in store.video_problems(i).values()]
