"""Samplers are pure planners: no pixels, no torch; plans depend only on (meta, seed, epoch, item)."""

from __future__ import annotations

import ast
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hyperframes import ConfigError, DataError
from hyperframes.sampling import (
    Plan,
    Sampler,
    VideoMeta,
    VideoTable,
    balanced_order,
    create_sampler,
    epoch_order,
    list_samplers,
    partition,
    register_sampler,
)
from hyperframes.sampling._order import class_weights
from hyperframes.store import change_score

ALL = ["duration", "keyframes", "random", "segments", "sliding", "uniform"]
RANDOM = {"random", "segments", "duration"}  # plans depend on seed/epoch (train mode)
FAST = settings(
    max_examples=40,
    deadline=None,
    database=None,  # no .hypothesis folder in the checkout
    suppress_health_check=[HealthCheck.too_slow],
)


def metas(frame_counts, fps=30.0, labels=None, scores=True):
    rng = np.random.default_rng(0)
    out = []
    for i, n in enumerate(frame_counts):
        out.append(
            VideoMeta(
                num_frames=int(n),
                fps=fps,
                label=-1 if labels is None else int(labels[i]),
                change_score=rng.random(int(n)) if scores else None,
            )
        )
    return out


def make(name, frames, short="pad", stride=1, **kw):
    if name in ("sliding", "random", "uniform"):
        kw.setdefault("stride", stride)
    if name == "duration":
        kw.setdefault("rate", 30.0 / stride)
    return create_sampler(name, frames=frames, short=short, **kw)


# -- registry -----------------------------------------------------------------------------------


def test_registry_lists_every_sampler():
    assert set(ALL) <= set(list_samplers())


def test_unknown_sampler_names_the_allowed_ones():
    with pytest.raises(ConfigError, match=r"unknown sampler 'nope'.*random.*sliding"):
        create_sampler("nope", frames=8)


def test_unknown_parameter_lists_allowed_parameters():
    with pytest.raises(ConfigError, match=r"unknown parameter\(s\) strid; allowed.*stride"):
        create_sampler("sliding", frames=8, strid=2)


@pytest.mark.parametrize(
    ("kw", "msg"),
    [
        ({"frames": 0}, "frames must be an integer >= 1"),
        ({"frames": 4, "short": "crop"}, r"unknown short='crop'; allowed: error, drop, pad"),
        ({"frames": 4, "stride": 0}, "stride must be an integer >= 1"),
    ],
)
def test_bad_options_are_config_errors(kw, msg):
    with pytest.raises(ConfigError, match=msg):
        create_sampler("random", **kw)


def test_register_custom_sampler(monkeypatch):
    from hyperframes.sampling import _registry

    monkeypatch.setattr(_registry, "_REGISTRY", _registry._REGISTRY.copy())  # undone after

    @register_sampler("first-frames")
    class FirstFrames(Sampler):
        def _plan(self, table, video, local, is_short, item, seed, epoch):
            return Plan(video, np.arange(self.frames), np.ones(self.frames, bool))

    s = create_sampler("first-frames", frames=3)
    assert s.plan(metas([5]), 0).frame_indices.tolist() == [0, 1, 2]
    assert "first-frames" in list_samplers()


def test_sampling_never_imports_torch():
    import hyperframes.sampling as sampling

    for path in Path(sampling.__file__).parent.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import | ast.ImportFrom):
                names = [a.name for a in node.names] + [getattr(node, "module", None) or ""]
                assert not any(n.split(".")[0] == "torch" for n in names), path.name


# -- properties of every sampler ----------------------------------------------------------------


@FAST
@given(
    name=st.sampled_from(ALL),
    counts=st.lists(st.integers(1, 80), min_size=1, max_size=6),
    frames=st.integers(1, 12),
    stride=st.integers(1, 3),
    seed=st.integers(0, 2**32),
    epoch=st.integers(0, 100),
)
def test_plans_are_valid_and_deterministic(name, counts, frames, stride, seed, epoch):
    videos = metas(counts)
    s = make(name, frames, stride=stride)
    n = s.num_items(videos)
    assert n >= len(counts)
    fresh = make(name, frames, stride=stride)
    for item in range(n):
        p = s.plan(videos, item, seed=seed, epoch=epoch)
        idx, mask = p.frame_indices, p.mask
        assert idx.dtype == np.int64 and mask.dtype == np.bool_
        assert idx.shape == (frames,) and mask.shape == (frames,)
        assert 0 <= p.video < len(counts)
        assert (idx >= 0).all() and (idx < counts[p.video]).all()
        assert (np.diff(idx) >= 0).all()
        # padding only at the end, repeating the last real frame
        k = int(mask.sum())
        assert k >= 1 and mask[:k].all() and not mask[k:].any()
        assert (idx[k:] == idx[k - 1]).all()
        assert p == s.plan(videos, item, seed=seed, epoch=epoch)
        assert p == fresh.plan(VideoTable.from_metas(videos), item, seed=seed, epoch=epoch)


@FAST
@given(
    name=st.sampled_from(ALL),
    counts=st.lists(st.integers(1, 60), min_size=1, max_size=5),
    frames=st.integers(1, 10),
    stride=st.integers(1, 3),
    window_stride=st.integers(1, 5),
    seed=st.integers(0, 2**32),
)
def test_plan_columns_equal_the_plans_item_by_item(
    name, counts, frames, stride, window_stride, seed
):
    """The batch pipeline plans a batch as columns at once (sliding: index arithmetic, the
    others item by item): the same windows and masks as ``plan``, any mix of epochs."""
    videos = VideoTable.from_metas(metas(counts))
    kw = {"window_stride": window_stride} if name == "sliding" else {}
    s = make(name, frames, stride=stride, **kw)
    n = s.num_items(videos)
    items = np.random.default_rng(seed % 1000).integers(0, n, 7)
    epochs = np.arange(7) % 3
    video, idx, mask, clip, segment = s.plan_columns(videos, items, epochs, seed=seed)
    for k, (i, e) in enumerate(zip(items, epochs)):
        p = s.plan(videos, int(i), seed=seed, epoch=int(e))
        assert video[k] == p.video and clip[k] == p.clip and segment[k] == p.segment
        assert np.array_equal(idx[k], p.frame_indices) and np.array_equal(mask[k], p.mask)
    with pytest.raises(DataError, match="out of range"):
        s.plan_columns(videos, np.array([n]), np.array([0]), seed=seed)


@pytest.mark.parametrize("name", sorted(RANDOM))
def test_different_seeds_and_epochs_differ(name):
    videos = metas([300] * 20)
    s = make(name, 8)

    def all_plans(seed, epoch):
        return [s.plan(videos, i, seed=seed, epoch=epoch).frame_indices for i in range(20)]

    base = all_plans(0, 0)
    for other in (all_plans(1, 0), all_plans(0, 1)):
        assert sum(not np.array_equal(a, b) for a, b in zip(base, other)) >= 15


@pytest.mark.parametrize("name", ALL)
def test_resume_mid_epoch_gives_the_same_plans(name):
    videos = metas([40 + 7 * i for i in range(100)])
    full = make(name, 8).plans(videos, range(100), seed=3, epoch=2)
    assert make(name, 8).plans(videos, range(50, 100), seed=3, epoch=2) == full[50:]


@pytest.mark.parametrize("name", ALL)
def test_sampler_pickles_for_workers(name):
    videos = metas([50, 60, 70])
    s = make(name, 8)
    s.num_items(videos)  # fills the cache, which is not pickled
    clone = pickle.loads(pickle.dumps(s))
    assert clone._cache is None
    for item in range(s.num_items(videos)):
        assert clone.plan(videos, item, seed=5, epoch=1) == s.plan(videos, item, seed=5, epoch=1)


def test_item_out_of_range_is_a_data_error():
    with pytest.raises(DataError, match=r"item 3 is out of range.*3 items over 3 videos"):
        make("random", 4).plan(metas([10, 10, 10]), 3)


def test_negative_seed_is_rejected():
    with pytest.raises(ConfigError, match="seed must be an integer >= 0"):
        make("random", 4).plan(metas([10]), 0, seed=-1)


# -- short videos -------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["sliding", "random", "uniform"])
def test_short_error_names_video_frames_and_need(name):
    videos = metas([100, 9, 100])
    s = make(name, 8, short="error", stride=2)
    with pytest.raises(
        DataError, match=r"video 1 has 9 frames but .* needs 15 frames.*stride=2.*short='pad'"
    ):
        s.num_items(videos)


def test_short_drop_removes_videos_from_the_item_space():
    videos = metas([100, 5, 100, 3])
    s = make("random", 8, short="drop")
    assert s.num_items(videos) == 2
    assert [s.plan(videos, i).video for i in range(2)] == [0, 2]
    assert s.item_videos(videos).tolist() == [0, 2]


def test_short_pad_repeats_last_frame_with_mask():
    p = make("sliding", 6, short="pad").plan(metas([4]), 0)
    assert p.frame_indices.tolist() == [0, 1, 2, 3, 3, 3]
    assert p.mask.tolist() == [True] * 4 + [False] * 2


def test_pad_cannot_pad_an_empty_video():
    with pytest.raises(DataError, match="video 1 has 0 frames, so there is nothing to pad"):
        make("random", 4).num_items([VideoMeta(10, 30.0), VideoMeta(0, 30.0)])


# -- each sampler -------------------------------------------------------------------------------


def test_sliding_windows():
    s = create_sampler("sliding", frames=4, stride=2, window_stride=3)
    videos = metas([13, 7])  # span 7: windows at 0, 3, 6 | 0
    assert s.num_items(videos) == 4
    plans = s.plans(videos, range(4))
    assert [p.video for p in plans] == [0, 0, 0, 1]
    assert plans[2].frame_indices.tolist() == [6, 8, 10, 12]
    assert create_sampler("sliding", frames=4, stride=2).window_stride == 8


def test_random_start_and_jitter_stay_in_bounds():
    s = create_sampler("random", frames=8, stride=4, jitter=3)
    videos = metas([40])
    starts = set()
    for epoch in range(30):
        idx = s.plan(videos, 0, seed=1, epoch=epoch).frame_indices
        assert (idx >= 0).all() and (idx < 40).all() and (np.diff(idx) >= 0).all()
        starts.add(int(idx[0]))
    assert len(starts) > 5


def test_segments_train_and_test():
    videos = metas([100])
    test = create_sampler("segments", frames=4, train=False).plan(videos, 0)
    assert test.frame_indices.tolist() == [12, 37, 62, 87]
    for epoch in range(10):
        idx = create_sampler("segments", frames=4).plan(videos, 0, epoch=epoch).frame_indices
        assert ((idx // 25) == np.arange(4)).all()


def test_uniform_clips():
    s = create_sampler("uniform", frames=4, clips=3, stride=2)
    videos = metas([27, 40])
    assert s.num_items(videos) == 6
    plans = s.plans(videos, range(3))
    assert [p.clip for p in plans] == [0, 1, 2]
    assert plans[0].frame_indices[0] == 0 and plans[2].frame_indices[-1] == 26
    assert s.plan(videos, 4).video == 1
    one = create_sampler("uniform", frames=4, clips=1).plan(metas([20]), 0)
    assert one.frame_indices.tolist() == [8, 9, 10, 11]


def test_duration_spans_the_same_time_whatever_the_fps():
    s = create_sampler("duration", frames=8, seconds=2.0, train=False)
    assert s.rate == 4.0
    for fps in (10.0, 25.0, 30.0, 60.0):
        p = s.plan([VideoMeta(int(fps * 10), fps)], 0)
        times = p.frame_indices / fps
        assert np.allclose(np.diff(times), 0.25, atol=1.0001 / fps)
        assert abs((times[-1] - times[0]) - 1.75) <= 1.0 / fps


def test_duration_uses_pts_nearest_frame():
    pts = np.array([0.0, 0.1, 0.5, 0.55, 1.0, 1.6, 2.0])
    s = create_sampler("duration", frames=5, rate=2.0, train=False)  # times 0, .5, 1, 1.5, 2
    p = s.plan([VideoMeta(7, 30.0, pts_seconds=pts)], 0)
    assert p.frame_indices.tolist() == [0, 2, 4, 5, 6]
    assert p.mask.all()


def test_duration_repeats_frames_of_slow_videos_and_pads_short_ones():
    s = create_sampler("duration", frames=6, rate=10.0, train=False, short="pad")
    p = s.plan([VideoMeta(3, 5.0)], 0)  # frames at 0, .2, .4 s; times 0 .. .5
    assert p.frame_indices.tolist() == [0, 0, 1, 2, 2, 2]
    assert p.mask.tolist() == [True] * 5 + [False]
    with pytest.raises(DataError, match=r"video 0 has 3 frames spanning 0.4 s but .* needs 0.5 s"):
        create_sampler("duration", frames=6, rate=10.0).num_items([VideoMeta(3, 5.0)])


def test_duration_options():
    with pytest.raises(ConfigError, match=r"give seconds= .* or rate="):
        create_sampler("duration", frames=8)
    with pytest.raises(ConfigError, match=r"seconds × rate must equal frames"):
        create_sampler("duration", frames=8, seconds=1.0, rate=4.0)


def test_keyframes_picks_changes_spread_apart_then_fills():
    scores = np.full(20, 0.1)  # steady motion
    scores[[0, 5, 6, 14]] = [9.0, 2.0, 1.5, 1.0]  # frame 0's score is ignored (no predecessor)
    videos = [VideoMeta(20, 30.0, change_score=scores)]
    # changes 5 and 14 (6 is within min_gap = 20 // (2 * 4) of 5), then middles of the
    # longest runs without a pick: 9 (of 6..13), then 2 (of 0..4; ties: the earlier run)
    assert create_sampler("keyframes", frames=4).plan(videos, 0).frame_indices.tolist() == [
        2,
        5,
        9,
        14,
    ]
    assert create_sampler("keyframes", frames=2).plan(videos, 0).frame_indices.tolist() == [5, 14]


def test_keyframes_without_scores_says_how_to_get_them():
    with pytest.raises(DataError, match=r"video 1 has none.*change_score\(frames\)"):
        create_sampler("keyframes", frames=2).num_items(
            [VideoMeta(5, 30.0, change_score=np.ones(5)), VideoMeta(5, 30.0)]
        )


# -- change score -------------------------------------------------------------------------------


def test_change_score_finds_the_cut_and_is_chunk_invariant():
    rng = np.random.default_rng(0)
    a = rng.integers(0, 256, (1, 3, 64, 80), dtype=np.uint8)
    b = rng.integers(0, 256, (1, 3, 64, 80), dtype=np.uint8)
    frames = np.concatenate([np.repeat(a, 5, 0), np.repeat(b, 6, 0)])
    frames[7] = np.clip(frames[7].astype(int) + 3, 0, 255)  # a small change
    scores = change_score(frames, size=16)
    assert scores.shape == (11,) and scores.dtype == np.float32
    assert np.argmax(scores[1:]) + 1 == 5
    assert scores[0] == 0  # no predecessor
    assert scores[2] == 0 and 0 < scores[7] < scores[5]
    np.testing.assert_allclose(change_score(frames, size=16, chunk=3), scores, rtol=1e-6)
    assert change_score(frames[:1]).tolist() == [0.0]


def test_change_score_feeds_keyframes():
    frames = np.zeros((10, 1, 8, 8), np.uint8)
    frames[4:] = 200
    frames[8:] = 50
    meta = VideoMeta(10, 30.0, change_score=change_score(frames))
    assert create_sampler("keyframes", frames=3).plan([meta], 0).frame_indices.tolist() == [1, 4, 8]


def test_change_score_wrong_shape():
    with pytest.raises(DataError, match=r"\(F, C, H, W\), got shape \(4, 8, 8\)"):
        change_score(np.zeros((4, 8, 8), np.uint8))


# -- metadata -----------------------------------------------------------------------------------


def test_meta_validation():
    with pytest.raises(DataError, match="pts_seconds has 3 values but the video has 4 frames"):
        VideoMeta(4, 30.0, pts_seconds=np.arange(3.0))
    with pytest.raises(DataError, match="non-decreasing"):
        VideoMeta(3, 30.0, pts_seconds=np.array([0.0, 0.2, 0.1]))
    with pytest.raises(DataError, match="fps must be a finite number > 0"):
        VideoMeta(3, 0.0)
    with pytest.raises(DataError, match="not a VideoMeta"):
        make("random", 2).num_items([{"num_frames": 3}])


def test_table_from_arrays_matches_metas():
    counts, labels = [30, 40, 50], [2, 0, 1]
    table = VideoTable.from_arrays(counts, 25.0, labels=labels)
    s = make("random", 8)
    assert s.plans(table, range(3), seed=4) == s.plans(
        metas(counts, 25.0, labels), range(3), seed=4
    )
    assert s.item_labels(table).tolist() == labels


def test_per_frame_columns_plan_as_per_video_arrays():
    """A PerFrame column (one flat array, each video's start and count, as a store's index
    holds them) gives the plans of one array per video, and checks a video when planned."""
    from hyperframes.sampling import PerFrame

    rng = np.random.default_rng(3)
    counts = np.array([40, 25, 60])
    pts = [np.cumsum(rng.uniform(0.02, 0.05, n)) for n in counts]
    scores = [rng.random(n) for n in counts]
    gap = np.zeros(5)  # the columns need not be back to back: chosen videos of a store
    flat_pts = np.concatenate([pts[0], gap, pts[1], gap, pts[2]])
    flat_scores = np.concatenate([scores[0], gap, scores[1], gap, scores[2]])
    starts = np.array([0, 45, 75])
    column = VideoTable.from_arrays(
        counts,
        30.0,
        pts_seconds=PerFrame(flat_pts, starts, counts),
        change_score=PerFrame(flat_scores, starts, counts),
    )
    lists = VideoTable.from_arrays(counts, 30.0, pts_seconds=pts, change_score=scores)
    for name, kw in (("duration", {}), ("keyframes", {}), ("random", {})):
        s = make(name, 8, **kw)
        n = s.num_items(lists)
        assert s.num_items(column) == n
        assert s.plans(column, range(n), seed=2) == s.plans(lists, range(n), seed=2)
    bad = flat_pts.copy()
    bad[50] = np.nan  # inside video 1
    table = VideoTable.from_arrays(counts, 30.0, pts_seconds=PerFrame(bad, starts, counts))
    s = make("duration", 8, short="drop")
    with pytest.raises(DataError, match="video 1: pts_seconds must be finite"):
        s.plans(table, range(s.num_items(table)))
    with pytest.raises(DataError, match="one value per stored frame"):
        VideoTable.from_arrays(counts + 1, 30.0, pts_seconds=PerFrame(flat_pts, starts, counts))
    with pytest.raises(DataError, match="outside"):
        PerFrame(flat_pts, starts + 100, counts)


def test_planning_300k_videos():
    """Kinetics-size tables plan correctly (their speed is measured in benchmarks/bench_open.py)."""
    rng = np.random.default_rng(0)
    counts = rng.integers(1, 600, 300_000)
    table = VideoTable.from_arrays(counts, 30.0)
    s = make("sliding", 16)
    # back-to-back windows; a video shorter than a window is padded to one
    assert s.num_items(table) == int(np.where(counts >= 16, (counts - 16) // 16 + 1, 1).sum())
    for name in ("sliding", "random"):
        s = make(name, 16)
        n = s.num_items(table)
        for i in rng.integers(0, n, 200):
            p = s.plan(table, int(i), seed=1, epoch=2)
            assert len(p.frame_indices) == 16 and p.frame_indices.min() >= 0
            assert p.frame_indices.max() < counts[p.video]


# -- epoch order, balancing, partition ----------------------------------------------------------


def test_epoch_order():
    a = epoch_order(100, seed=1, epoch=0)
    assert sorted(a.tolist()) == list(range(100)) and a.dtype == np.int64
    assert np.array_equal(a, epoch_order(100, seed=1, epoch=0))
    assert not np.array_equal(a, epoch_order(100, seed=1, epoch=1))
    assert not np.array_equal(a, epoch_order(100, seed=2, epoch=0))
    assert epoch_order(5, shuffle=False).tolist() == [0, 1, 2, 3, 4]


@FAST
@given(n=st.integers(0, 60), world=st.integers(1, 9), drop_last=st.booleans())
def test_partition_round_robin_rebuilds_the_global_order(n, world, drop_last):
    order = epoch_order(n, seed=7, epoch=1)
    shares = [partition(order, r, world, drop_last=drop_last) for r in range(world)]
    assert len({s.shape[0] for s in shares}) == 1
    merged = np.stack(shares, axis=1).reshape(-1)  # one from each rank in turn
    if drop_last:
        assert np.array_equal(merged, order[: n - n % world])
    else:
        assert np.array_equal(merged[:n], order)
        assert merged.shape[0] == n + (-n % world)
        assert np.array_equal(merged, np.resize(order, merged.shape[0]))  # wrapped padding


def test_partition_checks_rank():
    with pytest.raises(ConfigError, match=r"rank must be in 0\.\.1 for world_size=2"):
        partition(np.arange(4), 2, 2)


def test_class_balanced_sampling():
    labels = np.array([0] * 90 + [1] * 9 + [2] * 1)
    w = class_weights(labels)
    assert np.isclose(w.sum(), 1.0) and np.isclose(w[labels == 2].sum(), 1 / 3)
    draw = balanced_order(labels, seed=0, epoch=0, num_samples=30_000)
    freq = np.bincount(labels[draw], minlength=3) / 30_000
    assert np.allclose(freq, 1 / 3, atol=0.02)
    assert np.array_equal(draw, balanced_order(labels, seed=0, epoch=0, num_samples=30_000))
    assert not np.array_equal(draw, balanced_order(labels, seed=0, epoch=1, num_samples=30_000))
    with pytest.raises(DataError, match=r"label >= 0 for every item.*set VideoMeta\.label"):
        class_weights(np.array([0, -1, 1]))


def test_torch_samplers_cover_every_item_and_resume():
    from hyperframes.data._torch_samplers import BalancedSampler, EpochSampler

    ranks = [EpochSampler(10, seed=3, rank=r, world_size=3) for r in range(3)]
    for s in ranks:
        s.set_epoch(2)
    items = [list(s) for s in ranks]
    assert all(len(i) == 4 for i in items)
    assert {i for share in items for i in share} == set(range(10))
    ranks[1].set_epoch(2, start=1)
    assert list(ranks[1]) == items[1][1:] and len(ranks[1]) == 3
    b = BalancedSampler([0, 0, 0, 1], num_samples=8, seed=1)
    assert len(list(b)) == 8


def test_every_sampler_is_registered_by_importing_the_package():
    # in a fresh process: a sampler whose module nothing imports (motion, once) is missing from
    # a user's config although a test that imports that module sees it registered
    code = "from hyperframes.sampling import list_samplers; print(' '.join(list_samplers()))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    names = set(out.stdout.split())
    assert {"motion", "keyframes", "per_segment", "candidates", "scattered"} <= names, names
