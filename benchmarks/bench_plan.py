"""``hyperframes plan`` against the real build (issue 34 item 3): on DATA (default the real clips of
../shared/videos: H.264, MPEG-4, AV1, HEVC, 128x128 to 640x360, a still NASA shot beside action
clips), a store per codec built from all of DATA at short side 128, and ``plan_store`` with
``--sample`` videos; predicted over real bytes, and the plan's windows/s per core over the same
measurement (``RandomResizedCrop(112)`` + flip, the loader on one core) on the built store.
``bench_codecs.py`` records the same on its clips. Targets: bytes within 25%, windows/s within 2x.

Run: .venv/bin/python benchmarks/bench_plan.py [DATA] [--sample N]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import REAL_CLIP, write_result
from bench_codecs import STORED, plan_accuracy


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("data", nargs="?", type=Path, default=REAL_CLIP.parent)
    ap.add_argument("--sample", type=int, default=4)
    ap.add_argument("--codecs", default="raw,lz4,zstd,jpeg")
    args = ap.parse_args()
    from hyperframes.build import BuildOptions, build_store

    codecs = [c for c in args.codecs.split(",") if c]
    with tempfile.TemporaryDirectory(prefix="hf-bench-plan-") as tmp:
        built = {}
        for codec in codecs:
            built[codec] = Path(tmp) / codec
            build_store(
                args.data, built[codec], BuildOptions(codec=codec, size=STORED), progress=False
            )
        result = plan_accuracy(args.data, built, sample=args.sample, seconds=2.0)
    write_result("plan_accuracy", result)


if __name__ == "__main__":
    main()
