"""A video that decodes with errors is never stored as if it were fine; giant frames are refused
before anything is allocated."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from _media import write_video
from hyperframes import HyperframeDataset
from hyperframes.build import BuildOptions, build_store
from hyperframes.store import open_store

pytestmark = pytest.mark.slow  # builds of damaged real clips

CLI = [sys.executable, "-m", "hyperframes"]


def flip_bits(src: Path, dst: Path, *, bits: int = 40, seed: int = 0) -> Path:
    """Copy ``src`` with ``bits`` bits flipped inside its mdat payload (headers left intact,
    so the file still opens and decodes)."""
    data = bytearray(src.read_bytes())
    at = data.find(b"mdat")
    assert at > 0, "not an MP4 with an mdat box"
    size = int.from_bytes(data[at - 4 : at], "big")
    start, end = at + 4 + 2048, at - 4 + size
    rng = np.random.default_rng(seed)
    for pos in rng.integers(start, end, size=bits):
        data[int(pos)] ^= 1 << int(rng.integers(0, 8))
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_bytes(bytes(data))
    return dst


@pytest.fixture(scope="module")
def damaged_data(shared_videos, tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("damaged") / "data"
    (root / "clean").mkdir(parents=True)
    shutil.copy(shared_videos / "test.mp4", root / "clean" / "test.mp4")
    flip_bits(shared_videos / "test.mp4", root / "broken" / "test_flipped.mp4")
    return root


def test_damaged_video_is_kept_listed_and_exit_2(damaged_data, tmp_path):
    out = tmp_path / "store"
    r = subprocess.run(
        [*CLI, "build", str(damaged_data), "--out", str(out), "--size", "32", "--quiet"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 2, r.stdout + r.stderr
    assert "damaged (stored, the decoder reported errors): 1" in r.stdout
    assert "test_flipped.mp4" in r.stdout
    info = json.loads(
        subprocess.run(
            [*CLI, "info", str(out), "--json"], capture_output=True, text=True, check=True
        ).stdout
    )
    assert [Path(d["path"]).name for d in info["damaged"]] == ["test_flipped.mp4"]
    assert info["damaged"][0]["decode_errors"] > 0 and info["damaged"][0]["counts"]
    shown = {Path(v["path"]).name: v["decode_errors"] for v in info["videos_shown"]}
    assert shown["test.mp4"] == 0 and shown["test_flipped.mp4"] > 0
    text = subprocess.run([*CLI, "info", str(out)], capture_output=True, text=True).stdout
    assert "DAMAGED" in text

    store = open_store(out)
    assert len(store) == 2
    errors = {Path(v.path).name: v.decode_errors for v in store.videos}
    assert errors["test.mp4"] == 0 and errors["test_flipped.mp4"] > 0
    everything = HyperframeDataset(store, "sliding", frames=8)
    clean_only = HyperframeDataset(store, "sliding", frames=8, exclude_damaged=True)
    kept = [Path(store.videos[int(i)].path).name for i in clean_only.video_ids]
    assert kept == ["test.mp4"]
    assert len(clean_only) < len(everything)


def test_on_damaged_fail_treats_it_as_failed(damaged_data, tmp_path):
    report = build_store(
        damaged_data, tmp_path / "s", BuildOptions(size="32", on_damaged="fail"), progress=False
    )
    assert report.exit_code == 2
    assert report.videos == 1 and report.damaged == []
    assert [Path(f["path"]).name for f in report.failed] == ["test_flipped.mp4"]
    assert "damaged" in report.failed[0]["error"]


def test_giant_frames_are_refused_before_decoding(tmp_path):
    data = tmp_path / "data"
    write_video(data / "a" / "small.mp4", frames=4, width=64, height=48)
    write_video(data / "a" / "wide.mp4", frames=4, width=160, height=96)
    report = build_store(
        data, tmp_path / "s", BuildOptions(size="none", max_pixels=64 * 48), progress=False
    )
    assert report.videos == 1 and report.exit_code == 2
    (failed,) = report.failed
    assert failed["path"].endswith("wide.mp4")
    assert "160x96" in failed["error"] and "decode pixel cap" in failed["error"]
    # the default cap passes 8K frames
    assert BuildOptions().max_pixels >= 7680 * 4320


def test_cli_default_pixel_cap_matches_the_library():
    from hyperframes.build._options import DEFAULT_MAX_PIXELS as LIBRARY
    from hyperframes.cli._main import DEFAULT_MAX_PIXELS

    assert DEFAULT_MAX_PIXELS == LIBRARY


def test_clean_real_clips_are_not_damaged(shared_videos, tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    for name in ("test.mp4", "test.avi", "part_0.mp4", "h265_video.mp4"):
        shutil.copy(shared_videos / name, data / name)
    report = build_store(data, tmp_path / "s", BuildOptions(size="32"), progress=False)
    assert report.damaged == [] and report.failed == [] and report.exit_code == 0
    assert np.all(open_store(tmp_path / "s").videos.decode_errors == 0)
