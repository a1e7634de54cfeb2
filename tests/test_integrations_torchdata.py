"""``HyperframeDataset`` in torchdata's real ``StatefulDataLoader``: a state saved mid-epoch
and restored into a new loader gives exactly the remaining samples (frames included), with 0
or 2 worker processes (the same samples either way), or shared by another number of ranks."""

from __future__ import annotations

import pytest
import torch

from hyperframes import ConfigError, HyperframeDataset
from hyperframes.data import collate_hyperframes
from hyperframes.data.transforms import Compose, RandomHorizontalFlip, RandomResizedCrop

pytest.importorskip("torchdata.stateful_dataloader", reason="torchdata is an optional extra")
from torchdata.stateful_dataloader import StatefulDataLoader

from hyperframes.integrations.torchdata import stateful_loader


@pytest.fixture(scope="module")
def dataset(tiny_motion_store):
    crop = Compose([RandomResizedCrop(24), RandomHorizontalFlip(0.5)])
    return HyperframeDataset(
        tiny_motion_store,
        frames=4,
        seed=3,
        transform=crop,
        sampler_options={"stride": 2},
        clips_per_video=3,
    )


def _samples(batches) -> list[tuple]:
    out = []
    for b in batches:
        keys = zip(b.meta["epoch"].tolist(), b.meta["item"].tolist(), b.meta["video_id"].tolist())
        out += [(*k, f.numpy().tobytes()) for k, f in zip(keys, b.frames)]
    return out


@pytest.mark.parametrize("workers", [0, 2])
def test_a_state_saved_mid_epoch_gives_the_remaining_samples(dataset, workers):
    dl = stateful_loader(dataset, batch_size=4, num_workers=workers)
    dl.set_epoch(1)
    full = _samples(dl)
    assert len(full) == 27 and sorted(s[1] for s in full) == list(range(27))
    assert {s[0] for s in full} == {1}
    it = iter(dl)
    head = _samples([next(it) for _ in range(3)])
    state = dl.state_dict()
    del it
    again = stateful_loader(dataset, batch_size=4, num_workers=workers)
    again.load_state_dict(state)  # (torchdata's state is per worker count: the same count)
    assert head + _samples(again) == full
    again.set_epoch(2)  # then the next epoch, whole and reshuffled
    nxt = _samples(again)
    assert sorted(s[1] for s in nxt) == list(range(27)) and nxt[0][:2] != full[0][:2]
    if workers:  # the same samples as read in this process
        alone = stateful_loader(dataset, batch_size=4)
        alone.set_epoch(1)
        assert _samples(alone) == full


def test_a_state_continues_on_another_number_of_ranks(dataset):
    one = stateful_loader(dataset, batch_size=4)
    full = [s[1] for s in _samples(one)]
    it = iter(one)
    head = [s[1] for s in _samples([next(it) for _ in range(2)])]
    state = one.state_dict()
    shares = []
    for rank in (0, 1):
        dl = stateful_loader(dataset, batch_size=2, rank=rank, world_size=2)
        dl.load_state_dict(state)
        shares.append([s[1] for s in _samples(dl)])
    rest = full[len(head) :]  # 19 left: shared by striding, padded by one repeat
    assert [x for pair in zip(*shares) for x in pair] == rest + rest[:1]


def test_a_plain_stateful_dataloader_resumes_too_and_bad_states_are_refused(dataset):
    torch.manual_seed(0)
    dl = StatefulDataLoader(dataset, batch_size=4, shuffle=True, collate_fn=collate_hyperframes)
    it = iter(dl)
    head = _samples([next(it)])
    state = dl.state_dict()
    rest = _samples(it)
    again = StatefulDataLoader(dataset, batch_size=4, shuffle=True, collate_fn=collate_hyperframes)
    again.load_state_dict(state)
    assert _samples(again) == rest and len(head + rest) == 27
    ours = stateful_loader(dataset, batch_size=4)
    state = ours.state_dict()
    other = HyperframeDataset(dataset.store, frames=4, seed=4, sampler_options={"stride": 2})
    bad = stateful_loader(other, batch_size=4)
    bad.load_state_dict(state)
    with pytest.raises(ConfigError, match="StatefulDataLoader sampler state: saved for another"):
        next(iter(bad))


def test_a_state_restored_into_another_worker_count_is_refused_naming_both(dataset):
    one = stateful_loader(dataset, batch_size=4)
    it = iter(one)
    next(it)
    state = one.state_dict()  # saved without worker processes
    two = stateful_loader(dataset, batch_size=4, num_workers=2)
    with pytest.raises(
        ConfigError,
        match=r"saved with num_workers=0 cannot be restored into this loader's num_workers=2 .*"
        r"make the loader with num_workers=0",
    ):
        two.load_state_dict(state)
    again = stateful_loader(dataset, batch_size=4)  # the same count: restored
    again.load_state_dict(state)
    assert len(_samples(again)) == 27 - 4
