"""Writing a store folder in another codec (``hyperframes convert STORE --codec C --out OUT``).

The source (a store folder, or a store at a URL) is read video by video through its own
reader (whole frames, in RGB whatever its codec: a yuv420 source is converted with the matrix
and range its chunks record), encoded with the new codec and appended to shards exactly as a
build appends them (``_shard``: a journal line per video, fsynced). Frames converted to
``yuv420`` from RGB are stored as BT.601 full range, the codec's own choice for RGB frames,
and each chunk's header says so, so reads convert back with the same matrix. Tracks (audio,
flow) are copied byte for byte after each video's frames.

Atomic and resumable: everything is written in a hidden staging folder beside ``OUT``
(``.OUT.converting``, under a lock), which holds what it converts (``convert.json``: the
source's manifest checksum and the codec). A killed conversion leaves its journals there: the
same command recovers them and converts only the videos not yet stored. The index (the
source's tables with each video's payload rows rewritten, every other index file copied as it
is) and the manifest (the source's, with the new codec, shards and files, and
``converted_from`` saying what changed) are written last; then the folder is renamed to
``OUT``. A folder at ``OUT`` is never touched.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import numpy as np
import xxhash

from .._core._atomic import fsync_dir, save_npy_atomic, write_bytes_atomic, write_json_atomic
from .._core._errors import ConfigError, StoreError
from .._core._progress import Progress
from .._core._urls import is_url
from .._version import __version__
from ..store import Manifest, Store, create_codec, list_codecs, open_store
from ..store.format import (
    AUDIO_FILE,
    CHUNK_DTYPE,
    CHUNKS_FILE,
    FLOW_FILE,
    FORMAT_VERSION,
    INDEX_DIR,
    LOCK,
    MANIFEST,
    SHARD_SUFFIX,
    SHARDS_DIR,
    STRINGS_FILE,
    VIDEO_DTYPE,
    VIDEOS_FILE,
)
from ._assemble import file_rows, git_commit, shard_rows
from ._lock import StoreLock
from ._options import CODEC_OPTIONS, BuildOptions, make_codec
from ._shard import ShardWriter, load_shard, recover_all

__all__ = ["convert_codec"]

#: frames read from the source at a time (a long 1080p video is never held whole)
_BLOCK_FRAMES = 64
#: what a conversion's staging folder holds besides the store: its marker
_MARKER = "convert.json"
#: the record keys of a track's payloads (``_tracks.TRACK_KINDS``), by kind
_TRACK_KEYS = {
    "audio": ("audio", "offset", "nbytes", "xxh3_64"),
    "flow": ("flow", "offset", "nbytes", "xxh3_64"),
    "homography": ("flow", "homography_offset", "homography_nbytes", "homography_xxh3_64"),
}


def staging_for(out: Path) -> Path:
    """The hidden folder ``out`` is converted in (module doc)."""
    return out.with_name(f".{out.name}.converting")


def convert_codec(
    store,
    out: str | os.PathLike,
    codec: str,
    *,
    jpeg_quality: int = 90,
    chunk_frames: int = 4,
    shard_bytes: int | None = None,
    progress=True,
) -> Path:
    """Write ``store`` (a store folder, its path or URL) as the store folder ``out`` with its
    frames in ``codec`` (module doc); returns ``out``. ``jpeg_quality`` (jpeg) and
    ``chunk_frames`` (lz4, zstd) as for a build."""
    if is_url(out):
        raise ConfigError(
            f"convert --codec writes a store folder on this machine, not {out}; convert to a "
            "local folder, then upload that folder"
        )
    if codec not in list_codecs():
        raise ConfigError(f"unknown codec {codec!r}; choose one of {', '.join(list_codecs())}")
    opts = BuildOptions(codec=codec, jpeg_quality=jpeg_quality, chunk_frames=chunk_frames)
    params = make_codec(opts).params
    out = Path(out)
    src = _open_source(store)
    try:
        _check(src, out, codec)
        staging = staging_for(out)
        staging.mkdir(exist_ok=True)
        with StoreLock(staging / LOCK):
            marker = _marker(src, codec, params)
            _start(staging, marker)
            _convert_videos(src, staging, codec, params, shard_bytes or opts.shard_bytes, progress)
            _assemble(src, staging, codec, params, opts)
            (staging / _MARKER).unlink()
            os.replace(staging, out)
        fsync_dir(out.parent)
    finally:
        src.close()
    return out


def _open_source(store) -> Store:
    if isinstance(store, Store):
        return store
    src = open_store(store)
    if not isinstance(src, Store):  # an HDF5 file: no shards, nor chunk tables, to rewrite
        src.close()
        raise ConfigError(
            f"{store}: an HDF5 store; convert --codec reads store folders (and their URLs): "
            "build a folder store with --codec instead"
        )
    return src


def _check(src: Store, out: Path, codec: str) -> None:
    if out.exists():
        raise ConfigError(f"{out}: exists already; choose another --out, or remove it first")
    if not is_url(src.path) and Path(src.path).resolve() == out.resolve():
        raise ConfigError(f"{out}: is the store being converted; choose another --out")
    held = create_codec(codec).dtypes
    if str(src.dtype) not in held:
        others = [c for c in list_codecs() if str(src.dtype) in create_codec(c).dtypes]
        raise ConfigError(
            f"{src.path}: holds {src.dtype} frames; codec {codec} stores {' or '.join(held)} "
            f"frames only (choose {', '.join(others)}, or rebuild with dtype {held[0]})"
        )


def _marker(src: Store, codec: str, params: dict) -> dict:
    """What a staging folder converts: the source (its manifest's checksum) and the codec."""
    m = json.dumps(src.manifest, sort_keys=True).encode()
    return {"source": str(src.path), "manifest_xxh3_128": xxhash.xxh3_128_hexdigest(m)} | {
        "codec": {"name": codec, **params}
    }


def _start(staging: Path, marker: dict) -> None:
    """Keep the staging's journals when they are of this very conversion (a rerun after a
    kill); else empty it (another source or codec: nothing of it can be reused)."""
    path = staging / _MARKER
    try:
        same = json.loads(path.read_text()) == marker
    except (OSError, ValueError):
        same = False
    if not same:
        for p in staging.iterdir():
            if p.name == LOCK:
                continue
            if p.is_dir() and not p.is_symlink():
                shutil.rmtree(p)
            else:
                p.unlink()
        write_json_atomic(path, marker)
    (staging / SHARDS_DIR).mkdir(exist_ok=True)
    recover_all(staging / SHARDS_DIR)


def _stored(staging: Path) -> dict[int, tuple[str, dict]]:
    """{source video: (shard name, its journal record)} of the finished shards."""
    done = {}
    for p in sorted((staging / SHARDS_DIR).glob(f"*{SHARD_SUFFIX}")):
        name = p.name[: -len(SHARD_SUFFIX)]
        for rec in load_shard(staging / SHARDS_DIR, name)[0]:
            done[int(rec["video"])] = (name, rec)
    return done


def _convert_videos(
    src: Store, staging: Path, codec: str, params: dict, shard_bytes: int, progress
) -> None:
    """Each video not yet stored in the staging's shards, encoded with ``codec``."""
    target = create_codec(codec, **params)
    done = _stored(staging)
    todo = [v for v in range(len(src)) if v not in done]
    verify = "payload_xxh3_64" in (src.index.videos.dtype.names or ())
    bar = Progress(total=len(todo), unit="videos", enabled=progress, desc="convert")
    run, seq, writer = f"{os.getpid()}{time.time_ns() % 10**9}", 0, None
    try:
        for v in todo:
            if writer is None or writer.size >= shard_bytes:
                if writer is not None:
                    writer.close()
                writer = ShardWriter(staging / SHARDS_DIR, f"convert-{run}-{seq:05d}")
                seq += 1
            problem = src.payload_problem(v) if verify else None
            if problem is not None:  # never re-encode (and re-checksum) damaged frames
                raise StoreError(f"cannot convert {src.path}: {problem}")
            writer.commit(_convert_video(src, v, writer, target))
            bar.advance()
            bar.add_frames(int(src.index.videos["num_frames"][v]))
        if writer is not None:
            writer.close()
    except BaseException:
        if writer is not None:
            writer.abandon()  # the journal keeps every committed video for a rerun
        raise
    finally:
        bar.close()


def _convert_video(src: Store, v: int, writer: ShardWriter, target) -> dict:
    """Video ``v``'s frames (and tracks) appended to ``writer``; returns its journal record."""
    n = int(src.index.videos["num_frames"][v])
    sink = writer.begin_video(target)
    try:
        for lo in range(0, n, _BLOCK_FRAMES):
            for frame in src.read_numpy(v, np.arange(lo, min(n, lo + _BLOCK_FRAMES))):
                sink.add(frame)
        offset, nbytes, digest = sink.finish()
        rec: dict = {"video": v, "offset": offset, "nbytes": nbytes, "payload_xxh3_64": digest}
        rec["chunks"] = [list(c) for c in sink.chunks]
        tracks = src._tracks
        for kind in tracks.kinds(v):
            problem = tracks.problem(kind, v)
            if problem is not None:
                raise StoreError(f"cannot convert {src.path}: {problem}")
            key, off, nb, h = _TRACK_KEYS[kind]
            where = writer.append([np.ascontiguousarray(src._track_bytes(kind, v))])
            rec.setdefault(key, {}).update(zip((off, nb, h), where))
    except BaseException:
        writer.rollback(sink.offset)
        raise
    return rec


def _assemble(src: Store, staging: Path, codec: str, params: dict, opts: BuildOptions) -> None:
    """The index and the manifest of the staging (module doc), the manifest last."""
    done = _stored(staging)
    shards = sorted({name for name, _ in done.values()})
    shard_id = {name: k for k, name in enumerate(shards)}
    old = src.index.videos
    videos = np.zeros(len(old), VIDEO_DTYPE)
    for col in old.dtype.names or ():
        videos[col] = old[col]
    chunks: list[tuple] = []
    for v in range(len(old)):
        name, rec = done[v]
        videos[v]["shard"] = shard_id[name]
        videos[v]["offset"], videos[v]["nbytes"] = rec["offset"], rec["nbytes"]
        videos[v]["payload_xxh3_64"] = rec["payload_xxh3_64"]
        videos[v]["chunk_start"], videos[v]["num_chunks"] = len(chunks), len(rec["chunks"])
        chunks += [tuple(c) for c in rec["chunks"]]
    index = staging / INDEX_DIR
    index.mkdir(exist_ok=True)
    save_npy_atomic(index / VIDEOS_FILE, videos)
    save_npy_atomic(index / CHUNKS_FILE, np.array(chunks, CHUNK_DTYPE))
    strings = dict(src._files.json(STRINGS_FILE))
    strings["shards"] = [f"{name}{SHARD_SUFFIX}" for name in shards]
    write_json_atomic(index / STRINGS_FILE, strings)
    tables = {AUDIO_FILE: src._tracks.audio, FLOW_FILE: src._tracks.flow}
    for file, table in tables.items():
        if table is not None:
            save_npy_atomic(index / file, _moved_tracks(table, done, shard_id))
    m = src.manifest
    names = [row["name"].partition("/")[2] for row in m["index"]]
    rewritten = {VIDEOS_FILE, CHUNKS_FILE, STRINGS_FILE, AUDIO_FILE, FLOW_FILE}
    for name in names:
        if name not in rewritten:  # the frames' times, scores, labels, details: as they are
            write_bytes_atomic(index / name, src._files.index_bytes(name))
    rows = shard_rows(staging, shards, set())
    was = m.get("store_bytes")
    store_bytes = sum(r["bytes"] for r in rows)
    source = {
        "codec": m["codec"],
        "store_bytes": was,
        "shards": len(m["shards"]),
        "note": f"converted from codec {m['codec']['name']} to {codec}: "
        + (f"{was / 1e6:.2f} MB" if isinstance(was, int) else "? MB")
        + f" of shards -> {store_bytes / 1e6:.2f} MB",
    }
    build = dict(m.get("build") or {})
    for k in CODEC_OPTIONS:
        build.pop(k, None)
    build.update({k: v for k, v in opts.content().items() if k == "codec" or k in CODEC_OPTIONS})
    kept = {k: v for k, v in m.items() if k not in ("generation", "converted_from")}
    manifest = Manifest.model_validate(
        dict(
            kept,
            format_version=FORMAT_VERSION,
            hyperframes_version=__version__,
            git_commit=git_commit(),
            created=time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            build=build,
            codec={"name": codec, **params},
            shards=rows,
            index=file_rows(index, names),
            store_bytes=store_bytes,
            converted_from=source,
        )
    )
    write_json_atomic(staging / MANIFEST, manifest.to_json())


def _moved_tracks(table: np.ndarray, done: dict, shard_id: dict) -> np.ndarray:
    """An audio or flow table with each video's payloads where the conversion put them."""
    moved = np.array(table)
    cols = moved.dtype.names or ()
    for v in range(len(moved)):
        name, rec = done[v]
        for key, off, _, _ in _TRACK_KEYS.values():
            if off in cols and key in rec:  # (a video without audio keeps its row of zeros)
                moved[v]["shard"] = shard_id[name]
                moved[v][off] = rec[key][off]
    return moved
