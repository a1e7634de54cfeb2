"""Every input under a data folder is accounted for: stored, failed, or skipped with a reason."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from _media import write_audio_only, write_video
from hyperframes import InputError
from hyperframes.build import BuildOptions, build_store
from hyperframes.inputs._scan import scan
from hyperframes.store import open_store

CLI = [sys.executable, "-m", "hyperframes"]


def _frames(folder: Path, n: int = 3) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        img = np.full((48, 64, 3), 40 * i, np.uint8)
        Image.fromarray(img).save(folder / f"img_{i + 1:05d}.png")
    return folder


@pytest.fixture
def mixed(tmp_path) -> Path:
    """A data folder holding every kind of input a user's folder tends to hold."""
    data = tmp_path / "data"
    write_video(data / "cat" / "a.mp4", frames=10)
    write_video(data / "cat" / "clip.nut", frames=10, codec="mpeg4")  # no listed extension
    write_audio_only(data / "cat" / "sound.m4a")
    (data / "cat" / "cover.png").write_bytes(
        (_frames(tmp_path / "img", 1) / "img_00001.png").read_bytes()
    )
    (data / "cat" / ".DS_Store").write_bytes(b"\0\1\2")
    os.symlink("..", data / "cat" / "loop")  # a folder link back to its parent
    os.symlink("self", data / "cat" / "self")  # a link to itself
    write_video(data / "dog" / "raw.y4m", frames=10, codec="rawvideo")
    os.symlink("nowhere.mp4", data / "dog" / "broken.mp4")
    os.symlink("../cat/a.mp4", data / "dog" / "alias.mp4")  # the same video reached twice
    outside = write_video(tmp_path / "elsewhere" / "far.mp4", frames=10)
    os.symlink(outside, data / "dog" / "far.mp4")
    write_video(data / "dog" / "deeper" / "c.mp4", frames=10)
    (data / "dog" / "deeper" / "notes.txt").write_text("nested notes\n")
    _frames(data / "dog" / "clip_frames")
    (data / "dog" / "clip_frames" / "labels.txt").write_text("0 1 2\n")
    (data / "notes.txt").write_text("these videos were filmed in 2024\n")
    (data / "README.md").write_text("# Data\n\nTwo classes.\n")
    (data / "junk.bin").write_bytes(np.random.default_rng(0).bytes(50_000))
    (data / ".cache").mkdir()
    (data / ".cache" / "index.db").write_bytes(b"x" * 100)
    return data


EXPECTED = {
    "README.md": "not a media file",
    "notes.txt": "not a media file",
    "junk.bin": "not a media file",
    ".cache": "hidden folder",
    "cat/a.mp4": "video of cat",
    "cat/clip.nut": "video of cat",
    "cat/sound.m4a": "no video stream (audio only)",
    "cat/cover.png": "an image outside a frame folder",
    "cat/.DS_Store": "hidden file",
    "cat/loop": "symlink loop",
    "cat/self": "symlink loop",
    "dog/raw.y4m": "video of dog",
    "dog/broken.mp4": "broken symlink",
    "dog/alias.mp4": "same file as {data}/cat/a.mp4",
    "dog/far.mp4": "video of dog",
    "dog/deeper/c.mp4": "nested below a label folder",
    "dog/deeper/notes.txt": "nested below a label folder",
    "dog/clip_frames": "frames of dog",
    "dog/clip_frames/img_00001.png": "a frame",
    "dog/clip_frames/img_00002.png": "a frame",
    "dog/clip_frames/img_00003.png": "a frame",
    "dog/clip_frames/labels.txt": "not a frame image (in a frame folder)",
}


def _outcomes(data: Path, sources, skipped) -> dict[str, str]:
    """What became of every entry under ``data`` (walked without following links), by relative
    path; an entry no source or row accounts for reads ``UNACCOUNTED``."""
    rows = {r["path"]: r["reason"] for r in skipped}
    assert len(rows) == len(skipped), "a path is skipped twice"
    by_path = {s.path: s for s in sources}
    assert len(by_path) == len(sources), "a source is listed twice"
    out: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(data):
        if any(str(p) in rows for p in [Path(dirpath), *Path(dirpath).parents]):
            continue  # inside a folder skipped as a whole
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            real = os.path.realpath(path)
            if str(path) in rows:
                out[str(path.relative_to(data))] = rows[str(path)]
            elif os.path.realpath(dirpath) in by_path:
                out[str(path.relative_to(data))] = "a frame"
            elif real in by_path:
                s = by_path[real]
                out[str(path.relative_to(data))] = f"{s.kind} of {s.label}"
            elif not (path.is_dir() and not path.is_symlink()):
                out[str(path.relative_to(data))] = "UNACCOUNTED"
    return out


def test_every_file_is_a_source_or_skipped_with_its_reason(mixed):
    sources, skipped = scan(mixed)
    expected = {k: v.format(data=mixed) for k, v in EXPECTED.items()}
    assert _outcomes(mixed, sources, skipped) == expected
    assert [(Path(s.path).name, s.label, s.kind) for s in sources] == [
        ("a.mp4", "cat", "video"),
        ("clip.nut", "cat", "video"),
        ("clip_frames", "dog", "frames"),
        ("far.mp4", "dog", "video"),  # the link is followed: stored from where it points
        ("raw.y4m", "dog", "video"),
    ]
    assert Path(sources[3].path) == (mixed.parent / "elsewhere" / "far.mp4").resolve()
    assert [r["path"] for r in skipped] == sorted(r["path"] for r in skipped)


def test_build_stores_probed_videos_and_lists_the_skipped(mixed, tmp_path):
    out = tmp_path / "store"
    report = build_store(mixed, out, BuildOptions(size="32"), progress=False)
    assert report.failed == [] and report.exit_code == 0  # skipped inputs alone are no failure
    s = open_store(out)
    assert sorted(Path(v.path).name for v in s.videos) == [
        "a.mp4",
        "clip.nut",
        "clip_frames",
        "far.mp4",
        "raw.y4m",
    ]
    nut = next(v for v in s.videos if v.path.endswith("clip.nut"))
    assert nut.num_frames == 10 and nut.label == "cat"
    manifest = json.loads((out / "manifest.json").read_text())
    _, skipped = scan(mixed)
    assert manifest["skipped"] == report.skipped == skipped
    reasons = {Path(r["path"]).name: r["reason"] for r in manifest["skipped"]}
    assert reasons["sound.m4a"] == "no video stream (audio only)"
    assert reasons["loop"] == "symlink loop" and reasons["broken.mp4"] == "broken symlink"
    assert f"skipped (not inputs): {len(skipped)}" in report.summary()


def test_cli_build_of_a_messy_folder_has_no_traceback(mixed, tmp_path):
    r = subprocess.run(
        [*CLI, "build", str(mixed), "--out", str(tmp_path / "s"), "--size", "32", "--quiet"],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    assert "symlink loop" in r.stdout and "5 videos" in r.stdout


@pytest.mark.skipif(shutil.which("ffmpeg") is None, reason="needs the ffmpeg command")
def test_audio_with_cover_art_is_audio_only(tmp_path):
    """A cover picture is a video stream to FFmpeg; it does not make a song a video."""
    data = tmp_path / "data"
    write_video(data / "cls" / "v.mp4", frames=5)
    song = write_audio_only(tmp_path / "song.m4a")
    cover = _frames(tmp_path / "cover", 1) / "img_00001.png"
    out = data / "cls" / "song.m4a"
    inputs = ["-i", str(song), "-i", str(cover), "-map", "0", "-map", "1", "-c", "copy"]
    cmd = ["ffmpeg", "-loglevel", "error", *inputs, "-disposition:v", "attached_pic", str(out)]
    subprocess.run(cmd, check=True)
    sources, skipped = scan(data)
    assert [Path(s.path).name for s in sources] == ["v.mp4"]
    assert skipped == [{"path": str(out), "reason": "no video stream (audio only)"}]


def test_cover_image_beside_videos_keeps_label_folders(tmp_path):
    """A label folder holding one image is not a frame folder: its videos are still found."""
    data = tmp_path / "data"
    for label in ("a", "b"):
        write_video(data / label / f"{label}.mp4", frames=5)
        _frames(data / label, 1)
    sources, skipped = scan(data)
    assert [(Path(s.path).name, s.label, s.kind) for s in sources] == [
        ("a.mp4", "a", "video"),
        ("b.mp4", "b", "video"),
    ]
    assert [r["reason"] for r in skipped] == ["an image outside a frame folder"] * 2


def test_frame_folder_forms_account_for_stray_files(tmp_path):
    single = _frames(tmp_path / "single")
    (single / "Thumbs.db").write_bytes(b"\0" * 64)
    sources, skipped = scan(single)
    assert [(s.kind, s.path) for s in sources] == [("frames", str(single.resolve()))]
    assert skipped == [
        {"path": str(single / "Thumbs.db"), "reason": "not a frame image (in a frame folder)"}
    ]

    rawframes = tmp_path / "rawframes"
    _frames(rawframes / "v1")
    _frames(rawframes / "v2")
    _frames(rawframes / "v2" / "extra", 1)
    (rawframes / "list.txt").write_text("v1 3 0\nv2 3 1\n")
    sources, skipped = scan(rawframes)
    assert [(Path(s.path).name, s.kind) for s in sources] == [("v1", "frames"), ("v2", "frames")]
    assert {Path(r["path"]).name: r["reason"] for r in skipped} == {
        "list.txt": "not a media file",
        "img_00001.png": "nested below a frame folder",
    }


def test_a_folder_with_nothing_to_store_says_what_it_skipped(tmp_path):
    data = tmp_path / "data"
    write_video(data / "clips" / "walk" / "w.mp4", frames=5)  # one level too deep
    write_audio_only(data / "clips" / "talk.m4a")
    with pytest.raises(InputError) as caught:
        scan(data)
    msg = str(caught.value)
    assert msg.startswith(f"{data}: found no videos and no frame folders")
    assert f"1 nested below a label folder (e.g. {data}/clips/walk/w.mp4)" in msg
    assert "1 no video stream (audio only)" in msg


def test_explicit_file_and_list_forms_are_unchanged(tmp_path):
    video = write_video(tmp_path / "d" / "cls" / "v.mp4", frames=5)
    assert scan(video) == ([scan(video)[0][0]], [])
    assert scan(video)[0][0].path == str(video.resolve())
    lst = tmp_path / "d" / "list.txt"
    lst.write_text("cls/v.mp4 0\ncls/missing.mp4 1\n")
    sources, skipped = scan(lst)
    assert [(Path(s.path).name, s.label) for s in sources] == [("v.mp4", "0"), ("missing.mp4", "1")]
    assert skipped == []


def test_scanning_hundreds_of_junk_files_is_fast(tmp_path):
    """Files of unknown extension are probed by content, reading only their first bytes."""
    data = tmp_path / "data"
    write_video(data / "cls" / "v.mp4", frames=5)
    rng = np.random.default_rng(0)
    for i in range(100):
        (data / "cls" / f"blob_{i}.bin").write_bytes(rng.bytes(256 * 1024))
        (data / "cls" / f"note_{i}.txt").write_text("a line of notes\n" * (i + 1))
        (data / "cls" / f"meta_{i}.json").write_text(json.dumps({"i": i}))
    t0 = time.perf_counter()
    sources, skipped = scan(data)
    seconds = time.perf_counter() - t0
    assert len(sources) == 1 and len(skipped) == 300
    reasons = {Path(r["path"]).suffix: set() for r in skipped}
    for r in skipped:
        reasons[Path(r["path"]).suffix].add(r["reason"])
    assert reasons[".txt"] == reasons[".json"] == {"not a media file"}
    # FFmpeg may take a random blob for headerless audio (an MPEG audio frame sync by chance)
    assert reasons[".bin"] <= {"not a media file", "no video stream (audio only)"}
    assert seconds < 3.0, f"scanning 300 junk files took {seconds:.1f} s"
