"""What a store holds: a dict (:func:`describe_store`) and its text (:func:`format_store_info`),
which ``hyperframes info`` prints and the demo shows.

An HDF5 store is described from the file itself: its size (``store_bytes``), what its video
datasets hold and how HDF5 compresses them (``hdf5``, from :meth:`H5Store.storage`), and the
folder store it was converted from (``converted_from``: that store's codec and size), never
that store's codec or size as if they were the file's."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .._core._text import printable_lines, unlisted_line
from .._core._urls import is_url
from ._hdf5 import H5Store
from ._rates import repeated_frames, upsampled_line, upsampled_rows
from .format import FAILURES_FILE

__all__ = ["describe_store", "format_store_info", "gap_text"]


def describe_store(store) -> dict:
    m = store.manifest
    hdf5 = store.storage() if isinstance(store, H5Store) else None
    v = store.videos
    nf = v.num_frames
    videos = []
    for i in range(min(len(v), 20)):
        r = v[i]
        videos.append(
            {
                "path": r.path,
                "label": r.label,
                "num_frames": r.num_frames,
                "num_frames_decoded": r.num_frames_decoded,
                "num_frames_from_header": r.num_frames_from_header,
                "fps": r.fps,
                "stream": r.stream,
                "shape": list(r.shape),
                "decode_errors": r.decode_errors,
            }
        )
    build = m.get("build") or {}
    streams = v.streams
    return {
        "store": str(store.path),
        "form": "folder" if hdf5 is None else "hdf5",
        "format_version": m.get("format_version"),
        "hyperframes_version": m.get("hyperframes_version"),
        "git_commit": m.get("git_commit"),
        "created": m.get("created"),
        "build": m.get("build"),
        "decoder": m.get("decoder"),
        "codec": m.get("codec"),
        "dtype": m.get("dtype"),
        "normalize": m.get("normalize"),
        "num_videos": len(v),
        "num_frames": int(nf.sum()) if len(v) else 0,
        "frames_per_video": {
            "min": int(nf.min()) if len(v) else 0,
            "median": float(np.median(nf)) if len(v) else 0,
            "max": int(nf.max()) if len(v) else 0,
        },
        "streams": {
            # build --stream K decodes v:K of every file; by default each file's widest stream
            "chosen_by": "widest" if build.get("stream") is None else f"v:{build['stream']}",
            "videos_not_first_stream": int((streams != 0).sum()) if len(v) else 0,
        },
        "classes": store.classes,
        "splits": _splits(v),
        "class_counts": class_counts(store.classes, v),
        "store_bytes": m.get("store_bytes") if hdf5 is None else hdf5["file_bytes"],
        "source_bytes": m.get("source_bytes"),
        "shards": m.get("shards"),
        "checksum_algorithm": m.get("checksum_algorithm") if hdf5 is None else hdf5["checksums"],
        "hdf5": hdf5,
        "converted_from": m.get("converted_from"),
        "failed": m.get("failed", []),
        # (a manifest without the count lists every failure)
        "failed_count": m.get("failed_count", len(m.get("failed", []))),
        "failures_file": _failures_file(store, hdf5),
        "damaged": m.get("damaged", []),
        "gaps": m.get("gaps", []),
        "skipped": m.get("skipped", []),
        "fields": m.get("fields", {}),
        "upsampled": _upsampled(v),
        "tracks": _tracks(store),
        "videos_shown": videos,
    }


def _failures_file(store, hdf5) -> str | None:
    """The store folder's file listing every failed input (the manifest lists the first),
    when there is one here."""
    if hdf5 is not None or is_url(str(store.path)):
        return None
    path = Path(store.path) / FAILURES_FILE
    return str(path) if path.is_file() else None


def _splits(videos) -> dict[str, int]:
    """``{split name: videos}`` of the splits the store records (a CSV annotation's ``split``
    column, UCF-style lists), in the store's order of names; ``{}`` when it records none."""
    if not len(videos):
        return {}
    ids = np.asarray(videos.split_ids)
    names = list(videos.splits)
    counts = np.bincount(ids[ids >= 0], minlength=len(names))
    return {names[k]: int(n) for k, n in enumerate(counts.tolist()) if n and names[k]}


#: the key ``class_counts`` counts videos without one label under: unlabelled videos, and
#: multi-label ones (several classes, or segments of several classes)
UNLABELLED = "(no single label)"
#: the key ``class_counts["by_split"]`` counts videos without a split under
NO_SPLIT = "(no split)"


def class_counts(classes: list[str], videos) -> dict:
    """Videos per class: ``{"all": {class: n}, "by_split": {split: {class: n}}}``, every class
    listed (0 included), videos without one label (unlabelled, multi-label) under
    :data:`UNLABELLED` (when there are any);
    ``by_split`` holds the recorded splits in the store's order, then :data:`NO_SPLIT` for
    videos without one (``{}`` when the store records no split)."""
    labels = np.asarray(videos.label_ids, np.int64) if len(videos) else np.zeros(0, np.int64)
    split_ids = np.asarray(videos.split_ids) if len(videos) else np.zeros(0, np.int64)

    def count(mask: np.ndarray) -> dict[str, int]:
        got = labels[mask]
        out = {name: int((got == k).sum()) for k, name in enumerate(classes)}
        if (got < 0).any():
            out[UNLABELLED] = int((got < 0).sum())
        return out

    by_split: dict[str, dict[str, int]] = {}
    if (split_ids >= 0).any():
        for k, name in enumerate(videos.splits):
            if (split_ids == k).any():
                by_split[name] = count(split_ids == k)
        if (split_ids < 0).any():
            by_split[NO_SPLIT] = count(split_ids < 0)
    return {"all": count(np.ones(len(labels), bool)), "by_split": by_split}


def _classes_line(classes: list[str]) -> str:
    if not classes:
        return "classes        unlabelled (no class folders or labels in the inputs)"
    shown = ", ".join(classes[:12]) + (" ..." if len(classes) > 12 else "")
    return f"classes        {len(classes)}: {shown}"


def _splits_line(splits: dict[str, int]) -> str:
    if not splits:
        return "splits         none recorded (training splits the videos itself: data.val_fraction)"
    return (
        "splits         "
        + ", ".join(f"{name} {n}" for name, n in splits.items())
        + " (data.train_split / data.val_split, or HyperframeDataset(split=...))"
    )


def _upsampled(v) -> list[dict]:
    """The videos stored with repeated frames (a rate above the source's), from the index."""
    if not len(v):
        return []
    repeats = repeated_frames(v.source_index_all, v.frame_start, v.num_frames)
    return upsampled_rows(v.paths, v.fps, v.num_frames, repeats, lambda i: v[i].num_frames_decoded)


def _tracks(store) -> dict:
    """``{"audio": ..., "flow": ...}``: each None when the store was built without it."""
    tracks = getattr(store, "_tracks", None)
    out: dict = {"audio": None, "flow": None}
    if tracks is None:
        return out
    paths = store.videos.paths
    if tracks.audio is not None:
        a = tracks.audio
        has = a["has_audio"] == 1
        build = tracks.build
        out["audio"] = {
            "sample_rate": build.get("audio_rate"),
            "channels": build.get("audio_channels"),
            "videos_with_audio": int(has.sum()),
            "videos_without_audio": [paths[i] for i in np.flatnonzero(~has).tolist()],
            "samples": int(a["num_samples"].sum()),
            "bytes": int(a["nbytes"].sum()),
        }
    if tracks.flow is not None:
        f = tracks.flow
        sizes = sorted({(int(h), int(w)) for h, w in zip(f["height"], f["width"])})
        out["flow"] = {
            **(tracks.flow_info() or {}),
            "flow_sizes": [list(hw) for hw in sizes],
            "pairs": int(f["num_pairs"].sum()),
            "bytes": int(f["nbytes"].sum() + f["homography_nbytes"].sum()),
            "homographies": "one 3x3 per pair: frame k+1 -> frame k, stored frame pixels",
        }
    return out


def format_store_info(d: dict) -> str:
    ratio = d["store_bytes"] / d["source_bytes"] if d.get("source_bytes") else float("nan")
    fpv = d["frames_per_video"]
    lines = [
        f"store          {d['store']}",
        f"format         v{d['format_version']}"
        + (" (HDF5 form)" if d["hdf5"] is not None else "")
        + f", hyperframes {d['hyperframes_version']}"
        f" (commit {str(d['git_commit'])[:10]}), created {d['created']}",
        f"build          {d['build']}",
        f"decoder        {d['decoder']['name']} {d['decoder']['version']}, resize "
        f"{d['decoder']['resize_algorithm']}",
        *_codec_lines(d),
        f"videos         {d['num_videos']} ({d['num_frames']} frames; per video min "
        f"{fpv['min']}, median {fpv['median']:g}, max {fpv['max']})",
        _streams_line(d["streams"]),
        _classes_line(d["classes"]),
        _splits_line(d.get("splits") or {}),
        f"size           {d['store_bytes'] / 1e6:.2f} MB "
        + (f"in {len(d['shards'] or [])} shard(s)" if d["hdf5"] is None else "(the file)")
        + f", {ratio:.2f}x the source's {d['source_bytes'] / 1e6:.2f} MB",
        f"checksums      {d['checksum_algorithm']}",
        f"failed         {d['failed_count']}",
    ]
    lines += [f"  {f['path']}: {f['error']}" for f in d["failed"]]
    lines += unlisted_line(d["failed_count"], len(d["failed"]), d.get("failures_file"))
    lines.append(f"damaged        {len(d['damaged'])} (stored; the decoder reported errors)")
    lines += [f"  {x['path']}: {x['summary']}" for x in d["damaged"]]
    if d.get("gaps"):
        lines.append(f"gaps           {len(d['gaps'])} (timestamp gaps over max_gap, not filled)")
        lines += [f"  {x['path']}: {gap_text(x)}" for x in d["gaps"][:50]]
    lines.append(f"skipped        {len(d['skipped'])} (files under the data that are not inputs)")
    lines += [f"  {x['path']}: {x['reason']}" for x in d["skipped"][:50]]
    if len(d["skipped"]) > 50:
        lines.append(f"  ... {len(d['skipped']) - 50} more (info --json lists all)")
    up = d.get("upsampled") or []
    if up:
        lines.append(
            f"upsampled      {len(up)} (stored at a rate above the source's: frames repeated)"
        )
        lines += [upsampled_line(r) for r in up[:20]]
        if len(up) > 20:
            lines.append(f"  ... {len(up) - 20} more (info --json lists all)")
    lines += _track_lines(d.get("tracks") or {})
    lines.append("videos (first 20):")
    for r in d["videos_shown"]:
        c, h, w = r["shape"]
        lines.append(
            f"  {r['num_frames']:6d} frames {c}x{h}x{w} @ {round(r['fps'], 3):g} fps, stream "
            f"v:{r['stream']} (decoded {r['num_frames_decoded']}, "
            f"header {r['num_frames_from_header']}"
            + (f", DAMAGED: {r['decode_errors']} decoder errors" if r["decode_errors"] else "")
            + f") [{r['label']}] {r['path']}"
        )
    return printable_lines(lines)  # (names from files may hold newlines and ESC)


def _track_lines(t: dict) -> list[str]:
    a, f = t.get("audio"), t.get("flow")
    if a is None:
        lines = ["audio          none (built without --audio)"]
    else:
        layout = {1: "mono", 2: "stereo"}.get(a["channels"], f"{a['channels']} channels")
        without = a["videos_without_audio"]
        n = a["videos_with_audio"] + len(without)
        lines = [
            f"audio          {a['sample_rate']} Hz {layout} float32: {a['videos_with_audio']} of "
            f"{n} videos have audio ({a['bytes'] / 1e6:.2f} MB); {len(without)} without"
            + (":" if without else "")
        ]
        lines += [f"  {p}" for p in without[:20]]
        if len(without) > 20:
            lines.append(f"  ... {len(without) - 20} more (info --json lists all)")
    if f is None:
        lines.append("flow           none (built without --flow)")
    else:
        sizes = ", ".join(f"{h}x{w}" for h, w in f["flow_sizes"])
        lines.append(
            f"flow           {f['method']}, {f['dtype']}, size {f['size'] or 'as stored'} "
            f"({sizes or 'no videos'}): {f['pairs']} frame pairs with a homography each "
            f"({f['bytes'] / 1e6:.2f} MB)"
        )
    return lines


def _codec_lines(d: dict) -> list[str]:
    norm = f", normalize {d['normalize']}" if d["normalize"] else ""
    h = d["hdf5"]
    if h is None:
        lines = [f"codec          {d['codec']}, dtype {d['dtype']}{norm}"]
        if d["converted_from"]:  # convert --codec: the frames were another codec's
            lines.append(_converted_line(d["converted_from"]))
        return lines
    compression = ", ".join(f"{k} ({n} videos)" for k, n in h["compression"].items())
    chunks = " or ".join(
        "one contiguous block" if c == 0 else f"chunks of {c} frame{'s' if c > 1 else ''}"
        for c in h["chunk_frames"]
    )
    decoded = h["frames_decoded_bytes"]
    lines = [
        f"codec          raw, no frame codec (HDF5 form): {h['frames']}{norm}",
        f"hdf5           compression {compression or 'none'}; {chunks or 'no videos'}; frames "
        f"{h['frames_stored_bytes'] / 1e6:.2f} MB in the file, {decoded / 1e6:.2f} MB decoded",
    ]
    src = d["converted_from"]
    if src and src.get("built") is True:  # build --format hdf5: its staging store is no source
        lines.append("built          as HDF5 directly (build --format hdf5), not converted")
    elif src:
        lines.append(_converted_line(src))
    return lines


def _converted_line(src: dict) -> str:
    """The line saying which store the frames were converted from (``converted_from``)."""
    codec = dict(src["codec"])
    name = codec.pop("name", "?")
    params = ", ".join(f"{k}={v}" for k, v in codec.items())
    was = src.get("store_bytes")
    return (
        f"converted from a {name} store"
        + (f" ({params})" if params else "")
        + (f" of {was / 1e6:.2f} MB" if isinstance(was, int) else "")
        + f" in {src.get('shards', '?')} shard(s)"
    )


def _streams_line(s: dict) -> str:
    if s["chosen_by"] == "widest":
        rule = "each file's widest video stream (build's default)"
    else:
        rule = f"{s['chosen_by']} of each file (build --stream {s['chosen_by']})"
    n = s["videos_not_first_stream"]
    return f"streams        {rule}; {n} video{'' if n == 1 else 's'} from a stream other than v:0"


def gap_text(gaps: dict) -> str:
    """``"2 gaps over 5 s, 200000.0 s in all; the first from 0.500 s to 100001.000 s"`` (a
    manifest is untrusted: an entry that does not read so is shown as it is)."""
    try:
        n = int(gaps["count"])
        first = gaps["first"][0] if gaps.get("first") else None
        where = f"; the first from {first[0]:.3f} s to {first[1]:.3f} s" if first else ""
        return (
            f"{n} gap{'s' if n != 1 else ''} over {float(gaps['max_gap']):g} s, "
            f"{float(gaps['seconds']):.1f} s in all{where}"
        )
    except (KeyError, IndexError, TypeError, ValueError, AttributeError):
        return f"gaps listed as {gaps!r:.200}"
