"""Damaged videos: the decoder's own error signals are counted into a DecodeReport.

Damage is made here from a real clip (../shared/videos/test.mp4, H.264 in MP4, moov at the end):
bits flipped in the frame data (the index and headers untouched, so it still opens and every
frame still decodes, concealed), and packets whose NAL length field is broken, which the H.264
decoder rejects outright. The clean copy of the same file reports nothing.
"""

from __future__ import annotations

import logging
import shutil
import struct
import subprocess
import sys

import av
import numpy as np
import pytest

from hyperframes import ConfigError, DecodeError
from hyperframes.decode import DecodeReport, create_decoder, list_decoders

VIDEO_BACKENDS = list_decoders(reads="video")
NUM_FRAMES = 300  # test.mp4
BROKEN_PACKET = 150  # a P-frame packet in the middle of test.mp4


def get_decoder(name: str):
    try:
        return create_decoder(name)
    except ConfigError as e:
        pytest.skip(f"decoder {name!r} is not available: {e}")


def mdat_payload(data: bytes) -> tuple[int, int]:
    """Start and end offsets of the frame data (the mdat box's payload) of an MP4 file."""
    at = 0
    while at < len(data):
        size, kind = struct.unpack(">I4s", data[at : at + 8])
        header = 8
        if size == 1:  # 64-bit size follows
            size, header = struct.unpack(">Q", data[at + 8 : at + 16])[0], 16
        if kind == b"mdat":
            return at + header, at + size
        at += size
    raise AssertionError("no mdat box")


def flip_bits(src, dst, *, bits: int = 40, seed: int = 7) -> list[int]:
    """Copy ``src`` with ``bits`` bits flipped at seeded offsets spread over the frame data,
    16 KiB clear of its ends (the first keyframe's start and the moov index)."""
    data = bytearray(src.read_bytes())
    start, end = mdat_payload(bytes(data))
    rng = np.random.default_rng(seed)
    offsets = sorted(rng.choice(np.arange(start + 16384, end - 16384), bits, replace=False))
    for offset in offsets:
        data[offset] ^= 1 << int(rng.integers(8))
    dst.write_bytes(bytes(data))
    return offsets


def break_packets(src, dst, first: int, last: int) -> None:
    """Copy ``src`` with packets first..last given an impossible NAL length (0xFFFFFFFF)."""
    with av.open(str(src)) as c:
        spans = [(p.pos, p.size) for p in c.demux(video=0) if p.size]
    data = bytearray(src.read_bytes())
    for pos, _ in spans[first : last + 1]:
        data[pos : pos + 4] = b"\xff\xff\xff\xff"
    dst.write_bytes(bytes(data))


def frames_with_report(decoder, path) -> tuple[int, DecodeReport]:
    report = DecodeReport()
    n = sum(1 for _ in decoder.frames(str(path), report=report))
    return n, report


@pytest.fixture(scope="module")
def damaged(tmp_path_factory, shared_videos) -> dict:
    d = tmp_path_factory.mktemp("damaged")
    shutil.copy(shared_videos / "test.mp4", d / "clean.mp4")
    offsets = flip_bits(d / "clean.mp4", d / "flipped.mp4")
    assert len(offsets) == 40
    with av.open(str(d / "flipped.mp4")) as c:  # still opens and decodes, frame for frame
        assert sum(1 for _ in c.decode(video=0)) == NUM_FRAMES
    break_packets(d / "clean.mp4", d / "one_bad_packet.mp4", BROKEN_PACKET, BROKEN_PACKET)
    break_packets(d / "clean.mp4", d / "bad_second_half.mp4", BROKEN_PACKET, NUM_FRAMES)
    return {p.stem: p for p in d.iterdir()}


def test_clean_copy_reports_nothing(damaged):
    n, report = frames_with_report(create_decoder("pyav"), damaged["clean"])
    assert n == NUM_FRAMES
    assert report.total == 0 and report.counts == {} and report.messages == []


def test_flipped_bits_are_counted_by_pyav(damaged):
    """FFmpeg conceals the damage and says so in its log; the frames come flagged corrupt."""
    n, report = frames_with_report(create_decoder("pyav"), damaged["flipped"])
    assert n == NUM_FRAMES
    assert report.total > 0
    assert {"concealed", "decode_errors", "corrupt_frames"} <= set(report.counts), report
    assert report.counts["concealed"] >= 10, report  # 40 flips: many slices concealed
    assert report.messages and all(m.startswith("h264: ") for m in report.messages), report
    assert any("concealing" in m or "error while decoding MB" in m for m in report.messages)
    assert "error signal(s)" in str(report) and "concealed" in str(report)


# backend -> what it does with one packet its decoder rejects (FFmpeg: "Invalid data found")
ONE_BAD_PACKET = {
    "pyav": "skipped",  # as FFmpeg's command line: the packet is lost, not the video
    "torchcodec": "skipped",
    "decord": "decord failed on v:0 after",  # decord stops with its FFmpeg's error
    "opencv": "truncated: decoded",  # OpenCV stops reading, silently: the truncation check
}


@pytest.mark.parametrize("backend", VIDEO_BACKENDS)
def test_a_packet_the_decoder_rejects(backend, damaged):
    decoder = get_decoder(backend)
    path = damaged["one_bad_packet"]
    expected = ONE_BAD_PACKET[backend]
    if expected != "skipped":
        with pytest.raises(DecodeError, match=expected):
            frames_with_report(decoder, path)
        return
    n, report = frames_with_report(decoder, path)
    assert n == NUM_FRAMES - 1
    assert report.counts["failed_packets"] == 1, report
    assert any("Invalid data found" in m for m in report.messages), report


@pytest.mark.parametrize("backend", ["pyav", "torchcodec"])
def test_a_video_cut_short_by_failures_says_what_failed(backend, damaged):
    """Every packet of the second half is rejected: too few frames, and the message says why."""
    decoder = get_decoder(backend)
    report = DecodeReport()
    # frames 0-149 are whole; a frame-threaded decoder may lose the last one or two in flight
    with pytest.raises(DecodeError, match=r"truncated: decoded (148|149|150) frames") as caught:
        for _ in decoder.frames(str(damaged["bad_second_half"]), report=report):
            pass
    assert report.counts["failed_packets"] >= 100, report
    assert f"{backend} reported" in str(caught.value) and "failed_packets" in str(caught.value)


def test_pyav_logging_is_restored_after_the_tap(damaged):
    """The log tap is on only while a reporting decode runs, and as long as any does."""
    before = av.logging.get_level()  # PyAV's default, None: FFmpeg's log dropped
    assert before is None or before < av.logging.INFO, "another test left av.logging on"
    decoder = create_decoder("pyav")
    plain = iter(decoder.frames(str(damaged["flipped"])))
    next(plain)
    assert av.logging.get_level() == before  # no report, no tap
    plain.close()
    one, two = DecodeReport(), DecodeReport()
    first = iter(decoder.frames(str(damaged["flipped"]), report=one))
    second = iter(decoder.frames(str(damaged["flipped"]), report=two))
    next(first), next(second)
    assert av.logging.get_level() == av.logging.INFO
    assert av.logging.get_skip_repeated() is False
    for _ in first:  # the first ends while the second still taps
        pass
    assert av.logging.get_level() == av.logging.INFO
    for _ in range(20):
        next(second)
    second.close()  # abandoned half-way: the tap still ends
    assert av.logging.get_level() == before and av.logging.get_skip_repeated() is True
    assert one.total > 0 and two.total > 0


ABANDON = """
import sys
from hyperframes.decode import DecodeReport, create_decoder
decoder = create_decoder("pyav")
for _ in range(150):
    frames = iter(decoder.frames(sys.argv[1], report=DecodeReport()))
    for _ in range(30):
        next(frames)
    frames.close()
"""


def test_abandoning_a_tapped_decode_of_a_damaged_video_never_deadlocks(tmp_path, shared_videos):
    """Decodes given up half-way while FFmpeg's frame threads still log concealment: PyAV
    frees the decoder holding the GIL, which a logging thread waits for (before the fix, a
    hang within about 20 decodes)."""
    heavy = tmp_path / "heavy.mp4"
    flip_bits(shared_videos / "test.mp4", heavy, bits=3000)
    script = tmp_path / "abandon.py"
    script.write_text(ABANDON)
    try:
        done = subprocess.run(
            [sys.executable, str(script), str(heavy)], capture_output=True, text=True, timeout=60
        )
    except subprocess.TimeoutExpired:
        pytest.fail("abandoned decodes of a damaged video deadlocked")
    assert done.returncode == 0, done.stderr


def test_pyav_logging_someone_switched_on_is_kept(damaged, caplog):
    """A user's own av.logging level comes back, and FFmpeg's lines still reach logging."""
    av.logging.set_level(av.logging.ERROR)
    try:
        with caplog.at_level(logging.ERROR, logger="libav"):
            n, report = frames_with_report(create_decoder("pyav"), damaged["flipped"])
        assert av.logging.get_level() == av.logging.ERROR
    finally:
        av.logging.set_level(None)
    assert n == NUM_FRAMES and report.counts["decode_errors"] > 0
    h264 = [r for r in caplog.records if r.name == "libav.h264"]
    assert h264 and all(r.levelno >= logging.ERROR for r in h264)  # INFO lines stay hidden
