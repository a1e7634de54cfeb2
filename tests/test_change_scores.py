"""Change scores recorded by the build: equal to computing them from the stored frames, carried
into the HDF5 form, used by the keyframes sampler, and recomputed for stores without them."""

from __future__ import annotations

import json

import numpy as np
import pytest

from hyperframes import ConfigError, DataError
from hyperframes.build import BuildOptions, build_store, convert_to_hdf5
from hyperframes.data import HyperframeDataset
from hyperframes.store import change_score, open_store
from hyperframes.store._change import ChangeScorer


@pytest.mark.parametrize("codec", ["raw", "lz4"])
def test_build_records_the_scores_of_the_stored_frames(class_folder, tmp_path, codec):
    out = tmp_path / "store"
    build_store(class_folder, out, BuildOptions(size="none", codec=codec), progress=False)
    store = open_store(out)
    assert any(r["name"] == "index/change_score.npy" for r in store.manifest["index"])
    for v in store.videos:
        got = store.change_scores(v)
        want = change_score(store.read_numpy(v, np.arange(v.num_frames)))
        assert got.dtype == np.float32 and got.shape == (v.num_frames,)
        np.testing.assert_array_equal(got, want)
    h5 = convert_to_hdf5(store, tmp_path / "store.h5", progress=False)
    back = open_store(h5)
    for v in store.videos:
        np.testing.assert_array_equal(back.change_scores(v.id), store.change_scores(v.id))


def test_keyframes_use_recorded_scores_and_recompute_without_them(class_folder, tmp_path):
    out = tmp_path / "store"
    build_store(class_folder, out, BuildOptions(size="none"), progress=False)
    kw = {"sampler": "keyframes", "frames": 4, "seed": 0}
    with_scores = HyperframeDataset(out, **kw)
    plans = [with_scores[i].meta["frame_indices"].tolist() for i in range(len(with_scores))]
    # journals written before scores were recorded: the next build assembles no score file
    for journal in (out / "shards").glob("*.jsonl"):
        rows = [json.loads(line) for line in journal.read_text().splitlines()]
        for r in rows:
            r.pop("change_score", None)  # the last line is the shard summary
        journal.write_text("".join(json.dumps(r) + "\n" for r in rows))
    build_store(class_folder, out, BuildOptions(size="none"), progress=False)
    store = open_store(out)
    assert not (out / "index" / "change_score.npy").exists()
    assert store.change_scores(0) is None
    without = HyperframeDataset(store, **kw)
    assert [without[i].meta["frame_indices"].tolist() for i in range(len(without))] == plans


def test_scorer_one_frame_at_a_time_equals_change_score():
    frames = np.random.default_rng(0).integers(0, 256, (40, 3, 30, 50), dtype=np.uint8)
    scorer = ChangeScorer()
    assert scorer.scores().shape == (0,)
    for f in frames:
        scorer.add(f)
    np.testing.assert_array_equal(scorer.scores(), change_score(frames))
    with pytest.raises(DataError, match=r"\(C, H, W\)"):
        scorer.add(frames)
    with pytest.raises(ConfigError, match="size must be an integer"):
        change_score(frames, size=0)
