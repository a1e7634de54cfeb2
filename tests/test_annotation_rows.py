"""Annotation files are read a line at a time: what no row keeps (a CSV's other columns, a
list's comments) costs no memory, where the whole text was held before (WebVid-10M's CSV is
2.7 GB, mostly captions). ``benchmarks/bench_annotation_rows.py`` measures builds' and dry
runs' peak memory at 10^5 and more rows."""

from __future__ import annotations

import os
import subprocess
import sys
import tracemalloc

import pytest

from hyperframes.inputs import scan_inputs

ROWS = 2_000
#: characters per row that no row keeps (5 MB in all)
FILLER = 2_500
#: what that text may cost at the peak of reading: a line's buffer, not the file
SLACK_BYTES = 1 << 20


def _peak_reading(path, fmt: str, header: str | None, line) -> int:
    """Bytes allocated at the peak of reading ``path`` beyond what is left after it."""
    with open(path, "w") as f:
        if header:
            f.write(header + "\n")
        f.writelines(line(i) + "\n" for i in range(ROWS))
    scan_inputs(path, input_format=fmt)  # once untraced: what a first read imports and caches
    tracemalloc.start()
    try:
        inputs = scan_inputs(path, input_format=fmt)
        kept, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(inputs.sources) == ROWS
    return peak - kept  # (what is kept includes one-off growth of the interpreter's tables)


@pytest.mark.parametrize("fmt", ["csv", "mmaction"])
def test_text_no_row_keeps_costs_no_memory(tmp_path, fmt):
    (tmp_path / "v").mkdir()
    (tmp_path / "v" / "0.mp4").write_bytes(b"")  # one listed file exists
    filler = "x" * FILLER
    if fmt == "csv":
        header = "path,label,caption"
        lean = _peak_reading(tmp_path / "a.csv", fmt, header, lambda i: f"v/{i}.mp4,c{i % 9},")
        padded = _peak_reading(
            tmp_path / "b.csv", fmt, header, lambda i: f"v/{i}.mp4,c{i % 9},{filler}"
        )
    else:
        lean = _peak_reading(tmp_path / "a.txt", fmt, None, lambda i: f"v/{i}.mp4 c{i % 9}")
        padded = _peak_reading(
            tmp_path / "b.txt", fmt, None, lambda i: f"# {filler}\nv/{i}.mp4 c{i % 9}"
        )
    assert padded - lean < SLACK_BYTES, (
        f"{ROWS * FILLER / 1e6:.0f} MB of text no row keeps cost "
        f"{(padded - lean) / 2**20:.1f} MiB at the peak of reading"
    )


#: rows of the two generated annotations compared (each row a distinct video, none of
#: which exists but one): the bytes a row adds between them, not the one-off costs (the
#: interpreter, pyarrow's first allocations) that a 1-row file would leave out
FEW_ROWS, MANY_ROWS = 60_000, 180_000
#: bytes a further row may add to the peak of reading: a regression guard, counted by the
#: allocators (tracemalloc's peak, which numpy reports to, plus pyarrow's pool's peak), not
#: by resident memory: a process's VmHWM moved from 150 to 310 bytes a row between runs and
#: machines (mimalloc's and glibc's retention, huge pages), so it guarded nothing. Counted
#: here: 150-160 bytes a row, whatever pyarrow's thread count (a row cost about 620 bytes
#: before issue 39). The 1 GB resident bound at 10^7 rows is the scale tier's test
#: (tests/test_large_annotations.py)
BYTES_PER_ROW = 250

_PEAK = """
import sys, tracemalloc
from hyperframes.inputs import scan_inputs
tracemalloc.start()
n = len(scan_inputs(sys.argv[1], input_format="csv").sources)
try:  # (without pyarrow, the row-by-row reader reads the file)
    import pyarrow
    arrow = pyarrow.default_memory_pool().max_memory()
except ImportError:
    arrow = 0
print(n, tracemalloc.get_traced_memory()[1] + arrow)
"""


def _peak_allocated(tmp_path, rows: int) -> int:
    """Peak allocated bytes of a fresh process reading a CSV of ``rows`` distinct videos with
    a WebVid-like caption column."""
    folder = tmp_path / f"rows{rows}"
    (folder / "v").mkdir(parents=True)
    (folder / "v" / "clip_00000000.mp4").write_bytes(b"")
    data = folder / "rows.csv"
    with open(data, "w") as f:
        f.write("path,label,caption\n")
        f.writelines(
            f"v/clip_{i:08d}.mp4,c{i % 400},a person walks a dog along a beach at sunset\n"
            for i in range(rows)
        )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    out = subprocess.run(
        [sys.executable, "-c", _PEAK, str(data)], capture_output=True, text=True, env=env
    )
    assert out.returncode == 0, out.stderr
    n, peak = map(int, out.stdout.split())
    assert n == rows
    return peak


@pytest.mark.slow
def test_rows_cost_a_bounded_number_of_bytes_each(tmp_path):
    few = _peak_allocated(tmp_path, FEW_ROWS)
    per_row = (_peak_allocated(tmp_path, MANY_ROWS) - few) / (MANY_ROWS - FEW_ROWS)
    assert per_row < BYTES_PER_ROW, f"a further row costs {per_row:.0f} bytes at the peak"


def test_dry_run_counts_unreadable_rows_and_lists_the_first(tmp_path):
    from hyperframes.build import dry_run
    from hyperframes.build._build import LISTED_UNREADABLE

    (tmp_path / "v").mkdir()
    (tmp_path / "v" / "0.mp4").write_bytes(b"")  # exists (empty: unreadable too)
    rows = LISTED_UNREADABLE + 50
    data = tmp_path / "a.csv"
    data.write_text("path,label\n" + "".join(f"v/{i}.mp4,c{i % 3}\n" for i in range(rows)))
    est = dry_run(data, input_format="csv")
    assert est["videos"] == rows
    assert est["unreadable_count"] == rows
    assert len(est["unreadable"]) == LISTED_UNREADABLE
    assert est["unreadable"][0]["path"] == str(tmp_path / "v" / "0.mp4")
