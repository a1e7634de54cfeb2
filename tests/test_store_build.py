"""Build → read round trips on real (PyAV-encoded) videos: content, codecs, sizes, rates."""

from __future__ import annotations

import json

import numpy as np
import pytest

from _media import identify, level, write_video
from hyperframes.build import BuildOptions, build_store, dry_run
from hyperframes.store import open_store


def _build(data, out, **kw):
    return build_store(data, out, BuildOptions(**kw), progress=False)


@pytest.fixture(scope="module")
def raw_store(class_folder, tmp_path_factory):
    out = tmp_path_factory.mktemp("stores") / "raw"
    report = _build(class_folder, out, size="none", codec="raw")
    assert report.exit_code == 0
    return open_store(out)


def test_folder_labels_and_frame_identity(raw_store):
    s = raw_store
    assert s.classes == ["a", "b", "c"]
    assert len(s.videos) == 6
    assert [v.label for v in s.videos] == ["a", "a", "b", "b", "c", "c"]
    assert [v.label_id for v in s.videos] == [0, 0, 1, 1, 2, 2]
    for v in s.videos:
        assert v.num_frames == v.num_frames_decoded == len(v.pts_seconds)
        assert v.shape == (3, 48, 64)
        np.testing.assert_allclose(v.pts_seconds, np.arange(v.num_frames) / 20, atol=1e-6)
        np.testing.assert_array_equal(v.source_frame_indices, np.arange(v.num_frames))
        frames = s.read(v, np.arange(v.num_frames)).numpy()
        assert [identify(f, v.num_frames) for f in frames] == list(range(v.num_frames))


def test_read_arbitrary_indices_and_batch(raw_store):
    s = raw_store
    idx = [5, 1, 1, 7]
    got = s.read(2, idx)
    assert got.shape == (4, 3, 48, 64) and str(got.dtype) == "torch.uint8"
    assert [identify(f, 20) for f in got.numpy()] == idx
    batch = s.read_batch([(0, [0, 2, 4]), (3, [3, 4, 5]), (5, [10, 11, 12])])
    assert tuple(batch.shape) == (3, 3, 3, 48, 64)
    assert [identify(f, 20) for f in batch[2].numpy()] == [10, 11, 12]
    view = s.frames_view(1)
    assert view.shape[0] == s.videos[1].num_frames and not view.flags.writeable


def test_read_windows_is_read_batch_of_columns(raw_store, class_folder, tmp_path):
    """The loader's uniform path: windows as (B,) videos and (B, T) indices, in strided runs,
    reversed and repeated, equal to read_batch's; bad columns are refused by name."""
    from hyperframes import DataError, StoreError

    videos = np.array([3, 0, 5, 3, 1])
    index = np.array([[0, 1, 2, 3], [1, 3, 5, 7], [9, 8, 7, 6], [2, 2, 2, 2], [4, 5, 7, 8]])
    got = raw_store.read_windows(videos, index)
    want = raw_store.read_batch(list(zip(videos, index)))
    assert tuple(got.shape) == (5, 4, 3, 48, 64)
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    assert [identify(f, 20) for f in got[2].numpy()] == [9, 8, 7, 6]
    out = raw_store.read_windows(videos[:2], index[:2], out=got[:2])  # into a given buffer
    assert out.data_ptr() == got.data_ptr()
    n = raw_store.videos[5].num_frames
    with pytest.raises(DataError, match=f"frame index {n} is out of range for video 5"):
        raw_store.read_windows([0, 5], [[0, 1], [0, n]])
    with pytest.raises(DataError, match="video 99 is out of range"):
        raw_store.read_windows([0, 99], [[0, 1], [0, 1]])
    with pytest.raises(DataError, match=r"index must be \(B, T\) for 2 videos"):
        raw_store.read_windows([0, 1], [0, 1])
    # a codec store takes read_batch's way, with the same frames
    _build(class_folder, tmp_path / "lz4", size="none", codec="lz4", chunk_frames=3)
    with open_store(tmp_path / "lz4") as lz4:
        np.testing.assert_array_equal(lz4.read_windows(videos, index).numpy(), want.numpy())
    # check="video" verifies each window's video before its bytes are served
    copy = tmp_path / "damaged"
    _build(class_folder, copy, size="none", codec="raw")
    with open_store(copy) as s:
        shard, offset = int(s._videos["shard"][3]), int(s._videos["offset"][3])
        name = s.shard_names[shard]
    data = bytearray((copy / "shards" / name).read_bytes())
    data[offset + 10] ^= 0xFF
    (copy / "shards" / name).write_bytes(bytes(data))
    with open_store(copy, check="video") as s:
        s.read_windows([0], [[0, 1]])
        with pytest.raises(StoreError, match=r"video 3 .* the shard is damaged"):
            s.read_windows([0, 3], [[0, 1], [0, 1]])


def test_out_of_range_read_names_video(raw_store):
    from hyperframes import DataError

    n = raw_store.videos[0].num_frames
    with pytest.raises(DataError, match=f"frame index {n} is out of range for video 0"):
        raw_store.read(0, [0, n])


@pytest.mark.parametrize("codec", ["lz4", "zstd"])
def test_lossless_codecs_equal_raw(class_folder, tmp_path, raw_store, codec):
    _build(class_folder, tmp_path / codec, size="none", codec=codec, chunk_frames=3)
    s = open_store(tmp_path / codec)
    assert s.codec_name == codec
    for v in range(len(s)):
        n = s.videos[v].num_frames
        idx = np.array([n - 1, 0, 4, 5, 6, 2])
        np.testing.assert_array_equal(s.read_numpy(v, idx), raw_store.read_numpy(v, idx))


def test_jpeg_codec_close_to_raw(class_folder, tmp_path, raw_store):
    _build(class_folder, tmp_path / "j", size="none", codec="jpeg", jpeg_quality=95)
    s = open_store(tmp_path / "j")
    assert s.manifest["codec"] == {
        "name": "jpeg",
        "quality": 95,
        "subsampling": "420",
        "library": "libjpeg-turbo",
    }
    a = s.read_numpy(3, np.arange(10)).astype(np.float32)
    b = raw_store.read_numpy(3, np.arange(10)).astype(np.float32)
    assert np.abs(a - b).mean() < 2.0
    assert [identify(f, 20) for f in a] == list(range(10))


def test_float16_normalised(class_folder, tmp_path, raw_store):
    _build(class_folder, tmp_path / "f", size="none", dtype="float16")
    s = open_store(tmp_path / "f")
    assert s.manifest["normalize"]["mean"] == pytest.approx([0.485, 0.456, 0.406])
    x = s.read(1, [0, 3])
    assert str(x.dtype) == "torch.float16"
    mean = np.array(s.manifest["normalize"]["mean"]).reshape(3, 1, 1)
    std = np.array(s.manifest["normalize"]["std"]).reshape(3, 1, 1)
    back = (x.float().numpy() * std + mean) * 255
    np.testing.assert_allclose(back, raw_store.read_numpy(1, [0, 3]), atol=1.0)


def test_sizes_short_side_and_exact(class_folder, tmp_path):
    _build(class_folder, tmp_path / "s", size="24")
    s = open_store(tmp_path / "s")
    assert {v.shape for v in s.videos} == {(3, 24, 32)}
    assert s.manifest["decoder"]["resize_algorithm"]
    # resized frames still tell which frame they are
    f = s.read_numpy(0, [3])[0]
    assert abs(f[:, :, :12].mean() - level(3)) < 4
    _build(class_folder, tmp_path / "e", size="16x40")
    assert {v.shape for v in open_store(tmp_path / "e").videos} == {(3, 16, 40)}


def test_fps_resampling_keeps_time(class_folder, tmp_path):
    _build(class_folder, tmp_path / "r", size="none", fps=10)
    s = open_store(tmp_path / "r")
    for v in s.videos:
        # 20 fps source of n frames lasts n/20 s: floor(n/20*10) frames at 10 fps
        assert v.num_frames == (v.num_frames_decoded * 10) // 20
        assert v.fps == 10
        np.testing.assert_allclose(np.diff(v.pts_seconds), 0.1, atol=1e-6)
        np.testing.assert_array_equal(v.source_frame_indices, 2 * np.arange(v.num_frames))
        got = [identify(f, 30) for f in s.read_numpy(v, np.arange(v.num_frames))]
        assert got == list(v.source_frame_indices)


def test_variable_and_mixed_frame_rates_share_one_time_base(tmp_path):
    data = tmp_path / "data"
    # variable frame rate: gaps of 0.05 and 0.15 s
    vfr = [0.0, 0.05, 0.2, 0.25, 0.4, 0.45, 0.6, 0.65, 0.8, 0.85]
    write_video(data / "x" / "vfr.mp4", frames=10, pts_seconds=vfr, fps=20)
    write_video(data / "x" / "f25.mp4", frames=25, fps=25)
    write_video(data / "y" / "f10.mp4", frames=10, fps=10)
    _build(data, tmp_path / "s", size="none", fps=10)
    s = open_store(tmp_path / "s")
    by_name = {v.path.rsplit("/", 1)[-1]: v for v in s.videos}
    # stored frames sit on one 10 fps grid; each keeps its source frame's own timestamp, which
    # is the one nearest to its grid time (within half the widest source gap)
    for v, tol in ((by_name["vfr.mp4"], 0.075), (by_name["f25.mp4"], 0.02)):
        grid = v.pts_seconds[0] + np.arange(v.num_frames) / 10
        assert np.all(np.abs(v.pts_seconds - grid) <= tol + 1e-9)
    # nearest decoded frame to t = 0, .1, .2, ...; 0.9 s long (last gap .05) → 9 frames
    assert list(by_name["vfr.mp4"].source_frame_indices) == [0, 1, 2, 3, 4, 5, 6, 7, 8]
    assert by_name["f25.mp4"].num_frames == 10
    assert list(by_name["f10.mp4"].source_frame_indices) == list(range(10))


def test_manifest_and_index_contents(raw_store):
    m = raw_store.manifest
    for key in (
        "format_version",
        "hyperframes_version",
        "git_commit",
        "created",
        "build",
        "decoder",
        "shards",
        "failed",
        "checksum_algorithm",
    ):
        assert key in m
    assert m["decoder"]["name"] == "pyav" and m["decoder"]["version"]
    assert m["build"]["size"] == "none" and m["build"]["codec"] == "raw"
    assert all(len(s["checksum"]) == 32 and s["bytes"] > 0 for s in m["shards"])
    assert m["failed"] == []
    assert m["num_frames"] == sum(v.num_frames for v in raw_store.videos)


def test_workers_give_the_same_content(class_folder, tmp_path, raw_store):
    _build(class_folder, tmp_path / "w2", size="none", workers=2)
    s = open_store(tmp_path / "w2")
    # each shard is named after the one worker that wrote it (a worker that starts late may
    # find the queue already empty: which workers got videos is a matter of timing)
    names = [sh["name"] for sh in s.manifest["shards"]]
    assert len(set(names)) == len(names)
    assert {n.split("-")[1] for n in names} <= {"w000", "w001"}
    assert [v.path for v in s.videos] == [v.path for v in raw_store.videos]
    for v in range(len(s)):
        n = s.videos[v].num_frames
        np.testing.assert_array_equal(
            s.read_numpy(v, np.arange(n)), raw_store.read_numpy(v, np.arange(n))
        )


def test_dry_run_estimates_without_writing(class_folder, tmp_path):
    est = dry_run(class_folder, BuildOptions(size="none"))
    assert est["videos"] == 6
    total = sum(20 + i + c for c in range(3) for i in range(2))
    assert est["estimated_frames"] == total
    assert est["estimated_bytes"] == total * 3 * 48 * 64
    assert not (tmp_path / "nothing").exists()


def test_annotation_list_csv_and_rawframes(class_folder, tmp_path, rawframes_dir):
    lst = class_folder / "train.txt"
    lst.write_text("a/a_0.mp4 1\nb/b_1.mp4 0\n")
    _build(lst, tmp_path / "l", size="none")
    s = open_store(tmp_path / "l")
    assert s.classes == ["0", "1"] and [v.label_id for v in s.videos] == [1, 0]

    csv = class_folder / "all.csv"
    csv.write_text("path,label,split\na/a_0.mp4,walk,train\nc/c_0.mp4,run,val\n")
    _build(csv, tmp_path / "c", size="none")
    s = open_store(tmp_path / "c")
    assert [(v.label, v.split) for v in s.videos] == [("walk", "train"), ("run", "val")]

    _build(rawframes_dir, tmp_path / "rf", size="none", frame_folder_fps=25)
    s = open_store(tmp_path / "rf")
    assert len(s.videos) == 1 and s.videos[0].num_frames == 10
    np.testing.assert_allclose(s.videos[0].pts_seconds, np.arange(10) / 25)
    from PIL import Image

    ref = np.asarray(Image.open(rawframes_dir / "img_00004.jpg").convert("RGB"))
    np.testing.assert_array_equal(s.read_numpy(0, [3])[0].transpose(1, 2, 0), ref)


def test_single_video_file(class_folder, tmp_path):
    _build(class_folder / "b" / "b_0.mp4", tmp_path / "one", size="none")
    s = open_store(tmp_path / "one")
    assert len(s.videos) == 1 and s.videos[0].label is None


def test_info_json_lists_everything(raw_store, capsys):
    from hyperframes.cli import main

    assert main(["info", str(raw_store.path), "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["num_videos"] == 6 and d["failed"] == [] and d["classes"] == ["a", "b", "c"]
    assert main(["info", str(raw_store.path)]) == 0
    text = capsys.readouterr().out
    assert "decoder" in text and "pyav" in text and "failed         0" in text


def test_show_writes_a_window_png(raw_store, tmp_path):
    from PIL import Image

    from hyperframes.cli import main

    out = tmp_path / "w.png"
    assert (
        main(
            [
                "show",
                str(raw_store.path),
                "--video",
                "1",
                "--frames",
                "6",
                "--stride",
                "2",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    with Image.open(out) as img:
        assert img.width > 6 * 64 and img.height > 48
        assert len(np.unique(np.asarray(img.convert("L")))) > 10  # frames drawn, not blank


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"codec": "png"}, "^codec must be one of raw, lz4, zstd, jpeg, yuv420, got 'png'$"),
        ({"size": "big"}, "^size 'big' is not understood"),
        ({"fps": -1.0}, "^fps must be a positive number"),
        ({"codec": "jpeg", "dtype": "float16"}, "^codec jpeg stores uint8 only; use dtype uint8"),
        ({"codec": "yuv420", "dtype": "float16"}, "^codec yuv420 stores uint8 only"),
        ({"workers": 0}, "^workers must be at least 1"),
        ({"chunk_frames": 0}, "^chunk_frames must be at least 1"),
    ],
)
def test_bad_build_options_are_clear(kw, match):
    from hyperframes import ConfigError

    with pytest.raises(ConfigError, match=match):
        BuildOptions(**kw)
