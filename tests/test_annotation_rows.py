"""Annotation files are read a line at a time: what no row keeps (a CSV's other columns, a
list's comments) costs no memory, where the whole text was held before (WebVid-10M's CSV is
2.7 GB, mostly captions). ``benchmarks/bench_annotation_rows.py`` measures builds' and dry
runs' peak memory at 10^5 and more rows."""

from __future__ import annotations

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
