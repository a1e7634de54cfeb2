"""Labelled segments of untrimmed videos: stored once per video in the index (optional files,
checked at open, carried by HDF5), planned one item per segment by pts (``per_segment``), and
turned into per-window or per-frame targets by overlap."""

from __future__ import annotations

import json

import numpy as np
import pytest

from _media import write_video
from _stores import reseal
from hyperframes import ConfigError, DataError, StoreError
from hyperframes.build import BuildOptions, build_store, convert_to_hdf5
from hyperframes.data import HyperframeDataset
from hyperframes.sampling import SegmentTable, VideoTable, create_sampler, frame_labels
from hyperframes.sampling._segments import PerSegmentSampler
from hyperframes.store import open_store
from hyperframes.store._signature import SIGNATURE_WIDTH

#: a variable-rate video's frame times: gaps a frame count at 20 fps would misplace
VFR = [0.0, 0.1, 0.15, 0.2, 0.5, 0.55, 0.6, 1.0, 1.05, 1.1, 1.2, 1.5]


@pytest.fixture(scope="module")
def untrimmed(tmp_path_factory):
    """a.mp4 (2 s at 20 fps) and vfr.mp4 (VFR), with segments listed in a CSV."""
    root = tmp_path_factory.mktemp("untrimmed")
    write_video(root / "a.mp4", frames=40, fps=20)
    write_video(root / "vfr.mp4", frames=len(VFR), fps=20, pts_seconds=VFR, colour=(30, 200, 30))
    (root / "ann.csv").write_text(
        "path,label,start,end\n"
        "a.mp4,jump,0.2,0.8\n"
        "a.mp4,run,0.5,1.5\n"
        "a.mp4,sit,1.6,5\n"  # ends after the video: clamped
        "a.mp4,sit,3,4\n"  # starts after it: dropped
        "vfr.mp4,wave,0.12,0.58\n"
        "vfr.mp4,jump,0.9,1.3\n"
    )
    return root


@pytest.fixture(scope="module")
def store(untrimmed, tmp_path_factory):
    out = tmp_path_factory.mktemp("seg") / "store"
    report = build_store(untrimmed / "ann.csv", out, BuildOptions(size="none"), progress=False)
    assert report.videos == 2 and not report.failed
    return out


def test_each_video_is_stored_once_with_its_segments(store, untrimmed):
    s = open_store(store)
    assert len(s) == 2 and s.classes == ["jump", "run", "sit", "wave"]
    ann = s.videos.annotations
    a, vfr = (s.videos.paths.index(str(untrimmed / n)) for n in ("a.mp4", "vfr.mp4"))
    rows = [
        (int(r["video"]), float(r["start_seconds"]), float(r["end_seconds"])) for r in ann.segments
    ]
    assert rows == [(a, 0.2, 0.8), (a, 0.5, 1.5), (a, 1.6, 2.0), (vfr, 0.12, 0.58), (vfr, 0.9, 1.3)]
    names = [[s.classes[i] for i in ann.segment_label_ids(r)] for r in range(len(rows))]
    assert names == [["jump"], ["run"], ["sit"], ["wave"], ["jump"]]
    # a file listed with several labels is a multi-label video
    assert [s.classes[i] for i in ann.video_label_ids(a)] == ["jump", "run", "sit"]
    assert ann.signatures.shape == (2, SIGNATURE_WIDTH) and ann.signatures.dtype == np.uint64
    listed = {r["name"] for r in s.manifest["index"]}
    assert {"index/segments.npy", "index/segment_labels.npy", "index/video_labels.npy"} <= listed


def test_segments_past_the_end_are_clamped_or_dropped_naming_their_row(store, untrimmed):
    notes = open_store(store).manifest["notes"]
    assert [(n["row"], n["note"]) for n in notes] == [
        (
            f"{untrimmed / 'ann.csv'}:4",
            "segment 1.6..5 s ends after the video's end (2 s); clamped to 2 s",
        ),
        (
            f"{untrimmed / 'ann.csv'}:5",
            "segment 3..4 s starts at or after the video's end (2 s); dropped",
        ),
    ]


def test_the_build_command_reports_adjusted_segments(untrimmed, tmp_path, capsys):
    from hyperframes.cli import main

    args = ["build", str(untrimmed / "ann.csv"), "--out", str(tmp_path / "s"), "--quiet"]
    assert main([*args, "--size", "none"]) == 0
    out = capsys.readouterr().out
    assert "segments adjusted: 2" in out and "ann.csv:4): segment 1.6..5 s ends after" in out


def test_hdf5_carries_the_segments(store, tmp_path):
    h5 = open_store(convert_to_hdf5(store, tmp_path / "s.h5", progress=False))
    want, got = open_store(store).videos.annotations, h5.videos.annotations
    for name in ("segments", "segment_labels", "video_labels", "signatures"):
        assert np.array_equal(getattr(got, name), getattr(want, name)), name


def test_a_store_without_segments_reads_as_before(class_folder, tmp_path):
    build_store(class_folder, tmp_path / "s", BuildOptions(size="none"), progress=False)
    s = open_store(tmp_path / "s")
    ann = s.videos.annotations
    assert not ann.has_segments and not len(ann.video_labels) and ann.signatures is not None
    assert not any("segments" in r["name"] for r in s.manifest["index"])
    with pytest.raises(DataError, match=r"per_segment sampler needs labelled segments"):
        HyperframeDataset(s, "per_segment", frames=2)


@pytest.mark.parametrize(
    ("file", "column", "value", "message"),
    [
        ("segments.npy", "video", 9, r"segments\.npy: row 0 names video 9; the store holds 2"),
        ("segments.npy", "end_seconds", 0.2, r"row 0 of video 0 .*0\.2\.\.0\.2 s is not a time"),
        ("segments.npy", "num_labels", 99, r"classes at rows 0\.\.99 .* lie outside the 5 rows"),
        ("segment_labels.npy", None, 7, r"row 0: class id 7 is not one of the store's 4 classes"),
        ("video_labels.npy", "video", -1, r"video_labels\.npy: row 0 names video -1"),
    ],
)
def test_altered_segments_are_refused_at_open(store, tmp_path, file, column, value, message):
    import shutil

    copy = tmp_path / "store"
    shutil.copytree(store, copy)
    path = copy / "index" / file
    arr = np.load(path)
    if column is None:
        arr[0] = value
    else:
        arr[column][0] = value
    np.save(path, arr)  # same size: only the index checks can tell
    reseal(copy)  # (as a crafted store would: its checksum matches)
    with pytest.raises(StoreError, match=message):
        open_store(copy)


# -- planning (pure: no video) ---------------------------------------------------------------
def _table(**kw) -> VideoTable:
    segments = SegmentTable.from_rows(
        [(0, 0.12, 0.58, [2]), (0, 0.9, 1.3, [0]), (2, 0.0, 0.1, [1, 3])]
    )
    return VideoTable.from_arrays(
        [len(VFR), 10, 5],
        20.0,
        pts_seconds=[np.array(VFR), None, None],
        segments=segments,
        **kw,
    )


def test_per_segment_plans_one_item_per_segment_inside_it_by_pts():
    table = _table()
    s = create_sampler("per_segment", frames=2, stride=2, train=False, short="pad")
    assert isinstance(s, PerSegmentSampler) and s.num_items(table) == 3
    plans = [s.plan(table, i) for i in range(3)]
    # by pts: 0.12..0.58 holds frames 2..5 (0.15, 0.2, 0.5, 0.55); 0.9..1.3 frames 7..10
    assert [(p.video, p.segment, p.frame_indices.tolist()) for p in plans] == [
        (0, 0, [2, 4]),
        (0, 1, [7, 9]),
        (2, 2, [0, 0]),  # no pts: frame i at i / 20 s; 0..0.1 s holds frames 0, 1
    ]
    assert plans[2].mask.tolist() == [True, False]  # 2 frames, the window spans 3: padded
    assert s.item_labels(table).tolist() == [2, 0, 1]
    # training draws a new place inside the segment each epoch
    t = create_sampler("per_segment", frames=2, train=True)
    starts = {int(t.plan(table, 0, seed=0, epoch=e).frame_indices[0]) for e in range(20)}
    assert starts == {2, 3, 4}


def test_short_segments_follow_the_short_policy():
    table = _table()
    with pytest.raises(
        DataError, match=r"video 2: segment 0\.\.0\.1 s has 2 stored frames but the per_segment"
    ):
        create_sampler("per_segment", frames=3).num_items(table)
    assert create_sampler("per_segment", frames=3, short="drop").num_items(table) == 2
    empty = VideoTable.from_arrays(
        [len(VFR)],
        20.0,
        pts_seconds=[np.array(VFR)],
        segments=SegmentTable.from_rows([(0, 0.3, 0.45, [0])]),
    )
    with pytest.raises(DataError, match=r"0\.3\.\.0\.45 s has no stored frame, so there is"):
        create_sampler("per_segment", frames=2, short="pad").num_items(empty)


def test_frame_labels_follow_pts_start_included_end_excluded():
    seg = SegmentTable.from_rows([(0, 0.15, 0.55, [1]), (0, 0.5, 1.2, [0, 2])])
    hot = frame_labels(seg, 0, np.array(VFR), 3)
    assert hot.shape == (len(VFR), 3)
    on = {c: np.flatnonzero(hot[:, c]).tolist() for c in range(3)}
    assert on == {0: [4, 5, 6, 7, 8, 9], 1: [2, 3, 4], 2: [4, 5, 6, 7, 8, 9]}


def test_segment_tables_check_themselves():
    with pytest.raises(DataError, match=r"segment 0 runs 0\.5\.\.0\.5 s; expected 0 <= start"):
        SegmentTable.from_rows([(0, 0.5, 0.5, [0])])
    with pytest.raises(DataError, match=r"a segment of video 3, but the table has 1 videos"):
        VideoTable.from_arrays([4], 10.0, segments=SegmentTable.from_rows([(3, 0, 1, [0])]))


# -- the dataset --------------------------------------------------------------------------------
def test_segment_items_carry_their_class_and_frame_targets(store, untrimmed):
    ds = HyperframeDataset(
        store,
        "per_segment",
        frames=2,
        sampler_options={"train": False, "short": "pad"},
        targets="frames",
    )
    s = ds.store
    assert len(ds) == 5
    vfr = s.videos.paths.index(str(untrimmed / "vfr.mp4"))
    wave = next(i for i in range(5) if ds[i].meta["video_id"] == vfr)
    h = ds[wave]
    assert s.classes[h.label] == "wave" and h.meta["segment"] == 3
    assert all(0.12 <= t < 0.58 for t in h.meta["pts_seconds"])  # inside, by pts
    assert h.target.shape == (2, 4) and h.target[:, s.classes.index("wave")].all()
    assert [s.classes[ds[i].label] for i in range(5)] == ["jump", "run", "sit", "wave", "jump"]


def test_windows_are_labelled_by_overlap(store):
    ds = HyperframeDataset(
        store,
        "sliding",
        frames=4,
        sampler_options={"stride": 5, "short": "drop"},
        targets="multi_hot",
    )
    frames = HyperframeDataset(
        store, "sliding", frames=4, sampler_options={"stride": 5, "short": "drop"}, targets="frames"
    )
    classes = ds.store.classes
    got = []
    for i in range(len(ds)):
        h, f = ds[i], frames[i]
        assert h.target.shape == (4,) and f.target.shape == (4, 4)
        assert np.array_equal(h.target.numpy(), f.target.numpy().max(axis=0))
        got.append(sorted(classes[c] for c in np.flatnonzero(h.target.numpy())))
    # a.mp4 (0..0.75 s, 1..1.75 s), then vfr.mp4's one window
    assert got[:2] == [["jump", "run"], ["run", "sit"]]


def test_targets_are_checked(store):
    with pytest.raises(ConfigError, match=r"unknown targets='multihot'; choose None"):
        HyperframeDataset(store, "random", frames=2, targets="multihot")


def test_the_manifest_stays_json(store):
    json.dumps(open_store(store).manifest)


def test_trimmed_classification_from_untrimmed_videos_from_the_command_line(tmp_path, capsys):
    """Each video holds three motion clips back to back, annotated as segments: a run with the
    per_segment sampler learns the segments' classes, and eval reports one row per segment."""
    import yaml

    from hyperframes.cli import main
    from hyperframes.demo._synthetic import make_motion_frames, write_h264

    rng = np.random.default_rng(0)
    rows = ["path,label,split,start,end"]
    for v in range(6):
        labels = rng.permutation(["left", "right", "up"])
        clips = [make_motion_frames(c, frames=12, size=32, rng=rng) for c in labels]
        path = write_h264(tmp_path / f"untrimmed_{v}.mp4", np.concatenate(clips), fps=15)
        split = "val" if v < 2 else "train"
        rows += [f"{path},{c},{split},{k * 0.8:g},{(k + 1) * 0.8:g}" for k, c in enumerate(labels)]
    (tmp_path / "ann.csv").write_text("\n".join(rows) + "\n")
    store = tmp_path / "store"
    build = ["build", str(tmp_path / "ann.csv"), "--out", str(store), "--size", "none"]
    assert main([*build, "--quiet"]) == 0
    assert len(open_store(store)) == 6  # each untrimmed file stored once
    cfg = {
        "data": {
            "store": str(store),
            "frames": 4,
            "batch_size": 2,
            "sampler": "per_segment",
            "val_sampler": "per_segment",
            "val_sampler_options": {"train": False},
        },
        "model": {"name": "r2plus1d_tiny", "options": {"base_width": 4}},
        "train": {"epochs": 1, "optimizer": "adamw"},
    }
    (tmp_path / "cfg.yaml").write_text(yaml.safe_dump(cfg))
    run = tmp_path / "run"
    assert main(["train", str(tmp_path / "cfg.yaml"), "--out", str(run), "--quiet"]) == 0
    capsys.readouterr()
    assert main(["eval", str(run / "best.pt"), "--clips", "1", "--crops", "1"]) == 0
    out = capsys.readouterr().out
    assert "split val: 2 videos" in out and "top-1" in out
    import csv

    with open(next(run.rglob("predictions.csv")), newline="") as f:
        got = list(csv.DictReader(f))
    assert len(got) == 6  # 2 validation videos x 3 segments, one row each
    assert {r["label"] for r in got} == {"left", "right", "up"}
