"""The epoch loop's hooks: what happens around the steps, one object per concern.

The loop (:class:`~hyperframes.train._loop._loop.EpochLoop`) calls them by name, at these points
and in this order (every rank calls every hook at the same points: some are collectives):

* at an epoch's start: ``signals.on_epoch_start`` (a signal that came during set-up or
  validation stops here), ``logging.on_epoch_start`` (the progress bar);
* after every micro-batch: ``logging.on_micro_step`` (the bar's loss, samples/s, data wait,
  ETA); after the micro-batch that ends an optimizer step, then: ``logging.on_step`` (a
  ``step`` record every ``train.log_every`` steps), ``checkpoints.on_step`` (``last.pt``
  every ``train.save_every`` steps, and at ``stop_after_steps``), ``signals.on_step`` (the
  ranks agree on a signal: ``last.pt`` where training stands, and stop);
* at an epoch's end: ``logging.on_epoch_stop`` (the bar closed; also when training stops
  inside the epoch), ``evaluation.on_epoch_end`` (validation every ``train.eval_every``
  epochs and after the last, into the epoch's record), ``logging.on_epoch_end`` (the record
  into ``log.jsonl``, before ``last.pt``: a run resumed from it keeps the record),
  ``checkpoints.on_epoch_end`` (``last.pt``, and ``best.pt`` when the epoch is the best),
  ``logging.after_checkpoint`` (``epochs.csv``, ``curves.png``, the epoch's line);
* after training, by :mod:`~hyperframes.train._loop._trainer` as it writes the summary (rank 0,
  unless stopped): ``evaluation.video_level`` (``eval.clips`` or ``eval.crops`` above 1:
  :func:`~hyperframes.train._eval._eval.evaluate` of ``best.pt``).

A hook that stops training raises :class:`StopTraining`; the loop ends there.
"""

from __future__ import annotations

import math
import signal
import time
from typing import TYPE_CHECKING

import torch

from ..._core._plots import plot_curves
from ...checkpoint import PREVIOUS, get_rng_state, save_checkpoint
from .._config._data import loader_workers
from .._eval._eval import evaluate
from .._eval._predict import predict
from ._keyframe_recipe import save_epoch_picture
from ._logging import EpochProgress, format_duration
from ._stopping import TrainingInterrupted

if TYPE_CHECKING:
    from ._loop import EpochLoop

__all__ = ["CheckpointHook", "EvaluationHook", "LoggingHook", "SignalHook", "StopTraining"]

#: seconds between redraws of curves.png during training (always drawn after the last epoch)
PLOT_EVERY_S = 20.0


class StopTraining(Exception):
    """Raised by a hook (or the loop) to end training where it stands, ``last.pt`` saved."""


def _rates(es: dict, world_size: int) -> tuple[float, float]:
    """``(samples/s, data wait share)`` of an epoch's running sums ``es``."""
    busy = es["wait"] + es["compute"]
    rate = es["count"] * world_size / busy if busy > 0 else 0.0
    return rate, es["wait"] / busy if busy > 0 else 0.0


class LoggingHook:
    """The progress bar, ``log.jsonl`` (and TensorBoard, MLflow: the run's logger), ``epochs.csv``,
    ``curves.png`` and the line printed per epoch."""

    def __init__(self) -> None:
        self.bar: EpochProgress | None = None
        self._plotted = -math.inf  # when curves.png was last drawn

    def on_epoch_start(self, loop: EpochLoop) -> None:
        st, epochs = loop.state, loop.ctx.cfg.train.epochs
        left = loop.parts.sizes.micro_per_epoch - st.batches_done
        self.bar = EpochProgress(loop.ctx.show, left, f"epoch {st.epoch + 1}/{epochs}")

    def on_epoch_stop(self) -> None:
        """The epoch's micro-batches are over (or training stopped in it): close the bar."""
        if self.bar is not None:
            self.bar.close()

    def on_micro_step(self, loop: EpochLoop, now: float) -> None:
        es, done = loop.state.epoch_state, loop.state.step
        rate, wait = _rates(es, loop.ctx.d.world_size)
        steps_this_session = max(done - loop.start_step, 1)
        eta = now / steps_this_session * (loop.parts.sizes.total_steps - done)
        assert self.bar is not None  # made by on_epoch_start
        self.bar.update(
            f"loss {es['loss_sum'] / max(es['count'], 1):.3f}, {rate:.0f} samples/s, "
            f"data wait {wait:.0%}, ETA {format_duration(eta)}"
        )

    def on_step(self, loop: EpochLoop, loss: float) -> None:
        done = loop.state.step
        if done % loop.ctx.cfg.train.log_every:
            return
        rate, wait = _rates(loop.state.epoch_state, loop.ctx.d.world_size)
        record = {"kind": "step", "epoch": loop.state.epoch + 1, "step": done, "lr": loop.steps.lr}
        record.update({"loss": loss, "samples_per_s": rate, "data_wait_share": wait})
        loop.logger.log(record)

    def on_epoch_end(self, loop: EpochLoop, record: dict) -> None:
        if loop.ctx.d.main:
            loop.logger.log(record)

    def after_checkpoint(self, loop: EpochLoop, record: dict) -> None:
        ctx, task = loop.ctx, loop.parts.task
        if ctx.d.main:
            loop.logger.write_csv(loop.state.history)
            now = time.perf_counter()
            last = loop.state.epoch == ctx.cfg.train.epochs
            if last or now - self._plotted >= PLOT_EVERY_S:  # short epochs: not every time
                curves = ctx.run_dir / "curves.png"
                plot_curves(
                    loop.state.history, curves, metrics=task.curves, title=task.curves_title
                )
                self._plotted = now
        ctx.say(self._epoch_line(loop, record))

    def _epoch_line(self, loop: EpochLoop, rec: dict) -> str:
        epochs = loop.ctx.cfg.train.epochs
        parts = [f"epoch {rec['epoch']}/{epochs}", f"loss {rec['train_loss']:.3f}"]
        parts += [f"{label} {rec[key]:.3f}" for key, label in loop.parts.task.shown if key in rec]
        parts.append(f"{rec['samples_per_s']:.0f} samples/s")
        parts.append(f"data wait {rec['data_wait_share']:.0%}")
        left = (epochs - rec["epoch"]) * rec["epoch_seconds"]
        parts.append(f"ETA {format_duration(left)}")
        return " | ".join(parts)


class CheckpointHook:
    """``last.pt`` (the save before it kept as ``last.prev.pt``) and ``best.pt``, written by rank 0
    (:func:`~hyperframes.checkpoint.save_checkpoint`: atomic, checksummed)."""

    def __init__(self, saved_at: tuple[int, int] | None) -> None:
        #: the ``(step, batches_done)`` of the last ``last.pt`` (the resumed one's, at first)
        self.saved_at = saved_at

    def contents(self, loop: EpochLoop, metrics: dict) -> dict:
        """What a checkpoint holds (the format: :mod:`~hyperframes.checkpoint._checkpoint`)."""
        cfg, parts, b = loop.ctx.cfg, loop.parts, loop.parts.bundle
        scaler = parts.scaler
        return {
            "model": parts.model.state_dict(),
            "optimizer": parts.optimizer.state_dict(),
            "scaler": scaler.state_dict() if scaler is not None else None,
            "config": cfg.to_dict(),
            "model_name": cfg.model.name,
            "num_classes": b.num_classes,
            "frames": cfg.data.frames,
            "layout": b.layout,
            "task": b.task,
            "classes": list(b.classes),
            "contract": b.contract.to_dict(),  # how input is prepared, everywhere
            **loop.state.checkpoint(metrics),
            "rng": get_rng_state(),
            # where the epoch stands in its global order, for any number of processes
            "loader": loop.train_loader.state_dict(),
            "world_size": loop.ctx.d.world_size,
            "steps_per_epoch": parts.sizes.steps_per_epoch,
            "log_records": loop.logger.records,
        }

    def save(self, loop: EpochLoop, name: str, metrics: dict) -> None:
        run_dir = loop.ctx.run_dir
        if loop.ctx.d.main:
            keep = run_dir / PREVIOUS if name == "last.pt" else None
            save_checkpoint(run_dir / name, self.contents(loop, metrics), keep=keep)
        if name == "last.pt":
            self.saved_at = loop.state.position

    def save_where_stopped(self, loop: EpochLoop, now: float) -> None:
        """``last.pt`` where training stands (unless saved there already)."""
        if self.saved_at != loop.state.position:
            loop.state.elapsed = loop.elapsed_base + now
            self.save(loop, "last.pt", {})

    def on_step(self, loop: EpochLoop, now: float, *, mid_epoch: bool) -> None:
        save_every = loop.ctx.cfg.train.save_every
        due = save_every and loop.state.step % save_every == 0
        if mid_epoch and (loop.stop_reached() or due):
            loop.state.elapsed = loop.elapsed_base + now
            self.save(loop, "last.pt", {})

    def on_epoch_end(self, loop: EpochLoop, metrics: dict, *, improved: bool) -> None:
        self.save(loop, "last.pt", metrics)
        if improved:
            self.save(loop, "best.pt", metrics)


class SignalHook:
    """SIGINT / SIGTERM (recorded by the run's :class:`~hyperframes.train._loop._stopping._StopRequests`)
    acted on where the ranks agree: at an epoch's start and after every optimizer step."""

    def __init__(self) -> None:
        #: the signal that stopped training, the same on every rank (0: none)
        self.signum = 0

    def agreed(self, loop: EpochLoop) -> int:
        """The signal that asks training to stop (0: none), the same on every rank: a
        collective, so every rank calls it at the same points (each step, each epoch start)."""
        signum = loop.ctx.stops.signum
        if loop.ctx.d.active:
            import torch.distributed as dist  # deferred: optional/heavy dependency

            nccl = dist.get_backend() == "nccl"
            on = torch.device("cuda", torch.cuda.current_device()) if nccl else "cpu"
            flag = torch.tensor([signum], dtype=torch.int64, device=on)
            dist.all_reduce(flag, op=dist.ReduceOp.MAX)
            signum = int(flag.item())
        self.signum = signum
        return signum

    def on_step(self, loop: EpochLoop, now: float) -> None:
        if self.agreed(loop):  # also after an epoch's last step: resuming then validates it
            loop.hooks.checkpoints.save_where_stopped(loop, now)
            raise StopTraining

    on_epoch_start = on_step  # came during set-up or validation

    def interrupted(self, loop: EpochLoop) -> TrainingInterrupted:
        """The error that says where the signal stopped training and where it is saved."""
        ctx, st = loop.ctx, loop.state
        name = signal.Signals(self.signum).name
        n, epochs = loop.parts.sizes.micro_per_epoch, ctx.cfg.train.epochs
        if st.batches_done == 0 and st.epoch > 0:
            at = f"after epoch {st.epoch}/{epochs}"
        else:
            at = f"in epoch {st.epoch + 1}/{epochs} after batch {st.batches_done}/{n}"
        where = (
            f"training stopped by {name} {at} (step {st.step} of "
            f"{loop.parts.sizes.total_steps}); saved {ctx.run_dir / 'last.pt'}"
        )
        if st.epoch == epochs:
            where += " (the video-level evaluation is still to run)"
        return TrainingInterrupted(
            where,
            signum=self.signum,
            run_dir=ctx.run_dir,
            step=st.step,
            rank=ctx.d.rank,
            world_size=ctx.d.world_size,
        )


class EvaluationHook:
    """Validation into the epoch records (the task's metrics), and the video-level evaluation
    after the last epoch."""

    def on_epoch_end(self, loop: EpochLoop, record: dict) -> dict:
        """The epoch's validation metrics (none between ``train.eval_every`` epochs), added to
        ``record`` as the task logs them."""
        cfg, st = loop.ctx.cfg, loop.state
        last = st.epoch + 1 == cfg.train.epochs
        if (st.epoch + 1) % cfg.train.eval_every and not last:
            return {}
        metrics = self.validate(loop)
        record.update(loop.parts.task.epoch_record(metrics))
        parts, ctx = loop.parts, loop.ctx
        if ctx.d.main:  # keyframe models: K_t beside PCA(H_t)
            save_epoch_picture(parts.model, parts.bundle, ctx.device, ctx.run_dir, st.epoch)
        return metrics

    def validate(self, loop: EpochLoop) -> dict:
        parts, ctx = loop.parts, loop.ctx
        pred = predict(
            parts.model,
            parts.val_loader,
            task=parts.task,
            contract=parts.bundle.contract,
            device=ctx.device,
            num_classes=parts.bundle.num_classes,
            amp=parts.amp,
            dist=ctx.d,
        )
        return parts.task.metrics(pred)

    @staticmethod
    def pending(cfg) -> bool:
        """Whether a video-level evaluation follows training (``eval.clips`` or ``eval.crops``)."""
        return cfg.eval.clips > 1 or cfg.eval.crops > 1

    def video_level(self, loop: EpochLoop) -> dict:
        """:func:`~hyperframes.train._eval._eval.evaluate` of ``best.pt`` on the validation split."""
        cfg, run_dir = loop.ctx.cfg, loop.ctx.run_dir
        return evaluate(
            run_dir / "best.pt",
            split=cfg.data.val_split,
            clips=cfg.eval.clips,
            crops=cfg.eval.crops,
            workers=loader_workers(cfg),
            device=str(loop.ctx.device),
            out=run_dir / "eval_metrics.json",
            verbose=False,
        )
