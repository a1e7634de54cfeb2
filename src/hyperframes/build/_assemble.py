"""Assemble the global index and the manifest from finished shards (written last, atomically).

The disk decides what is stored: the videos kept are those whose journal records and payloads
``_resume.live_records`` finds intact, whatever the run reported. Their tables
(``_index_tables``), tracks and annotations are written into ``index/``, then the manifest
listing every shard and index file with its size and checksum; shards no kept video uses are
removed after it.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import numpy as np

from .._core._atomic import save_npy_atomic, write_bytes_atomic, write_json_atomic
from .._version import __version__
from ..decode import create_decoder
from ..inputs import BoxRows, Source, source_paths, source_splits
from ..store import (
    Manifest,
    repeated_frames,
    track_keys,
    track_tables,
    upsampled_rows,
)
from ..store.format import (
    AUDIO_FILE,
    CHANGE_FILE,
    CHECKSUM_ALGORITHM,
    CHUNKS_FILE,
    DETAILS_FILE,
    FAILURES_FILE,
    FLOW_FILE,
    FLOW_SCORE_FILE,
    FORMAT_NAME,
    FORMAT_VERSION,
    FRAMES_FILE,
    INDEX_DIR,
    MANIFEST,
    RECORDS_SUFFIX,
    SHARD_SUFFIX,
    SHARDS_DIR,
    STRINGS_FILE,
    VIDEOS_FILE,
)
from ._annotations import build_annotations, write_annotations
from ._failures import FailureLog
from ._index_tables import IndexTables, index_tables
from ._options import BuildOptions, make_codec
from ._report import BuildReport, as_given, damage_row
from ._resume import live_records
from ._shard import checksum_file, load_shard

__all__ = ["assemble", "file_rows", "git_commit", "shard_rows"]


def git_commit() -> str | None:
    here = Path(__file__).resolve().parent
    try:
        out = subprocess.run(
            ["git", "-C", str(here), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def assemble(
    store: Path,
    sources: list[Source],
    classes: list[str],
    options: BuildOptions,
    failures: FailureLog,
    *,
    reused: int,
    started: float,
    skipped: list[dict] | None = None,
    trusted: frozenset[str] = frozenset(),
    boxes: tuple[BoxRows, list[str]] | None = None,
) -> BuildReport:
    """Write the index and the manifest of ``store`` from its intact journal records (module
    doc) and report the build: ``failures`` as the run saw them (settled against the disk
    here, and written to the store's ``failures.jsonl``: :class:`FailureLog`), ``reused``
    the videos kept from an earlier run, ``started`` the build's ``time.perf_counter``,
    ``skipped`` the paths that were not inputs, ``trusted`` the shards this run wrote (their
    payloads' checksums are not read back), ``boxes`` the rows of ``build --boxes`` and the
    source each names."""
    suspect: set[str] = set()
    live = live_records(store, sources, trusted=trusted, suspect=suspect, need=track_keys(options))
    failures.finish(live, sources)
    # (the sources not stored are never made: ten million failed rows are only paths here)
    kept = [sources[i] for i, p in enumerate(source_paths(sources)) if p in live]
    records = [live[s.path][1] for s in kept]
    shards = sorted({shard for shard, _ in live.values()})
    shard_id = {name: i for i, name in enumerate(shards)}
    shard_ids = [shard_id[live[s.path][0]] for s in kept]
    splits = sorted(source_splits(sources))
    tables = index_tables(records, shard_ids, classes, splits, flow=bool(options.flow))
    index = store / INDEX_DIR
    index.mkdir(exist_ok=True)
    index_files = _write_tables(index, tables)
    audio, flow = track_tables([r.tracks for r in records], shard_ids, options)
    index_files += _write_optional(index, {AUDIO_FILE: audio, FLOW_FILE: flow})
    annotations, notes = build_annotations(kept, records, classes, boxes)
    index_files += write_annotations(index, annotations)
    strings = {
        "paths": [s.path for s in kept],
        "classes": classes,
        "splits": splits,
        "shards": [f"{name}{SHARD_SUFFIX}" for name in shards],
    }
    write_json_atomic(index / STRINGS_FILE, strings)
    details = "".join(json.dumps(d) + "\n" for d in tables.details)
    write_bytes_atomic(index / DETAILS_FILE, details.encode())
    rows = shard_rows(store, shards, suspect)
    report = BuildReport(
        store=str(store),
        videos=len(kept),
        frames=tables.num_frames,
        store_bytes=sum(r["bytes"] for r in rows),
        source_bytes=int(tables.videos["source_bytes"].sum()),
        failed=failures.listed,
        reused=reused,
        seconds=0.0,  # (set once the manifest is written)
        damaged=[as_given(damage_row(r), s) for s, r in zip(kept, records) if r.decode_errors],
        skipped=list(skipped or []),
        notes=notes,
        gaps=[{"path": r.path, **r.timestamp_gaps} for r in records if r.timestamp_gaps],
        upsampled=_upsampled(kept, tables),
        filled=_upsampled(kept, tables, over_gaps=True),
        failed_count=failures.count,
        failures_file=str(store / FAILURES_FILE) if failures.count else None,
    )
    more: dict = {}
    if boxes is not None:
        more["box_classes"] = boxes[0].classes
        more["boxes_file"] = str(Path(boxes[0].file).absolute())
    fields = {s.path: dict(s.fields) for s in kept if s.fields}
    if fields:  # the other columns of an annotation's rows (a videofolder's), by path
        more["fields"] = fields
    manifest = _manifest(options, report, classes, rows, file_rows(index, index_files), **more)
    write_json_atomic(store / MANIFEST, manifest.to_json())
    _remove_dead_shards(store, set(shards))
    report.seconds = time.perf_counter() - started
    return report


def _write_tables(index: Path, tables: IndexTables) -> list[str]:
    """Write the index tables into ``index``; returns the index files the manifest lists
    (the strings and the details, written after, among them)."""
    save_npy_atomic(index / VIDEOS_FILE, tables.videos)
    save_npy_atomic(index / FRAMES_FILE, tables.frames)
    save_npy_atomic(index / CHUNKS_FILE, tables.chunks)
    files = [VIDEOS_FILE, FRAMES_FILE, CHUNKS_FILE, STRINGS_FILE, DETAILS_FILE]
    return files + _write_optional(
        index, {CHANGE_FILE: tables.change, FLOW_SCORE_FILE: tables.motion}
    )


def _write_optional(index: Path, arrays: dict[str, np.ndarray | None]) -> list[str]:
    """Write each array that is there; remove the file of each that is None (left by an
    earlier assembly). Returns the names written."""
    written = []
    for name, array in arrays.items():
        if array is not None:
            save_npy_atomic(index / name, array)
            written.append(name)
        else:
            (index / name).unlink(missing_ok=True)
    return written


def _upsampled(kept: list[Source], tables: IndexTables, *, over_gaps: bool = False) -> list[dict]:
    """The report's rows of videos stored at a rate above their source's (``over_gaps``:
    of faster videos whose repeated frames fill timestamp gaps)."""
    videos = tables.videos
    repeats = repeated_frames(
        tables.frames["source_index"], videos["frame_start"], videos["num_frames"]
    )
    return upsampled_rows(
        [s.path for s in kept],
        videos["fps"],
        videos["num_frames"],
        repeats,
        lambda i: int(videos["num_frames_decoded"][i]),
        over_gaps=over_gaps,
    )


def shard_rows(store: Path, shards: list[str], suspect: set[str]) -> list[dict]:
    """The manifest's row of each kept shard: its name, bytes and checksum."""
    rows = []
    for name in shards:
        _, summary = load_shard(store / SHARDS_DIR, name)
        path = store / SHARDS_DIR / f"{name}{SHARD_SUFFIX}"
        size, checksum = summary["bytes"], summary["checksum"]
        if name in suspect or path.stat().st_size != size:
            # damaged bytes that no kept video uses any more: the file is what it is now
            size, checksum = path.stat().st_size, checksum_file(path)
        rows.append({"name": f"{name}{SHARD_SUFFIX}", "bytes": size, "checksum": checksum})
    return rows


def file_rows(index: Path, names: list[str]) -> list[dict]:
    """The manifest's row of each index file: its name, bytes and checksum."""
    return [
        {
            "name": f"{INDEX_DIR}/{f}",
            "bytes": (index / f).stat().st_size,
            "checksum": checksum_file(index / f),
        }
        for f in names
    ]


def _manifest(
    options: BuildOptions,
    report: BuildReport,
    classes: list[str],
    shard_rows: list[dict],
    index_rows: list[dict],
    **more,
) -> Manifest:
    """The manifest of the store ``report`` describes; ``more``: its optional keys."""
    decoder = create_decoder(options.decoder)
    return Manifest(
        format=FORMAT_NAME,
        format_version=FORMAT_VERSION,
        hyperframes_version=__version__,
        git_commit=git_commit(),
        created=time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        build={**options.content(), "workers": options.workers},
        decoder={
            "name": options.decoder,
            "version": decoder.version(),
            "resize_algorithm": decoder.resize_algorithm,
            "color_conversion": "RGB24 by the decoder; the stream's own matrix/range when set, "
            "else the decoder's default (BT.601, limited range)",
            "rotation": "display rotation applied: frames are stored upright",
        },
        codec={"name": options.codec, **make_codec(options).params},
        dtype=options.dtype,
        layout="FCHW",
        normalize=(
            {"mean": list(options.mean), "std": list(options.std)}
            if options.dtype == "float16"
            else None
        ),
        checksum_algorithm=CHECKSUM_ALGORITHM,
        shards=shard_rows,
        index=index_rows,
        num_videos=report.videos,
        num_frames=report.frames,
        store_bytes=report.store_bytes,
        source_bytes=report.source_bytes,
        classes=classes,
        failed=report.failed,
        failed_count=report.num_failed,
        damaged=report.damaged,
        gaps=report.gaps,
        skipped=report.skipped,
        notes=report.notes,
        **more,
    )


def _remove_dead_shards(store: Path, live: set[str]) -> None:
    for p in (store / SHARDS_DIR).glob(f"*{RECORDS_SUFFIX}"):
        name = p.name[: -len(RECORDS_SUFFIX)]
        if name not in live:
            (store / SHARDS_DIR / f"{name}{SHARD_SUFFIX}").unlink(missing_ok=True)
            p.unlink(missing_ok=True)
