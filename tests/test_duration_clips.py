"""The ``duration`` sampler's ``clips`` (evenly spread windows, as ``uniform`` spreads them) and
frame-snapped starts (equal steps when the rates divide), and eval's use of them on a store at
another rate than the model: one pass of ``clips`` windows, not one random pass per clip."""

from __future__ import annotations

import json

import numpy as np
import pytest
import yaml

from hyperframes.build import BuildOptions, build_store
from hyperframes.cli import main
from hyperframes.demo import make_motion_dataset
from hyperframes.sampling import VideoMeta, VideoTable, create_sampler
from hyperframes.store import open_store

CLASSES = ("left", "right", "up")


def _cfr(num_frames: int, fps: float = 30.0) -> VideoMeta:
    return VideoMeta(num_frames, fps, pts_seconds=np.arange(num_frames) / fps)


# -- clips -------------------------------------------------------------------------------------
@pytest.mark.parametrize("pts", [True, False], ids=["pts", "fps-grid"])
def test_clips_are_evenly_spread_from_the_first_frame_to_the_last_window(pts):
    s = create_sampler("duration", frames=4, rate=7.5, clips=3, train=False)
    video = _cfr(90) if pts else VideoMeta(90, 30.0)  # frames 0..89, a window spans 12
    videos = [video, video]
    assert s.num_items(videos) == 6
    plans = s.plans(videos, range(6))
    assert [p.clip for p in plans] == [0, 1, 2] * 2
    assert [p.video for p in plans] == [0, 0, 0, 1, 1, 1]
    starts = [int(p.frame_indices[0]) for p in plans[:3]]
    assert starts[0] == 0 and starts[2] == 77  # the last window ends on the last frame, 89
    assert starts[1] in (38, 39)  # halfway: 38.5 frames, snapped to a frame
    for p in plans:
        assert np.diff(p.frame_indices).tolist() == [4, 4, 4] and p.mask.all()


def test_clips_do_not_depend_on_seed_or_epoch_unless_training():
    videos = [_cfr(90), _cfr(61)]
    s = create_sampler("duration", frames=4, rate=7.5, clips=4, train=False)
    assert s.plans(videos, range(8)) == s.plans(videos, range(8), seed=5, epoch=3)
    assert not s.random
    t = create_sampler("duration", frames=4, rate=7.5, clips=4, train=True)
    assert t.num_items(videos) == 8 and t.random
    assert t.plans(videos, range(8), seed=1) == t.plans(videos, range(8), seed=1)
    assert [p.clip for p in t.plans(videos, range(8))] == [0, 1, 2, 3] * 2


def test_one_clip_is_the_centred_window():
    s = create_sampler("duration", frames=4, rate=7.5, train=False)
    assert s.clips == 1 and s.params()["clips"] == 1
    (p,) = s.plans([_cfr(61)], [0])  # room 48 frames: starts at frame 24
    assert p.frame_indices.tolist() == [24, 28, 32, 36]


@pytest.mark.parametrize("clips", [0, -1, 1.5, True, "2"])
def test_clips_must_be_a_positive_integer(clips):
    from hyperframes import ConfigError

    with pytest.raises(ConfigError, match=r"duration sampler: clips must be an integer >= 1"):
        create_sampler("duration", frames=4, rate=7.5, clips=clips)


def test_clips_of_a_short_padded_video_repeat_its_one_window():
    s = create_sampler("duration", frames=6, rate=10.0, clips=3, train=False, short="pad")
    plans = s.plans([VideoMeta(3, 5.0)], range(3))
    for p in plans:
        assert p.frame_indices.tolist() == [0, 0, 1, 2, 2, 2]
        assert p.mask.tolist() == [True] * 5 + [False]


# -- starts snapped to frames ------------------------------------------------------------------
@pytest.mark.parametrize("frames", [4, 8, 16])
def test_a_30fps_video_at_7_5_per_second_gives_equal_4_frame_steps(frames):
    """Centred starts halfway between two frames used to give 4, 4, 5 (or 3, 4, 5) steps."""
    s = create_sampler("duration", frames=frames, rate=7.5, train=False, short="drop")
    counts = np.arange(13, 200)
    table = VideoTable.from_arrays(counts, 30.0, pts_seconds=[np.arange(n) / 30.0 for n in counts])
    for item in range(s.num_items(table)):
        p = s.plan(table, item)
        assert set(np.diff(p.frame_indices).tolist()) == {4}, int(counts[p.video])
        assert p.mask.all()


def test_snapped_windows_stay_within_the_video():
    """A start snapped to a later frame would push the window past the last frame: it takes the
    frame before instead, so nothing is padded."""
    s = create_sampler("duration", frames=4, rate=7.0, clips=5, train=False)
    for n in range(14, 80):
        for video in (_cfr(n), VideoMeta(n, 30.0)):
            for p in s.plans([video], range(5)):
                assert p.mask.all() and int(p.frame_indices[-1]) <= n - 1, n


def test_random_training_starts_are_snapped_too():
    s = create_sampler("duration", frames=8, rate=7.5, train=True)
    videos = [_cfr(120)]
    for epoch in range(20):
        p = s.plan(videos, 0, seed=3, epoch=epoch)
        assert set(np.diff(p.frame_indices).tolist()) == {4}


# -- eval on a store at another rate -------------------------------------------------------------
@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("duration_clips")
    make_motion_dataset(tmp / "m15", classes=CLASSES, videos_per_class=3, frames=12, size=32)
    make_motion_dataset(
        tmp / "m30", classes=CLASSES, videos_per_class=3, frames=24, size=32, seed=2, fps=30
    )
    build_store(tmp / "m15", tmp / "store15", BuildOptions(fps=15, size="none"), progress=False)
    build_store(tmp / "m30", tmp / "store30", BuildOptions(size="none"), progress=False)
    return tmp / "store15", tmp / "store30"


@pytest.fixture(scope="module")
def run(stores, tmp_path_factory):
    """A one-epoch run at 15 fps, windows of 4 frames 2 apart (7.5 windows' frames a second)."""
    tmp = tmp_path_factory.mktemp("duration_clips_run")
    config = {
        "data": {
            "store": str(stores[0]),
            "frames": 4,
            "batch_size": 2,
            "sampler_options": {"stride": 2},
            "val_sampler_options": {"clips": 1, "stride": 2},
        },
        "model": {"name": "r2plus1d_tiny", "options": {"base_width": 8}},
        "train": {"epochs": 1, "optimizer": "adamw", "lr": 0.003, "log_every": 1},
    }
    (tmp / "run.yaml").write_text(yaml.safe_dump(config))
    assert main(["train", str(tmp / "run.yaml"), "--out", str(tmp / "run"), "--quiet"]) == 0
    return tmp / "run"


def test_eval_with_clips_on_a_store_at_another_rate_reads_one_pass_of_spread_windows(
    run, stores, monkeypatch, capsys
):
    import hyperframes.train._eval._eval as ev

    made = []
    real = ev.make_dataset

    def recording(cfg, st, ids, **kw):
        ds = real(cfg, st, ids, **kw)
        made.append((kw["sampler"], dict(kw["sampler_options"]), ds))
        return ds

    monkeypatch.setattr(ev, "make_dataset", recording)
    store30 = stores[1]
    args = ["--store", str(store30), "--clips", "2", "--crops", "1", "--split", "all"]
    assert main(["eval", str(run / "best.pt"), *args]) == 0
    assert "trained at 15 fps" in capsys.readouterr().err
    m = json.loads(
        (run / "eval" / "store30" / "all" / "best_2clips_1crops" / "metrics.json").read_text()
    )
    assert m["sampler"] == "duration" and m["clips"] == 2
    assert m["views"] == 9 * 2  # 9 videos x 2 clips x 1 crop
    # one pass (not one seeded random pass per clip) of 2 evenly spread windows per video
    ((sampler, options, ds),) = made
    assert sampler == "duration" and options["clips"] == 2 and options["train"] is False
    assert options["rate"] == pytest.approx(7.5)
    assert len(ds) == 18
    st = open_store(store30)
    for item in range(len(ds)):
        sample = ds[item]
        idx = np.asarray(sample.meta["stored_indices"])
        last = st.videos[int(sample.meta["video_id"])].num_frames - 1
        assert np.diff(idx).tolist() == [4, 4, 4]
        # clip 0 starts on the first frame, clip 1 ends on the last (24 frames: 0 and 11)
        assert idx[0] == 0 if sample.meta["clip"] == 0 else idx[-1] == last


def test_the_eval_rate_note_counts_the_rates_it_leaves_out():
    """Eight other rates: five are listed and the note says how many more there are."""
    from hyperframes.infer import InputContract
    from hyperframes.train._eval._eval import _rate_note

    rates = np.array([15.0, 10, 12, 20, 24, 25, 28, 29.97, 30, 15.0])
    note, resample = _rate_note(
        InputContract(frames=4, layout="temporal", fps=15), rates, "s", False
    )
    assert "8 of the 10 videos in s are at 10, 12, 20, 24, 25 fps and 3 more rates;" in note
    assert resample
