"""Every decoder backend against FFmpeg's ground truth on real videos (../shared/videos).

Frame counts, timestamps and pixels must match truth.json (made with the FFmpeg tools), and the
pixel check must be able to tell a frame from its neighbour. Timestamps are FFmpeg's best-effort
timestamps (ffprobe's ``best_effort_timestamp_time``), also on an AVI with B-frames made here,
and a clean video makes no backend report a decode error. A backend that is not installed is
skipped; a backend that cannot decode a codec is skipped for that file only, after checking that
it really refuses it.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
import shutil
import subprocess
from fractions import Fraction

import av
import numpy as np
import pytest

from hyperframes import ConfigError, DecodeError
from hyperframes.decode import DecodeReport, create_decoder, list_decoders

VIDEO_BACKENDS = list_decoders(reads="video")
VIDEOS = [
    "test.mp4",
    "test.avi",
    "part_0.mp4",
    "nasa_13013.mp4",
    "av1_video.mkv",
    "h265_video.mp4",
]
OFF_BY_ONE_VIDEOS = ["test.mp4", "test.avi", "part_0.mp4"]  # neighbours differ by > 3 levels
TOLERANCE = 1.0  # mean absolute difference, in 0..255 levels

# (backend, video) pairs that the backend cannot decode, and words its error must contain.
CANNOT = {
    ("decord", "av1_video.mkv"): "has no decoder for av1",
    ("opencv", "av1_video.mkv"): "opencv cannot decode av1",
    ("decord", "nasa_13013.mp4"): "decord cannot choose a video stream",
}


def get_decoder(name: str):
    try:
        return create_decoder(name)
    except ConfigError as e:
        pytest.skip(f"decoder {name!r} is not available: {e}")


@dataclasses.dataclass
class Decoded:
    count: int
    indices: list[int]
    pts: list[float]
    rgb: dict[int, np.ndarray]  # frames kept for the pixel checks
    report: DecodeReport  # the decoder's own error signals


_CACHE: dict[tuple[str, str], Decoded | DecodeError] = {}


def decode(backend: str, video: str, truth: dict, shared_videos) -> Decoded:
    """Decode ``video`` (v:0) once per session; keep the reference frames and their neighbours."""
    key = (backend, video)
    if key not in _CACHE:
        keep = {j for k in truth[video]["reference_frames"] for j in (k - 1, k, k + 1)}
        decoder = get_decoder(backend)
        try:
            out = Decoded(0, [], [], {}, DecodeReport())
            for frame in decoder.frames(str(shared_videos / video), stream=0, report=out.report):
                out.count += 1
                out.indices.append(frame.index)
                out.pts.append(frame.pts_seconds)
                if frame.index in keep:
                    out.rgb[frame.index] = frame.to_rgb()
            _CACHE[key] = out
        except DecodeError as e:
            _CACHE[key] = e
    result = _CACHE[key]
    if isinstance(result, DecodeError):
        words = CANNOT.get(key)
        if words is None or words not in str(result):
            raise result
        pytest.skip(f"{backend} cannot decode v:0 of {video}: {result}")
    assert key not in CANNOT, f"{backend} now decodes {video}: remove it from CANNOT"
    return result


def reference(shared_videos, video: str, k: int) -> np.ndarray:
    return np.load(shared_videos / f"{video}.frame{k:06d}.npy")


def mad(a: np.ndarray, b: np.ndarray) -> float:
    assert a.shape == b.shape, (a.shape, b.shape)
    return float(np.abs(a.astype(np.int16) - b.astype(np.int16)).mean())


grid = pytest.mark.parametrize("video", VIDEOS)
backends = pytest.mark.parametrize("backend", VIDEO_BACKENDS)


@backends
@grid
def test_frame_count_matches_ffmpeg(backend, video, truth, shared_videos):
    got = decode(backend, video, truth, shared_videos)
    assert got.count == truth[video]["decoded_frames"]
    assert got.indices == list(range(got.count))


@backends
@grid
def test_timestamps_match_ffmpeg(backend, video, truth, shared_videos):
    got = decode(backend, video, truth, shared_videos)
    want = truth[video]["pts_seconds"]
    assert len(got.pts) == len(want)
    assert all(math.isfinite(p) for p in got.pts)
    assert all(b > a for a, b in zip(got.pts, got.pts[1:])), "timestamps must increase"
    for i, (p, w) in enumerate(zip(got.pts, want)):
        if w is not None and math.isfinite(w):
            assert abs(p - w) < 1e-5, f"frame {i}: {p} s, FFmpeg says {w} s"


@backends
@grid
def test_clean_video_reports_no_decode_errors(backend, video, truth, shared_videos):
    got = decode(backend, video, truth, shared_videos)
    assert got.report.total == 0, got.report
    assert got.report.counts == {} and got.report.messages == []


FFPROBE_FRAMES = ["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries"]


def ffprobe_best_effort(path) -> list[float]:
    """ffprobe's best_effort_timestamp_time of every frame of v:0 (NaN where it has none)."""
    out = subprocess.run(
        [*FFPROBE_FRAMES, "frame=best_effort_timestamp_time", "-of", "json", str(path)],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    return [float(f.get("best_effort_timestamp_time", "nan")) for f in json.loads(out)["frames"]]


# ffprobe 5.1 on bframe_avi's file, for machines without ffprobe: frame k at (k + 2) / 30 s
# (the decoder holds two frames back, so the first frame leaves with the third packet's dts);
# NaN for the last two, which leave the decoder when it is flushed, with no packet.
BFRAME_AVI_BEST_EFFORT = [(k + 2) / 30 for k in range(28)] + [math.nan, math.nan]


@pytest.fixture(scope="module")
def bframe_avi(tmp_path_factory) -> tuple:
    """H.264 with B-frames (x264, pyramid) in AVI, 64x48, 30 frames at 30 fps, and the
    best-effort timestamps of its frames. AVI stores only decode times: every frame is timed
    by the dts FFmpeg attaches to it, which starts at 2/30 s, not 0."""
    path = tmp_path_factory.mktemp("bframes") / "bframes.avi"
    with av.open(str(path), "w") as out:
        s = out.add_stream("libx264", rate=30)
        s.width, s.height, s.pix_fmt = 64, 48, "yuv420p"
        s.options = {"bf": "3", "g": "12", "crf": "20"}
        s.options["x264-params"] = "b-adapt=0:b-pyramid=normal:threads=1"
        for i in range(30):
            img = np.full((48, 64, 3), i * 8, np.uint8)
            img[10:20, 2 * i : 2 * i + 4] = 255  # a block moving right: B-frames pay
            frame = av.VideoFrame.from_ndarray(img, format="rgb24")
            frame.pts, frame.time_base = i, Fraction(1, 30)
            out.mux(s.encode(frame))
        out.mux(s.encode())
    with av.open(str(path)) as inp:
        kinds = {av.video.frame.PictureType(f.pict_type).name for f in inp.decode(video=0)}
    assert "B" in kinds, kinds  # the case under test: frames reordered by the decoder
    if shutil.which("ffprobe"):
        want = ffprobe_best_effort(path)
        np.testing.assert_allclose(want, BFRAME_AVI_BEST_EFFORT, atol=1e-5)  # still true
    else:
        want = BFRAME_AVI_BEST_EFFORT
    return path, want


@backends
def test_bframe_avi_timestamps_are_ffmpegs_best_effort(backend, bframe_avi):
    """The first frame is at 2/30 s, as ffprobe says, not 1/30 s (one frame early)."""
    decoder = get_decoder(backend)
    path, want = bframe_avi
    info = decoder.probe(str(path))
    assert info.start_seconds == pytest.approx(want[0], abs=1e-5)
    report = DecodeReport()
    pts = [f.pts_seconds for f in decoder.frames(str(path), report=report)]
    assert len(pts) == len(want) and report.total == 0, report
    assert all(b > a for a, b in itertools.pairwise(pts)), "timestamps must increase"
    for i, (p, w) in enumerate(zip(pts, want)):
        if math.isfinite(w):
            assert abs(p - w) < 1e-5, f"frame {i}: {p} s, FFmpeg says {w} s"


@backends
@grid
def test_reference_frames_match(backend, video, truth, shared_videos):
    got = decode(backend, video, truth, shared_videos)
    for k in truth[video]["reference_frames"]:
        rgb = got.rgb[k]
        assert rgb.dtype == np.uint8 and rgb.flags.c_contiguous
        assert mad(rgb, reference(shared_videos, video, k)) < TOLERANCE, f"frame {k}"


@backends
@pytest.mark.parametrize("video", OFF_BY_ONE_VIDEOS)
def test_neighbouring_frame_fails_the_tolerance(backend, video, truth, shared_videos):
    """The pixel check catches an off-by-one: the next frame does not pass for the middle one."""
    got = decode(backend, video, truth, shared_videos)
    refs = truth[video]["reference_frames"]
    k = refs[len(refs) // 2]
    assert mad(got.rgb[k + 1], reference(shared_videos, video, k)) >= TOLERANCE


@backends
def test_resize_and_probe(backend, truth, shared_videos):
    """``to_rgb(size)`` scales the whole picture; ``probe`` agrees with FFmpeg's header."""
    decoder = get_decoder(backend)
    path = str(shared_videos / "test.mp4")
    info = decoder.probe(path)
    t = truth["test.mp4"]
    assert (info.codec, info.width, info.height) == (t["codec"], t["width"], t["height"])
    assert info.fps == pytest.approx(float(Fraction(t["avg_frame_rate"])))
    assert info.num_frames_from_header == int(t["header_frames"])
    assert info.pix_fmt == t["pix_fmt"] and info.rotation == 0
    assert decoder.resize_algorithm in ("swscale-area", "pil-bilinear")
    assert decoder.version()
    frame = next(iter(decoder.frames(path)))
    small = frame.to_rgb((128, 170))
    assert small.shape == (128, 170, 3) and small.dtype == np.uint8 and small.flags.c_contiguous
    ref = np.asarray(
        av.VideoFrame.from_ndarray(reference(shared_videos, "test.mp4", 0), format="rgb24")
        .to_image()
        .resize((170, 128))
    )
    assert mad(small, ref) < 3.0  # same picture, scaled (a crop or a wrong frame is far off)
    assert frame.to_rgb((256, 340)).shape == (256, 340, 3)


@backends
def test_best_stream_of_nasa_is_not_v0(backend, shared_videos):
    """nasa_13013.mp4 has two video streams; the larger (v:1, 480x270) is the best."""
    decoder = get_decoder(backend)
    path = str(shared_videos / "nasa_13013.mp4")
    if backend == "opencv":  # OpenCV always decodes v:0 and must say so
        with pytest.raises(DecodeError, match="opencv cannot choose a video stream"):
            decoder.frames(path)
        return
    info = decoder.probe(path)
    assert (info.stream_index, info.width, info.height) == (1, 480, 270)
    frames = list(decoder.frames(path))
    assert len(frames) == 390  # ffprobe -count_frames -select_streams v:1
    assert frames[0].to_rgb().shape == (270, 480, 3)
    assert frames[-1].pts_seconds == pytest.approx(389 * 1001 / 30000, abs=1e-3)


def test_frame_folder_matches_pil(rawframes_dir):
    from PIL import Image

    files = sorted(rawframes_dir.glob("img_*.jpg"))
    assert len(files) == 10
    decoder = create_decoder("frames")
    info = decoder.probe(str(rawframes_dir))
    assert (info.codec, info.fps, info.num_frames_from_header) == ("jpeg", 30.0, 10)
    frames = list(decoder.frames(str(rawframes_dir)))
    assert [f.index for f in frames] == list(range(10))
    assert [f.pts_seconds for f in frames] == pytest.approx([i / 30 for i in range(10)])
    for frame, file in zip(frames, files):
        want = np.asarray(Image.open(file).convert("RGB"))
        got = frame.to_rgb()
        assert got.shape == (info.height, info.width, 3) and got.flags.c_contiguous
        assert np.array_equal(got, want)
    assert frames[0].to_rgb((32, 40)).shape == (32, 40, 3)
    slower = create_decoder("frames", fps=25)
    assert [f.pts_seconds for f in slower.frames(str(rawframes_dir))][1] == pytest.approx(0.04)


def test_frame_folder_sorts_by_number(tmp_path):
    from PIL import Image

    for n in (1, 2, 10):
        Image.new("RGB", (8, 6), (n * 20, 0, 0)).save(tmp_path / f"img_{n}.png")
    Image.new("RGB", (8, 6)).save(tmp_path / "flow_x_00001.png")  # not a frame: other prefix
    (tmp_path / "notes.txt").write_text("not a frame")
    decoder = create_decoder("frames")
    assert decoder.probe(str(tmp_path)).codec == "png"
    reds = [int(f.to_rgb()[0, 0, 0]) for f in decoder.frames(str(tmp_path))]
    assert reds == [20, 40, 200]


def make_rotated(path, rotation: int) -> np.ndarray:
    """A 6-frame H.264 clip tagged with a display rotation; returns its stored picture."""
    picture = np.zeros((32, 64, 3), np.uint8)
    picture[:16, :16] = 255  # white block top-left
    picture[:, 48:, 1] = 200  # green band on the right
    with av.open(str(path), "w") as out:
        s = out.add_stream("libx264", rate=10)
        s.width, s.height, s.pix_fmt = 64, 32, "yuv420p"
        s.set_display_rotation(rotation)
        for _ in range(6):
            out.mux(s.encode(av.VideoFrame.from_ndarray(picture, format="rgb24")))
        out.mux(s.encode())
    return picture


@backends
@pytest.mark.parametrize("rotation", [90, 180, -90])
def test_rotated_video_comes_out_upright(backend, rotation, tmp_path):
    """A display matrix rotating ``rotation`` degrees counter-clockwise (FFmpeg's convention)."""
    decoder = get_decoder(backend)
    path = tmp_path / f"rot{rotation}.mp4"
    upright = np.rot90(make_rotated(path, rotation), rotation // 90)
    info = decoder.probe(str(path))
    assert info.rotation == (-rotation) % 360
    assert (info.height, info.width) == upright.shape[:2]
    frames = list(decoder.frames(str(path)))
    assert len(frames) == 6
    rgb = frames[0].to_rgb()
    assert rgb.shape == upright.shape and rgb.flags.c_contiguous
    assert mad(rgb, upright) < 5.0  # a wrong turn moves the white block: error > 40
    assert frames[0].to_rgb((20, 10)).shape == (20, 10, 3)
