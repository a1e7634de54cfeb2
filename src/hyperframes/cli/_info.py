"""What ``hyperframes info`` prints."""

from __future__ import annotations

import numpy as np


def describe(store) -> dict:
    m = store.manifest
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
        "store_bytes": m.get("store_bytes"),
        "source_bytes": m.get("source_bytes"),
        "shards": m.get("shards"),
        "checksum_algorithm": m.get("checksum_algorithm"),
        "failed": m.get("failed", []),
        "damaged": m.get("damaged", []),
        "skipped": m.get("skipped", []),
        "videos_shown": videos,
    }


def format_info(d: dict) -> str:
    ratio = d["store_bytes"] / d["source_bytes"] if d.get("source_bytes") else float("nan")
    fpv = d["frames_per_video"]
    lines = [
        f"store          {d['store']}",
        f"format         v{d['format_version']}, hyperframes {d['hyperframes_version']}"
        f" (commit {str(d['git_commit'])[:10]}), created {d['created']}",
        f"build          {d['build']}",
        f"decoder        {d['decoder']['name']} {d['decoder']['version']}, resize "
        f"{d['decoder']['resize_algorithm']}",
        f"codec          {d['codec']}, dtype {d['dtype']}"
        + (f", normalize {d['normalize']}" if d["normalize"] else ""),
        f"videos         {d['num_videos']} ({d['num_frames']} frames; per video min "
        f"{fpv['min']}, median {fpv['median']:g}, max {fpv['max']})",
        _streams_line(d["streams"]),
        f"classes        {len(d['classes'])}: {', '.join(d['classes'][:12])}"
        + (" ..." if len(d["classes"]) > 12 else ""),
        f"size           {d['store_bytes'] / 1e6:.2f} MB in {len(d['shards'] or [])} shard(s), "
        f"{ratio:.2f}x the source's {d['source_bytes'] / 1e6:.2f} MB",
        f"checksums      {d['checksum_algorithm']}",
        f"failed         {len(d['failed'])}",
    ]
    lines += [f"  {f['path']}: {f['error']}" for f in d["failed"]]
    lines.append(f"damaged        {len(d['damaged'])} (stored; the decoder reported errors)")
    lines += [f"  {x['path']}: {x['summary']}" for x in d["damaged"]]
    lines.append(f"skipped        {len(d['skipped'])} (files under the data that are not inputs)")
    lines += [f"  {x['path']}: {x['reason']}" for x in d["skipped"][:50]]
    if len(d["skipped"]) > 50:
        lines.append(f"  ... {len(d['skipped']) - 50} more (info --json lists all)")
    lines.append("videos (first 20):")
    for r in d["videos_shown"]:
        c, h, w = r["shape"]
        lines.append(
            f"  {r['num_frames']:6d} frames {c}x{h}x{w} @ {r['fps']:.3g} fps, stream "
            f"v:{r['stream']} (decoded {r['num_frames_decoded']}, "
            f"header {r['num_frames_from_header']}"
            + (f", DAMAGED: {r['decode_errors']} decoder errors" if r["decode_errors"] else "")
            + f") [{r['label']}] {r['path']}"
        )
    return "\n".join(lines)


def _streams_line(s: dict) -> str:
    if s["chosen_by"] == "widest":
        rule = "each file's widest video stream (build's default)"
    else:
        rule = f"{s['chosen_by']} of each file (build --stream {s['chosen_by'][2:]})"
    n = s["videos_not_first_stream"]
    return f"streams        {rule}; {n} video{'' if n == 1 else 's'} from a stream other than v:0"
