"""``TrainState``: where a training run stands, the part of ``last.pt`` that is not weights.

The epoch and the micro-batches of it already consumed, the optimizer steps and samples so
far, the training time, the epoch's running sums (``epoch_state``), the per-epoch records
(``history``), the best epoch and its validation metrics, and the schedule's re-planning
point (``resumed_at``, :mod:`~hyperframes.train._loop._resume`). :meth:`TrainState.checkpoint`
gives these entries as ``last.pt`` holds them and :meth:`TrainState.from_checkpoint` reads
them back, so the checkpoint format is spelled once.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ._resume import read_resumed_at

__all__ = ["TrainState", "fresh_tally"]


def fresh_tally() -> dict:
    """An epoch's running sums at its start: loss and metric sums, samples, seconds waiting
    for data and computing."""
    return {"loss_sum": 0.0, "correct": 0.0, "count": 0, "wait": 0.0, "compute": 0.0}


@dataclasses.dataclass
class TrainState:
    """Where training stands (module doc); the loop and its hooks update it in place."""

    #: the best epoch so far: ``{"metric", "value", "epoch"}`` (epoch 0: none yet)
    best: dict[str, Any]
    epoch: int = 0
    #: micro-batches of the current epoch already consumed
    batches_done: int = 0
    step: int = 0
    #: samples trained on, all processes together
    samples: int = 0
    #: training seconds, over every session of the run
    elapsed: float = 0.0
    #: seconds waiting for data and computing, over every finished epoch
    totals: dict[str, float] = dataclasses.field(
        default_factory=lambda: {"wait": 0.0, "compute": 0.0}
    )
    best_metrics: dict = dataclasses.field(default_factory=dict)
    history: list[dict] = dataclasses.field(default_factory=list)
    epoch_state: dict = dataclasses.field(default_factory=fresh_tally)
    resumed_at: tuple[int, float] | None = None

    @classmethod
    def fresh(cls, task) -> TrainState:
        """A run's state before its first step: no best epoch yet for ``task``'s metric."""
        return cls(best={"metric": task.best_key, "value": task.worst, "epoch": 0})

    @classmethod
    def from_checkpoint(cls, ck: dict) -> TrainState:
        """The state ``ck`` (a loaded ``last.pt``) was saved at."""
        return cls(
            best=dict(ck["best"]),
            epoch=int(ck["epoch"]),
            batches_done=int(ck["batches_done"]),
            step=int(ck["step"]),
            samples=int(ck["samples"]),
            elapsed=float(ck["elapsed"]),
            totals=dict(ck["totals"]),
            best_metrics=ck["best_metrics"],
            history=list(ck["history"]),
            epoch_state=dict(ck["epoch_state"]),
            resumed_at=read_resumed_at(ck.get("resumed_at"), ck.get("path")),
        )

    @property
    def position(self) -> tuple[int, int]:
        """``(step, batches_done)``: where a save at this moment stands."""
        return self.step, self.batches_done

    def checkpoint(self, metrics: dict) -> dict:
        """The checkpoint's entries for this state, with ``metrics`` (the epoch's validation
        metrics, or none mid-epoch), in ``last.pt``'s order."""
        return {
            "epoch": self.epoch,
            "batches_done": self.batches_done,
            "step": self.step,
            "samples": self.samples,
            "elapsed": self.elapsed,
            "totals": dict(self.totals),
            "best": dict(self.best),
            "best_metrics": self.best_metrics,
            "metrics": metrics,
            "history": self.history,
            "epoch_state": dict(self.epoch_state),
            "resumed_at": list(self.resumed_at) if self.resumed_at is not None else None,
        }

    def next_epoch(self, elapsed: float) -> None:
        """The epoch is over (at ``elapsed`` seconds of training): stand at the next one's start."""
        self.totals["wait"] += self.epoch_state["wait"]
        self.totals["compute"] += self.epoch_state["compute"]
        self.epoch += 1
        self.batches_done = 0
        self.epoch_state = fresh_tally()
        self.elapsed = elapsed

    def keep_if_best(self, record: dict, metrics: dict, task) -> bool:
        """Whether the epoch of ``record`` (just finished) beats the best so far by ``task``'s
        metric; it becomes the best then, with its validation ``metrics``."""
        key = task.best_key
        improved = key in record and task.improved(record[key], self.best["value"])
        if improved:
            self.best = {"metric": key, "value": record[key], "epoch": self.epoch}
            self.best_metrics = metrics
        return improved
