"""``TrainState`` (hyperframes.train._loop._state): the entries ``last.pt`` holds about where training
stands, written and read back in one place, and how an epoch's end moves them."""

from __future__ import annotations

import pytest

from hyperframes.train._loop._state import TrainState, fresh_tally
from hyperframes.train._tasks._base import create_task

#: the training-state entries of ``last.pt``, in its order (the format: ``_checkpoint``)
ENTRIES = [
    "epoch",
    "batches_done",
    "step",
    "samples",
    "elapsed",
    "totals",
    "best",
    "best_metrics",
    "metrics",
    "history",
    "epoch_state",
    "resumed_at",
]


@pytest.fixture
def task():
    return create_task("classification", ["left", "right", "up"])


def test_a_fresh_state_stands_before_the_first_step_with_no_best_epoch(task):
    st = TrainState.fresh(task)
    assert (st.epoch, st.batches_done, st.step, st.samples) == (0, 0, 0, 0)
    assert st.best == {"metric": task.best_key, "value": task.worst, "epoch": 0}
    assert st.epoch_state == fresh_tally() and st.position == (0, 0)


def test_the_checkpoint_entries_read_back_to_the_same_state(task):
    st = TrainState.fresh(task)
    st.epoch, st.batches_done, st.step, st.samples, st.elapsed = 2, 3, 11, 44, 9.5
    st.history.append({"kind": "epoch", "epoch": 1})
    st.epoch_state["loss_sum"] = 1.25
    st.resumed_at = (8, 0.002)
    entries = st.checkpoint({"val_top1": 0.5})
    assert list(entries) == ENTRIES
    assert entries["metrics"] == {"val_top1": 0.5} and entries["resumed_at"] == [8, 0.002]
    back = TrainState.from_checkpoint({**entries, "path": "last.pt"})
    assert back == st
    entries["epoch_state"]["loss_sum"] = 0.0  # copies: saving leaves the state alone
    assert st.epoch_state["loss_sum"] == 1.25


def test_an_epochs_end_moves_its_sums_into_the_totals_and_keeps_the_best(task):
    st = TrainState.fresh(task)
    st.batches_done = 3
    st.epoch_state.update(wait=1.0, compute=2.0, count=6)
    st.next_epoch(elapsed=4.0)
    assert (st.epoch, st.batches_done, st.elapsed) == (1, 0, 4.0)
    assert st.totals == {"wait": 1.0, "compute": 2.0} and st.epoch_state == fresh_tally()
    key = task.best_key
    assert st.keep_if_best({key: 0.4}, {"top1": 0.4}, task)
    assert st.best == {"metric": key, "value": 0.4, "epoch": 1}
    assert st.best_metrics == {"top1": 0.4}
    assert not st.keep_if_best({key: 0.3}, {"top1": 0.3}, task)
    assert not st.keep_if_best({}, {}, task)  # an epoch without validation
    assert st.best["value"] == 0.4
