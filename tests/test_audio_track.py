"""The audio track (build --audio): decoded once, resampled, stored beside the frames with its
own timestamps, read back by time; checked by verify, carried into HDF5, kept by resume."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from _media import make_beep_video, make_vfr_beep_video, write_video
from _stores import reseal
from hyperframes import StoreError
from hyperframes.build import BuildOptions, build_store, convert_to_hdf5
from hyperframes.build._ingest import ingest
from hyperframes.build._options import make_codec as _make_codec
from hyperframes.build._shard import ShardWriter
from hyperframes.build._workers import decoder_for as _decoder_for
from hyperframes.cli._main import main
from hyperframes.inputs._scan import scan_inputs
from hyperframes.store import open_store, verify_store

BEEPS = ((0.50, 0.60), (1.30, 1.40))
RATE = 16000
AUDIO = BuildOptions(size="none", audio=True)


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    """a/beep.mkv (PCM at 48 kHz), a/beep_aac.mp4 (AAC at 44.1 kHz), b/vfr.mkv (variable
    frame durations, PCM at 48 kHz), b/silent.mp4 (no audio stream)."""
    root = tmp_path_factory.mktemp("audio") / "data"
    make_beep_video(root / "a" / "beep.mkv", beeps=BEEPS)
    make_beep_video(root / "a" / "beep_aac.mp4", beeps=BEEPS, sample_rate=44100, audio_codec="aac")
    make_vfr_beep_video(root / "b" / "vfr.mkv", beeps=BEEPS)
    write_video(root / "b" / "silent.mp4", frames=10)
    return root


@pytest.fixture(scope="module")
def store(data, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("audio_store") / "store"
    report = build_store(data, out, AUDIO, progress=False)
    assert report.exit_code == 0 and report.videos == 4
    return out


def _video(s, name: str) -> int:
    return next(i for i, p in enumerate(s.videos.paths) if p.endswith(name))


def _loud(x: np.ndarray, threshold: float = 0.1) -> np.ndarray:
    """Per sample: whether the beep is on (the sine's envelope over 1 ms, above threshold)."""
    env = np.abs(x).max(axis=0)
    k = RATE // 1000
    padded = np.pad(env, k)
    peak = np.max(np.stack([padded[j : j + len(env)] for j in range(2 * k + 1)]), axis=0)
    return peak > threshold


def _edges(on: np.ndarray, first_seconds: float) -> list[tuple[float, float]]:
    d = np.diff(on.astype(np.int8), prepend=0, append=0)
    starts, ends = np.flatnonzero(d == 1), np.flatnonzero(d == -1)
    return [(first_seconds + a / RATE, first_seconds + b / RATE) for a, b in zip(starts, ends)]


@pytest.mark.parametrize("name", ["beep.mkv", "beep_aac.mp4", "vfr.mkv"])
def test_the_beep_is_where_it_was_and_silence_elsewhere(store, name):
    with open_store(store) as s:
        v = _video(s, name)
        info = s.audio_info(v)
        assert info["rate"] == RATE and info["channels"] == 1
        assert (
            abs(info["start_seconds"]) < 1e-3 and abs(info["num_samples"] - 2 * RATE) < 0.05 * RATE
        )  # AAC pads its last frame
        samples, rate, first = s.read_audio(v, 0.0, 2.0)
        assert samples.shape == (1, 2 * RATE) and samples.dtype == np.float32
        assert rate == RATE and first == 0.0
        edges = _edges(_loud(samples), first)
        assert len(edges) == 2, edges
        for (a, b), (want_a, want_b) in zip(edges, BEEPS):
            assert abs(a - want_a) <= 0.010 and abs(b - want_b) <= 0.010, edges
        # 1 kHz, and silence (not low noise) away from the beeps
        beep = samples[0, int(0.52 * RATE) : int(0.58 * RATE)]
        spectrum = np.abs(np.fft.rfft(beep))
        assert abs(np.argmax(spectrum) * RATE / len(beep) - 1000) < 1000 / 0.06 / 2
        quiet = np.ones(2 * RATE, bool)
        for a, b in BEEPS:
            quiet[int((a - 0.02) * RATE) : int((b + 0.02) * RATE)] = False
        assert np.abs(samples[0, quiet]).max() < 0.01


def test_a_window_is_read_by_time_with_zeros_outside_the_audio(store):
    with open_store(store) as s:
        v = _video(s, "beep.mkv")
        whole, _, _ = s.read_audio(v, 0.0, 2.0)
        x, rate, first = s.read_audio(v, 0.45, 0.65)
        assert x.shape == (1, round(0.2 * RATE)) and first == pytest.approx(0.45)
        assert rate == RATE
        np.testing.assert_array_equal(x, whole[:, int(0.45 * RATE) : int(0.65 * RATE)])
        (a, b), *_ = _edges(_loud(x), first)
        assert abs(a - 0.50) <= 0.010 and abs(b - 0.60) <= 0.010
        # before the audio starts and after it ends: zeros, N still (end - start) * rate
        x, _, first = s.read_audio(v, -0.5, 0.1)
        assert x.shape == (1, round(0.6 * RATE)) and first == pytest.approx(-0.5)
        assert not x[:, : round(0.5 * RATE)].any()
        np.testing.assert_array_equal(x[:, round(0.5 * RATE) :], whole[:, : round(0.1 * RATE)])
        x, _, _ = s.read_audio(v, 1.9, 2.5)
        assert x.shape == (1, round(0.6 * RATE)) and not x[:, round(0.1 * RATE) + 1 :].any()
        x, _, _ = s.read_audio(v, 5.0, 6.0)
        assert x.shape == (1, RATE) and not x.any()


def test_audio_and_frames_share_one_clock_for_a_variable_rate_video(store):
    with open_store(store) as s:
        v = _video(s, "vfr.mkv")
        pts = s.videos[v].pts_seconds
        steps = np.round(np.diff(pts), 3)
        assert {0.02, 0.04, 0.08} <= set(steps.tolist())  # really variable
        # the frame shown at the beep's start: the audio of its interval is loud
        k = int(np.searchsorted(pts, 0.5))
        x, _, first = s.read_audio(v, float(pts[k]), float(pts[k + 1]))
        assert first == pytest.approx(pts[k]) and _loud(x).mean() > 0.9
        x, _, _ = s.read_audio(v, float(pts[k - 2]), float(pts[k - 1]))
        assert not _loud(x).any()


def test_a_video_without_audio_is_stored_without_and_info_says_so(store, capsys):
    with open_store(store) as s:
        v = _video(s, "silent.mp4")
        assert s.has_audio
        assert s.audio_info(v) is None and s.read_audio(v, 0.0, 1.0) is None
        assert s.read_numpy(v, [0]).shape == (1, 3, 48, 64)  # its frames are there
    assert main(["info", str(store)]) == 0
    text = capsys.readouterr().out
    assert "audio          16000 Hz mono float32: 3 of 4 videos have audio" in text
    assert "1 without:\n  " in text and "silent.mp4" in text
    assert main(["info", str(store), "--json"]) == 0
    audio = json.loads(capsys.readouterr().out)["tracks"]["audio"]
    assert audio["videos_with_audio"] == 3 and audio["sample_rate"] == RATE
    assert [Path(p).name for p in audio["videos_without_audio"]] == ["silent.mp4"]


def test_a_store_without_audio_says_none(data, tmp_path):
    out = tmp_path / "plain"
    build_store(data / "b", out, BuildOptions(size="none"), progress=False)
    with open_store(out) as s:
        assert not s.has_audio and s.audio_info(0) is None and s.read_audio(0, 0, 1) is None
        assert "audio" not in s.manifest["build"]
        assert not (out / "index" / "audio.npy").exists()


def test_stereo_from_the_command_line(data, tmp_path, capsys):
    out = tmp_path / "stereo"
    argv = ["build", str(data / "a"), "--out", str(out), "--size", "32", "--quiet"]
    assert main([*argv, "--audio", "--audio-channels", "2", "--audio-rate", "8000"]) == 0
    with open_store(out) as s:
        v = _video(s, "beep.mkv")
        assert s.audio_info(v)["channels"] == 2 and s.audio_info(v)["rate"] == 8000
        x, rate, _ = s.read_audio(v, 0.0, 2.0)
        assert x.shape == (2, 16000) and rate == 8000
        np.testing.assert_allclose(x[0], x[1], atol=1e-6)  # mono source, both channels
        assert np.abs(x[:, 4100:4700]).max() > 0.3 and np.abs(x[:, :3900]).max() < 0.01
        assert s.manifest["build"]["audio_channels"] == 2
    # the same store asked with other audio parameters: refused, as any changed parameter
    capsys.readouterr()
    assert main([*argv, "--audio", "--audio-channels", "1", "--audio-rate", "8000"]) == 1
    err = capsys.readouterr().err
    assert "audio_channels: stored 2, asked 1" in err


def _flip(path: Path, at: int) -> None:
    with open(path, "r+b") as f:
        f.seek(at)
        b = f.read(1)
        f.seek(at)
        f.write(bytes([b[0] ^ 0x10]))


def _audio_row(store: Path, v: int):
    with open_store(store) as s:
        shard = store / "shards" / s.shard_names[int(s.index.videos["shard"][v])]
        return shard, np.load(store / "index" / "audio.npy")[v]


def test_verify_names_damaged_audio_and_the_rerun_decodes_that_video_again(data, store, tmp_path):
    out = tmp_path / "store"
    shutil.copytree(store, out)
    with open_store(out) as s:
        v = _video(s, "beep.mkv")
        path = s.videos.paths[v]
        reference = s.read_audio(v, 0.0, 2.0)[0]
    shard, row = _audio_row(out, v)
    _flip(shard, int(row["offset"]) + int(row["nbytes"]) // 2)
    problems = verify_store(out)
    assert len(problems) == 1 and "damaged videos" in problems[0]
    assert f"({path!r}: audio)" in problems[0]
    with open_store(out, check="video") as s, pytest.raises(StoreError, match="its audio"):
        s.read_audio(v, 0.0, 1.0)
    report = build_store(data, out, AUDIO, progress=False)
    assert report.reused == 3 and report.exit_code == 0
    assert verify_store(out) == []
    with open_store(out) as s:
        np.testing.assert_array_equal(s.read_audio(_video(s, "beep.mkv"), 0.0, 2.0)[0], reference)


def test_hdf5_carries_the_audio(store, tmp_path):
    h5 = convert_to_hdf5(store, tmp_path / "s.h5", progress=False)
    assert verify_store(h5) == []
    with open_store(store) as a, open_store(h5, check="video") as b:
        assert b.has_audio
        for v in range(len(a)):
            assert a.audio_info(v) == b.audio_info(v)
            ra, rb = a.read_audio(v, 0.3, 1.7), b.read_audio(v, 0.3, 1.7)
            if ra is None:
                assert rb is None
            else:
                np.testing.assert_array_equal(ra[0], rb[0])
                assert ra[1:] == rb[1:]
        v = _video(a, "beep.mkv")
    import h5py

    with h5py.File(h5, "r") as f:
        at = f[f"audio/{v:08d}"].id.get_offset()  # an uncompressed, contiguous dataset
    _flip(h5, at + 1000)
    problems = verify_store(h5)
    assert len(problems) == 1 and f"/audio/{v:08d}: video {v}" in problems[0]
    assert "its audio" in problems[0]


def test_an_interrupted_build_keeps_the_audio_it_committed(data, store, tmp_path):
    """A worker that committed a video and was killed before closing its shard (its journal
    and payload still .part): the rerun recovers the shard with the video's audio intact."""
    out = tmp_path / "store"
    (out / "shards").mkdir(parents=True)
    source = next(s for s in scan_inputs(data).sources if s.path.endswith("beep.mkv"))
    writer = ShardWriter(out / "shards", "r000-w000-00000")
    ingest(source, AUDIO, _decoder_for(AUDIO, "video"), _make_codec(AUDIO), writer)
    writer.abandon()  # killed here: nothing finished, the journal holds the video
    assert list((out / "shards").glob("*.part"))
    report = build_store(data, out, AUDIO, progress=False)
    assert report.reused == 1 and report.videos == 4
    assert verify_store(out) == []
    with open_store(out) as s, open_store(store) as ref:
        for v in range(len(s)):
            assert s.videos.paths[v] == ref.videos.paths[v]
            got, want = s.read_audio(v, 0.0, 2.0), ref.read_audio(v, 0.0, 2.0)
            assert (got is None) == (want is None)
            if got is not None:
                np.testing.assert_array_equal(got[0], want[0])


def _rewrite(path: Path, table: np.ndarray) -> None:
    """Replace an index file with one of the same size (the manifest's size check passes)."""
    size = path.stat().st_size
    np.save(path, table)
    assert path.stat().st_size == size
    reseal(path.parent.parent)  # (the manifest's checksum would refuse it first)


def test_a_crafted_audio_table_is_refused_naming_the_file(store, tmp_path):
    out = tmp_path / "store"
    shutil.copytree(store, out)
    f = out / "index" / "audio.npy"
    table = np.load(f)
    v = int(np.flatnonzero(table["has_audio"])[0])
    bad = table.copy()
    bad["offset"][v] = 1 << 40
    _rewrite(f, bad)
    with pytest.raises(StoreError, match=r"audio\.npy: video \d+ .*lie outside"):
        open_store(out)
    bad = table.copy()
    bad["num_samples"][v] += 1  # no longer nbytes / 4
    _rewrite(f, bad)
    with pytest.raises(StoreError, match=r"audio\.npy: video \d+ .*should be channels"):
        open_store(out)
    bad = table.copy()
    bad["offset"][v] = np.load(out / "index" / "videos.npy")["offset"][v]  # over its frames
    _rewrite(f, bad)
    with pytest.raises(StoreError, match=r"audio\.npy: video \d+ .*overlap the frames"):
        open_store(out)
