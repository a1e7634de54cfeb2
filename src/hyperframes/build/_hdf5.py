"""Writing the HDF5 form of a store (``hyperframes convert``, ``build --format hdf5``): the
layout, and the reader, are in :mod:`hyperframes.store._hdf5`; this module writes that layout
from a folder store, atomically (a temporary file renamed into place), to a path or to a URL
(written in its staging folder, then uploaded: ``_publish``), and says in a sentence what the
conversion changed."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Literal, get_args

import numpy as np
import xxhash

from .._core._atomic import fsync_dir, remove_stale_temps, temp_path
from .._core._errors import ConfigError, StoreError
from .._core._progress import Progress
from .._core._text import printable
from .._core._urls import is_url
from ..remote import bare_url, filesystem
from ..store import (
    H5_FORMAT,
    H5_INDEX_SUM_ATTR,
    H5_VERSION,
    H5Store,
    Manifest,
    Store,
    h5_index_checksum,
    open_store,
)
from ..store.format import MANIFEST
from ._publish import check_write_access, publish_file, staging_dir

#: the HDF5 filter of the frame datasets
Compression = Literal["lzf", "blosc", "gzip", "none"]
COMPRESSIONS: tuple[Compression, ...] = get_args(Compression)


#: frames per HDF5 chunk of a compressed video: a 16-frame window is 2 or 3 chunk reads
CHUNK_FRAMES = 8


def _filter(compression: str) -> dict:
    if compression == "lzf":
        return {"compression": "lzf"}
    if compression == "gzip":
        return {"compression": "gzip", "compression_opts": 4}
    if compression == "blosc":
        import hdf5plugin  # registers its HDF5 filters (loads their libraries): only for blosc

        return dict(hdf5plugin.Blosc(cname="lz4", clevel=5, shuffle=hdf5plugin.Blosc.SHUFFLE))
    if compression == "none":
        return {}
    raise ConfigError(f"unknown HDF5 compression {compression!r}; use one of {COMPRESSIONS}")


def _converted_manifest(src: Store, layout: dict, frames_bytes: int, built: bool) -> Manifest:
    """The manifest of the file converted from folder store ``src`` (module doc): the source's,
    with its codec, size and files moved to ``converted_from`` (``built``: ``src`` was only
    the staging of ``build --format hdf5``, said by ``converted_from.built``)."""
    m = src.manifest
    codec, was = m["codec"]["name"], m.get("store_bytes")
    if layout["compression"] == "none":
        how = "no compression (one contiguous block per video)"
    else:
        how = f"{layout['compression']} compression (chunks of {layout['chunk_frames']} frames)"
    note = (
        f"converted from codec {codec}: frames stored decoded ({m['dtype']}) with {how}; "
        + (f"{was / 1e6:.2f} MB" if isinstance(was, int) else "? MB")
        + f" of {codec} shards -> {frames_bytes / 1e6:.2f} MB of HDF5 frame datasets"
    )
    if built:
        note = (
            f"built as HDF5 (build --format hdf5): frames stored decoded ({m['dtype']}) with {how}"
        )
    source = {"codec": m["codec"], "store_bytes": was, "shards": len(m["shards"]), "note": note}
    if built:
        source["built"] = True
    kept = {k: v for k, v in m.items() if k != "store_bytes"}
    return Manifest.model_validate(
        dict(kept, codec={"name": "raw"}, shards=[], index=[], hdf5=layout, converted_from=source)
    )


def conversion_summary(path: str | os.PathLike) -> str:
    """One line for ``hyperframes convert``: the file, its size, and what the conversion
    changed (the manifest's ``converted_from`` note)."""
    if not is_url(path) and Path(path).is_dir():  # a store folder (``convert --codec``)
        m = json.loads((Path(path) / MANIFEST).read_text())
        return f"wrote {path} ({m['store_bytes'] / 1e6:.2f} MB): {m['converted_from']['note']}"
    if is_url(path):
        m = _remote_manifest(str(path))
        size, note = m["file_bytes"], m["converted_from"].get("note")
        return f"wrote {path} ({size / 1e6:.2f} MB): {note}"
    with H5Store(path) as h5:
        size, note = h5.manifest["store_bytes"], h5.manifest["converted_from"].get("note")
    return f"wrote {path} ({size / 1e6:.2f} MB): {note}"


def convert_to_hdf5(
    store,
    out: str | os.PathLike,
    *,
    compression: Compression = "lzf",
    chunk_frames: int = CHUNK_FRAMES,
    progress=True,
    built: bool = False,
):
    """Write ``store`` (a folder store or its path) as one HDF5 file, atomically.

    ``compression="none"`` stores each video as one contiguous block (read at memory speed);
    otherwise each video is chunked ``chunk_frames`` frames at a time. Frames are stored
    decoded whatever the store's codec; the manifest's ``converted_from`` says so (module
    doc), and :func:`conversion_summary` puts it in a sentence. ``out`` may be a URL: the file
    is written in its staging folder, then uploaded. ``built``: ``store`` is the staging of
    ``build --format hdf5`` (the file then says it was built, not converted)."""
    if isinstance(chunk_frames, bool) or not isinstance(chunk_frames, int) or chunk_frames < 1:
        raise ConfigError(f"chunk_frames must be an integer >= 1, got {chunk_frames!r}")
    if is_url(out):
        url = str(out)
        check_write_access(url, folder=False)
        staging = staging_dir(url)
        staging.mkdir(parents=True, exist_ok=True)
        local = convert_to_hdf5(
            store,
            staging / Path(bare_url(url)).name,
            compression=compression,
            chunk_frames=chunk_frames,
            progress=progress,
            built=built,
        )
        publish_file(local, url)
        shutil.rmtree(staging, ignore_errors=True)
        return url
    import h5py  # loads libhdf5: only when a file is written

    if isinstance(store, Store):
        src = store
    else:
        src = open_store(store) if is_url(store) else Store(store)
    out = Path(out)
    remove_stale_temps(out.parent, out.name)  # of conversions that were killed
    tmp = temp_path(out)
    filt = _filter(compression)
    layout: dict[str, str | int] = {"compression": compression}
    if compression != "none":
        layout["chunk_frames"] = chunk_frames
    bar = Progress(total=len(src), unit="videos", enabled=progress, desc="convert")
    try:
        with h5py.File(tmp, "w", libver=("v110", "latest")) as h5:
            h5.attrs["format"] = H5_FORMAT
            h5.attrs["format_version"] = H5_VERSION
            _write_index(h5.create_group("index"), src)
            frames_bytes = _write_videos(h5, src, out, filt, chunk_frames, bar)
            _write_tracks(h5, src, out)
            h5.attrs["manifest"] = json.dumps(
                _converted_manifest(src, layout, frames_bytes, built).to_json()
            )
            h5.attrs[H5_INDEX_SUM_ATTR] = h5_index_checksum(h5)  # last: what a reader will see
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        os.replace(tmp, out)
        fsync_dir(out.parent)
    finally:
        bar.close()
        tmp.unlink(missing_ok=True)
    return out


def _write_index(idx, src: Store) -> None:
    """The folder store's index tables and strings, as datasets of the group ``idx``."""
    index = src.index
    idx.create_dataset("videos", data=np.asarray(index.videos))
    idx.create_dataset("frames", data=np.asarray(index.frames))
    if index.change_score is not None:
        idx.create_dataset("change_score", data=np.asarray(index.change_score))
    if index.flow_score is not None:
        idx.create_dataset("flow_score", data=np.asarray(index.flow_score))
    for name, array in _annotation_arrays(src.videos.annotations).items():
        idx.create_dataset(name, data=np.asarray(array))
    strings = {
        "paths": src.videos.paths,
        "classes": src.videos.classes,
        "splits": src.videos.splits,
    }
    idx.create_dataset("strings", data=json.dumps(strings))


def _write_videos(h5, src: Store, out: Path, filt: dict, chunk_frames: int, bar) -> int:
    """Each video's frames as a dataset under /videos/ (their checksums in
    /index/frames_xxh3_64); returns the bytes the frame datasets take."""
    # frames copied from a damaged shard would get checksums of damaged frames: verify first
    verify = "payload_xxh3_64" in (src.index.videos.dtype.names or ())
    grp = h5.create_group("videos")
    sums = np.zeros(len(src), np.uint64)
    frames_bytes = 0
    for v in range(len(src)):
        rec = src.videos[v]
        problem = src.payload_problem(v) if verify else None
        if problem is not None:
            raise StoreError(f"cannot convert to {out}: {problem}")
        frames = src.read_numpy(v, np.arange(rec.num_frames))
        # numpy's stubs give ndarray __buffer__ only for Python >= 3.12
        sums[v] = xxhash.xxh3_64_intdigest(memoryview(frames))  # type: ignore[arg-type]
        chunks = None
        if filt:
            chunks = (max(1, min(chunk_frames, len(frames))), *frames.shape[1:])
        ds = grp.create_dataset(f"{v:08d}", data=frames, chunks=chunks, **filt)
        frames_bytes += ds.id.get_storage_size()
        # (for people reading the file: the index's strings keep the exact names)
        ds.attrs["path"] = printable(rec.path)
        ds.attrs["label"] = printable(rec.label or "")
        ds.attrs["fps"] = rec.fps
        bar.advance()
        bar.add_frames(rec.num_frames)
    h5["index"].create_dataset("frames_xxh3_64", data=sums)
    return frames_bytes


def _write_tracks(h5, src: Store, out: Path) -> None:
    """The folder store's tracks (module doc): the tables under /index/ (their shard and
    offset columns zeroed: the payloads are datasets here), each payload as one uncompressed
    dataset, its checksum unchanged. A damaged track is refused, as damaged frames are."""
    tracks = src._tracks
    for name, table in (("audio", tracks.audio), ("flow", tracks.flow)):
        if table is None:
            continue
        copy = np.array(table)
        for col in ("shard", "offset", "homography_offset"):
            if col in (copy.dtype.names or ()):
                copy[col] = 0
        h5["index"].create_dataset(name, data=copy)
    for i in range(len(src)):
        for kind in tracks.kinds(i):
            problem = tracks.problem(kind, i)
            if problem is not None:
                raise StoreError(f"cannot convert to {out}: {problem}")
            shape, dtype = tracks.spec(kind, i)
            data = src._track_bytes(kind, i).view(dtype).reshape(shape)
            h5.create_dataset(f"{kind}/{i:08d}", data=data)


def _annotation_arrays(ann) -> dict[str, np.ndarray]:
    """The datasets under /index/ of a folder store's optional index files (``store.format``)."""
    out = {}
    if ann.has_segments:
        out["segments"], out["segment_labels"] = ann.segments, ann.segment_labels
    if len(ann.video_labels):
        out["video_labels"] = ann.video_labels
    if ann.signatures is not None:
        out["signatures"] = ann.signatures
    if ann.boxes is not None:
        out["boxes"] = ann.boxes
    return out


def _remote_manifest(url: str) -> dict:
    """The manifest of an HDF5 store at a URL (its attributes, read by ranges)."""
    import h5py  # loads libhdf5: only when a file is read

    fs = filesystem(url)
    with fs.open(bare_url(url), "rb") as f, h5py.File(f, "r") as h5:
        m = json.loads(h5.attrs["manifest"])
    m["file_bytes"] = int(fs.info(bare_url(url))["size"])
    return m
