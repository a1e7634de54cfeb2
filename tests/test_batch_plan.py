"""A batch's byte ranges (what a store at a URL fetches for ``read_batch``) are planned for the
whole batch in one numpy step over the index, never window by window (issue 34 item 7)."""

from __future__ import annotations

import numpy as np
import pytest

from hyperframes.build import BuildOptions, build_store
from hyperframes.store import open_store


@pytest.fixture(scope="module")
def stores(class_folder, tmp_path_factory):
    root = tmp_path_factory.mktemp("plan")
    out = {}
    for codec in ("raw", "lz4"):
        opts = BuildOptions(codec=codec, size="32", shard_bytes=1_000)
        out[codec] = build_store(class_folder, root / codec, opts, progress=False).store
    return out


def _windows(store, n: int, seed: int) -> list[tuple[int, np.ndarray]]:
    rng = np.random.default_rng(seed)
    out = []
    for j in range(n):
        v = int(rng.integers(len(store)))
        f = store.videos[v].num_frames
        if j % 4 == 3:  # strided and unordered frames, some repeated
            ix = rng.integers(f, size=6)
        else:
            t = min(8, f)
            s = int(rng.integers(f - t + 1))
            ix = np.arange(s, s + t)
        out.append((v, np.asarray(ix, np.int64)))
    return out


def _covered(plan) -> dict[int, set[int]]:
    """The bytes of each shard a plan reads."""
    got: dict[int, set[int]] = {}
    for k, offs, nbs in plan:
        have = got.setdefault(int(k), set())
        for o, n in zip(np.asarray(offs).tolist(), np.asarray(nbs).tolist()):
            have.update(range(o, o + n))
    return got


@pytest.mark.parametrize("codec", ["raw", "lz4"])
def test_batch_plan_is_one_step_and_reads_what_each_window_needs(stores, codec, monkeypatch):
    store = open_store(stores[codec])
    assert len({store._geom(v)[0] for v in range(len(store))}) > 1  # several shards
    reqs = _windows(store, 32, seed=3)
    per_window = [(store._geom(v)[0], *store._ranges(store._geom(v), ix)) for v, ix in reqs]
    calls = {"ranges": 0, "geom": 0}
    ranges, geom = store._ranges, store._geom

    def counted(name, fn):
        def call(*a, **k):
            calls[name] += 1
            return fn(*a, **k)

        return call

    monkeypatch.setattr(store, "_ranges", counted("ranges", ranges))
    monkeypatch.setattr(store, "_geom", counted("geom", geom))
    plan = store._batch_plan(reqs)
    assert calls == {"ranges": 0, "geom": 0}  # no per-window planning
    assert len(plan) == len({k for k, _, _ in plan})  # one entry per shard
    assert _covered(plan) == _covered(per_window)
    assert store._batch_plan([]) == []
