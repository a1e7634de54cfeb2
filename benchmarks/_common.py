"""Shared helpers for the stand-alone benchmarks: a dataset to measure on, timing, results."""

from __future__ import annotations

import json
import platform
import statistics
import time
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"


REAL_CLIP = Path(__file__).resolve().parents[2] / "shared" / "videos" / "test.mp4"


def make_sources(root: Path, copies: int = 12) -> str:
    """Copies of the real Kinetics-style clip ../shared/videos/test.mp4 (H.264 340x256, 30 fps,
    300 frames, keyframes at 0 and 235) in two class folders; synthetic H.264 with x264's
    default keyframe interval when that folder is absent. Returns a description."""
    import shutil

    if REAL_CLIP.exists():
        for i in range(copies):
            dst = root / ("a" if i % 2 else "b") / f"clip_{i:02d}.mp4"
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(REAL_CLIP, dst)
        return f"{copies} copies of {REAL_CLIP.name} (real H.264 340x256, 300 frames)"
    from hyperframes.demo import make_motion_dataset

    make_motion_dataset(root, videos_per_class=2, frames=300, size=256, fps=30, gop=250)
    return "12 synthetic H.264 256x256 clips, 300 frames, keyframe interval 250"


def median_time(fn, *, repeats: int = 3, warmup: int = 1) -> float:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def write_result(name: str, result: dict) -> Path:
    RESULTS.mkdir(exist_ok=True)
    result = {
        "benchmark": name,
        "date": time.strftime("%Y-%m-%d %H:%M:%S"),
        "machine": f"{platform.machine()}, {platform.processor() or 'cpu'}, "
        f"{__import__('os').cpu_count()} cores, Python {platform.python_version()}",
        **result,
    }
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))
    return path


def folder_bytes(path: Path) -> int:
    """Bytes of every file under ``path``."""
    return sum(f.stat().st_size for f in Path(path).rglob("*") if f.is_file())


def litdata_optimize(fn, inputs, out: Path, loader=None) -> None:
    """``litdata.optimize`` of ``fn`` over ``inputs`` into ``out`` (64 MB chunks, one worker;
    ``loader``: its item loader, e.g. ``TemporalArrayLoader``)."""
    from litdata import optimize  # (benchmark-only peer)

    kw = {"item_loader": loader} if loader is not None else {}
    optimize(fn=fn, inputs=inputs, output_dir=str(out), chunk_bytes="64MB", num_workers=1, **kw)


def tiny_store(root: Path) -> str:
    """A 2-video store (short side 64) for benchmarks that time commands rather than reads."""
    from hyperframes.build import BuildOptions, build_store

    data = root / "data"
    make_sources(data, copies=2)
    out = root / "store"
    build_store(data, out, BuildOptions(size="64"), progress=False)
    return str(out)
