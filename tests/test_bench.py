"""The bench anchors decode the very windows the store serves, and `bench` reports them all."""

from __future__ import annotations

import json

import numpy as np
import pytest

from hyperframes.bench import plan_windows, run_bench
from hyperframes.bench._onthefly import available_window_decoders, window_decoder
from hyperframes.build import BuildOptions, build_store
from hyperframes.store import open_store


@pytest.fixture(scope="module")
def store(class_folder, tmp_path_factory):
    out = tmp_path_factory.mktemp("bench") / "s"
    build_store(class_folder, out, BuildOptions(size="none"), progress=False)
    return open_store(out)


@pytest.mark.parametrize("name", ["pyav", "torchcodec", "decord", "opencv"])
def test_on_the_fly_windows_equal_store_windows(store, name):
    if name not in available_window_decoders():
        pytest.skip(f"{name} is not installed (pip install 'hyperframes-video[{name}]')")
    fn = window_decoder(name)
    for v, idx in plan_windows(store, windows=6, frames=5, seed=1):
        rec = store.videos[v]
        got = fn(
            rec.path,
            rec.pts_seconds[idx],
            indices=rec.source_frame_indices[idx],
            stream=rec.stream,
            size=rec.shape[1:],
        )
        want = store.read_numpy(v, idx)
        assert got.shape == want.shape
        assert np.abs(got.astype(np.float32) - want).mean() < 2.0, (name, v, idx)


def test_on_the_fly_resizes_to_the_store_size(class_folder, tmp_path):
    build_store(class_folder, tmp_path / "s", BuildOptions(size="24"), progress=False)
    s = open_store(tmp_path / "s")
    rec = s.videos[0]
    got = window_decoder("pyav")(rec.path, rec.pts_seconds[:4], stream=rec.stream, size=(24, 32))
    assert got.shape == (4, 3, 24, 32)
    assert np.abs(got.astype(np.float32) - s.read_numpy(0, range(4))).mean() < 4.0


def test_bench_cli_reports_every_path(class_folder, tmp_path, capsys):
    from hyperframes.cli import main

    code = main(
        [
            "bench",
            str(class_folder),
            "--windows",
            "16",
            "--batch",
            "4",
            "--frames",
            "4",
            "--codecs",
            "raw,jpeg",
            "--budget",
            "0.2",
            "--json",
        ]
    )
    assert code == 0
    result = json.loads(capsys.readouterr().out)
    rows = result["rows"]
    assert {"memcpy", "store:raw", "store:jpeg", "decode:pyav"} <= set(rows)
    assert rows["memcpy"]["vs_memcpy"] == pytest.approx(1.0)
    for r in rows.values():
        assert "error" in r or r["windows_per_s"] > 0
    # a store read is faster than decoding the same windows
    assert rows["store:raw"]["vs_fastest_decoder"] > 1


def test_bench_on_an_existing_store(store):
    result = run_bench(
        store.path, frames=4, batch=4, windows=8, decoders=["pyav"], budget_seconds=0.2
    )
    assert set(result["rows"]) == {"memcpy", "store:raw", "decode:pyav"}


def test_bench_reads_stores_through_the_augmentation_and_marks_the_frontier(store):
    from hyperframes.bench import format_bench

    result = run_bench(
        store.path,
        frames=4,
        batch=4,
        windows=8,
        decoders=["pyav"],
        budget_seconds=0.2,
        augment=32,
        augment_seconds=0.05,
    )
    raw, pyav = result["rows"]["store:raw"], result["rows"]["decode:pyav"]
    assert raw["augmented_windows_per_s_per_core"] > 0
    assert pyav["store_over_source_bytes"] == 1.0  # on the fly: the source, nothing more
    # the smaller of the two is on the frontier; the larger only when it reads faster
    assert pyav["frontier"] is True
    assert raw["frontier"] is (raw["windows_per_s"] > pyav["windows_per_s"])
    text = format_bench(result)
    assert "aug w/s/core" in text and "RandomResizedCrop(32)" in text and "frontier" in text
