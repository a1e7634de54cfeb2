"""Start-up of the commands a user types most: ``--help``, ``info``, ``verify``, ``show``.

Each is run as a fresh process (``python -m hyperframes ...``) on a small store, the median of
several runs, next to the anchor of the same interpreter doing nothing (``python -c pass``) and
importing torch alone. Target: under 0.5 s each. Writes ``benchmarks/results/startup.json``.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import tiny_store, write_result

RUNS = 5
TARGET_SECONDS = 0.5


def wall(cmd: list[str], runs: int = RUNS) -> float:
    subprocess.run(cmd, capture_output=True, check=True)  # warm the page cache
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(cmd, capture_output=True, check=True)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    py = sys.executable
    with tempfile.TemporaryDirectory() as tmp:
        store = tiny_store(Path(tmp))
        png = str(Path(tmp) / "w.png")
        hf = [py, "-m", "hyperframes"]
        commands = {
            "--help": [*hf, "--help"],
            "info": [*hf, "info", store],
            "verify": [*hf, "verify", store],
            "show": [*hf, "show", store, "--video", "0", "--frames", "4", "--out", png],
        }
        anchors = {
            "python -c pass": [py, "-c", "pass"],
            "python -c 'import torch'": [py, "-c", "import torch"],
        }
        rows = {name: wall(cmd) for name, cmd in {**anchors, **commands}.items()}
    targets = {
        f"{name}_seconds_at_most": {
            "value": rows[name],
            "target": TARGET_SECONDS,
            "met": rows[name] <= TARGET_SECONDS,
        }
        for name in commands
    }
    for name, seconds in rows.items():
        print(f"{name:<28}{seconds:8.3f} s")
    write_result("startup", {"runs": RUNS, "seconds": rows, "targets": targets})


if __name__ == "__main__":
    main()
