"""Opening a Kinetics-size store: 300k videos, 100M frames, and serving windows from it through
``HyperframeDataset``. The index is memory-mapped, so opening reads the manifest and the string
table, and checks every index row against the others and the shard sizes (vectorised; no
payload byte is read). The dataset then builds its sampler's table from the index's columns
(no Python object per video) and counts the sampler's items; planning an item is index
arithmetic on those columns.

Targets (issue: fast where users feel it, item 3): ``HyperframeDataset`` over such a store is
created (store opened, table built, items counted) in under a second, and plans a window in
under 100 µs (``dataset.plan(item)``, the same call ``__getitems__`` makes per item).
Run: .venv/bin/python benchmarks/bench_open.py [--videos 300000 --frames-per-video 333]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import xxhash

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import write_result
from hyperframes.build._shard import checksum_file
from hyperframes.store import open_store
from hyperframes.store.format import (
    CHUNK_DTYPE,
    FORMAT_NAME,
    FORMAT_VERSION,
    FRAME_DTYPE,
    VIDEO_DTYPE,
)


def fake_store(root: Path, videos: int, per_video: int) -> None:
    """A store whose index describes ``videos`` x ``per_video`` frames of 3x1x1: consistent rows
    (each video's own payload bytes, back to back, as open checks), payload sparse on disk."""
    (root / "shards").mkdir(parents=True)
    (root / "index").mkdir()
    frame_bytes = 3
    video_bytes = per_video * frame_bytes
    shard = root / "shards" / "r000-w000-00000.bin"
    with open(shard, "wb") as f:
        f.truncate(videos * video_bytes)  # zeros, without writing them
    v = np.zeros(videos, VIDEO_DTYPE)
    v["offset"] = np.arange(videos, dtype=np.int64) * video_bytes
    v["num_frames"] = per_video
    v["channels"], v["height"], v["width"] = 3, 1, 1
    v["nbytes"] = video_bytes
    v["fps"] = 30.0
    v["label_id"] = np.arange(videos) % 400
    v["split_id"] = -1
    v["frame_start"] = np.arange(videos, dtype=np.int64) * per_video
    v["num_frames_decoded"] = per_video
    v["num_frames_from_header"] = per_video
    v["payload_xxh3_64"] = xxhash.xxh3_64_intdigest(bytes(video_bytes))
    np.save(root / "index" / "videos.npy", v)
    frames = np.lib.format.open_memmap(
        root / "index" / "frames.npy", mode="w+", dtype=FRAME_DTYPE, shape=(videos * per_video,)
    )
    block = np.zeros(per_video, FRAME_DTYPE)
    block["pts_seconds"] = np.arange(per_video) / 30.0
    block["source_index"] = np.arange(per_video)
    for i in range(0, videos, 10000):
        n = min(10000, videos - i)
        frames[i * per_video : (i + n) * per_video] = np.tile(block, n)
    frames.flush()
    del frames
    np.save(root / "index" / "chunks.npy", np.zeros(0, CHUNK_DTYPE))
    strings = {
        "paths": [
            f"/data/kinetics/train/class_{i % 400:03d}/video_{i:06d}.mp4" for i in range(videos)
        ],
        "classes": [f"class_{c:03d}" for c in range(400)],
        "splits": [],
        "shards": ["r000-w000-00000.bin"],
    }
    (root / "index" / "strings.json").write_text(json.dumps(strings))
    (root / "index" / "details.jsonl").write_text("")
    index_rows = [
        {
            "name": f"index/{f}",
            "bytes": (root / "index" / f).stat().st_size,
            "checksum": checksum_file(root / "index" / f),
        }
        for f in ("videos.npy", "frames.npy", "chunks.npy", "strings.json", "details.jsonl")
    ]
    manifest = {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "codec": {"name": "raw"},
        "dtype": "uint8",
        "shards": [
            {
                "name": "r000-w000-00000.bin",
                "bytes": videos * video_bytes,
                "checksum": checksum_file(shard),
            }
        ],
        "index": index_rows,
        "num_frames": videos * per_video,
        "failed": [],
    }
    (root / "manifest.json").write_text(json.dumps(manifest))


def plan_times(store, frames: int = 16, plans: int = 2000) -> dict:
    """The samplers alone, on a table of the index's frame counts: seconds to count the items
    and microseconds per plan, for the sliding and random samplers."""
    from hyperframes.sampling import VideoTable, create_sampler

    table = VideoTable.from_arrays(np.asarray(store.videos.num_frames), 30.0)
    rng = np.random.default_rng(0)
    out = {}
    for name in ("sliding", "random"):
        sampler = create_sampler(name, frames=frames)
        t0 = time.perf_counter()
        n = sampler.num_items(table)
        count_s = time.perf_counter() - t0
        items = rng.integers(0, n, plans)
        t0 = time.perf_counter()
        for i in items:
            sampler.plan(table, int(i), seed=1, epoch=2)
        out[name] = {
            "items": int(n),
            "count_seconds": count_s,
            "plan_microseconds": (time.perf_counter() - t0) / plans * 1e6,
        }
    return out


def dataset_times(path: Path, *, frames: int = 16, plans: int = 2000, repeats: int = 5) -> dict:
    """Per sampler: seconds to create ``HyperframeDataset(path)`` (open the store, build the
    table, count the items; median of ``repeats`` fresh creations) and microseconds per
    ``dataset.plan(item)`` over random items."""
    from hyperframes.data import HyperframeDataset

    rng = np.random.default_rng(0)
    out = {}
    for name, options in (("random", {}), ("sliding", {}), ("duration", {"seconds": 0.5})):
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            ds = HyperframeDataset(path, sampler=name, frames=frames, sampler_options=options)
            times.append(time.perf_counter() - t0)
        items = rng.integers(0, len(ds), plans).tolist()
        ds.plan(items[0])  # first plan: the sampler's per-table cache is already built
        t0 = time.perf_counter()
        for i in items:
            ds.plan(i)
        out[name] = {
            "items": len(ds),
            "create_seconds_median": statistics.median(times),
            "create_seconds_first": times[0],
            "plan_microseconds": (time.perf_counter() - t0) / plans * 1e6,
        }
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--videos", type=int, default=300_000)
    ap.add_argument("--frames-per-video", type=int, default=333)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="hf-bench-open-"))
    try:
        t0 = time.perf_counter()
        fake_store(tmp / "store", args.videos, args.frames_per_video)
        made = time.perf_counter() - t0
        times = []
        for _ in range(5):
            t0 = time.perf_counter()
            s = open_store(tmp / "store")
            rec = s.videos[args.videos // 2]
            _ = rec.pts_seconds[-1], s.read_numpy(rec, [0, 1])
            times.append(time.perf_counter() - t0)
        planning = plan_times(s)
        s.close()
        dataset = dataset_times(tmp / "store")
        worst_create = max(d["create_seconds_median"] for d in dataset.values())
        worst_plan = max(d["plan_microseconds"] for d in dataset.values())
        write_result(
            "open",
            {
                "videos": args.videos,
                "frames": args.videos * args.frames_per_video,
                "index_bytes": sum(f.stat().st_size for f in (tmp / "store" / "index").iterdir()),
                "seconds_to_make_index": made,
                "open_seconds_median": statistics.median(times),
                "open_seconds_first": times[0],
                "planning": planning,
                "dataset": dataset,
                "targets": {
                    "dataset_create_seconds_at_most": {
                        "value": worst_create,
                        "target": 1.0,
                        "met": worst_create < 1.0,
                    },
                    "plan_microseconds_at_most": {
                        "value": worst_plan,
                        "target": 100.0,
                        "met": worst_plan < 100.0,
                    },
                },
            },
        )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
