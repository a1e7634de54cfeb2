"""The flow track (build --flow): OpenCV optical flow between consecutive stored frames and one
homography per pair, computed once, stored quantised beside the frames; checked by verify and
at open, carried into HDF5."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from _media import make_translating_video
from _stores import reseal
from hyperframes import DataError, StoreError
from hyperframes.build import BuildOptions, build_store, convert_to_hdf5
from hyperframes.cli._main import main
from hyperframes.store import open_store, verify_store

DX, DY = 1.5, -0.75  # pixels per frame, subpixel on purpose
FRAMES = 6


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("flow") / "data"
    make_translating_video(root / "move" / "move.mkv", DX, DY, frames=FRAMES, size=64)
    return root


def _build(data, out, **kw) -> Path:
    report = build_store(data, out, BuildOptions(size="none", **kw), progress=False)
    assert report.exit_code == 0 and report.videos == 1
    return out


@pytest.fixture(scope="module")
def dis_store(data, tmp_path_factory) -> Path:
    return _build(data, tmp_path_factory.mktemp("dis") / "store", flow="dis")


def _interior_mean(flow: np.ndarray) -> np.ndarray:
    h, w = flow.shape[-2:]
    b = max(2, h // 8)
    return flow[:, :, b : h - b, b : w - b].mean(axis=(0, 2, 3))


@pytest.mark.parametrize(
    ("method", "dtype"), [("dis", "float16"), ("farneback", "float16"), ("dis", "int8")]
)
def test_stored_flow_measures_the_known_motion(data, tmp_path, method, dtype):
    out = _build(data, tmp_path / "store", flow=method, flow_dtype=dtype)
    with open_store(out) as s:
        assert s.has_flow and s.flow_info() == {"method": method, "size": None, "dtype": dtype}
        assert s.flow_shape(0) == (64, 64)
        flow = s.read_flow(0, np.arange(FRAMES - 1))
        assert flow.shape == (FRAMES - 1, 2, 64, 64) and flow.dtype == np.float32
        dx, dy = _interior_mean(flow)
        assert abs(dx - DX) < 0.25 and abs(dy - DY) < 0.25, (dx, dy)
        for k in range(FRAMES - 1):  # every pair, not just on average
            kx, ky = _interior_mean(flow[k : k + 1])
            assert abs(kx - DX) < 0.25 and abs(ky - DY) < 0.25, (k, kx, ky)
        # H_k maps frame k+1 to frame k: a translation by (-dx, -dy)
        hom = s.homographies(0)
        assert hom.shape == (FRAMES - 1, 3, 3) and hom.dtype == np.float32
        np.testing.assert_allclose(hom[:, 0, 2], -DX, atol=0.25)
        np.testing.assert_allclose(hom[:, 1, 2], -DY, atol=0.25)
        np.testing.assert_allclose(
            hom[:, :2, :2], np.broadcast_to(np.eye(2), (FRAMES - 1, 2, 2)), atol=0.02
        )
        np.testing.assert_allclose(
            hom[:, 2], np.broadcast_to([0, 0, 1], (FRAMES - 1, 3)), atol=1e-3
        )
        stored = np.load(out / "index" / "flow.npy")[0]
        assert stored["dtype"] == {"float16": 0, "int8": 1}[dtype]
        assert stored["nbytes"] == (FRAMES - 1) * 2 * 64 * 64 * (1 if dtype == "int8" else 2)


def test_int8_flow_is_the_float16_flow_within_its_scale(data, dis_store, tmp_path, monkeypatch):
    # copied into the shard two pairs at a time: the blocks of a long video, on a short one
    monkeypatch.setattr("hyperframes.build._track_writer._BLOCK_PAIRS", 2)
    blocked = _build(data, tmp_path / "f16", flow="dis")
    out = _build(data, tmp_path / "store", flow="dis", flow_dtype="int8")
    with open_store(dis_store) as a, open_store(out) as b, open_store(blocked) as c:
        scale = float(np.load(out / "index" / "flow.npy")["scale"][0])
        fa, fb = a.read_flow(0, range(FRAMES - 1)), b.read_flow(0, range(FRAMES - 1))
        np.testing.assert_array_equal(c.read_flow(0, range(FRAMES - 1)), fa)
        assert scale == pytest.approx(np.abs(fa).max() / 127, rel=1e-6)
        assert np.abs(fa - fb).max() <= scale * 0.5 * 1.0001


def test_a_smaller_flow_size_scales_the_flow_not_the_homographies(data, tmp_path):
    out = _build(data, tmp_path / "store", flow="farneback", flow_size="32")
    with open_store(out) as s:
        assert s.flow_shape(0) == (32, 32) and s.flow_info()["size"] == "32"
        dx, dy = _interior_mean(s.read_flow(0, range(FRAMES - 1)))
        assert abs(dx - DX / 2) < 0.25 and abs(dy - DY / 2) < 0.25
        hom = s.homographies(0)  # in stored frame pixels (64 x 64), whatever the flow size
        np.testing.assert_allclose(hom[:, 0, 2], -DX, atol=0.3)
        np.testing.assert_allclose(hom[:, 1, 2], -DY, atol=0.3)


def test_pairs_are_read_by_index_and_checked(dis_store):
    with open_store(dis_store) as s:
        every = s.read_flow(0, np.arange(FRAMES - 1))
        np.testing.assert_array_equal(s.read_flow(0, [3, 1, 3]), every[[3, 1, 3]])
        assert s.read_flow(0, []).shape == (0, 2, 64, 64)
        with pytest.raises(DataError, match=f"flow pair {FRAMES - 1} is out of range"):
            s.read_flow(0, [0, FRAMES - 1])
        assert not s.has_audio and s.audio_info(0) is None


def test_a_store_without_flow(data, tmp_path):
    out = _build(data, tmp_path / "plain")
    with open_store(out) as s:
        assert not s.has_flow and s.flow_info() is None and s.homographies(0) is None
        with pytest.raises(StoreError, match="has no flow: build it with --flow"):
            s.read_flow(0, [0])


def test_the_command_line_builds_flow_and_info_shows_it(data, tmp_path, capsys):
    out = tmp_path / "store"
    argv = ["build", str(data), "--out", str(out), "--size", "48", "--quiet", "--flow", "dis"]
    assert main([*argv, "--flow-size", "24x24", "--flow-dtype", "int8"]) == 0
    with open_store(out) as s:
        assert s.flow_shape(0) == (24, 24) and s.read_flow(0, [0]).shape == (1, 2, 24, 24)
        assert s.manifest["build"]["flow"] == "dis"
    capsys.readouterr()
    assert main(["info", str(out)]) == 0
    text = capsys.readouterr().out
    assert f"flow           dis, int8, size 24x24 (24x24): {FRAMES - 1} frame pairs" in text
    assert "audio          none (built without --audio)" in text
    # resumed with another method: refused like any changed parameter
    assert main([*argv, "--flow-size", "24x24", "--flow-dtype", "float16"]) == 1
    assert "flow_dtype: stored 'int8', asked 'float16'" in capsys.readouterr().err


def _flip(path: Path, at: int) -> None:
    with open(path, "r+b") as f:
        f.seek(at)
        b = f.read(1)
        f.seek(at)
        f.write(bytes([b[0] ^ 0x01]))


@pytest.mark.parametrize("what", ["flow", "homographies"])
def test_verify_names_damaged_flow_and_the_rerun_rebuilds_it(data, dis_store, tmp_path, what):
    out = tmp_path / "store"
    shutil.copytree(dis_store, out)
    with open_store(out) as s:
        shard = out / "shards" / s.shard_names[0]
        good = (s.read_flow(0, range(FRAMES - 1)), s.homographies(0))
    row = np.load(out / "index" / "flow.npy")[0]
    key = "homography_" if what == "homographies" else ""
    _flip(shard, int(row[f"{key}offset"]) + 5)
    problems = verify_store(out)
    name = "homography" if what == "homographies" else "flow"
    assert len(problems) == 1 and f"move.mkv': {name})" in problems[0]
    with open_store(out, check="video") as s, pytest.raises(StoreError, match=f"its {name}"):
        s.read_flow(0, [0]) if name == "flow" else s.homographies(0)
    report = build_store(data, out, BuildOptions(size="none", flow="dis"), progress=False)
    assert report.reused == 0 and report.videos == 1  # the damaged video was decoded again
    assert verify_store(out) == []
    with open_store(out) as s:
        np.testing.assert_allclose(s.read_flow(0, range(FRAMES - 1)), good[0], atol=1e-3)
        np.testing.assert_allclose(s.homographies(0), good[1], atol=1e-3)


def test_hdf5_carries_flow_and_homographies(dis_store, tmp_path):
    h5 = convert_to_hdf5(dis_store, tmp_path / "s.h5", compression="none", progress=False)
    assert verify_store(h5) == []
    with open_store(dis_store) as a, open_store(h5, check="video") as b:
        assert b.has_flow and b.flow_info() == a.flow_info() and b.flow_shape(0) == (64, 64)
        np.testing.assert_array_equal(a.read_flow(0, [0, 4, 2]), b.read_flow(0, [0, 4, 2]))
        np.testing.assert_array_equal(a.homographies(0), b.homographies(0))


def _rewrite(path: Path, table: np.ndarray) -> None:
    size = path.stat().st_size
    np.save(path, table)
    assert path.stat().st_size == size
    reseal(path.parent.parent)  # (the manifest's checksum would refuse it first)


@pytest.mark.parametrize(
    ("column", "value", "message"),
    [
        ("offset", 1 << 40, r"its flow, bytes .* lie outside"),
        ("homography_offset", -8, r"its homographies, bytes .* lie outside"),
        ("offset", 0, r"its flow, bytes .* overlap the frames"),
        ("num_pairs", FRAMES, r"num_pairs 6 should be num_frames - 1 = 5"),
        ("height", 0, r"flow size 0x64 is not allowed"),
        ("dtype", 7, r"dtype code 7"),
    ],
)
def test_a_crafted_flow_table_is_refused_naming_the_file(
    dis_store, tmp_path, column, value, message
):
    out = tmp_path / "store"
    shutil.copytree(dis_store, out)
    f = out / "index" / "flow.npy"
    table = np.load(f)
    table[column][0] = value
    _rewrite(f, table)
    with pytest.raises(StoreError, match=rf"flow\.npy: video 0 \('.*move\.mkv'\): {message}"):
        open_store(out)
