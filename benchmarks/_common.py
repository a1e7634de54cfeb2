"""Shared helpers for the stand-alone benchmarks: a dataset to measure on, timing, results."""

from __future__ import annotations

import json
import platform
import statistics
import time
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"


def bench_dataset(root: Path, *, videos_per_class: int = 4, frames: int = 96, size: int = 192):
    """Synthetic H.264 motion videos (6 classes) made once and reused."""
    from hyperframes.demo import make_motion_dataset

    if not any(root.rglob("*.mp4")):
        make_motion_dataset(root, videos_per_class=videos_per_class, frames=frames, size=size)
    return root


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
