"""The yuv420 codec (issue 34 item 2): frames kept as I420 planes straight from the decoder,
read back within 2 levels of a raw RGB build of the same clips, in half its bytes, through
every reader: a folder, box reads into the batch buffer, HDF5, a store at a URL, verify,
info; a crafted or damaged store refused cleanly."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import av
import numpy as np
import pytest

from _stores import reseal
from hyperframes import StoreError
from hyperframes._core._resize import resize_planes
from hyperframes.build import BuildOptions, build_store, convert_codec, convert_to_hdf5
from hyperframes.build._publish import publish_store
from hyperframes.cli._main import main
from hyperframes.store import open_store, verify_store
from hyperframes.store._crop import read_boxes

VIDEOS = Path(__file__).resolve().parents[2] / "shared" / "videos"
#: real clips: H.264 untagged (BT.601, limited), HEVC, and H.264 tagged BT.709
REAL = ("part_0.mp4", "h265_video.mp4", "nasa_13013.mp4")


def write_tagged(path: Path, *, frames: int = 6, width: int = 66, height: int = 46) -> Path:
    """An H.264 clip of gentle colour gradients tagged BT.709, full range (decoded as
    yuvj420p)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with av.open(str(path), "w") as out:
        s = out.add_stream("libx264", rate=10)
        s.width, s.height, s.pix_fmt = width, height, "yuv420p"
        s.codec_context.colorspace, s.codec_context.color_range = 1, 2
        s.options = {"crf": "10", "preset": "ultrafast"}
        yy, xx = np.mgrid[0:height, 0:width]
        for i in range(frames):
            planes = [60 + xx * 120 // width, 60 + yy * 120 // height, 120 + 5 * i + 0 * xx]
            f = av.VideoFrame.from_ndarray(np.stack(planes, -1).astype(np.uint8), "rgb24")
            f.pts = i
            for p in s.encode(f):
                out.mux(p)
        for p in s.encode():
            out.mux(p)
    return path


@pytest.fixture(scope="module")
def stores(tmp_path_factory) -> dict:
    """A raw and a yuv420 store of the real clips (short side 128, 5 fps) and of a synthetic BT.709
    full-range clip stored at an odd size (33x45), each built once for the module."""
    if not VIDEOS.is_dir():
        pytest.skip(f"the real clips are not at {VIDEOS}")
    root = tmp_path_factory.mktemp("yuv420")
    real = root / "real"
    real.mkdir()
    for name in REAL:
        (real / name).symlink_to(VIDEOS / name)
    synth = write_tagged(root / "synth" / "tagged.mp4").parent
    out: dict = {}
    for codec in ("raw", "yuv420"):
        build_store(
            real,
            root / f"real-{codec}",
            BuildOptions(codec=codec, size="128", fps=5),
            progress=False,
        )
        opts = BuildOptions(codec=codec, size="33x45")
        build_store(synth, root / f"synth-{codec}", opts, progress=False)
        out[codec] = (root / f"real-{codec}", root / f"synth-{codec}")
    return out


def _shard_bytes(store: Path) -> int:
    return sum(p.stat().st_size for p in (store / "shards").glob("*.bin"))


def _all_frames(store) -> list[np.ndarray]:
    with open_store(store) as s:
        return [s.read_numpy(i, np.arange(s.videos.num_frames[i])) for i in range(len(s))]


def test_frames_are_within_two_levels_of_a_raw_build_in_half_its_bytes(stores):
    for raw, yuv in zip(stores["raw"], stores["yuv420"]):
        for a, b in zip(_all_frames(raw), _all_frames(yuv)):
            assert a.shape == b.shape
            assert np.abs(a.astype(np.int16) - b).mean() < 2.0
        assert _shard_bytes(yuv) <= 0.55 * _shard_bytes(raw)


def test_each_chunk_records_the_matrix_and_range_of_its_source(stores):
    """part_0 is untagged (BT.601, limited), nasa_13013 tagged BT.709 (limited), the
    synthetic clip BT.709 full range; header bytes 4 and 5 say so."""
    real, synth = stores["yuv420"]
    seen = {}
    for store in (real, synth):
        with open_store(store) as s:
            for i in range(len(s)):
                head = bytes(s.frame_chunks(i, np.array([0]))[0][:8])
                seen[Path(s.videos.paths[i]).name] = (head[:4], head[4], head[5])
    assert seen["part_0.mp4"] == (b"I420", 0, 0)
    assert seen["nasa_13013.mp4"] == (b"I420", 1, 0)
    assert seen["tagged.mp4"] == (b"I420", 1, 1)


def test_box_reads_match_decoding_whole_frames_then_cropping(stores):
    """Boxes at odd offsets and sizes, up- and downscaled, flipped: the planes cropped and
    resized before the conversion land within 1.5 levels (mean) of converting first (the
    chroma is resampled once from its own half-size plane, not twice)."""
    rng = np.random.default_rng(0)
    for store in stores["yuv420"]:
        with open_store(store) as s:
            reqs, boxes = [], []
            for i in range(len(s)):
                _, h, w = s.videos.shapes[i]
                bh, bw = int(rng.integers(h // 3, h)) | 1, int(rng.integers(w // 3, w)) | 1
                y, x = int(rng.integers(0, h - bh + 1)), int(rng.integers(0, w - bw + 1))
                reqs.append((i, np.array([0, 2, 1])))
                boxes.append((y, x, bh, bw))
            flips = np.arange(len(reqs)) % 2 == 1
            out = np.empty((len(reqs), 3, 3, 40, 50), np.uint8)
            read_boxes(s, reqs, np.asarray(boxes), out, flips=flips)
            for k, ((i, idx), box) in enumerate(zip(reqs, boxes)):
                want = np.empty_like(out[k])
                resize_planes(s.read_numpy(i, idx), box, want, flip=bool(flips[k]))
                assert np.abs(want.astype(np.int16) - out[k]).mean() < 1.5, (i, box)


def test_a_window_of_chunks_in_one_buffer_reads_as_chunk_by_chunk():
    """Chunks at equal steps in one buffer (a store's map; forwards or backwards) are read
    as strided views, one resize call a plane stack: the same pixels as parsing chunk by
    chunk (separate bytes objects), for up- and downscaled boxes and both filters; a bad
    header anywhere in the window is still the codec's error naming it."""
    from hyperframes.store import _yuv

    rng = np.random.default_rng(3)
    h, w, t = 37, 52, 5
    frames = rng.integers(0, 256, (t, 3, h, w), dtype=np.uint8)
    chunks = [_yuv.encode_rgb(f) for f in frames]
    size = _yuv.frame_bytes(h, w)
    gap = 24  # chunks need not touch: equal steps are enough
    mapped = np.zeros(t * (size + gap), np.uint8)
    for j, c in enumerate(chunks):
        mapped[j * (size + gap) : j * (size + gap) + size] = np.frombuffer(c, np.uint8)
    views = [mapped[j * (size + gap) : j * (size + gap) + size] for j in range(t)]
    assert _yuv._stacked(views, h, w) is not None
    assert _yuv._stacked([bytes(c) for c in chunks], h, w) is None
    for box, size_out, filter in [
        ((3, 5, 21, 30), (40, 50), "linear"),  # upscaled
        ((0, 0, h, w), (20, 26), "linear"),  # down, bilinear
        ((1, 2, 35, 49), (12, 16), "area"),  # down more than 2x: the area filter
        ((2, 4, 20, 20), (20, 20), "linear"),  # the box at the output size: copied
    ]:
        for order in (slice(None), slice(None, None, -1)):
            got = np.empty((t, 3, *size_out), np.uint8)
            want = np.empty_like(got)
            _yuv.decode_box(views[order], (h, w), box, got, filter)
            _yuv.decode_box([bytes(c) for c in chunks][order], (h, w), box, want, filter)
            np.testing.assert_array_equal(got, want, err_msg=f"{box} {size_out} {filter}")
    bad = mapped.copy()
    at = 3 * (size + gap)
    bad[at : at + 4] = np.frombuffer(b"JUNK", np.uint8)
    views = [bad[j * (size + gap) : j * (size + gap) + size] for j in range(t)]
    with pytest.raises(ValueError, match=r"header b'JUNK"):
        _yuv.decode_box(views, (h, w), (0, 0, h, w), np.empty((t, 3, 8, 8), np.uint8), "linear")


@pytest.mark.parametrize("matrix", ["bt601", "bt709", "bt2020", "smpte240m", "fcc"])
@pytest.mark.parametrize("full", [False, True])
def test_the_conversion_kernel_is_the_matrix_to_a_level(matrix, full):
    """``i420_to_rgb`` (C, 1/4096 fixed point) against the matrix in float64, rounded and
    clipped: within one level everywhere and almost always equal, odd pixel counts (the
    scalar tail) and the clipped extremes included; the OpenCV fallback (an ``out`` the
    kernel cannot write straight into) within two levels of it."""
    from hyperframes._core._kernels import pixels
    from hyperframes.store import _yuv

    if pixels is None:
        pytest.skip("the C kernels are not built here (no compiler): OpenCV converts")
    rng = np.random.default_rng(7)
    t, h, w = 3, 19, 27  # 513 pixels a frame: 64 steps of eight and a tail of one
    planes = rng.integers(0, 256, (3, t, h, w), dtype=np.uint8)
    planes[:, 0, 0, :4] = [[0, 0, 255, 255], [0, 255, 0, 255], [255, 0, 255, 0]]  # extremes
    got = np.empty((t, 3, h, w), np.uint8)
    pixels.i420_to_rgb(*planes, got, t, h * w, _yuv._coefficients(matrix, full))
    ys, rv, bu, gu, gv, cr, cb, cg = _yuv._coefficients(matrix, full)
    y, u, v = (p.astype(np.float64) for p in planes)
    exact = np.stack([ys * y + rv * v + cr, ys * y + gu * u + gv * v + cg, ys * y + bu * u + cb])
    exact = np.clip(np.rint(exact), 0, 255).transpose(1, 0, 2, 3)
    err = np.abs(got - exact)
    assert err.max() <= 1 and err.mean() < 0.03, (err.max(), err.mean())
    strided = np.empty((t, 3, h, w + 1), np.uint8)[..., :w]  # not C-ordered: OpenCV's path
    _yuv._convert(planes, [(matrix, full)] * t, strided)
    assert np.abs(strided.astype(np.int16) - got).max() <= 2


def test_hdf5_holds_the_frames_the_folder_reads(stores, tmp_path):
    real = stores["yuv420"][0]
    h5 = convert_to_hdf5(real, tmp_path / "real.h5", progress=False)
    with open_store(real) as s, open_store(h5) as h:
        for i in range(len(s)):
            idx = np.arange(s.videos.num_frames[i])
            np.testing.assert_array_equal(h.read_numpy(i, idx), s.read_numpy(i, idx))


def test_a_url_store_reads_what_the_folder_reads(stores, s3_url):
    real = stores["yuv420"][0]
    url = f"{s3_url}/store"
    publish_store(real, url)
    boxes = np.array([[3, 5, 41, 51], [0, 0, 128, 128]])
    reqs = [(0, [1, 3, 2, 0]), (2, [0, 1, 2, 3])]
    with open_store(real) as s, open_store(url) as u:
        assert u.codec_name == "yuv420"
        for i, idx in reqs:
            np.testing.assert_array_equal(u.read_numpy(i, idx), s.read_numpy(i, idx))
        want = s.read_batch(reqs, size=(32, 32), boxes=boxes)
        assert (u.read_batch(reqs, size=(32, 32), boxes=boxes) == want).all()
    assert verify_store(url) == []


def test_info_verify_and_a_damaged_chunk(stores, tmp_path, capsys):
    store = Path(shutil.copytree(stores["yuv420"][1], tmp_path / "s"))
    assert main(["info", str(store), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["codec"]["name"] == "yuv420"
    assert verify_store(store) == []
    with open_store(store) as s:
        shard = Path(s._shard_file(0))
        at = int(s._chunks["offset"][0])
    data = bytearray(shard.read_bytes())
    data[at : at + 4] = b"JUNK"
    shard.write_bytes(bytes(data))
    (problem,) = verify_store(store)
    assert problem.startswith(f"{shard}: checksum") and "damaged videos: 0" in problem
    with open_store(store) as s:
        with pytest.raises(StoreError, match=r"a yuv420 chunk has the header b'JUNK"):
            s.read_numpy(0, [0])
        with pytest.raises(StoreError, match=r"a yuv420 chunk has the header b'JUNK"):
            s.read_batch([(0, [0])], size=(8, 8))


def test_a_shape_its_chunks_do_not_hold_is_refused_at_open(stores, tmp_path):
    store = Path(shutil.copytree(stores["yuv420"][1], tmp_path / "s"))
    f = store / "index" / "videos.npy"
    v = np.load(f)
    v["height"][0] -= 2
    np.save(f, v)
    reseal(store)
    with pytest.raises(StoreError, match=r"chunks\.npy: chunk row 0 of video 0 .*exactly"):
        open_store(store)


def test_frames_that_come_as_rgb_are_stored_as_bt601_full_range(stores, tmp_path):
    """A decoder that hands over RGB only (OpenCV): the frames are converted to I420 (BT.601,
    full range) and read back within 2 levels of the raw build."""
    synth = Path(stores["yuv420"][1]).parent / "synth"
    out = tmp_path / "cv"
    build_store(
        synth, out, BuildOptions(codec="yuv420", size="33x45", decoder="opencv"), progress=False
    )
    raw = tmp_path / "cv-raw"
    build_store(
        synth, raw, BuildOptions(codec="raw", size="33x45", decoder="opencv"), progress=False
    )
    with open_store(out) as s:
        assert bytes(s.frame_chunks(0, np.array([0]))[0][:6]) == b"I420\x00\x01"
    for a, b in zip(_all_frames(raw), _all_frames(out)):
        assert np.abs(a.astype(np.int16) - b).mean() < 2.0


# -- convert --codec: into yuv420 and out of it ------------------------------------------


def _mean_diff(a_store, b_store) -> float:
    """Mean absolute difference (uint8 levels) over every frame of two stores."""
    pairs = zip(_all_frames(a_store), _all_frames(b_store))
    diffs = [np.abs(a.astype(np.int16) - b) for a, b in pairs]
    return float(np.concatenate([d.ravel() for d in diffs]).mean())


@pytest.fixture(scope="module")
def converted(stores, tmp_path_factory) -> tuple[Path, Path]:
    """The raw stores (real clips, synthetic clip) converted to yuv420 by the CLI."""
    root = tmp_path_factory.mktemp("converted")
    out = []
    for raw, name in zip(stores["raw"], ("real", "synth")):
        argv = ["convert", str(raw), "--codec", "yuv420", "--out", str(root / name), "--quiet"]
        assert main(argv) == 0
        out.append(root / name)
    return out[0], out[1]


def test_raw_converted_to_yuv420_reads_within_two_levels_of_raw_and_of_a_yuv420_build(
    stores, converted, capsys
):
    """Measured (mean absolute, every frame): the real clips 0.87 levels from raw and 1.58 from
    the yuv420 build (which is 1.81 from raw), the synthetic BT.709 full-range clip 0.87 from
    raw and 0.88 from the build; 0.50x raw's bytes. Each chunk says BT.601 full range, and
    verify passes."""
    for raw, built, conv in zip(stores["raw"], stores["yuv420"], converted):
        assert _mean_diff(raw, conv) < 2.0
        assert _mean_diff(built, conv) < 2.0
        assert _shard_bytes(conv) <= 0.55 * _shard_bytes(raw)
        assert verify_store(conv) == []
        with open_store(conv) as s:
            assert s.codec_name == "yuv420"
            assert s.manifest["converted_from"]["codec"]["name"] == "raw"
            for i in range(len(s)):
                assert bytes(s.frame_chunks(i, np.array([0]))[0][:6]) == b"I420\x00\x01"
    assert main(["info", str(converted[0])]) == 0
    assert "converted from a raw store of " in capsys.readouterr().out


def test_yuv420_converted_to_raw_and_jpeg_reads_what_it_held(stores, converted, tmp_path, capsys):
    """yuv420 -> raw is exact (the reader's own conversion, stored), so raw -> yuv420 -> raw
    lands within 2 levels of the raw it came from; yuv420 -> jpeg within jpeg's loss."""
    back = tmp_path / "back"
    assert main(["convert", str(converted[0]), "--codec", "raw", "--out", str(back)]) == 0
    assert "converted from codec yuv420 to raw" in capsys.readouterr().out
    assert verify_store(back) == []
    for a, b in zip(_all_frames(converted[0]), _all_frames(back)):
        np.testing.assert_array_equal(a, b)
    assert _mean_diff(stores["raw"][0], back) < 2.0
    jpeg = tmp_path / "jpeg"
    assert main(["convert", str(stores["yuv420"][0]), "--codec", "jpeg", "--out", str(jpeg)]) == 0
    assert verify_store(jpeg) == []
    assert _mean_diff(stores["yuv420"][0], jpeg) < 3.0


def test_a_converted_yuv420_store_converts_to_hdf5(converted, tmp_path):
    h5 = tmp_path / "conv.h5"
    argv = ["convert", str(converted[1]), "--format", "hdf5", "--out", str(h5), "--quiet"]
    assert main(argv) == 0
    assert verify_store(h5) == []
    for a, b in zip(_all_frames(converted[1]), _all_frames(h5)):
        np.testing.assert_array_equal(a, b)


def test_a_url_store_converts_to_a_yuv420_folder(stores, converted, s3_url, tmp_path):
    url = f"{s3_url}/raw"
    publish_store(stores["raw"][1], url)
    out = tmp_path / "from-url"
    assert main(["convert", url, "--codec", "yuv420", "--out", str(out), "--quiet"]) == 0
    assert verify_store(out) == []
    for a, b in zip(_all_frames(converted[1]), _all_frames(out)):
        np.testing.assert_array_equal(a, b)


def test_a_stopped_conversion_leaves_nothing_at_out_and_a_rerun_finishes_it(
    stores, converted, tmp_path, capsys
):
    """A damaged last video stops the conversion: nothing at --out, the videos before it kept
    in the staging folder; once the source is repaired the same command converts only the
    rest (the first run's shard is in the result)."""
    src = Path(shutil.copytree(stores["raw"][0], tmp_path / "src"))
    out = tmp_path / "out"
    with open_store(src) as s:
        last = len(s) - 1
        shard, at = Path(s._shard_file(int(s.index.videos["shard"][last]))), None
        at = int(s.index.videos["offset"][last]) + 100
    good = shard.read_bytes()
    shard.write_bytes(good[:at] + bytes([good[at] ^ 0xFF]) + good[at + 1 :])
    argv = ["convert", str(src), "--codec", "yuv420", "--out", str(out), "--quiet"]
    assert main(argv) != 0
    assert "cannot convert" in capsys.readouterr().err
    assert not out.exists()
    staging = tmp_path / ".out.converting"
    first = sorted(p.name for p in (staging / "shards").glob("*.part"))
    assert first
    shard.write_bytes(good)
    assert main(argv) == 0
    assert not staging.exists()
    with open_store(out) as s:
        assert f"{first[0].split('.')[0]}.bin" in s.shard_names
        assert len(s.shard_names) == 2
    assert verify_store(out) == []
    for a, b in zip(_all_frames(converted[0]), _all_frames(out)):
        np.testing.assert_array_equal(a, b)
    assert main(argv) != 0  # a folder at --out is never touched
    assert "exists already" in capsys.readouterr().err
    argv = ["convert", str(src), "--codec", "yuv420", "--format", "hdf5", "--out", "x.h5"]
    assert main(argv) != 0
    assert "takes no --codec" in capsys.readouterr().err


def test_a_store_with_flow_converts_with_its_tracks(stores, tmp_path):
    """The flow and homographies are copied after each video's frames, as they were."""
    synth = Path(stores["yuv420"][1]).parent / "synth"
    src = tmp_path / "flow"
    build_store(synth, src, BuildOptions(size="33x45", flow="dis"), progress=False)
    out = convert_codec(src, tmp_path / "flow-yuv", "yuv420", progress=False)
    assert verify_store(out) == []
    with open_store(src) as a, open_store(out) as b:
        assert b.has_flow and b.codec_name == "yuv420"
        pairs = np.arange(a.videos.num_frames[0] - 1)
        np.testing.assert_array_equal(b.read_flow(0, pairs), a.read_flow(0, pairs))
        np.testing.assert_array_equal(b.homographies(0), a.homographies(0))
