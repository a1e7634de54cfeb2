"""Assemble the global index and the manifest from finished shards (written last, atomically)."""

from __future__ import annotations

import json
import mmap
import subprocess
import time
from pathlib import Path

import numpy as np
import xxhash

from .._core._atomic import save_npy_atomic, write_bytes_atomic, write_json_atomic
from .._version import __version__
from ..inputs import Source, source_stat
from ..store import payload_ranges, repeated_frames, track_keys, track_tables, upsampled_rows
from ..store.format import (
    AUDIO_FILE,
    CHANGE_FILE,
    CHECKSUM_ALGORITHM,
    CHUNK_DTYPE,
    CHUNKS_FILE,
    DETAIL_KEYS,
    DETAILS_FILE,
    FLOW_FILE,
    FLOW_SCORE_FILE,
    FORMAT_NAME,
    FORMAT_VERSION,
    FRAME_DTYPE,
    FRAMES_FILE,
    INDEX_DIR,
    MANIFEST,
    RECORDS_SUFFIX,
    SHARD_SUFFIX,
    SHARDS_DIR,
    STRINGS_FILE,
    VIDEO_DTYPE,
    VIDEOS_FILE,
    VideoRow,
    pack_video_row,
)
from ._annotations import build_annotations, write_annotations
from ._options import BuildOptions
from ._shard import checksum_file, load_shard


def _finished_shards(store: Path) -> dict[str, tuple[list[dict], dict]]:
    out = {}
    for p in sorted((store / SHARDS_DIR).glob(f"*{RECORDS_SUFFIX}")):
        name = p.name[: -len(RECORDS_SUFFIX)]
        out[name] = load_shard(store / SHARDS_DIR, name)
    return out


def live_records(
    store: Path,
    sources: list[Source],
    *,
    trusted: frozenset[str] = frozenset(),
    suspect: set[str] | None = None,
    need: tuple[str, ...] = (),
) -> dict[str, tuple[str, dict]]:
    """{source path: (shard, record)} for sources stored already, unchanged since, and whose
    payload is on disk intact.

    What is kept is decided from the disk, not from the records: the shard file must hold the
    record's byte range and those bytes must match the record's ``payload_xxh3_64``. A record
    that fails (shard missing, truncated or damaged; a record without a checksum, from an older
    build) is not kept, so its video is decoded again. Shards in ``trusted`` (written by this
    very run) skip the checksum, not the size check. Shards holding a record that failed are
    added to ``suspect``. The same holds for each track payload the record lists (audio, flow,
    homographies: a damaged track decodes the video again), and a record lacking one of the
    record keys ``need`` (the tracks this build asks for) is not kept.
    """
    wanted = {s.path: s for s in sources}
    stats: dict[str, tuple[int, int] | None] = {}
    live: dict[str, tuple[str, dict]] = {}
    for shard, (records, _) in _finished_shards(store).items():
        payload = _Payload(store / SHARDS_DIR / f"{shard}{SHARD_SUFFIX}", shard in trusted)
        try:
            for rec in records:
                s = wanted.get(rec["path"])
                if s is None or (rec["label"], rec["split"]) != (s.label, s.split):
                    continue
                if s.path not in stats:
                    try:
                        stats[s.path] = source_stat(s)
                    except OSError:
                        stats[s.path] = None
                if stats[s.path] != (rec["source_bytes"], rec["source_mtime_ns"]):
                    continue
                if any(key not in rec for key in need):
                    continue
                if payload.holds(rec):
                    live[s.path] = (shard, rec)  # later shards win (sorted names: later runs)
                elif suspect is not None:
                    suspect.add(shard)
        finally:
            payload.close()
    return live


class _Payload:
    """A finished shard's payload file, memory-mapped on demand to check records against."""

    def __init__(self, path: Path, trusted: bool):
        self.path, self.trusted = path, trusted
        self._map: mmap.mmap | None = None
        try:
            self.size = path.stat().st_size
        except OSError:
            self.size = -1

    def holds(self, rec: dict) -> bool:
        """Every payload the record lists (frames, tracks) is in the file, intact."""
        try:
            ranges = payload_ranges(rec)
        except (KeyError, TypeError, ValueError):
            return False
        return all(self._holds(off, n, want) for _, off, n, want in ranges)

    def _holds(self, off: int, n: int, want: int | None) -> bool:
        if off < 0 or n < 0 or off + n > self.size:
            return False
        if self.trusted:
            return True
        if want is None:
            return False
        if n == 0:
            return xxhash.xxh3_64_intdigest(b"") == want
        if self._map is None:
            with open(self.path, "rb") as f:
                self._map = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        with memoryview(self._map)[off : off + n] as view:
            return xxhash.xxh3_64_intdigest(view) == want

    def close(self) -> None:
        if self._map is not None:
            self._map.close()
            self._map = None


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
    failures: dict[str, str],
    *,
    reused: int,
    started: float,
    skipped: list[dict] | None = None,
    trusted: frozenset[str] = frozenset(),
):
    from ..decode import create_decoder
    from ._build import BuildReport

    suspect: set[str] = set()
    live = live_records(store, sources, trusted=trusted, suspect=suspect, need=track_keys(options))
    # the disk decides: a video stored after all is not failed; one neither stored nor failed
    # (its worker died before saying) is failed, never silently missing
    failures = {p: e for p, e in failures.items() if p not in live}
    for s in sources:
        if s.path not in live and s.path not in failures:
            failures[s.path] = "not stored (its build worker stopped before finishing it)"
    shards = sorted({shard for shard, _ in live.values()})
    shard_id = {name: i for i, name in enumerate(shards)}
    splits = sorted({s.split for s in sources if s.split is not None})
    label_id = {c: i for i, c in enumerate(classes)}
    split_id = {s: i for i, s in enumerate(splits)}

    kept = [s for s in sources if s.path in live]
    videos = np.zeros(len(kept), VIDEO_DTYPE)
    n_frames = sum(live[s.path][1]["num_frames"] for s in kept)
    n_chunks = sum(len(live[s.path][1]["chunks"]) for s in kept)
    frames = np.zeros(n_frames, FRAME_DTYPE)
    # journals written before change scores were recorded have none: then no file at all
    with_scores = all("change_score" in live[s.path][1] for s in kept)
    change = np.zeros(n_frames if with_scores else 0, np.float32)
    # so too flow scores: only a --flow build whose every journal lists them
    with_motion = bool(options.flow) and all(
        isinstance(live[s.path][1].get("flow"), dict) and "score" in live[s.path][1]["flow"]
        for s in kept
    )
    motion = np.zeros(n_frames if with_motion else 0, np.float32)
    chunks = np.zeros(n_chunks, CHUNK_DTYPE)
    details = []
    damaged = []
    gaps: list[dict] = []  # videos whose frames have gaps over max_gap (not filled)
    f0 = c0 = 0
    for v, s in enumerate(kept):
        shard, r = live[s.path]
        n, k = r["num_frames"], len(r["chunks"])
        channels, height, width = r["shape"]
        videos[v] = pack_video_row(
            VideoRow(
                shard=shard_id[shard],
                offset=r["offset"],
                nbytes=r["nbytes"],
                num_frames=n,
                channels=channels,
                height=height,
                width=width,
                fps=r["fps"],
                label_id=label_id.get(r["label"], -1) if r["label"] is not None else -1,
                split_id=split_id.get(r["split"], -1) if r["split"] is not None else -1,
                frame_start=f0,
                chunk_start=c0,
                num_chunks=k,
                num_frames_decoded=r["num_frames_decoded"],
                num_frames_from_header=(
                    -1 if r["num_frames_from_header"] is None else r["num_frames_from_header"]
                ),
                source_bytes=r["source_bytes"],
                source_mtime_ns=r["source_mtime_ns"],
                stream=r["stream"],
                payload_xxh3_64=r.get("payload_xxh3_64", 0),
                decode_errors=r.get("decode_errors", 0),
            )
        )
        frames["pts_seconds"][f0 : f0 + n] = r["pts_seconds"]
        frames["source_index"][f0 : f0 + n] = r["source_frame_indices"]
        if with_scores:
            change[f0 : f0 + n] = r["change_score"]
        if with_motion:
            motion[f0 : f0 + n] = r["flow"]["score"]
        if k:
            chunks[c0 : c0 + k] = [tuple(c) for c in r["chunks"]]
        details.append({key: r.get(key) for key in DETAIL_KEYS})
        if r.get("decode_errors"):
            damaged.append(as_given(damage_row(r), s))
        if r.get("timestamp_gaps"):
            gaps.append({"path": r["path"], **r["timestamp_gaps"]})
        f0 += n
        c0 += k

    index = store / INDEX_DIR
    index.mkdir(exist_ok=True)
    save_npy_atomic(index / VIDEOS_FILE, videos)
    save_npy_atomic(index / FRAMES_FILE, frames)
    save_npy_atomic(index / CHUNKS_FILE, chunks)
    index_files = [VIDEOS_FILE, FRAMES_FILE, CHUNKS_FILE, STRINGS_FILE, DETAILS_FILE]
    if with_scores:
        save_npy_atomic(index / CHANGE_FILE, change)
        index_files.append(CHANGE_FILE)
    else:
        (index / CHANGE_FILE).unlink(missing_ok=True)
    if with_motion:
        save_npy_atomic(index / FLOW_SCORE_FILE, motion)
        index_files.append(FLOW_SCORE_FILE)
    else:
        (index / FLOW_SCORE_FILE).unlink(missing_ok=True)
    audio, flow = track_tables(
        [live[s.path][1] for s in kept], [shard_id[live[s.path][0]] for s in kept], options
    )
    for name, table in ((AUDIO_FILE, audio), (FLOW_FILE, flow)):
        if table is not None:
            save_npy_atomic(index / name, table)
            index_files.append(name)
        else:
            (index / name).unlink(missing_ok=True)
    annotations, notes = build_annotations(kept, [live[s.path][1] for s in kept], classes)
    index_files += write_annotations(index, annotations)
    strings = {
        "paths": [s.path for s in kept],
        "classes": classes,
        "splits": splits,
        "shards": [f"{name}{SHARD_SUFFIX}" for name in shards],
    }
    write_json_atomic(index / STRINGS_FILE, strings)
    write_bytes_atomic(
        index / DETAILS_FILE, "".join(json.dumps(d) + "\n" for d in details).encode()
    )

    shard_rows = []
    for name in shards:
        _, summary = load_shard(store / SHARDS_DIR, name)
        path = store / SHARDS_DIR / f"{name}{SHARD_SUFFIX}"
        size, checksum = summary["bytes"], summary["checksum"]
        if name in suspect or path.stat().st_size != size:
            # damaged bytes that no kept video uses any more: the file is what it is now
            size, checksum = path.stat().st_size, checksum_file(path)
        shard_rows.append({"name": f"{name}{SHARD_SUFFIX}", "bytes": size, "checksum": checksum})
    index_rows = [
        {
            "name": f"{INDEX_DIR}/{f}",
            "bytes": (index / f).stat().st_size,
            "checksum": checksum_file(index / f),
        }
        for f in index_files
    ]
    repeats = repeated_frames(frames["source_index"], videos["frame_start"], videos["num_frames"])
    upsampled = upsampled_rows(
        [s.path for s in kept],
        videos["fps"],
        videos["num_frames"],
        repeats,
        lambda i: int(videos["num_frames_decoded"][i]),
    )
    decoder = create_decoder(options.decoder)
    by_path = {s.path: s for s in sources}
    failed = [as_given({"path": p, "error": e}, by_path.get(p)) for p, e in failures.items()]
    store_bytes = sum(r["bytes"] for r in shard_rows)
    source_bytes = int(videos["source_bytes"].sum())
    manifest = {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "hyperframes_version": __version__,
        "git_commit": git_commit(),
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "build": {**options.content(), "workers": options.workers},
        "decoder": {
            "name": options.decoder,
            "version": decoder.version(),
            "resize_algorithm": decoder.resize_algorithm,
            "color_conversion": "RGB24 by the decoder; the stream's own matrix/range when set, "
            "else the decoder's default (BT.601, limited range)",
            "rotation": "display rotation applied: frames are stored upright",
        },
        "codec": {"name": options.codec, **_codec_params(options)},
        "dtype": options.dtype,
        "layout": "FCHW",
        "normalize": (
            {"mean": list(options.mean), "std": list(options.std)}
            if options.dtype == "float16"
            else None
        ),
        "checksum_algorithm": CHECKSUM_ALGORITHM,
        "shards": shard_rows,
        "index": index_rows,
        "num_videos": len(kept),
        "num_frames": int(n_frames),
        "store_bytes": store_bytes,
        "source_bytes": source_bytes,
        "classes": classes,
        "failed": failed,
        "damaged": damaged,
        "gaps": gaps,
        "skipped": list(skipped or []),
        "notes": notes,
    }
    fields = {s.path: dict(s.fields) for s in kept if s.fields}
    if fields:  # the other columns of an annotation's rows (a videofolder's), by path
        manifest["fields"] = fields
    write_json_atomic(store / MANIFEST, manifest)
    _remove_dead_shards(store, set(shards))
    return BuildReport(
        store=str(store),
        videos=len(kept),
        frames=int(n_frames),
        store_bytes=store_bytes,
        source_bytes=source_bytes,
        failed=failed,
        reused=reused,
        seconds=time.perf_counter() - started,
        damaged=damaged,
        skipped=list(skipped or []),
        notes=notes,
        gaps=gaps,
        upsampled=upsampled,
    )


def as_given(row: dict, source: Source | None) -> dict:
    """A failed or damaged row of a source reached through a symlink, said under the path the
    user gave: ``path`` that path, ``target`` the file it leads to, and an error's first
    ``target:`` said as ``given -> target:``."""
    if source is None or source.given is None:
        return row
    out = {**row, "path": source.given, "target": source.path}
    if isinstance(row.get("error"), str):
        text, at = row["error"], row["error"].find(f"{source.path}:")
        if at >= 0:
            text = text[:at] + source.shown + text[at + len(source.path) :]
        else:
            text = f"{source.shown}: {text}"
        out["error"] = text
    return out


def damage_row(record: dict) -> dict:
    """The manifest's ``damaged`` entry for a stored video the decoder reported errors for."""
    from ..decode import DecodeReport

    counts = record.get("decode_error_counts") or {}
    messages = record.get("decode_error_messages") or []
    summary = str(DecodeReport(counts=dict(counts), messages=list(messages)))
    return {
        "path": record["path"],
        "decode_errors": record["decode_errors"],
        "counts": counts,
        "messages": messages,
        "summary": summary,
    }


def _codec_params(options: BuildOptions) -> dict:
    if options.codec == "jpeg":
        return {"quality": options.jpeg_quality, "subsampling": "420", "library": "libjpeg-turbo"}
    if options.codec in ("lz4", "zstd"):
        return {"chunk_frames": options.chunk_frames}
    return {}


def _remove_dead_shards(store: Path, live: set[str]) -> None:
    for p in (store / SHARDS_DIR).glob(f"*{RECORDS_SUFFIX}"):
        name = p.name[: -len(RECORDS_SUFFIX)]
        if name not in live:
            (store / SHARDS_DIR / f"{name}{SHARD_SUFFIX}").unlink(missing_ok=True)
            p.unlink(missing_ok=True)
