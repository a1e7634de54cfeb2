"""Timestamps that would multiply the output without bound (issue 27, item 4): a gap longer than
``--max-gap`` is skipped, not filled with repeated frames; 33-bit MPEG-TS timestamps that wrap or
reset are unwrapped as FFmpeg's wrap correction does; ``--max-frames`` bounds what one video may
store. The inputs are crafted with PyAV: a few frames each, a few kB."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from _media import level, write_timed_video, write_video
from hyperframes import ConfigError, StoreError
from hyperframes.build import BuildOptions, build_store
from hyperframes.cli._main import main
from hyperframes.decode import FpsResampler, create_decoder
from hyperframes.decode._base import Timeline
from hyperframes.store import open_store

MS = Fraction(1, 1000)
TICK = Fraction(1, 90000)  # MPEG-TS
WRAP = 1 << 33  # MPEG-TS timestamps have 33 bits


@pytest.fixture(scope="module")
def media(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("timestamps")
    # 4 frames: 0 s, 0.5 s, then a jump of 100,000 s (the 4 kB mkv gave 200,004 frames)
    write_timed_video(root / "gap.mkv", [0, 500, 100_001_000, 100_001_500], time_base=MS)
    # an 8 s pause: over the default bound of 5 s, under --max-gap 10
    write_timed_video(root / "pause.mkv", [0, 500, 8_500, 9_000], time_base=MS)
    # 10 frames at 10 fps from 100 s, then the 33-bit clock reset to 0 (pts 2^33 written, 0
    # stored): FFmpeg's demuxer reads the reset as a jump of 2^33 ticks forward (95,343 s)
    reset = [9_000_000 + 9000 * i for i in range(10)] + [WRAP + 9000 * i for i in range(10)]
    write_timed_video(root / "reset.ts", reset, time_base=TICK, container="mpegts")
    # 20 frames at 10 fps from 1 s before the wrap to 1 s after it
    near = [WRAP - 90_000 + 9000 * i for i in range(20)]
    write_timed_video(root / "wrap.ts", near, time_base=TICK, container="mpegts")
    return root


def _build(media: Path, name: str, out: Path, capsys, *extra: str) -> tuple[int, str]:
    argv = ["build", str(media / name), "--out", str(out), "--size", "16", "--quiet", *extra]
    code = main(argv)
    return code, capsys.readouterr().out


def test_a_huge_gap_is_skipped_not_filled_and_listed(media, tmp_path, capsys):
    code, text = _build(media, "gap.mkv", tmp_path / "s", capsys, "--fps", "1")
    assert code == 0, text
    assert "1 videos, 2 frames" in text  # not 100,002
    assert "timestamp gaps skipped (frames further apart than max_gap" in text
    assert (
        "gap.mkv: 1 gap over 5 s, 100000.5 s in all; the first from 0.500 s to 100001.000 s" in text
    )
    with open_store(tmp_path / "s") as s:
        rec = s.videos[0]
        # each side of the gap on its own 1 fps grid; the frames after it keep their times
        assert list(rec.pts_seconds) == [0.0, 100001.0]
        assert list(rec.source_frame_indices) == [0, 2]
        assert [g["count"] for g in s.manifest["gaps"]] == [1]
        frames = s.read_numpy(0, [0, 1])
        assert abs(frames[1].mean() - level(2)) < 3  # the frame after the gap, not a repeat
    assert main(["info", str(tmp_path / "s")]) == 0
    assert "gaps           1 (timestamp gaps over max_gap, not filled)" in capsys.readouterr().out


def test_at_the_native_rate_a_gap_is_listed_and_every_frame_kept(media, tmp_path, capsys):
    code, text = _build(media, "gap.mkv", tmp_path / "s", capsys)
    assert code == 0 and "1 videos, 4 frames" in text and "1 gap over 5 s" in text


def test_max_gap_says_how_long_a_pause_is_bridged(media, tmp_path, capsys):
    code, text = _build(media, "pause.mkv", tmp_path / "a", capsys, "--fps", "2")
    assert code == 0 and "1 videos, 4 frames" in text and "1 gap over 5 s, 8.0 s in all" in text
    code, text = _build(media, "pause.mkv", tmp_path / "b", capsys, "--fps", "2", "--max-gap", "10")
    assert code == 0 and "1 videos, 19 frames" in text and "gaps" not in text  # held, as before


def test_a_store_resumed_with_another_max_gap_is_refused(media, tmp_path, capsys):
    assert _build(media, "pause.mkv", tmp_path / "s", capsys, "--fps", "2")[0] == 0
    with pytest.raises(StoreError, match=r"max_gap: stored 5\.0, asked 10\.0"):
        build_store(
            media / "pause.mkv",
            tmp_path / "s",
            BuildOptions(fps=2, size="16", max_gap=10.0),
            progress=False,
        )


@pytest.mark.parametrize(
    ("name", "want"),
    [
        # the reset is unwrapped to a step back (2^33 ticks less); times keep increasing
        ("reset.ts", [100.0 + 0.1 * i for i in range(20)]),
        # a real wrap, which FFmpeg's demuxer already unwraps: kept so
        ("wrap.ts", [-1.0 + 0.1 * i for i in range(20)]),
    ],
)
def test_33_bit_timestamps_are_unwrapped(media, name, want):
    got = [f.pts_seconds for f in create_decoder("pyav").frames(str(media / name))]
    np.testing.assert_allclose(got, want, atol=1e-6)


@pytest.mark.parametrize("name", ["reset.ts", "wrap.ts"])
def test_a_wrapped_ts_is_not_stretched_over_a_day(media, tmp_path, capsys, name):
    code, text = _build(media, name, tmp_path / "s", capsys, "--fps", "1")
    assert code == 0, text
    assert "1 videos, 2 frames" in text and "gaps" not in text  # reset.ts gave 95,345 frames


def test_the_timeline_unwraps_both_ways_by_the_nearest_period():
    wrap = 100.0
    t = Timeline(10.0, wrap_seconds=wrap)
    times = [99.8, 99.9, 0.0, 0.1, 99.95, 0.2]  # across the wrap, then one late
    out = [p for pts in times for _, _, p in t.push(None, pts)] + [p for *_, p in t.flush()]
    # 0.0 after 99.9 is 100.0; 99.95 after 100.1 a step back (so +1/fps); 0.2 after it 100.2
    np.testing.assert_allclose(out, [99.8, 99.9, 100.0, 100.1, 100.2, 100.3], atol=1e-9)
    t = Timeline(10.0, wrap_seconds=wrap)
    out = [p for pts in (10.0, 10.1, 95.0) for _, _, p in t.push(None, pts)]
    np.testing.assert_allclose(out, [10.0, 10.1, 10.2], atol=1e-9)  # 95.0 is -5.0: back
    assert t.unwrapped == 1


class _Frame:
    def __init__(self, pts_seconds: float):
        self.pts_seconds = pts_seconds


def _resample(pts, fps, max_gap, native=None):
    r = FpsResampler(fps, native_fps=native, max_gap_seconds=max_gap)
    kept = [k.source_index for p in pts for k in r.push(_Frame(p))]
    return kept + [k.source_index for k in r.finish()], r.gaps


def test_the_resampler_grids_each_side_of_a_gap_on_its_own():
    pts = [0.0, 0.5, 1.0, 50.0, 50.5]
    filled, gaps = _resample(pts, 2, None)
    assert len(filled) == 102 and gaps == []  # 0 .. 51 s at 2 fps: the gap filled with frame 2
    kept, gaps = _resample(pts, 2, 5.0)
    assert kept == [0, 1, 2, 3, 4] and gaps == [(1.0, 50.0)]
    kept, gaps = _resample([0.0, 100.0], 1, 5.0, native=1)  # one-frame sides: one frame each
    assert kept == [0, 1] and gaps == [(0.0, 100.0)]
    kept, gaps = _resample(pts, None, 5.0)
    assert kept == [0, 1, 2, 3, 4] and gaps == [(1.0, 50.0)]


def test_a_single_frame_lasts_no_longer_than_the_gap_bound():
    # a header claiming 0.001 fps would make one frame last 1000 s: 30,000 copies at 30 fps
    kept, _ = _resample([0.0], 30, 5.0, native=0.001)
    assert len(kept) == 150


def test_max_frames_fails_a_video_that_would_store_more(tmp_path, capsys):
    write_video(tmp_path / "data" / "a" / "v.mp4", frames=20)
    code, text = _build(tmp_path / "data", "", tmp_path / "s", capsys, "--max-frames", "5")
    assert code == 2
    assert (
        "would store more than 5 frames (the per-video budget, max_frames), at the native rate"
        in text
    )
    assert "nothing was stored: the one input failed" in text
    code, text = _build(tmp_path / "data", "", tmp_path / "s", capsys, "--max-frames", "20")
    assert code == 0 and "1 videos, 20 frames" in text


def test_the_bounds_are_checked():
    with pytest.raises(ConfigError, match="max_frames must be a whole number of frames"):
        BuildOptions(max_frames=0)
    with pytest.raises(ConfigError, match="max_gap must be a positive number of seconds or None"):
        BuildOptions(max_gap=-1.0)
    with pytest.raises(ConfigError, match="max_gap"):
        BuildOptions(max_gap=float("inf"))
    assert BuildOptions(max_gap=None).max_gap is None
    assert "max_gap" not in BuildOptions().content()  # native rate: it changes no frame
    assert BuildOptions(fps=2).content()["max_gap"] == 5.0
    assert "max_frames" not in BuildOptions().content()  # it refuses, it changes nothing stored


def test_the_command_line_takes_none_and_refuses_nonsense(tmp_path, capsys):
    for bad in ("-1", "0", "inf", "soon"):
        with pytest.raises(SystemExit) as e:
            main(["build", str(tmp_path), "--out", str(tmp_path / "s"), "--max-gap", bad])
        assert e.value.code == 2
        assert (
            f"expected a positive, finite number of seconds or 'none', got {bad!r}"
            in (capsys.readouterr().err)
            or bad == "soon"
        )
    from hyperframes.cli._parser import build_parser

    args = build_parser().parse_args(["build", "x", "--out", "y", "--max-gap", "none"])
    assert args.max_gap is None
    defaults = build_parser().parse_args(["build", "x", "--out", "y"])
    assert defaults.max_gap == BuildOptions().max_gap
    assert defaults.max_frames == BuildOptions().max_frames


def test_the_manifest_lists_the_gaps(media, tmp_path, capsys):
    assert _build(media, "gap.mkv", tmp_path / "s", capsys, "--fps", "1")[0] == 0
    manifest = json.loads((tmp_path / "s" / "manifest.json").read_text())
    (entry,) = manifest["gaps"]
    assert entry["path"].endswith("gap.mkv") and entry["count"] == 1 and entry["max_gap"] == 5.0
    assert entry["first"] == [[0.5, 100001.0]]


def test_a_store_begun_before_the_bound_resumes_only_as_it_was_built(media, tmp_path, capsys):
    """Stores begun with --fps before gaps were bounded filled them: resuming one asks for
    ``--max-gap none``, rather than mixing the two ways in one store."""
    store = tmp_path / "s"
    assert _build(media, "pause.mkv", store, capsys, "--fps", "2", "--max-gap", "none")[0] == 0
    params = json.loads((store / "build.json").read_text())
    del params["content"]["max_gap"]  # as written before the option existed
    (store / "build.json").write_text(json.dumps(params))
    with pytest.raises(StoreError, match=r"max_gap: stored none, asked 5\.0"):
        build_store(media / "pause.mkv", store, BuildOptions(fps=2, size="16"), progress=False)
    report = build_store(
        media / "pause.mkv", store, BuildOptions(fps=2, size="16", max_gap=None), progress=False
    )
    assert report.reused == 1 and report.frames == 19
