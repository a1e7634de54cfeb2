"""A video is judged by what decodes, as the README says: a header claiming 2e9 frames does not
make a complete AVI "truncated", a presentation time of 1e9 s is a time (not a missing one), and
a damaged file named as a video fails the same whatever its video format (.y4m as .webm)."""

from __future__ import annotations

import struct
from fractions import Fraction

import numpy as np

from _media import write_timed_video, write_video
from hyperframes.build import BuildOptions, build_store
from hyperframes.cli import main
from hyperframes.store import open_store


def _claim_frames(raw: bytearray, chunk: bytes, offset: int, frames: int) -> None:
    """Set the 32-bit frame count ``offset`` bytes into the body of RIFF chunk ``chunk``."""
    at = raw.find(chunk)
    assert at >= 0, chunk
    struct.pack_into("<I", raw, at + 8 + offset, frames)


def test_an_avi_whose_header_claims_2e9_frames_stores_its_50(tmp_path):
    data = tmp_path / "data"
    avi = write_video(data / "a.avi", frames=50, codec="mpeg4")
    raw = bytearray(avi.read_bytes())
    _claim_frames(raw, b"avih", 16, 2_000_000_000)  # the main header's dwTotalFrames
    _claim_frames(raw, b"strh", 32, 2_000_000_000)  # the video stream header's dwLength
    avi.write_bytes(bytes(raw))
    report = build_store(data, tmp_path / "s", BuildOptions(size="none"), progress=False)
    assert report.failed == [] and report.exit_code == 0
    video = open_store(tmp_path / "s").videos[0]
    assert video.num_frames == 50 and video.num_frames_from_header == 2_000_000_000


def test_a_video_timed_at_1e9_seconds_is_stored_at_its_times(tmp_path):
    data = tmp_path / "data"
    ticks = [10**12 + 100 * i for i in range(20)]  # ms: 1e9 s, then every 0.1 s
    write_timed_video(data / "late.mkv", ticks, time_base=Fraction(1, 1000))
    report = build_store(data, tmp_path / "s", BuildOptions(size="none"), progress=False)
    assert report.failed == [] and report.exit_code == 0
    pts = open_store(tmp_path / "s").videos[0].pts_seconds
    assert np.allclose(pts, 1e9 + 0.1 * np.arange(20))


def test_a_damaged_y4m_fails_as_a_damaged_webm_does(tmp_path, capsys):
    data = tmp_path / "data" / "clips"
    for name, codec in (("a.y4m", "rawvideo"), ("b.webm", "libvpx-vp9")):
        path = write_video(data / name, frames=4, codec=codec)
        raw = bytearray(path.read_bytes())
        raw[:64] = b"\x5a" * 64  # the header gone
        path.write_bytes(bytes(raw))
    out = tmp_path / "s"
    assert main(["build", str(data.parent), "--out", str(out), "--quiet"]) == 2
    said = capsys.readouterr().out
    assert "skipped (not inputs): 0" in said
    failed = sorted(f["path"] for f in open_store(out).manifest["failed"])
    assert failed == [str(data / "a.y4m"), str(data / "b.webm")]
