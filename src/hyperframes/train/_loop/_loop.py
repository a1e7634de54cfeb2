"""``EpochLoop``: the epochs of a run, each a pass of micro-batches, with named hooks around.

The loop only orders things: it takes the training batches, hands each to the
:class:`~hyperframes.train._loop._step.StepRunner`, times the wait for data and the compute, closes
each epoch into its record (the running sums, validation, timing) and advances the
:class:`~hyperframes.train._loop._state.TrainState`. Everything else -- logging, checkpoints,
signals, evaluation -- is a hook of :mod:`~hyperframes.train._loop._hooks`, called by name at the
points that module lists. A hook (or ``stop_after_steps`` reached mid-epoch) ends training
by raising :class:`~hyperframes.train._loop._hooks.StopTraining`.
"""

from __future__ import annotations

import dataclasses
import time

from torch import nn

from ._hooks import CheckpointHook, EvaluationHook, LoggingHook, SignalHook, StopTraining
from ._logging import RunLogger
from ._parts import RunContext, RunParts
from ._state import TrainState
from ._step import StepRunner

__all__ = ["EpochLoop", "Hooks"]


@dataclasses.dataclass
class Hooks:
    """The loop's hooks, by concern (:mod:`~hyperframes.train._loop._hooks`)."""

    logging: LoggingHook
    checkpoints: CheckpointHook
    signals: SignalHook
    evaluation: EvaluationHook


class EpochLoop:
    """Trains ``net`` (the model as trained: :func:`~hyperframes.train._loop._parts.wrap_network`)
    from where ``state`` stands to the last epoch (module doc). ``resumed``: ``state`` is the
    one ``last.pt`` holds."""

    def __init__(
        self,
        ctx: RunContext,
        parts: RunParts,
        state: TrainState,
        net: nn.Module,
        logger: RunLogger,
        *,
        resumed: bool,
    ) -> None:
        self.ctx, self.parts, self.state, self.logger = ctx, parts, state, logger
        self.steps = StepRunner(ctx, parts, net, state)
        #: the training batches as the steps take them (prefetched on a CUDA device)
        self.train_loader = self.steps.feed(parts.train_loader)
        saved_at = state.position if resumed else None
        self.hooks = Hooks(LoggingHook(), CheckpointHook(saved_at), SignalHook(), EvaluationHook())
        # this session: where it started, and when (set by run)
        self.start_step, self.elapsed_base = state.step, state.elapsed
        self.t_run = time.perf_counter()

    def now(self) -> float:
        """Seconds since this session's training started."""
        return time.perf_counter() - self.t_run

    def stop_reached(self) -> bool:
        """Whether ``stop_after_steps`` is reached."""
        stop_at = self.ctx.stop_at
        return stop_at is not None and self.state.step >= stop_at

    def run(self) -> bool:
        """Train the epochs left; whether training stopped before the run's end (a signal,
        ``stop_after_steps``, or no time left for the video-level evaluation)."""
        cfg, st, signals = self.ctx.cfg, self.state, self.hooks.signals
        self.t_run = time.perf_counter()
        try:
            while st.epoch < cfg.train.epochs:
                signals.on_epoch_start(self, self.now())
                t_epoch = time.perf_counter()
                self._train_epoch()
                self._end_epoch(t_epoch)
                if self.stop_reached() and st.epoch < cfg.train.epochs:
                    return True
            if signals.agreed(self) and self.hooks.evaluation.pending(cfg):
                return True  # trained to the end, but no time for the evaluation left
            signals.signum = 0  # nothing left to stop: finish the run
            return False
        except StopTraining:
            return True

    def _train_epoch(self) -> None:
        st, logging = self.state, self.hooks.logging
        n = self.parts.sizes.micro_per_epoch
        self.steps.start_epoch()
        logging.on_epoch_start(self)
        it = iter(self.train_loader)  # positioned by assemble / restore / _end_epoch
        i = first = st.batches_done
        try:
            while i < n:
                t0 = time.perf_counter()
                item = next(it)
                self.steps.wait_for_data()
                t1 = time.perf_counter()
                stepped, loss = self.steps.micro_step(item, i, first=first)
                i += 1
                self.steps.sync()
                t2 = time.perf_counter()
                st.epoch_state["wait"] += t1 - t0
                st.epoch_state["compute"] += t2 - t1
                self._after_micro_step(stepped, loss)
        finally:
            logging.on_epoch_stop()
            del it

    def _after_micro_step(self, stepped: bool, loss: float) -> None:
        now, hooks = self.now(), self.hooks
        hooks.logging.on_micro_step(self, now)
        if not stepped:
            return
        mid_epoch = self.state.batches_done < self.parts.sizes.micro_per_epoch
        hooks.logging.on_step(self, loss)
        hooks.checkpoints.on_step(self, now, mid_epoch=mid_epoch)
        hooks.signals.on_step(self, now)
        if mid_epoch and self.stop_reached():
            raise StopTraining

    def _end_epoch(self, t_epoch: float) -> None:
        st, hooks, task = self.state, self.hooks, self.parts.task
        es = st.epoch_state
        busy = es["wait"] + es["compute"]
        record = {
            "kind": "epoch",
            "epoch": st.epoch + 1,
            "step": st.step,
            "lr": self.steps.lr,
            "train_loss": es["loss_sum"] / max(es["count"], 1),
            task.train_metric: es["correct"] / max(es["count"], 1),
        }
        metrics = hooks.evaluation.on_epoch_end(self, record)
        record.update(
            {
                "samples_per_s": es["count"] * self.ctx.d.world_size / busy if busy else 0.0,
                "data_wait_share": es["wait"] / busy if busy else 0.0,
                "epoch_seconds": time.perf_counter() - t_epoch,
                "elapsed_seconds": self.elapsed_base + self.now(),
            }
        )
        st.history.append(record)
        hooks.logging.on_epoch_end(self, record)
        st.next_epoch(record["elapsed_seconds"])
        self.train_loader.set_epoch(st.epoch)
        improved = st.keep_if_best(record, metrics, task)
        hooks.checkpoints.on_epoch_end(self, metrics, improved=improved)
        hooks.logging.after_checkpoint(self, record)
