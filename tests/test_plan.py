"""``hyperframes plan DATA``: each codec's store measured on a sample of DATA and predicted for
all of it from the headers; the predictions checked against real builds of the whole DATA."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from _media import write_video
from hyperframes import DataError
from hyperframes.bench import plan_store
from hyperframes.bench._plan import pick_sample
from hyperframes.build import BuildOptions, build_store, header_sizes
from hyperframes.cli import main
from hyperframes.store import list_codecs, open_store

VIDEOS = Path(__file__).resolve().parents[2] / "shared" / "videos"
FAST = {"seconds": 0.05, "frames": 8, "batch": 8}


@pytest.fixture(scope="module")
def mixed(tmp_path_factory) -> Path:
    """8 videos of two codecs and three frame sizes, 16 to 37 frames: DATA to plan for."""
    root = tmp_path_factory.mktemp("plan") / "data"
    sizes = [(64, 48), (96, 72), (128, 96), (80, 64)]
    for i in range(8):
        w, h = sizes[i % len(sizes)]
        codec = "mpeg4" if i % 3 == 2 else "libx264"
        write_video(
            root / "ab"[i % 2] / f"v{i}.mp4",
            frames=16 + 3 * i,
            width=w,
            height=h,
            codec=codec,
            colour=(40 * i % 255, 200, 30 * i % 255),
        )
    return root


@pytest.fixture(scope="module")
def planned(mixed):
    return plan_store(mixed, BuildOptions(size="none"), sample=3, **FAST)


def test_predicted_bytes_within_a_quarter_of_the_whole_build(mixed, planned, tmp_path):
    assert [r.codec for r in planned.rows] == list_codecs()
    assert len(planned.sample) == 3 and planned.videos == 8  # extrapolated, not measured
    for row in planned.rows:
        out = tmp_path / row.codec
        build_store(mixed, out, BuildOptions(size="none", codec=row.codec), progress=False)
        with open_store(out) as s:
            real = int(s.manifest["store_bytes"])
        assert abs(row.store_bytes - real) <= 0.25 * real, (row.codec, row.store_bytes, real)
        assert row.sample_store_bytes < row.store_bytes
        assert row.windows_per_s_per_core > 0 and row.build_seconds > 0
        shutil.rmtree(out)


def test_sample_spreads_across_codecs_and_sizes(mixed, planned):
    sizes, _ = header_sizes(mixed, BuildOptions(size="none"))
    chosen = pick_sample(sizes, 3)
    assert [h.source.path for h in chosen] == planned.sample
    assert {h.codec for h in chosen} == {h.codec for h in sizes} == {"h264", "mpeg4"}
    largest = max(sizes, key=lambda h: h.frames * h.height * h.width)
    assert largest in chosen  # the store's bytes follow the pixels: the largest weighs most
    assert len({(h.height, h.width) for h in chosen}) > 1


def test_budget_picks_the_fastest_codec_that_fits(mixed, planned):
    rows = {r.codec: r for r in planned.rows}
    smallest = min(planned.rows, key=lambda r: r.store_bytes)
    budget = smallest.store_bytes + 1  # only the smallest fits (or ties)
    plan = plan_store(mixed, BuildOptions(size="none"), sample=3, budget=budget, **FAST)
    fits = [r for r in plan.rows if r.store_bytes <= budget]
    assert plan.recommended == max(fits, key=lambda r: r.windows_per_s_per_core).codec
    assert rows[plan.recommended].store_bytes <= budget * 1.3
    assert sum(r.recommended for r in plan.rows) == 1


def test_cli_json_rows_and_a_budget_nothing_fits(tmp_path, capsys):
    if not VIDEOS.is_dir():
        pytest.skip(f"{VIDEOS}: the real test videos are absent")
    data = tmp_path / "real"
    data.mkdir()
    for name in ("part_0.mp4", "h265_video.mp4"):
        (data / name).symlink_to(VIDEOS / name)
    common = ["--size", "32", "--sample", "1", "--seconds", "0.05", "--frames", "8"]
    code = main(["plan", str(data), *common, "--batch", "8", "--json"])
    assert code == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["codec"] for r in rows] == list_codecs()
    assert all(r["store_bytes"] > 0 for r in rows) and sum(r["recommended"] for r in rows) == 1
    code = main(["plan", str(data), *common, "--batch", "8", "--budget", "1KB", "--quiet"])
    out, err = capsys.readouterr()
    assert code == 1 and "over budget" in out  # the table, every row marked
    smallest = min(rows, key=lambda r: r["store_bytes"])["codec"]
    assert "no codec fits the budget of 1000 bytes" in err
    assert f"the smallest is {smallest}" in err
    assert "Traceback" not in err


def test_bad_data_is_a_clear_error(tmp_path, capsys):
    with pytest.raises(DataError, match="no such file or folder"):
        plan_store(tmp_path / "nothing")
    (tmp_path / "empty" / "a").mkdir(parents=True)
    (tmp_path / "empty" / "a" / "notes.txt").write_text("not a video")
    code = main(["plan", str(tmp_path / "empty"), "--quiet"])
    err = capsys.readouterr().err
    assert code == 1 and "hyperframes plan: error:" in err and "Traceback" not in err
    with pytest.raises(SystemExit):
        main(["plan", str(tmp_path / "empty"), "--budget", "lots"])
    assert "expected a number of bytes" in capsys.readouterr().err


def _clip(path: Path, frames: int, *, detailed: bool) -> None:
    """A 64x48 H.264 clip: fresh noise every frame (compresses badly, in the source and in a
    store) or one flat colour (compresses to almost nothing)."""
    import av

    rng = np.random.default_rng(frames)
    path.parent.mkdir(parents=True, exist_ok=True)
    with av.open(str(path), "w") as out:
        s = out.add_stream("libx264", rate=20)
        s.width, s.height, s.pix_fmt = 64, 48, "yuv420p"
        s.options = {"crf": "18", "preset": "ultrafast"}
        for i in range(frames):
            img = np.full((48, 64, 3), (90, 140, 60), np.uint8)
            if detailed:
                img = rng.integers(0, 256, (48, 64, 3), dtype=np.uint8)
            f = av.VideoFrame.from_ndarray(img, format="rgb24")
            f.pts = i
            for pkt in s.encode(f):
                out.mux(pkt)
        for pkt in s.encode():
            out.mux(pkt)


def test_predicted_bytes_follow_how_hard_the_videos_compress(tmp_path):
    """Two long flat clips and two shorter detailed ones: ordered by pixels alone, a sample of
    2 took both flat clips and predicted a zstd store a fraction of the real one; ordered by
    the source bytes each spends per stored pixel, one pick stands for each kind."""
    data = tmp_path / "data"
    for name, frames, detailed in [("f1", 60, False), ("f2", 30, False), ("d1", 40, True)]:
        _clip(data / "ab"[detailed] / f"{name}.mp4", frames, detailed=detailed)
    _clip(data / "b" / "d2.mp4", 20, detailed=True)
    options = BuildOptions(size="none", codec="zstd")
    plan = plan_store(data, options, sample=2, codecs=("zstd",), **FAST)
    assert {Path(p).name[0] for p in plan.sample} == {"f", "d"}
    build_store(data, tmp_path / "store", options, progress=False)
    with open_store(tmp_path / "store") as s:
        real = int(s.manifest["store_bytes"])
    (row,) = plan.rows
    assert abs(row.store_bytes - real) <= 0.25 * real, (plan.sample, row.store_bytes, real)
