"""Memory of an annotation file of N rows (issue 39 item 4): the peak resident memory of
reading its rows (``scan_inputs``), of ``build --dry-run`` and of ``build`` over it, each in
a fresh process (its ``VmHWM``; ``ru_maxrss`` carries the parent's peak across exec), as
bytes per row above the same command on a 1-row file. Rows name videos that do not exist (one does, an empty file): what is
measured is what the rows cost, not decoding. Formats: a CSV with a WebVid-like caption column
(``path,label,caption``) and an mmaction list (``path label``).

Target (issue): 10^7 rows under 1 GB. Run:
.venv/bin/python benchmarks/bench_annotation_rows.py [--rows 100000 1000000] [--steps scan dry build]
The ten-million-row run (a 700 MB CSV; reading it takes about 20 minutes on a loaded 2-core
machine, the per-row stat of each listed file is most of it), saved apart from the default run:
.venv/bin/python benchmarks/bench_annotation_rows.py --rows 10000000 --steps scan dry \
    --formats csv --name annotation_rows_1e7
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import write_result

CAPTION = "a person walks a dog along a beach at sunset, filmed from a drone"

_CHILD = """
import json, sys, time
from pathlib import Path
step, fmt, data, out = sys.argv[1:5]
t0 = time.perf_counter()
if step == "scan":
    from hyperframes.inputs import scan_inputs
    n = len(scan_inputs(data, input_format=fmt).sources)
elif step == "dry":
    from hyperframes.build import dry_run
    n = dry_run(data, input_format=fmt)["videos"]
else:
    from hyperframes.build import build_store
    from hyperframes._core._errors import HyperframesError
    try:
        n = build_store(data, out, input_format=fmt, progress=False).videos
    except HyperframesError as e:  # no video decodes: the rows were still all read and planned
        n = str(e)[:80]
peak = int(open('/proc/self/status').read().split('VmHWM:')[1].split()[0]) * 1024
print(json.dumps({"peak_bytes": peak, "seconds": time.perf_counter() - t0, "result": n}))
"""


def _write(folder: Path, fmt: str, rows: int) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "v").mkdir(exist_ok=True)
    (folder / "v" / "clip_00000000.mp4").write_bytes(b"")
    data = folder / ("rows.csv" if fmt == "csv" else "rows.txt")
    with open(data, "w") as f:
        if fmt == "csv":
            f.write("path,label,caption\n")
        for i in range(rows):
            path = f"v/clip_{i:08d}.mp4"
            f.write(f"{path},c{i % 400},{CAPTION}\n" if fmt == "csv" else f"{path} c{i % 400}\n")
    return data


def _measure(step: str, fmt: str, data: Path, out: Path) -> dict:
    r = subprocess.run(
        [sys.executable, "-c", _CHILD, step, fmt, str(data), str(out)],
        capture_output=True,
        text=True,
        env=dict(os.environ, HYPERFRAMES_PROGRESS="0"),
    )
    if r.returncode != 0:
        return {"error": r.stderr.strip().splitlines()[-1] if r.stderr.strip() else r.returncode}
    return json.loads(r.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, nargs="+", default=[100_000])
    ap.add_argument("--steps", nargs="+", default=["scan", "dry", "build"])
    ap.add_argument("--formats", nargs="+", default=["csv", "mmaction"])
    ap.add_argument("--name", default="annotation_rows", help="the results file's name")
    args = ap.parse_args()
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for fmt in args.formats:
            base = {
                s: _measure(s, fmt, _write(Path(tmp) / f"{fmt}1", fmt, 1), Path(tmp) / "o1")
                for s in args.steps
            }
            for n in args.rows:
                data = _write(Path(tmp) / f"{fmt}{n}", fmt, n)
                for step in args.steps:
                    m = _measure(step, fmt, data, Path(tmp) / f"out-{fmt}-{n}-{step}")
                    row = {"format": fmt, "rows": n, "step": step, **m}
                    if "peak_bytes" in m and "peak_bytes" in base[step]:
                        row["bytes_per_row"] = round(
                            (m["peak_bytes"] - base[step]["peak_bytes"]) / n
                        )
                        row["extrapolated_1e7_gb"] = round(
                            (base[step]["peak_bytes"] + row["bytes_per_row"] * 10**7) / 1e9, 2
                        )
                    print(json.dumps(row), flush=True)
                    results.append(row)
    write_result(args.name, {"target": "10^7 rows under 1 GB", "runs": results})


if __name__ == "__main__":
    main()
