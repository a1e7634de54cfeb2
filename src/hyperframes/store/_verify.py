"""Recompute every checksum of a store and name each file (and video) that does not match.

A folder store: every file the manifest lists against its size and xxh3-128, then the index
checks of opening the store, then every video's payloads (frames, audio, flow, homographies)
read where the index says they lie, against their xxh3-64 and the chunks' own headers
(``Store.video_problems``: all a ``check="video"`` read checks, so an index pointing a byte
off, its checksums re-signed, is named here too); a damaged shard of a version-2 store names
the videos whose payload no longer matches. An HDF5 store (``.h5``): the index checks of
opening it, the index against the checksum the file records (``index_xxh3_64``), then every
video's frames against the xxh3-64 ``convert`` recorded, and its tracks against theirs; and
``--resign`` of an HDF5 file records the checksums one written by an older hyperframes lacks
(``_hdf5_sign``).
"""

from __future__ import annotations

import os
from pathlib import Path

import xxhash

from .._core._atomic import write_json_atomic
from .._core._errors import StoreError
from .._core._urls import is_url
from ._folder import LocalFolder, is_checksum, load_manifest, own_file
from ._hdf5 import H5_INDEX_SUM_ATTR, H5Store
from ._hdf5_sign import resign_hdf5
from ._open import check_manifest
from ._reader import Store
from ._remote_store import verify_remote
from .format import CHECKSUM_ALGORITHM, INDEX_DIR, MANIFEST, SHARDS_DIR


def checksum_file(path: Path, *, block: int = 8 << 20) -> str:
    h = xxhash.xxh3_128()
    with open(path, "rb", buffering=0) as f:
        while data := f.read(block):
            h.update(data)
    return h.hexdigest()


def verify_store(path: str | os.PathLike) -> list[str]:
    """Problems found (empty when the store is intact). Reads every shard's bytes twice:
    the file's checksum, then each video's (the second from the page cache, mostly)."""
    if is_url(path):
        return verify_remote(str(path))
    store = Path(path)
    if store.is_file() and store.suffix.lower() in (".h5", ".hdf5"):
        return _verify_hdf5(store)
    m, problem = _folder_manifest(store)
    if problem is not None:
        return [problem]
    problems: list[str] = []
    damaged: dict[str, int] = {}  # shard name -> its problem's position
    unreadable = False
    for kind, row, got in _file_checksums(store, m, problems):
        if got is None:
            unreadable = True
        elif not is_checksum(row.get("checksum")):
            problems.append(
                f"{_file_of(store, kind, row)}: the manifest records no checksum for it "
                f"({row.get('checksum')!r}); if the files are as built, `hyperframes verify "
                f"--resign {store}` records the missing checksums"
            )
        elif got != row.get("checksum"):
            if kind == "shard":
                damaged[row["name"]] = len(problems)
            problems.append(
                f"{_file_of(store, kind, row)}: checksum {got} does not match the manifest's "
                f"{row.get('checksum')} ({m.get('checksum_algorithm')})"
            )
    if unreadable:
        return problems
    try:
        opened = Store(store)
    except StoreError as e:
        return [*problems, str(e)]
    with opened:
        found = video_problems(opened)
        shard_of = opened.index.videos["shard"]
        in_damaged = {opened.shard_names.index(name): at for name, at in damaged.items()}
        if "payload_xxh3_64" in (opened.index.videos.dtype.names or ()):
            for k, at in in_damaged.items():
                problems[at] += _damaged_videos(opened, k, found)
        for i, parts in found.items():
            if int(shard_of[i]) not in in_damaged:  # (those are named with their shard)
                problems += parts.values()
    return problems


def video_problems(store: Store) -> dict[int, dict[str, str]]:
    """``Store.video_problems`` of every video that has any: what ``check="video"`` reads
    would refuse, found with no read at all."""
    return {i: found for i in range(len(store)) if (found := store.video_problems(i))}


def _folder_manifest(store: Path) -> tuple[dict, str | None]:
    """The manifest of the store folder, and what is wrong with its shape (None: nothing)."""
    if not (store / MANIFEST).exists():
        raise StoreError(f"{store}: no store here ({MANIFEST} is missing)")
    m = load_manifest(store / MANIFEST)
    try:
        check_manifest(m, store / MANIFEST)
    except StoreError as e:
        return m, str(e)
    return m, None


def _file_of(store: Path, kind: str, row: dict) -> Path:
    """The file of a manifest's ``index`` or ``shards`` row (a plain name in its folder)."""
    if kind == "index":
        folder, _, name = row["name"].partition("/")
        if folder != INDEX_DIR:
            raise StoreError(
                f"{store / MANIFEST}: the index file {row['name']!r} is not in {INDEX_DIR}/"
            )
        return own_file(store / INDEX_DIR, name, store / MANIFEST)
    return own_file(store / SHARDS_DIR, row["name"], store / MANIFEST)


def _file_checksums(store: Path, m: dict, problems: list[str]):
    """``(kind, row, checksum)`` of every file the manifest lists, in its order; checksum
    None for a file that is missing, of the wrong size or not the store's own (the problem
    appended to ``problems``)."""
    for kind, row in [("index", r) for r in m["index"]] + [("shard", r) for r in m["shards"]]:
        try:
            f = _file_of(store, kind, row)
        except StoreError as e:
            problems.append(str(e))
            yield kind, row, None
            continue
        if not f.is_file():
            problems.append(f"{f}: missing")
            yield kind, row, None
            continue
        size = f.stat().st_size
        if size != row["bytes"]:
            problems.append(f"{f}: {size} bytes, expected {row['bytes']} (truncated or damaged)")
            yield kind, row, None
            continue
        yield kind, row, checksum_file(f)


class _Resigned(LocalFolder):
    """A store folder read with a manifest not yet written (what ``resign_store`` checks)."""

    def __init__(self, path: Path, manifest: dict):
        super().__init__(path)
        self._manifest = manifest

    def manifest(self) -> dict:
        return self._manifest


def resign_store(path: str | os.PathLike) -> tuple[list[str], list[str]]:
    """Record the checksums a folder store's manifest lacks (a manifest edited, or written by
    another tool: open refuses a store whose index files have none). ``(files signed,
    problems)``: the manifest is rewritten (atomically) only when every file it lists is
    present with its size, every checksum it has still matches (one that does not is a
    damaged file, reported and never replaced), and the store opens with the new
    checksums; otherwise nothing is written and the problems say why."""
    store = Path(path)
    if not is_url(path) and store.is_file() and store.suffix.lower() in (".h5", ".hdf5"):
        return resign_hdf5(store)
    if is_url(path) or store.is_file():
        raise StoreError(
            f"{path}: --resign re-signs a store folder or an HDF5 file; a store at a URL is "
            "re-signed by copying it to a folder first (or rebuilt)"
        )
    m, problem = _folder_manifest(store)
    if problem is not None:
        return [], [problem]
    problems: list[str] = []
    signed = []
    for kind, row, got in _file_checksums(store, m, problems):
        if got is None:
            continue
        have = row.get("checksum")
        if not is_checksum(have):
            row["checksum"] = got
            signed.append(str(_file_of(store, kind, row)))
        elif have != got:
            problems.append(
                f"{_file_of(store, kind, row)}: checksum {got} does not match the manifest's "
                f"{have}: the file is damaged (not re-signed; restore it or rebuild the store)"
            )
    if problems:
        return [], problems
    m.setdefault("checksum_algorithm", CHECKSUM_ALGORITHM)
    try:
        Store(store, files=_Resigned(store, m)).close()
    except StoreError as e:
        return [], [str(e)]
    if signed:
        write_json_atomic(store / MANIFEST, check_manifest(m, store / MANIFEST).to_json())
    return signed, []


def _damaged_videos(store: Store, shard: int, found: dict[int, dict[str, str]]) -> str:
    """``"; damaged videos: 3 ('a.mp4'), ..."`` for the shard's videos whose payload does not
    match (``found``: :func:`video_problems`), or a note that every video's payload does."""
    what = {i: list(parts) for i, parts in found.items() if store.index.videos["shard"][i] == shard}
    bad = list(what)
    if not bad:
        return "; every video's payload in it still matches (the damage is between videos)"
    named = ", ".join(_named(store, i, what[i]) for i in bad[:10])
    more = f" and {len(bad) - 10} more" if len(bad) > 10 else ""
    return f"; damaged videos: {named}{more}"


def _named(store: Store, i: int, parts: list[str]) -> str:
    """``3 ('a.mp4')`` when its frames are damaged; ``3 ('a.mp4': audio)`` names the damaged
    payloads when a track is among them."""
    if parts == ["frames"]:
        return f"{i} ({store.videos.paths[i]!r})"
    return f"{i} ({store.videos.paths[i]!r}: {', '.join(parts)})"


def _verify_hdf5(path: Path) -> list[str]:
    try:
        store = H5Store(path)
    except StoreError as e:
        return [str(e)]
    with store:
        if not store.has_checksums:
            return [
                f"{path}: has no per-video checksums (/index/frames_xxh3_64: written by an "
                "older hyperframes), so its frames cannot be verified; if the file is as "
                f"written, `hyperframes verify --resign {path}` records them"
            ]
        problems = []
        if store.unsigned is not None:
            problems.append(
                f"{path}: records no checksum of its index (attribute {H5_INDEX_SUM_ATTR}: "
                "written by an older hyperframes), so its index cannot be verified; if the "
                f"file is as written, `hyperframes verify --resign {path}` records it"
            )
        for i in range(len(store)):
            try:
                problem = store.frames_problem(i)
            except StoreError as e:
                problem = str(e)
            if problem is not None:
                problems.append(problem)
            problems += store.track_problems(i)
    return problems
