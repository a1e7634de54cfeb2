"""Unusable inputs raise InputError / DecodeError naming the file and the decoder's own words.

No raw av / cv2 / decord / torchcodec exception may escape ``probe`` or ``frames``.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from fractions import Fraction

import av
import numpy as np
import pytest

from hyperframes import ConfigError, DecodeError, InputError
from hyperframes.decode import create_decoder, list_decoders

VIDEO_BACKENDS = list_decoders(reads="video")


def get_decoder(name: str):
    try:
        return create_decoder(name)
    except ConfigError as e:
        pytest.skip(f"decoder {name!r} is not available: {e}")


def faststart_copy(src, dst):
    """Remux with the index (moov) first, so a cut file still opens and decodes partly."""
    with av.open(str(src)) as inp, av.open(str(dst), "w", options={"movflags": "faststart"}) as out:
        ist = inp.streams.video[0]
        ost = out.add_stream_from_template(ist)
        for packet in inp.demux(ist):
            if packet.dts is not None:
                packet.stream = ost
                out.mux(packet)


def cut(src, dst, fraction: float):
    data = src.read_bytes()
    dst.write_bytes(data[: int(len(data) * fraction)])


def audio_only(path):
    with av.open(str(path), "w") as out:
        s = out.add_stream("aac", rate=16000)
        for i in range(20):
            frame = av.AudioFrame.from_ndarray(
                np.zeros((1, 1024), np.float32), format="fltp", layout="mono"
            )
            frame.sample_rate, frame.pts = 16000, i * 1024
            out.mux(s.encode(frame))
        out.mux(s.encode())


@pytest.fixture(scope="module")
def bad(tmp_path_factory, shared_videos):
    """name -> path of each kind of unusable input."""
    d = tmp_path_factory.mktemp("bad")
    (d / "folder.mp4").mkdir()
    (d / "zero.mp4").write_bytes(b"")
    (d / "text.mp4").write_text("this is not a video\n" * 20)
    audio_only(d / "audio.m4a")
    faststart_copy(shared_videos / "test.mp4", d / "faststart.mp4")
    cut(d / "faststart.mp4", d / "cut_faststart.mp4", 0.5)  # index intact, half the frames
    cut(shared_videos / "test.mp4", d / "cut_index.mp4", 0.5)  # moov at the end: cut off
    cut(shared_videos / "test.avi", d / "cut.avi", 0.5)
    hevc = (shared_videos / "h265_video.mp4").read_bytes()
    assert hevc.count(b"hev1") == 1
    (d / "unknown_codec.mp4").write_bytes(hevc.replace(b"hev1", b"zzz1"))  # no such decoder
    return {
        "missing": d / "missing.mp4",
        "folder": d / "folder.mp4",
        "zero": d / "zero.mp4",
        "text": d / "text.mp4",
        "audio": d / "audio.m4a",
        "cut_faststart": d / "cut_faststart.mp4",
        "cut_index": d / "cut_index.mp4",
        "cut_avi": d / "cut.avi",
        "unknown_codec": d / "unknown_codec.mp4",
        "nasa": shared_videos / "nasa_13013.mp4",
    }


# case -> (error type, words that must be in the message; a dict gives them per backend)
CASES = {
    "missing": (InputError, "No such file or directory"),
    "folder": (InputError, "Is a directory"),
    "zero": (InputError, "empty (0 bytes)"),
    "text": (InputError, "Invalid data found when processing input"),
    "audio": (InputError, "has no video stream"),
    "cut_index": (InputError, "Invalid data found when processing input"),
    "cut_avi": (DecodeError, "truncated: decoded 77 frames (3.08 s) of ~6.56 s"),
    "cut_faststart": (
        DecodeError,
        {
            "pyav": "truncated: decoded 135 frames",
            "torchcodec": "truncated: decoded 137 frames",  # the failing packet is skipped
            "decord": "av_read_frame failed",
            "opencv": "truncated: decoded 135 frames",
        },
    ),
    "unknown_codec": (
        DecodeError,
        {
            "pyav": "Decoder not found",
            "torchcodec": "No valid stream found",
            "decord": "cannot find video stream",
            "opencv": "isOpened() is False",
        },
    ),
}


@pytest.mark.parametrize("backend", VIDEO_BACKENDS)
@pytest.mark.parametrize("case", list(CASES))
def test_bad_input_raises_clear_error(backend, case, bad):
    decoder = get_decoder(backend)
    error, words = CASES[case]
    if isinstance(words, dict):
        words = words[backend]
    path = str(bad[case])
    with pytest.raises(error) as caught:
        for _ in decoder.frames(path):
            pass
    message = str(caught.value)
    assert path in message and words in message, message


@pytest.mark.parametrize("backend", VIDEO_BACKENDS)
@pytest.mark.parametrize("case", ["missing", "folder", "zero", "text", "audio"])
def test_probe_raises_the_same(backend, case, bad):
    decoder = get_decoder(backend)
    error, words = CASES[case]
    with pytest.raises(error) as caught:
        decoder.probe(str(bad[case]))
    assert str(bad[case]) in str(caught.value) and words in str(caught.value)


def still_at_the_end(path):
    """4 frames at 0, 0.1, 0.2, 0.3 s; the last one is shown for 2.7 s (stream: 3 s)."""
    with av.open(str(path), "w") as out:
        s = out.add_stream("libx264", rate=10, options={"bf": "0"})
        s.width, s.height, s.pix_fmt = 64, 48, "yuv420p"
        s.time_base = s.codec_context.time_base = Fraction(1, 1000)
        packets = []
        for i in range(4):
            frame = av.VideoFrame.from_ndarray(np.full((48, 64, 3), 20 + 50 * i, np.uint8))
            frame.pts, frame.time_base = 100 * i, Fraction(1, 1000)
            packets += s.encode(frame)
        for packet in packets + s.encode():
            if packet.pts == 300:
                packet.duration = round(2.7 / packet.time_base)
            out.mux(packet)


@pytest.mark.parametrize("backend", VIDEO_BACKENDS)
def test_still_frame_ending_a_variable_rate_video_is_not_truncated(backend, tmp_path):
    decoder = get_decoder(backend)
    path = tmp_path / "still.mp4"
    still_at_the_end(path)
    assert decoder.probe(str(path)).duration_seconds == pytest.approx(3.0)
    pts = [f.pts_seconds for f in decoder.frames(str(path))]
    assert pts == pytest.approx([0.0, 0.1, 0.2, 0.3], abs=1e-3)


@pytest.mark.parametrize("backend", VIDEO_BACKENDS)
def test_stream_out_of_range(backend, bad):
    decoder = get_decoder(backend)
    path = str(bad["nasa"])
    for call in (decoder.probe, decoder.frames):
        with pytest.raises(InputError) as caught:
            call(path, stream=2)
        message = str(caught.value)
        assert path in message and "has 2 video stream(s)" in message, message
    with pytest.raises(ConfigError, match="stream must be None or an int"):
        decoder.probe(path, stream="1")


@pytest.mark.parametrize("backend", ["opencv", "decord"])
def test_backend_that_cannot_choose_a_stream_says_so(backend, bad):
    """OpenCV decodes v:0 only, decord FFmpeg's pick (v:1 here): asking for the other fails."""
    decoder = get_decoder(backend)
    other = 1 if backend == "opencv" else 0
    with pytest.raises(DecodeError, match=f"{backend} cannot choose a video stream") as caught:
        decoder.frames(str(bad["nasa"]), stream=other)
    assert str(bad["nasa"]) in str(caught.value) and f"v:{other}" in str(caught.value)


def test_bad_size_is_a_config_error(shared_videos):
    frame = next(iter(create_decoder().frames(str(shared_videos / "part_0.mp4"))))
    for size in [(0, 10), (10,), (10.5, 10), "10x10"]:
        with pytest.raises(ConfigError, match="size must be"):
            frame.to_rgb(size)


def test_unknown_or_missing_decoder_is_a_config_error(monkeypatch):
    with pytest.raises(ConfigError, match="unknown decoder 'nope'"):
        create_decoder("nope")
    monkeypatch.setitem(sys.modules, "decord", None)  # as if not installed
    with pytest.raises(
        ConfigError, match=r"not installed.*pip install 'hyperframes-video\[decord\]'"
    ):
        create_decoder("decord")
    with pytest.raises(ConfigError, match="unknown option"):
        create_decoder("pyav", fps=3)
    with pytest.raises(ConfigError, match="fps must be"):
        create_decoder("frames", fps=0)


def test_decode_imports_without_optional_backends():
    code = (
        "import sys\n"
        "for m in ('decord', 'cv2', 'torchcodec'): sys.modules[m] = None\n"
        "from hyperframes.decode import create_decoder, list_decoders\n"
        "from hyperframes import ConfigError\n"
        "assert set(list_decoders()) >= {'pyav', 'torchcodec', 'decord', 'opencv', 'frames'}\n"
        "for name in ('decord', 'opencv', 'torchcodec'):\n"
        "    try: create_decoder(name)\n"
        '    except ConfigError as e: assert f"hyperframes-video[{name}]" in str(e), e\n'
        "    else: raise AssertionError(name)\n"
        "create_decoder('pyav')\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_frame_folder_errors(tmp_path, rawframes_dir):
    decoder = create_decoder("frames")
    with pytest.raises(InputError, match="Not a directory"):
        decoder.probe(str(rawframes_dir / "img_00001.jpg"))
    with pytest.raises(InputError, match="No such file"):
        decoder.frames(str(tmp_path / "missing"))
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(InputError, match=r"no frames named like img_00001\.jpg"):
        decoder.frames(str(empty))
    with pytest.raises(InputError, match="one stream"):
        decoder.frames(str(rawframes_dir), stream=1)
    broken = tmp_path / "broken"
    shutil.copytree(rawframes_dir, broken)
    (broken / "img_00003.jpg").write_bytes(b"not a jpeg")
    frames = list(decoder.frames(str(broken)))
    with pytest.raises(DecodeError, match="cannot identify image file") as caught:
        frames[2].to_rgb()
    assert "img_00003.jpg" in str(caught.value)
    shutil.copy(broken / "img_00001.jpg", broken / "img_1.jpg")
    with pytest.raises(InputError, match="are both frame 1"):
        decoder.frames(str(broken))
