"""Elastic resume of the loader: a state saved by W ranks mid-epoch is continued by W' ranks in
the same global order (hyperframes.data._loader_state).

The ranks are simulated in this process: one real loader per rank (``rank``/``world_size``),
stepped in lockstep as DDP steps them; the global order is rebuilt from their batches (within a
step, item j of rank r sits at global position ``origin + (c + j) * W + r``)."""

from __future__ import annotations

import pytest

from hyperframes import ConfigError
from hyperframes.build import BuildOptions, build_store
from hyperframes.data import HyperframeDataset, loader
from hyperframes.sampling import balanced_order, epoch_order

SEED, EPOCH = 5, 3


class Items:
    """A dataset whose samples are their own keys ``(epoch, item)``: the loader under test is
    real, the reading is not needed to check which items it asks for."""

    def __init__(self, n: int, labels=None) -> None:
        self.n, self.seed, self.epoch = n, SEED, 0
        self.labels = labels

    def __len__(self) -> int:
        return self.n

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __getitems__(self, keys):
        return list(keys)


def _loaders(ds, world: int, batch: int, **kw) -> list:
    return [
        loader(ds, batch, workers=0, rank=r, world_size=world, seed=SEED, collate_fn=list, **kw)
        for r in range(world)
    ]


def _interleave(batches: list) -> list:
    out = []
    for j in range(max(len(b) for b in batches)):
        out += [b[j] for b in batches if j < len(b)]
    return out


def _run(loaders, *, state=None, steps=None) -> tuple[list, dict]:
    """Step ``loaders`` (one per rank) in lockstep from ``state`` (None: a fresh epoch EPOCH)
    for ``steps`` steps (None: to the end); (the global order they read, rank 0's state)."""
    for dl in loaders:
        dl.set_epoch(EPOCH) if state is None else dl.load_state_dict(state)
    its = [iter(dl) for dl in loaders]
    seen: list = []
    step = 0
    while steps is None or step < steps:
        batches = [next(it, None) for it in its]
        if all(b is None for b in batches):
            break
        assert all(b is not None for b in batches), "ranks out of lockstep"
        seen += _interleave(batches)
        step += 1
    states = [dl.state_dict() for dl in loaders]
    assert all(s == states[0] for s in states)  # every rank says the same global position
    return [item for _, item in seen], states[0]


@pytest.mark.parametrize("balanced", [False, True], ids=["shuffled", "balanced"])
@pytest.mark.parametrize("resumed_with", [1, 3, 2])
def test_two_ranks_stopped_mid_epoch_continue_the_global_order_on_any_world_size(
    balanced, resumed_with
):
    n, batch, k = 23, 3, 2
    labels = [i % 3 for i in range(n)] if balanced else None
    ds = Items(n, labels)
    full = balanced_order(labels, SEED, EPOCH) if balanced else epoch_order(n, SEED, EPOCH)
    full = full.tolist()
    straight, end = _run(_loaders(ds, 1, batch, balanced=balanced))
    assert straight == full and end["samples_yielded"] == n  # one rank reads the global order

    before, state = _run(_loaders(ds, 2, batch, balanced=balanced), steps=k)
    assert before == full[: 2 * k * batch]
    assert state["epoch"] == EPOCH and state["samples_yielded"] == 2 * k * batch
    assert state["world_size"] == 2 and state["epoch_length"] == n
    assert all(isinstance(v, int | str) for v in state.values())

    after, end = _run(_loaders(ds, resumed_with, batch, balanced=balanced), state=state)
    assert end["samples_yielded"] == n and end["world_size"] == resumed_with
    rest = full[2 * k * batch :]
    if resumed_with == 2:  # the same ranks: exactly the uninterrupted 2-rank epoch
        two, _ = _run(_loaders(ds, 2, batch, balanced=balanced))
        assert before + after == two
    else:  # the rest of the order, then padding repeated from the rest's start
        pad = -len(rest) % resumed_with
        assert after == rest + rest[:pad]
    # every position of the epoch once, in the uninterrupted order (padding aside)
    assert (before + after)[:n] == full


def test_a_resumed_run_can_be_resized_again_and_states_are_checked():
    n, batch = 40, 2
    ds = Items(n)
    full = epoch_order(n, SEED, EPOCH).tolist()
    a, s1 = _run(_loaders(ds, 2, batch), steps=3)  # positions [0, 12)
    b, s2 = _run(_loaders(ds, 3, batch), state=s1, steps=2)  # [12, 24)
    assert s2["origin"] == 12 and s2["samples_yielded"] == 24 and s2["world_size"] == 3
    c, s3 = _run(_loaders(ds, 3, batch), state=s2, steps=1)  # the same 3 ranks: same sharing
    assert s3["origin"] == 12 and s3["samples_yielded"] == 30
    d, s4 = _run(_loaders(ds, 1, batch), state=s3)
    assert a + b + c + d == full and s4["samples_yielded"] == n

    # a finished epoch yields nothing until set_epoch moves on
    dl = _loaders(ds, 2, batch)[0]
    dl.load_state_dict(s4)
    assert list(dl) == [] and len(dl) == 0
    dl.set_epoch(EPOCH + 1)
    assert len(list(dl)) == n // 2 // batch

    # states of another order, or damaged, are refused with the key named
    other = _loaders(Items(41), 2, batch)[0]
    with pytest.raises(ConfigError, match=r"epoch_length 40 \(this loader: 41\)"):
        other.load_state_dict(s1)
    reseeded = loader(Items(n), batch, workers=0, seed=SEED + 1, collate_fn=list)
    with pytest.raises(ConfigError, match=r"seed 5 \(this loader: 6\)"):
        reseeded.load_state_dict(s1)
    with pytest.raises(ConfigError, match="samples_yielded must be an integer"):
        dl.load_state_dict({**s1, "samples_yielded": -1})
    with pytest.raises(ConfigError, match="origin <= samples_yielded <= epoch_length"):
        dl.load_state_dict({**s1, "samples_yielded": n + 1})
    with pytest.raises(ConfigError, match="format"):
        dl.load_state_dict({"epoch": 1})


def test_the_state_counts_batches_handed_out_not_prefetched(tmp_path, class_folder):
    build_store(class_folder, tmp_path / "s", BuildOptions(size="none"), progress=False)
    ds = HyperframeDataset(tmp_path / "s", sampler="random", frames=4, seed=SEED)
    dl = loader(ds, 2, workers=2, prefetch_factor=4, seed=SEED)  # reads all 3 batches ahead
    dl.set_epoch(1)
    it = iter(dl)
    next(it)
    assert dl.state_dict()["samples_yielded"] == 2
    it.close()


@pytest.fixture(scope="module")
def windows_store(class_folder, tmp_path_factory):
    out = tmp_path_factory.mktemp("elastic") / "store"
    build_store(class_folder, out, BuildOptions(size="none"), progress=False)
    return out


@pytest.mark.parametrize("mode", ["threads", "processes"])
def test_real_loader_resized_mid_epoch_reads_the_same_windows(windows_store, mode):
    """A store's sliding windows (about 38 of them): 2 ranks stop after 2 steps, 3 ranks
    finish the epoch; the (video, frame indices) read equal one uninterrupted rank's, in order."""
    ds = HyperframeDataset(
        windows_store,
        sampler="sliding",
        frames=4,
        seed=SEED,
        sampler_options={"window_stride": 3},
    )
    workers = 2 if mode == "threads" else 1

    def loaders(world):
        return [
            loader(ds, 2, workers=workers, rank=r, world_size=world, seed=SEED, mode=mode)
            for r in range(world)
        ]

    def keys(batch):
        return [(m["video_id"], tuple(m["frame_indices"].tolist())) for m in batch.meta]

    def run(dls, state=None, steps=None):
        for dl in dls:
            dl.set_epoch(EPOCH) if state is None else dl.load_state_dict(state)
        its, seen, step = [iter(dl) for dl in dls], [], 0
        while steps is None or step < steps:
            batches = [next(it, None) for it in its]
            if batches[0] is None:
                break
            seen += _interleave([keys(b) for b in batches])
            step += 1
        for it in its:
            if hasattr(it, "close"):
                it.close()
        return seen, dls[0].state_dict()

    straight, _ = run(loaders(1))
    n = len(ds)
    assert len(straight) == n and len(set(straight)) == n  # every window once
    before, state = run(loaders(2), steps=2)
    assert state["samples_yielded"] == 8  # not a multiple of 3: the sharing must change
    after, end = run(loaders(3), state=state)
    assert end["samples_yielded"] == n
    assert (before + after)[:n] == straight
    assert set(before + after) == set(straight) and len(before + after) - n < 3
