"""Build time of the Ray engine next to the local one on the same videos and the same number of
decoding processes (2 by default), on this one machine.

Three figures: the local build (``--workers N``), a Ray build that starts its own Ray instance
(``--engine ray`` with no address: what a one-off command pays), and a Ray build on a Ray
instance already running (``--ray-address`` of a cluster: actors still start per build). The
stores are checked to hold the same frames.

Run: .venv/bin/python benchmarks/bench_build_ray.py [--workers 2] [--repeats 3]
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import make_sources, write_result
from hyperframes.build import BuildOptions, build_store


def store_content(store) -> list:
    """(path, pts, frames' bytes) of every video: equal for stores of the same content."""
    import numpy as np

    from hyperframes.store import open_store

    s = open_store(store)
    try:
        return [
            (v.path, v.pts_seconds.tolist(), s.read_numpy(v, np.arange(v.num_frames)).tobytes())
            for v in s.videos
        ]
    finally:
        s.close()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--size", default="112x112")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    import ray

    tmp = Path(tempfile.mkdtemp(prefix="hf-bench-ray-"))
    options = BuildOptions(size=args.size, workers=args.workers)
    try:
        sources = make_sources(tmp / "data")
        data = tmp / "data"
        runs: dict[str, list[float]] = {"local": [], "ray_own_instance": [], "ray_running": []}
        frames = 0

        def build(name: str, r: int, **kw) -> None:
            nonlocal frames
            out = tmp / f"{name}{r}"
            t0 = time.perf_counter()
            report = build_store(data, out, options, progress=False, **kw)
            runs[name].append(time.perf_counter() - t0)
            assert not report.failed and report.reused == 0
            frames = report.frames
            if name != "local":
                assert store_content(out) == reference, f"{name}: not the local build's content"
            shutil.rmtree(out, ignore_errors=True)

        build_store(data, tmp / "reference", options, progress=False)  # warms caches too
        reference = store_content(tmp / "reference")
        for r in range(args.repeats):
            build("local", r)
            build("ray_own_instance", r, engine="ray")
        ray.init(
            address="local",
            num_cpus=args.workers,
            include_dashboard=False,
            _node_ip_address="127.0.0.1",
            logging_level=logging.WARNING,
        )
        try:
            for r in range(args.repeats):
                build("ray_running", r, engine="ray")
        finally:
            ray.shutdown()
        median = {k: statistics.median(v) for k, v in runs.items()}
        write_result(
            "build_ray",
            {
                "sources": sources,
                "frames": frames,
                "size": args.size,
                "workers": args.workers,
                "seconds_local": median["local"],
                "seconds_ray_own_instance": median["ray_own_instance"],
                "seconds_ray_running_instance": median["ray_running"],
                "ray_over_local": median["ray_running"] / median["local"],
                "all_seconds": runs,
                "note": "one machine, Ray's local instance with as many CPUs as workers; on a "
                "cluster the actors run on other nodes and the store folder must be shared",
            },
        )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
