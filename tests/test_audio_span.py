"""Audio beyond the video (issue 27, item 5): ``build --audio`` keeps only the audio the
stored frames' time span covers (plus ``AUDIO_MARGIN_SECONDS`` either side), decoded block by
block into the shard and stopped past the video's end; audio packets the decoder rejects mark
the video damaged (exit 2, listed) instead of failing its intact frames."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from _media import write_video_with_audio
from hyperframes import DecodeError
from hyperframes.build import BuildOptions, build_store
from hyperframes.cli._main import main
from hyperframes.decode import decode_audio, stream_audio
from hyperframes.decode._audio import AUDIO_MARGIN_SECONDS
from hyperframes.store import open_store

RATE = 16000


@pytest.fixture(scope="module")
def long_audio(tmp_path_factory) -> Path:
    """1 s of video, 10 minutes of audio (a tone for 2 s, then silence): ~160 kB."""
    return write_video_with_audio(tmp_path_factory.mktemp("long") / "long.mkv")


@pytest.fixture(scope="module")
def damaged_audio(tmp_path_factory) -> Path:
    """1 s of video and 1 s of audio whose packets 2, 3 and 4 are random bytes."""
    return write_video_with_audio(
        tmp_path_factory.mktemp("bad") / "bad.mkv", audio_seconds=1.0, damaged_packets=(2, 3, 4)
    )


def _reference(path: Path, channels: int, n: int) -> np.ndarray:
    """The first ``n`` samples of the file's audio as PyAV decodes and resamples them."""
    import av

    with av.open(str(path)) as c:
        resampler = av.AudioResampler(
            format="fltp", layout="mono" if channels == 1 else "stereo", rate=RATE
        )
        parts, got = [], 0
        for frame in c.decode(audio=0):
            for out in resampler.resample(frame):
                parts.append(out.to_ndarray())
                got += out.samples
            if got >= n:
                break
    return np.concatenate(parts, axis=1)[:, :n]


def test_only_the_audio_of_the_videos_span_is_stored_in_bounded_memory(long_audio, tmp_path):
    tracemalloc.start()
    try:
        report = build_store(
            long_audio, tmp_path / "s", BuildOptions(size="16", audio=True), progress=False
        )
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert report.exit_code == 0, report.summary()
    # the whole track would be 600 s x 16 kHz x 4 B = 38 MB (and twice that in memory)
    assert peak < 20e6, f"peak {peak / 1e6:.1f} MB"
    with open_store(tmp_path / "s") as s:
        info = s.audio_info(0)
        span = s.videos[0].pts_seconds[-1] + 0.1 + AUDIO_MARGIN_SECONDS  # 1 s and the margin
        assert info["start_seconds"] == 0.0  # the audio starts with the video
        assert abs(info["num_samples"] - span * RATE) <= 2, info
        assert s.manifest["store_bytes"] < 1e6
        stored, _, _ = s.read_audio(0, 0.0, span)
    # the samples are the track's own (the tone of its first 2 s), as PyAV resamples them
    np.testing.assert_array_equal(stored, _reference(long_audio, 1, stored.shape[1]))
    assert np.abs(stored).max() > 0.1


def test_stereo_is_stored_planar_through_the_spill(long_audio, tmp_path, capsys):
    argv = ["build", str(long_audio), "--out", str(tmp_path / "s"), "--size", "16", "--quiet"]
    assert main([*argv, "--audio", "--audio-channels", "2"]) == 0
    with open_store(tmp_path / "s") as s:
        info = s.audio_info(0)
        assert info["channels"] == 2 and info["num_samples"] < 2 * RATE
        stored, _, _ = s.read_audio(0, 0.0, info["num_samples"] / RATE)
    np.testing.assert_array_equal(stored, _reference(long_audio, 2, stored.shape[1]))


def test_a_span_later_in_the_audio_keeps_its_own_time(long_audio):
    audio = stream_audio(str(long_audio), rate=RATE, span_seconds=(1.0, 1.5))
    assert audio is not None
    with audio:
        blocks = list(audio.blocks())
    assert audio.start_seconds == pytest.approx(1.0 - AUDIO_MARGIN_SECONDS, abs=1 / RATE)
    assert audio.num_samples == round((0.5 + 2 * AUDIO_MARGIN_SECONDS) * RATE)
    assert max(b.shape[1] for b in blocks) <= 16384  # block by block, never the whole
    first = round(audio.start_seconds * RATE)
    got = np.concatenate(blocks, axis=1)
    np.testing.assert_array_equal(got, _reference(long_audio, 1, first + got.shape[1])[:, first:])


def test_damaged_audio_keeps_the_frames_and_marks_the_video(damaged_audio, tmp_path, capsys):
    argv = ["build", str(damaged_audio), "--out", str(tmp_path / "s"), "--size", "16", "--quiet"]
    assert main([*argv, "--audio"]) == 2  # stored, damaged
    text = capsys.readouterr().out
    assert "1 videos, 10 frames" in text and "failed: 0" in text
    assert "damaged (stored, the decoder reported errors): 1" in text
    assert "audio_failed_packets 3" in text and "first: audio: flac: packet at dts" in text
    with open_store(tmp_path / "s") as s:
        assert s.read_numpy(0, range(10)).shape == (10, 3, 16, 16)  # every frame
        assert s.videos.decode_errors[0] > 0
        info = s.audio_info(0)
        assert info is not None and 0.5 * RATE < info["num_samples"] < 1.6 * RATE  # the rest
        (row,) = s.manifest["damaged"]
        assert row["counts"]["audio_failed_packets"] == 3
    assert main(["info", str(tmp_path / "s")]) == 0
    assert "DAMAGED" in capsys.readouterr().out
    failing = ["build", str(damaged_audio), "--out", str(tmp_path / "f"), "--size", "16"]
    assert main([*failing, "--quiet", "--audio", "--on-damaged", "fail"]) == 2
    text = capsys.readouterr().out
    assert "nothing was stored: the one input failed" in text
    assert "damaged: the decoder reported 12 error signal(s) (audio_decode_errors" in text


def test_decode_audio_still_refuses_damage(damaged_audio):
    with pytest.raises(
        DecodeError, match=r"bad\.mkv: the audio stream is damaged: the decoder reported"
    ):
        decode_audio(str(damaged_audio))


def test_json_info_lists_the_audio_damage(damaged_audio, tmp_path, capsys):
    assert (
        build_store(
            damaged_audio, tmp_path / "s", BuildOptions(size="16", audio=True), progress=False
        ).exit_code
        == 2
    )
    assert main(["info", str(tmp_path / "s"), "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)["damaged"]
    assert row["path"].endswith("bad.mkv") and row["counts"]["audio_failed_packets"] == 3
