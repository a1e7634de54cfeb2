"""A build of a ten-million-row annotation: what a failed row costs is a line in the store's
``failures.jsonl``, not its error text held until the manifest is written; the first video
decodes before the other rows' files are looked at (each is checked as it is handed out);
the manifest, the report and ``info`` keep the count and the first failures."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import tracemalloc
from pathlib import Path

import pytest

from _media import write_video
from hyperframes._core._errors import Interrupted
from hyperframes.build import BuildOptions, build_store
from hyperframes.build import _failures as failures_module
from hyperframes.build._failures import LISTED_FAILURES
from hyperframes.build._shard import ShardWriter
from hyperframes.inputs._columns import SourceColumns
from hyperframes.inputs._formats._rows import RootCheck
from hyperframes.store import open_store
from hyperframes.store._describe import describe_store, format_store_info
from hyperframes.store.format import FAILURES_FILE, MANIFEST


def _annotation(folder: Path, missing: int, *, real: int = 1) -> Path:
    """``folder/rows.csv``: ``real`` real videos first, then ``missing`` rows whose files do
    not exist (each fails: "no such file")."""
    (folder / "v").mkdir(parents=True, exist_ok=True)
    for i in range(real):
        write_video(folder / "v" / f"real_{i}.mp4", frames=4)
    data = folder / "rows.csv"
    with open(data, "w") as f:
        f.write("path,label\n")
        f.writelines(f"v/real_{i}.mp4,c{i % 3}\n" for i in range(real))
        f.writelines(f"v/gone_{i:08d}.mp4,c{i % 3}\n" for i in range(missing))
    return data


def _build_peak(tmp_path: Path, missing: int) -> int:
    """Bytes allocated at the peak of a one-worker build (in this process) of ``missing``
    failed rows and one real video."""
    data = _annotation(tmp_path / f"a{missing}", missing)
    out = tmp_path / f"s{missing}"
    gc.collect()  # what earlier builds left is not freed (and counted) during this one
    tracemalloc.start()
    try:
        report = build_store(data, out, BuildOptions(workers=1), progress=False)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert (report.videos, report.num_failed) == (1, missing)
    return peak


#: failures listed one by one in these builds (the rest are counted)
LISTED = 50
#: failed rows of the two builds compared (both above the failures listed one by one)
FEW, MANY = 200, 1_000
#: bytes a failed row may add to a build's peak: its columns, its path's hash, its position
#: (on main, where each failure's path, error text, report row and manifest text were held,
#: a failed row cost about 1.5 KB: 15 GB at 10^7)
BYTES_PER_FAILED_ROW = 300


def test_a_failed_row_costs_a_bounded_number_of_bytes(tmp_path, monkeypatch):
    monkeypatch.setattr(failures_module, "LISTED_FAILURES", LISTED)
    _build_peak(tmp_path / "warm", 10)  # once untraced: what a first build imports and caches
    per_row = (_build_peak(tmp_path, MANY) - _build_peak(tmp_path, FEW)) / (MANY - FEW)
    assert per_row < BYTES_PER_FAILED_ROW, (
        f"a failed row costs {per_row:.0f} bytes at the peak of a build: 10^7 failed rows "
        f"would need {per_row * 10**7 / 1e9:.1f} GB"
    )


def test_every_failure_is_in_the_store_file_and_the_first_are_listed(tmp_path, capsys):
    from hyperframes.cli import main

    missing = LISTED_FAILURES + 20
    data = _annotation(tmp_path, missing)
    store = tmp_path / "store"
    assert main(["build", str(data), "--out", str(store), "--workers", "1", "--quiet"]) == 2
    printed = capsys.readouterr().out
    assert f"failed: {missing}" in printed
    assert f"... and 20 more (every one is in {store / FAILURES_FILE})" in printed
    lines = (store / FAILURES_FILE).read_text().splitlines()
    rows = [json.loads(line) for line in lines]
    assert len(rows) == missing
    assert rows[-1]["path"] == str(tmp_path / "v" / f"gone_{missing - 1:08d}.mp4")
    assert "no such file (listed at" in rows[-1]["error"]
    manifest = json.loads((store / MANIFEST).read_text())
    assert manifest["failed_count"] == missing
    assert manifest["failed"] == rows[:LISTED_FAILURES]
    with open_store(store) as s:
        d = describe_store(s)
        assert d["failed_count"] == missing
        info = format_store_info(d)
    assert f"failed         {missing}" in info
    assert "... and 20 more" in info
    # a rebuild that stores every video leaves no failures file behind
    data.write_text("path,label\nv/real_0.mp4,c0\n")
    report = build_store(data, store, BuildOptions(workers=1), progress=False)
    assert (report.num_failed, report.failures_file) == (0, None)
    assert not (store / FAILURES_FILE).exists()
    assert [p.name for p in store.iterdir() if p.name.endswith(".tmp")] == []


def test_the_first_video_decodes_before_the_other_rows_are_looked_at(tmp_path, monkeypatch):
    """Stat calls made before the first video is committed do not grow with the rows: a
    build of 20,000 rows (two real videos first) commits its first video after a few dozen,
    not one or more per row as when every row was checked before any decoding."""
    rows = 20_000
    data = _annotation(tmp_path, rows, real=2)
    calls = [0]
    at_first_commit: list[int] = []
    for name in ("stat", "lstat"):
        real = getattr(os, name)

        def counted(*a, _real=real, **kw):
            calls[0] += 1
            return _real(*a, **kw)

        monkeypatch.setattr(os, name, counted)
    commit = ShardWriter.commit

    def first_commit(self, *a, **kw):
        commit(self, *a, **kw)
        at_first_commit.append(calls[0])
        raise KeyboardInterrupt  # the first video is in the store: enough said

    monkeypatch.setattr(ShardWriter, "commit", first_commit)
    with pytest.raises(Interrupted):
        build_store(data, tmp_path / "store", BuildOptions(workers=1), progress=False)
    assert at_first_commit, "no video was committed"
    assert at_first_commit[0] < 500, (
        f"{at_first_commit[0]} stat calls before the first video of {rows + 2} rows was stored"
    )


def test_rows_outside_the_root_fail_as_they_are_handed_out(tmp_path):
    """The root check made as each video is handed out refuses what the check of every row
    before decoding refused, naming the row; a missing file still fails as before."""
    root = tmp_path / "root"
    write_video(root / "in.mp4", frames=4)
    outside = write_video(tmp_path / "secret" / "out.mp4", frames=4)
    data = root / "ann.csv"
    data.write_text(f"path,label\nin.mp4,a\n{outside},b\nmissing.mp4,a\n")
    report = build_store(data, tmp_path / "store", BuildOptions(workers=1), progress=False)
    errors = {f["path"]: f["error"] for f in report.failed}
    assert report.videos == 1
    assert "is outside root" in errors[str(outside)]
    assert f"{data}:3" in errors[str(outside)]
    assert "no such file" in errors[str(root / "missing.mp4")]


def _calls_of_a_build(tmp_path: Path, missing: int, monkeypatch) -> dict[str, int]:
    """Calls made by a one-worker build of ``missing`` failed rows (and one real video) of
    the functions a failed row could cost: stats, path resolution, JSON, sources made."""
    data = _annotation(tmp_path / f"c{missing}", missing)
    calls = dict.fromkeys(("stat", "realpath", "dumps", "row"), 0)

    def counting(name, real):
        def counted(*a, **kw):
            calls[name] += 1
            return real(*a, **kw)

        return counted

    with monkeypatch.context() as m:
        m.setattr(os, "stat", counting("stat", os.stat))
        m.setattr(os, "lstat", counting("stat", os.lstat))
        m.setattr(os.path, "realpath", counting("realpath", os.path.realpath))
        m.setattr(json, "dumps", counting("dumps", json.dumps))
        m.setattr(SourceColumns, "row", counting("row", SourceColumns.row))
        report = build_store(
            data, tmp_path / f"s{missing}", BuildOptions(workers=1), progress=False
        )
    assert (report.videos, report.num_failed) == (1, missing)
    return calls


def test_a_failed_row_costs_one_stat_and_no_path_resolution(tmp_path, monkeypatch):
    """What a build does per failed row is counted, not timed: one ``lstat`` (the root check
    resolves the row's folder once, not the row's path), no ``realpath``, no ``json.dumps``
    and no source made. On main a missing row cost nine stats (a ``realpath`` of every
    part of its path, then the worker's ``stat`` and ``isdir``), a ``realpath``, two JSON
    dumps and three sources: about 140 us a row, 25 minutes for 10^7 rows."""
    monkeypatch.setattr(failures_module, "LISTED_FAILURES", LISTED)
    few, many = (
        _calls_of_a_build(tmp_path, FEW, monkeypatch),
        _calls_of_a_build(tmp_path, MANY, monkeypatch),
    )
    per_row = {k: (many[k] - few[k]) / (MANY - FEW) for k in many}
    assert per_row["stat"] <= 1.01, per_row
    assert (per_row["realpath"], per_row["dumps"], per_row["row"]) == (0, 0, 0), per_row


@pytest.mark.parametrize("name", ["in.mp4", "missing.mp4", "to_in", "to_out", "dangling"])
@pytest.mark.parametrize("folder", ["root", "root/sub", "root/linked", "root/to_outside", "gone"])
def test_the_root_check_resolves_a_path_as_realpath_does(tmp_path, folder, name):
    """The root check's resolution of a path (its folder's real path, kept, and one lstat of
    the file) is ``os.path.realpath``'s, links in the folder or the file included."""
    root = tmp_path / "root"
    (root / "sub").mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    (root / "linked").symlink_to(root / "sub")
    (root / "to_outside").symlink_to(tmp_path / "outside")
    for where in (root, root / "sub", tmp_path / "outside"):
        (where / "in.mp4").write_bytes(b"x")
        (where / "to_in").symlink_to(root / "in.mp4")
        (where / "to_out").symlink_to(tmp_path / "outside" / "in.mp4")
        (where / "dangling").symlink_to(where / "nothing")
    check = RootCheck(root)
    path = str(tmp_path / folder / name)
    real, missing = check.resolve(path)
    again, _ = check.resolve(path)  # (the folder's real path kept from the first)
    assert real == again == os.path.realpath(path)
    assert missing == (not os.path.lexists(path))
    inside = os.path.commonpath([os.path.realpath(root), real]) == os.path.realpath(root)
    assert (check.refusal(path, "a.csv:2")[0] is None) == inside


#: rows of the suite's run of the peak test; ``make test-scale`` runs it at WebVid-10M's size
#: (HYPERFRAMES_MANY_ROWS=10000000): 377 s and 883 MiB measured on the 2 shared cores of the
#: development machine (docs/guides/large-annotations.md), too long for the gate
SUITE_ROWS = 100_000
_BUILD_PEAK = """
import resource, sys, time
from hyperframes.build import BuildOptions, build_store
t = time.perf_counter()
r = build_store(sys.argv[1], sys.argv[2], BuildOptions(workers=1), progress=False)
t = time.perf_counter() - t
use = resource.getrusage(resource.RUSAGE_SELF)
# VmHWM: this process's own peak (ru_maxrss carries the parent's peak across exec)
peak = int(open("/proc/self/status").read().split("VmHWM:")[1].split()[0]) * 1024
print(r.videos, r.num_failed, peak, t, use.ru_utime + use.ru_stime)
"""


@pytest.mark.slow
def test_many_rows_build_in_under_a_gigabyte(tmp_path):
    """A build of many rows (one real video, the rest missing: each a failed row) peaks
    under 1 GB: 10^5 rows in the suite, 10^7 with ``make test-scale`` (measured: see
    docs/guides/large-annotations.md)."""
    rows = int(os.environ.get("HYPERFRAMES_MANY_ROWS", SUITE_ROWS))
    data = _annotation(tmp_path, rows - 1)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    out = subprocess.run(
        [sys.executable, "-c", _BUILD_PEAK, str(data), str(tmp_path / "store")],
        capture_output=True,
        text=True,
        env=env,
    )
    assert out.returncode == 0, out.stderr
    videos, failed, peak, seconds, cpu_seconds = map(float, out.stdout.split())
    print(f"{rows} rows: {seconds:.1f} s ({cpu_seconds:.1f} s CPU), peak {peak / 2**20:.0f} MiB")
    assert (videos, failed) == (1, rows - 1)
    assert peak < 1 << 30, f"a build of {rows} rows peaked at {peak / 2**20:.0f} MiB"
