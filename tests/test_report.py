"""``hyperframes report``: one self-contained HTML page about a store, opened in a real headless
Chromium (Debian's package; ``make system-deps`` installs it): it renders with no console
message, its screenshot is not blank, and the counts on it are those of ``info --json``."""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from _media import write_video
from hyperframes.cli import main

CHROMIUM = next(
    (p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None
)
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None,
    reason="no chromium binary found (make system-deps installs Debian's chromium)",
)


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> tuple[Path, dict]:
    """A store with two splits, a failed video and a skipped file; its report page (random
    sampler, 4 frames, 2 preview items) and its ``info --json``."""
    root = tmp_path_factory.mktemp("report")
    data = root / "data"
    for split, label, colour in (("train", "cat", (200, 30, 30)), ("train", "dog", (30, 200, 30))):
        write_video(data / split / label / "a.mp4", frames=12, colour=colour)
    write_video(data / "val" / "cat" / "b.mp4", frames=10)
    (data / "val" / "dog").mkdir(parents=True)
    (data / "val" / "dog" / "broken.mp4").write_bytes(b"not a video at all" * 20)
    (data / "val" / "notes.txt").write_text("not a video\n")
    store = root / "store"
    assert main(["build", str(data), "--out", str(store), "--size", "none", "--quiet"]) == 2
    args = ["report", str(store), "--out", str(root / "rep"), "--sampler", "random"]
    assert main([*args, "--frames", "4", "--preview", "2"]) == 0
    return root / "rep" / "report.html", _info(store)


def _info(store: Path) -> dict:
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["info", str(store), "--json"]) == 0
    return json.loads(out.getvalue())


def _chromium(page: Path, tmp: Path, *args: str) -> tuple[str, list[str]]:
    """Chromium's stdout for ``page`` and the console messages it logged."""
    cmd = [CHROMIUM, "--headless", "--disable-gpu", "--no-first-run", f"--user-data-dir={tmp}"]
    if os.geteuid() == 0:
        cmd.append("--no-sandbox")  # Chromium refuses to run as root with its sandbox
    cmd += ["--enable-logging=stderr", "--v=0", *args, page.as_uri()]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=90)
    console = [line for line in done.stderr.splitlines() if ":CONSOLE" in line]
    return done.stdout, console


def test_the_page_is_self_contained(report):
    page, info = report
    text = page.read_text()
    assert not re.search(r"""(src|href)\s*=\s*["'](?!data:)|url\(|@import|https?:""", text)
    images = re.findall(r'<img src="([^"]+)"', text)
    assert len(images) == info["num_videos"] + 2  # a strip per video, one per preview item
    assert all(src.startswith("data:image/png;base64,") for src in images)


@pytest.fixture(scope="module")
def rendered(report, tmp_path_factory) -> tuple[str, list[str], Path]:
    """One Chromium run over the page: its DOM after the script ran, the console messages,
    and a 1000x1400 screenshot."""
    if CHROMIUM is None:
        pytest.skip("no chromium binary found (make system-deps installs Debian's chromium)")
    tmp = tmp_path_factory.mktemp("chromium")
    shot = tmp / "shot.png"
    args = ("--dump-dom", f"--screenshot={shot}", "--window-size=1000,1400")
    dom, console = _chromium(report[0], tmp / "profile", *args)
    return dom, console, shot


def test_the_page_renders_in_chromium_with_no_console_message(rendered):
    _, console, _ = rendered
    assert console == []


@needs_chromium
def test_the_counts_on_the_rendered_page_are_those_of_info(report, rendered):
    _, info = report
    dom = rendered[0]
    assert 'data-ready="yes"' in dom  # the page's script ran to its end
    cells = re.findall(r'data-class="([^"]*)" data-split="([^"]*)">(\d+)<', dom)
    shown = {(html.unescape(c), html.unescape(s)): int(n) for c, s, n in cells}
    counts = info["class_counts"]
    want = {(c, "all"): n for c, n in counts["all"].items()}
    want.update({(c, s): n for s, row in counts["by_split"].items() for c, n in row.items()})
    assert shown == want and want[("cat", "val")] == 1 and want[("dog", "train")] == 1
    assert len(info["failed"]) == 1 and len(info["skipped"]) == 1
    text = html.unescape(dom)
    for row, key in ((info["failed"][0], "error"), (info["skipped"][0], "reason")):
        assert f'<td>{row["path"]}</td><td class="reason">{row[key]}</td>' in text
    assert len(re.findall(r'<tr class="video"', dom)) == info["num_videos"]
    assert len(re.findall(r"<tr class=\"preview\"", dom)) == 2


@needs_chromium
def test_the_screenshot_is_not_blank(rendered):
    from PIL import Image

    shot = rendered[2]
    pixels = np.asarray(Image.open(shot).convert("RGB"), np.float32)
    assert pixels.shape[:2] == (1400, 1000)
    assert pixels.std() > 20  # text, tables and frames, not one colour
    coloured = (pixels.max(axis=2) - pixels.min(axis=2)) > 100
    assert coloured.mean() > 0.005  # the red and green of the thumbnails are drawn


@needs_chromium
def test_a_console_error_would_be_caught(tmp_path):
    """The check above is real: a page whose script fails logs what Chromium reports."""
    page = tmp_path / "broken.html"
    page.write_text("<html><body><script>undefinedFunction();</script></body></html>")
    _, console = _chromium(page, tmp_path / "profile", "--dump-dom")
    assert any("undefinedFunction is not defined" in line for line in console)


def test_the_preview_of_a_config_shows_its_augmented_training_windows(report, tmp_path):
    """With a config, the preview is that config's training dataset: its split, its sampler,
    and its augmentation (the crop the model gets, not the stored frame size)."""
    from _stores import tiny_train_config
    from hyperframes.viz import write_report

    _, info = report
    store = Path(info["store"])
    cfg = tiny_train_config(store)
    cfg["data"]["augmentation"] = {"size": 32, "hflip": 0.5}
    from hyperframes.train import config_dataset

    ds, note = config_dataset(cfg, store)
    out = write_report(store, tmp_path / "r", dataset=ds, dataset_note=note, videos=0, preview=2)
    text = out.read_text()
    rows = re.findall(r"<tr class='preview'>.*?</tr>", text)
    assert len(rows) == 2 and "the training dataset (random sampler, 4 frames" in text
    assert all("4x3x32x32" in row for row in rows)  # T=4 frames, cropped to 32x32
    train = [v["path"] for v in info["videos_shown"] if "/train/" in v["path"]]
    assert len(train) == 2 and all(any(p in row for p in train) for row in rows)


@pytest.fixture(scope="module")
def plain(tmp_path_factory) -> tuple[Path, Path]:
    """A store of class folders (no splits): a 5-frame clip, shorter than an 8-frame window,
    and a wide one (320x48: its strip of 8 thumbnails is 2,574 px wide); its report page
    from the README's ``--sampler keyframes --frames 8`` example."""
    root = tmp_path_factory.mktemp("plain")
    write_video(root / "data" / "cat" / "short.mp4", frames=5)
    write_video(root / "data" / "dog" / "wide.mp4", frames=20, width=320, height=48)
    store = root / "store"
    assert (
        main(["build", str(root / "data"), "--out", str(store), "--size", "none", "--quiet"]) == 0
    )
    args = ["report", str(store), "--out", str(root / "rep"), "--sampler", "keyframes"]
    assert main([*args, "--frames", "8"]) == 0
    return store, root / "rep" / "report.html"


def test_a_store_with_clips_shorter_than_the_window_is_reported_padded(plain):
    """The README's keyframes report works on a store with a 5-frame clip: the preview pads
    (short='pad'), says so above the table and on the padded row."""
    text = html.unescape(plain[1].read_text())
    assert "short='pad' for this preview: a video shorter than the window repeats" in text
    rows = re.findall(r"<tr class='preview'>.*?</tr>", text)
    short = [r for r in rows if "short.mp4" in r]
    assert (
        len(short) == 1 and "padded: the video has 5 frames, the last repeated 3 times" in short[0]
    )
    assert not any("padded" in r for r in rows if "wide.mp4" in r)


def test_rows_of_a_store_without_splits_do_not_say_split(plain, report):
    rows = re.findall(r'<tr class="video".*?</tr>', plain[1].read_text())
    assert len(rows) == 2 and not any("split" in r for r in rows)
    split_rows = re.findall(r'<tr class="video".*?</tr>', report[0].read_text())
    assert any(", split train," in r for r in split_rows)  # a store with splits still says them


def test_the_preview_names_classes_and_spreads_over_the_videos(plain, tmp_path):
    """A sampler giving many items per video (sliding windows: 4 of the short clip, 19 of the
    other) previews items spread over the dataset, so both videos appear, each labelled with
    its class name."""
    from hyperframes.viz import write_report

    opts = {"window_stride": 1}
    out = write_report(plain[0], tmp_path, sampler="sliding", sampler_options=opts, frames=2)
    rows = re.findall(r"<tr class='preview'>.*?</tr>", out.read_text())
    assert len(rows) == 3
    assert any("short.mp4" in r and "label cat;" in r for r in rows)
    assert any("wide.mp4" in r and "label dog;" in r for r in rows)
    assert not any("label 0" in r or "label 1" in r for r in rows)


def test_the_video_table_columns_have_bounded_widths(plain):
    """A wide video's thumbnails (2,574 px) must not push the timeline off a 1,400 px page:
    the style caps the strip at 440 px, the path at 280 and the timeline at 480."""
    text = plain[1].read_text()
    style = re.search(r"<style>(.*?)</style>", text, re.S)[1]
    assert "td.strip img,td.seen img{max-width:440px;height:auto}" in style
    assert "td.path{max-width:280px;" in style
    assert "svg.timeline{width:480px;max-width:100%" in style
    row = re.findall(r'<tr class="video".*?</tr>', text)[1]
    assert "wide.mp4" in row and "<td class='strip'><img" in row and 'class="timeline"' in row


@needs_chromium
def test_the_page_fits_1400_px_with_a_wide_video(plain, tmp_path):
    """Rendered in Chromium at 1,400 px, the page does not scroll sideways (the width a
    script measures after layout)."""
    page = tmp_path / "measured.html"
    probe = "<script>document.body.dataset.measured = document.documentElement.scrollWidth;"
    probe += "</script></body>"
    page.write_text(plain[1].read_text().replace("</body>", probe))
    dom, console = _chromium(page, tmp_path / "profile", "--dump-dom", "--window-size=1400,900")
    assert console == []
    width = int(re.search(r'data-measured="(\d+)"', dom)[1])
    assert width <= 1400
