"""Build throughput vs merely decoding the same videos (same decoder, same worker count), and
store size per codec as a ratio to the source bytes.

Target (issue: decode once): build time <= 1.25x decode time.
Run: .venv/bin/python benchmarks/bench_build.py [--workers 2]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import make_sources, write_result
from hyperframes._core._sizes import target_size
from hyperframes.build import BuildOptions, build_store
from hyperframes.inputs._scan import discover


def _decode_only(args) -> int:
    """What any pipeline must do per video: decode every frame, convert to RGB at the size."""
    path, size = args
    from hyperframes.decode import create_decoder

    dec = create_decoder("pyav")
    info = dec.probe(path)
    hw = target_size(info.height, info.width, size)
    n = 0
    for frame in dec.frames(path):
        frame.to_rgb(hw)
        n += 1
    return n


def decode_all(paths, size, workers) -> float:
    t0 = time.perf_counter()
    if workers <= 1:
        for p in paths:
            _decode_only((p, size))
    else:
        with mp.get_context("spawn").Pool(workers) as pool:
            pool.map(_decode_only, [(p, size) for p in paths], chunksize=1)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--size", default="112x112")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="hf-bench-build-"))
    try:
        sources = make_sources(tmp / "data")
        data = tmp / "data"
        paths = [s.path for s in discover(data)]
        source_bytes = sum(Path(p).stat().st_size for p in paths)
        decode_all(paths[:2], args.size, 1)  # warm the page cache and imports
        decode_t, build_t = [], []
        for r in range(args.repeats):
            decode_t.append(decode_all(paths, args.size, args.workers))
            out = tmp / f"store{r}"
            t0 = time.perf_counter()
            build_store(
                data, out, BuildOptions(size=args.size, workers=args.workers), progress=False
            )
            build_t.append(time.perf_counter() - t0)
            shutil.rmtree(out)
        decode_s, build_s = sorted(decode_t)[len(decode_t) // 2], sorted(build_t)[len(build_t) // 2]
        sizes = {}
        for codec in ("raw", "lz4", "zstd", "jpeg"):
            out = tmp / f"size-{codec}"
            rep = build_store(
                data,
                out,
                BuildOptions(size=args.size, codec=codec, workers=args.workers),
                progress=False,
            )
            sizes[codec] = {
                "bytes": rep.store_bytes,
                "ratio_to_source": rep.store_bytes / source_bytes,
            }
        write_result(
            "build",
            {
                "sources": sources,
                "videos": len(paths),
                "source_bytes": source_bytes,
                "size": args.size,
                "workers": args.workers,
                "decode_only_seconds": decode_s,
                "build_seconds": build_s,
                "build_over_decode": build_s / decode_s,
                "target_build_over_decode": 1.25,
                "store_size_by_codec": sizes,
            },
        )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
