"""Leakage by content: a perceptual signature per stored video (pHashes of frames at fixed
fractions of its duration, computed at build and kept in the index) finds a re-encoded,
resized copy across labels or splits; unrelated clips are not caught."""

from __future__ import annotations

import dataclasses
import json
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from hyperframes import DataError
from hyperframes.build import BuildOptions, build_store
from hyperframes.cli import main
from hyperframes.demo import make_motion_dataset
from hyperframes.store import open_store
from hyperframes.store._annotations import Annotations
from hyperframes.store._signature import (
    SIMILAR_BITS,
    SignatureBuilder,
    frame_hash,
    grey_thumbnail,
    pairwise_distances,
    signature_frames,
    similar_pairs,
)
from hyperframes.train import run_training
from hyperframes.train._config._leakage import find_leakage
from hyperframes.train._config._similar import video_signatures

CLASSES = ("left", "right", "up")


def write_h264(dst: Path, frames, rate, **options) -> Path:
    """``frames`` (yuv420p VideoFrames, all one size) encoded with H.264 at ``rate`` into
    ``dst``; ``options``: the stream's (``bit_rate`` is set on it, the rest go to x264)."""
    import av

    with av.open(str(dst), "w") as out:
        s = None
        for i, f in enumerate(frames):
            if s is None:
                s = out.add_stream("libx264", rate=rate)
                s.width, s.height, s.pix_fmt = f.width, f.height, "yuv420p"
                if "bit_rate" in options:
                    s.bit_rate = options.pop("bit_rate")
                s.options = {"preset": "ultrafast", **options}
            f.pts, f.time_base = i, Fraction(1) / rate
            for pkt in s.encode(f):
                out.mux(pkt)
        for pkt in s.encode() if s is not None else ():
            out.mux(pkt)
    return dst


def reencode(src: Path, dst: Path, *, size: int, bitrate: int) -> Path:
    """``src`` decoded and encoded again (H.264) at ``size`` x ``size`` and ``bitrate``: other
    bytes, another size, the same clip."""
    import av

    with av.open(str(src)) as inp:
        rate = inp.streams.video[0].average_rate or Fraction(25)
        frames = (
            f.reformat(width=size, height=size, format="yuv420p") for f in inp.decode(video=0)
        )
        return write_h264(dst, frames, rate, bit_rate=bitrate)


@pytest.fixture(scope="module")
def leaky(tmp_path_factory):
    """The motion clips, plus left_000 re-encoded at 48x48 and 60 kb/s filed under ``right``."""
    root = tmp_path_factory.mktemp("leak") / "data"
    make_motion_dataset(root, classes=CLASSES, videos_per_class=3, frames=12, size=32, seed=1)
    reencode(
        root / "left" / "left_000.mp4", root / "right" / "right_copy.mp4", size=48, bitrate=60_000
    )
    store = root.parent / "store"
    build_store(root, store, BuildOptions(size="32"), progress=False)  # the copy: resized back
    return root, store


def test_a_reencoded_copy_is_found_and_unrelated_clips_are_not(leaky):
    root, store = leaky
    s = open_store(store)
    roles = {i: "train" for i in range(len(s))}
    report = find_leakage(s, roles)
    assert not report.cross_label  # other bytes: the byte check cannot see it
    (pair,) = report.similar
    names = {Path(pair["a"]["path"]).name, Path(pair["b"]["path"]).name}
    assert names == {"left_000.mp4", "right_copy.mp4"} and pair["across"] == ["label"]
    assert pair["similarity"] >= 1 - SIMILAR_BITS / 64 and pair["frames_compared"] == 4
    assert report.leaks
    # the distances themselves: the copy a few bits away, every unrelated pair far
    sig = s.videos.annotations.signatures
    d, _ = pairwise_distances(sig, sig)
    a, b = (
        s.videos.paths.index(str(root / p)) for p in ("left/left_000.mp4", "right/right_copy.mp4")
    )
    unrelated = [d[i, j] for i in range(len(s)) for j in range(i + 1, len(s)) if {i, j} != {a, b}]
    print(
        f"\nre-encode: {d[a, b]:.2f} bits; unrelated: min {min(unrelated):.2f}, mean "
        f"{np.mean(unrelated):.2f} of 64"
    )
    assert d[a, b] <= 4 and min(unrelated) > SIMILAR_BITS + 4


def test_the_report_names_both_files_and_the_similarity_across_splits(leaky):
    root, store = leaky
    s = open_store(store)
    a, b = (
        s.videos.paths.index(str(root / p)) for p in ("left/left_000.mp4", "right/right_copy.mp4")
    )
    report = find_leakage(s, {a: "train", b: "val"})
    text = report.describe()
    assert "same content in two splits and two labels (similarity 0.9" in text
    assert f"{root / 'left' / 'left_000.mp4'} (split train, label left) ~ " in text
    assert f"{root / 'right' / 'right_copy.mp4'} (split val, label right)" in text


def test_training_refuses_the_copy_unless_allowed(leaky, tmp_path, capsys):
    import yaml

    _, store = leaky
    cfg = {
        "data": {"store": str(store), "frames": 2, "batch_size": 2},
        "model": {"name": "r2plus1d_tiny", "options": {"base_width": 4}},
        "train": {"epochs": 1, "optimizer": "adamw"},
    }
    with pytest.raises(
        DataError,
        match=r"(?s)1 pair\(s\) of videos show the same content.*left_000\.mp4.*~.*"
        r"right_copy\.mp4",
    ):
        run_training(cfg, tmp_path / "run", progress=False)
    (tmp_path / "cfg.yaml").write_text(yaml.safe_dump(cfg))
    code = main(["train", str(tmp_path / "cfg.yaml"), "--out", str(tmp_path / "cli"), "--quiet"])
    assert code == 1 and "same content in two labels (similarity" in capsys.readouterr().err
    cfg["data"]["allow_leakage"] = True
    run_training(cfg, tmp_path / "allowed", progress=False)
    report = json.loads((tmp_path / "allowed" / "leakage.json").read_text())
    assert len(report["similar"]) == 1 and report["similar"][0]["across"] == ["label"]


def test_a_store_without_signatures_gets_them_from_its_frames(leaky):
    _, store = leaky
    s = open_store(store)
    recorded = np.asarray(s.videos.annotations.signatures)
    s.videos._annotations = Annotations.empty()  # as a store built before signatures
    assert np.array_equal(video_signatures(s, np.arange(len(s))), recorded)
    # a store of the first kind (4 whole-frame hashes a video): read, and hashed again
    older = dataclasses.replace(Annotations.empty(), signatures=recorded[:, :4].copy())
    s.videos._annotations = older
    assert np.array_equal(video_signatures(s, np.arange(len(s))), recorded)


# -- the signature itself (no store) ---------------------------------------------------------
def test_flat_frames_have_no_hash_and_textured_ones_do():
    flat = np.full((3, 40, 50), 17, np.uint8)
    assert frame_hash(grey_thumbnail(flat)) == 0
    rng = np.random.default_rng(0)
    tex = rng.integers(0, 255, (3, 40, 50), dtype=np.uint8)
    h = frame_hash(grey_thumbnail(tex))
    assert h != 0 and bin(h).count("1") == 32  # above the median: half the bits


def test_the_build_and_a_later_read_choose_the_same_frames():
    pts = np.cumsum(np.random.default_rng(1).uniform(0.01, 0.09, 700))  # VFR, ~28 s
    frames = {i: np.full((1, 8, 8), i % 256, np.uint8) for i in range(len(pts))}
    chosen = signature_frames(pts)
    b = SignatureBuilder()
    seen = []
    real = grey_thumbnail

    def spy(frame):
        seen.append(int(frame[0, 0, 0]))
        return real(frame)

    import hyperframes.store._signature as sig_module

    sig_module.grey_thumbnail = spy
    try:
        for i, t in enumerate(pts):
            b.add(frames[i], t)
    finally:
        sig_module.grey_thumbnail = real
    assert len(chosen) == 4 and len(seen) <= 2 * 256 + 4  # thumbnails of candidates only
    assert np.all(np.diff(chosen) > 0)
    span = pts[-1] + (pts[-1] - pts[-2]) - pts[0]
    for k, f in enumerate((0.125, 0.375, 0.625, 0.875)):
        assert abs(pts[chosen[k]] - (pts[0] + f * span)) < span / 64  # near its fraction


def test_similar_pairs_is_all_pairs_compared():
    rng = np.random.default_rng(0)
    sig = rng.integers(1, 2**63, (300, 4), dtype=np.uint64)
    sig[7] = sig[3]
    sig[7, 0] ^= np.uint64(0b1011)  # 3 bits on one frame: 0.75 on average
    sig[11] = sig[9]
    sig[11, 1] = 0  # one frame without a hash: compared over 3
    sig[12, :3] = 0  # one hash only: never compared
    i, j, d, c = similar_pairs(sig, block=1000)  # small blocks: many passes
    assert list(zip(i.tolist(), j.tolist(), d.tolist(), c.tolist())) == [
        (3, 7, 0.75, 4),
        (9, 11, 0.0, 3),
    ]
    i, j, _, _ = similar_pairs(sig, max_bits=28, block=5000)
    full, compared = pairwise_distances(sig, sig)
    ok = np.triu((compared >= 2) & (full <= 28), 1)
    assert set(zip(i.tolist(), j.tolist())) == set(zip(*np.nonzero(ok)))


# -- mirrors and crops of real clips (issue 22) -----------------------------------------------
REAL = ("test.mp4", "test.avi", "part_0.mp4", "nasa_13013.mp4", "av1_video.mkv", "h265_video.mp4")
#: per clip: the crop its copy keeps, (x0, y0, width, height) as fractions (>= 70% of the area)
CROPS = {
    "test.mp4": (0.0, 0.2, 1.0, 0.72),
    "test.avi": (0.1, 0.0, 0.72, 0.98),
    "part_0.mp4": (0.15, 0.05, 0.8, 0.9),
    "nasa_13013.mp4": (0.04, 0.03, 0.87, 0.9),
    "av1_video.mkv": (0.08, 0.14, 0.92, 0.8),
    "h265_video.mp4": (0.18, 0.04, 0.8, 0.9),
}


#: part_0.mp4 is the first 32 frames of test.mp4 (both mmaction2's): one source
SOURCE = {"part_0_mp4": "test_mp4"}


def _source(path) -> str:
    stem = Path(path).stem
    return SOURCE.get(stem, stem)


def transformed(src: Path, dst: Path, *, flip: bool = False, crop=None, frames: int = 32) -> Path:
    """The first ``frames`` frames of ``src`` (its widest video stream), mirrored left to right
    and/or cropped to ``crop`` (fractions x0, y0, w, h), encoded again (H.264) at 25 fps."""
    import av

    def changed(stream):
        for i, frame in enumerate(inp.decode(stream)):
            if i == frames:
                return
            rgb = frame.to_ndarray(format="rgb24")
            h, w = rgb.shape[:2]
            x0, y0, cw, ch = crop or (0.0, 0.0, 1.0, 1.0)
            rgb = rgb[round(y0 * h) : round((y0 + ch) * h), round(x0 * w) : round((x0 + cw) * w)]
            rgb = rgb[:, ::-1] if flip else rgb
            rgb = np.ascontiguousarray(rgb[: rgb.shape[0] // 2 * 2, : rgb.shape[1] // 2 * 2])
            yield av.VideoFrame.from_ndarray(rgb, format="rgb24").reformat(format="yuv420p")

    with av.open(str(src)) as inp:
        stream = max(inp.streams.video, key=lambda s: s.width * s.height)
        return write_h264(dst, changed(stream), 25, crf="23")


@pytest.fixture(scope="module")
def mirrored_and_cropped(shared_videos, tmp_path_factory):
    """The six real clips (their first 32 frames) under ``orig``, and of each a mirrored copy
    under ``flip`` and a cropped one under ``crop`` (labels: the folders), stored at 64."""
    root = tmp_path_factory.mktemp("flipcrop") / "data"
    for name in REAL:
        stem = name.replace(".", "_")
        for label, kw in (("orig", {}), ("flip", {"flip": True}), ("crop", {"crop": CROPS[name]})):
            (root / label).mkdir(parents=True, exist_ok=True)
            transformed(shared_videos / name, root / label / f"{stem}.mp4", **kw)
    store = root.parent / "store"
    build_store(root, store, BuildOptions(size="64"), progress=False)
    return root, open_store(store)


def test_mirrored_and_cropped_copies_of_real_clips_are_found_and_nothing_else(
    mirrored_and_cropped,
):
    root, s = mirrored_and_cropped
    roles = {i: ("val" if "orig" not in p else "train") for i, p in enumerate(s.videos.paths)}
    report = find_leakage(s, roles)
    found = {
        frozenset(
            {Path(p["a"]["path"]).relative_to(root), Path(p["b"]["path"]).relative_to(root)}
        ): p
        for p in report.similar
    }
    expected = set()
    for name in REAL:
        stem = name.replace(".", "_")
        for kind in ("flip", "crop"):
            expected.add(frozenset({Path("orig", f"{stem}.mp4"), Path(kind, f"{stem}.mp4")}))
    caught = expected & set(found)
    missed = sorted(str(sorted(map(str, pair))) for pair in expected - caught)
    assert not missed, f"caught {len(caught)} of {len(expected)}; missed {missed}"
    # a mirror and a crop of the same clip are the same content too; any other pair is not
    same_source = {frozenset(_source(p) for p in pair) for pair in found}
    assert all(len(stems) == 1 for stems in same_source), sorted(map(sorted, same_source))
    for pair in expected:
        p = found[pair]
        kind = next(x.parts[0] for x in pair if x.parts[0] != "orig")
        if kind == "flip":  # a mirror hashes as its original (a mild crop may too)
            assert p["match"] == "whole frames", p
        assert p["across"] == ["split", "label"] and p["distance_bits"] <= SIMILAR_BITS
    print(
        "\nmirrors:",
        sorted(found[pair]["distance_bits"] for pair in expected if "flip" in str(pair)),
        "\ncrops:",
        sorted(found[pair]["distance_bits"] for pair in expected if "crop" in str(pair)),
    )
    assert "one a crop of the other" in report.describe(limit=20)


def test_different_real_clips_stay_far_apart_mirrored_and_cropped(mirrored_and_cropped):
    """No new false positives: every pair of different clips, by whole frames and by the
    crop search, stays beyond the threshold (and the first margin reported)."""
    from hyperframes.train._config._similar import crop_pairs

    _, s = mirrored_and_cropped
    sig = video_signatures(s, np.arange(len(s)))
    stems = [_source(p) for p in s.videos.paths]
    d, _ = pairwise_distances(sig[:, :4], sig[:, :4])
    other = [d[i, j] for i in range(len(s)) for j in range(len(s)) if stems[i] != stems[j]]
    every = crop_pairs(s, np.arange(len(s)), sig, set(), limit=np.inf)  # refined, all kept
    refined = [d for a, b, d, _ in every if stems[a] != stems[b]]
    print(
        f"\ndifferent clips: whole frames min {min(other):.2f}; crop search min "
        f"{min(refined, default=float('inf')):.2f} over {len(refined)} candidates"
    )
    assert min(other) > SIMILAR_BITS + 4
    assert min(refined, default=np.inf) > SIMILAR_BITS + 4


def test_the_motion_demo_set_gets_no_new_similar_pair(tmp_path):
    """The generated demo clips (a textured disc moving over a smooth background): the
    four-class set trains with the leakage check on, so it must find none there."""
    root = tmp_path / "motion"
    make_motion_dataset(root, videos_per_class=4, frames=12, size=32, seed=0)
    build_store(root, tmp_path / "store", BuildOptions(size="none"), progress=False)
    s = open_store(tmp_path / "store")
    report = find_leakage(s, {i: "train" for i in range(len(s))})
    assert report.similar == []


def test_beyond_the_crop_search_limit_the_report_says_crops_were_not_looked_for(
    mirrored_and_cropped, monkeypatch
):
    import hyperframes.train._config._leakage as leakage
    import hyperframes.train._config._similar as similar

    _, s = mirrored_and_cropped
    roles = {i: "train" for i in range(len(s))}
    assert find_leakage(s, roles).crops_checked
    monkeypatch.setattr(similar, "CROP_MAX_VIDEOS", 4)  # a small limit stands for a big store
    monkeypatch.setattr(leakage, "CROP_MAX_VIDEOS", 4)
    report = find_leakage(s, roles)
    assert not report.crops_checked and report.to_dict()["crops_checked"] is False
    assert all(p["match"] == "whole frames" for p in report.similar)
