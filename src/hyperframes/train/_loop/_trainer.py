"""``run_training``: train a registered model on a store from a config, into a run folder.

The run folder gets ``config.yaml`` (the resolved config), ``log.jsonl`` and ``epochs.csv``
(and ``tb/`` with TensorBoard installed), ``curves.png`` and ``confusion.png``, ``last.pt``
(and ``last.prev.pt``, the save before it) and ``best.pt`` (atomic, checksummed,
``weights_only``-loadable), ``split.json`` and ``summary.json``.

What the run learns is its task's (:mod:`hyperframes.train._tasks._base`, chosen by the model's
``task``): the targets of a batch, the loss, the running training metric, the validation
metrics, the metric that picks ``best.pt`` and what is logged, printed and plotted. The loop
only asks it.

Determinism: every random choice of the data (window, crop, order) is a function of
``(train.seed, epoch, item)``; the model is initialised from ``train.seed``; the global torch
generator is reseeded from ``(seed, rank, epoch, batch)`` before each micro-batch (dropout);
mixing is seeded by ``(seed, rank, step)``; the learning rate is a function of the step. So the same config
gives the same metrics on CPU whatever ``data.workers``, and ``--resume`` (which restores the
model, optimizer, step, RNG states and the position inside the epoch) continues as if the run
had never stopped.

Input on a GPU: on a CUDA device the training batches come through a
:class:`~hyperframes.data.PrefetchLoader`: while step k runs, batch k+1 is copied from pinned
memory and prepared on a side CUDA stream (the input contract's ``prepare`` and the task's
targets, computed from the CPU batch); "data wait" is then the time spent waiting for the
prepared batch. The prefetcher holds one batch ahead, and the loader state that ``last.pt``
keeps leaves it out, so resuming stays exact. On the CPU the loop prepares each batch itself
(:attr:`~hyperframes.train._loop._step.StepRunner.prefetch` chooses either way; both give the same
weights).

Stopping: SIGINT (Ctrl-C) and SIGTERM (what cluster schedulers send before they preempt a job)
only ask training to stop; handlers are installed for the duration of the run and the previous
ones restored after. Training stops after the optimizer step in progress (all of its
``train.accumulate`` micro-batches) or, between epochs, where it stands; writes ``last.pt`` there
(``epoch``, ``batches_done``: the micro-batches of that epoch already consumed, ``step``, the
epoch's loss and accuracy sums so far in ``epoch_state``, optimizer, scaler, RNG states), and
raises :class:`TrainingInterrupted` (the command line prints where it stopped and how to resume,
and exits with 130 after SIGINT, 143 after SIGTERM). ``--resume`` skips the consumed batches
without reading them (the samplers recompute the epoch's order and start after them), so the
final weights and ``epochs.csv`` equal an uninterrupted run's (timing columns aside).
``last.pt`` also holds the training loader's state (the position reached in the epoch's
*global* order), so ``--resume`` may run on another number of processes or nodes: the new
ranks share the rest of the epoch's order, and the step counter is re-based to the new world
size (:mod:`~hyperframes.train._loop._resume`); the samples trained on are then an uninterrupted
run's, though not the weights (the batches group them differently). A signal
during validation lets it finish: the epoch is then saved complete. A second Ctrl-C, a second
or more after the first, stops at once without saving (``last.pt`` keeps the previous save);
repeated SIGTERMs are ignored (torchrun forwards the one it gets to workers that may have had
their own).

Resuming a complete run trains nothing: it says so on stderr, with how to train longer, and
returns the run's summary (``"already_complete": true``). ``train.epochs`` may change on
resume; the learning-rate schedule then continues from where it stands instead of restarting,
or the resume is refused with the reason (:mod:`~hyperframes.train._loop._resume`).

With several processes (torchrun) the ranks agree after every optimizer step: one all-reduce
of the signal number (the highest wins), so a signal that reached any rank stops every rank
after the same step; rank 0 writes ``last.pt`` and prints where it stopped, then every rank
raises (torchrun, seeing a worker exit with 143, stops the others and reports the failure in
its own words). Send the signal to ``torchrun`` (it forwards SIGINT and SIGTERM to its
workers, and kills them after its own grace period) or to every worker, or to one; a rank
killed outright (SIGKILL) leaves the others waiting in their next collective, as any crash
does.

**Where each part lives.** This module opens the run folder, assembles the run and writes its
summary; the rest is one module per part:

* :mod:`~hyperframes.train._loop._parts` -- what the run is made of: the context it was asked in,
  the model, data, task, optimizer and loaders, and the sizes the schedule counts with;
* :mod:`~hyperframes.train._loop._state` -- :class:`~hyperframes.train._loop._state.TrainState`, where
  training stands (what ``last.pt`` holds besides the weights);
* :mod:`~hyperframes.train._loop._restore` -- a resumed run's state, weights and loader position;
* :mod:`~hyperframes.train._loop._step` -- :class:`~hyperframes.train._loop._step.StepRunner`: one
  micro-batch (inputs, loss, backward under AMP) and the optimizer step of its group;
* :mod:`~hyperframes.train._loop._loop` -- :class:`~hyperframes.train._loop._loop.EpochLoop`: the epochs,
  with its hooks called by name;
* :mod:`~hyperframes.train._loop._hooks` -- the hooks: logging, checkpoints, signals, evaluation.
"""

from __future__ import annotations

import json
import shutil
import signal
import sys
import time
from pathlib import Path

import torch

from ..._core._atomic import write_text_atomic
from ..._core._errors import ConfigError
from ..._core._plots import plot_confusion
from ...checkpoint import load_for_resume
from .._config._config import Config, save_config
from .._config._load import load_config
from .._dist import Dist, barrier, broadcast_object, setup, teardown
from .._tasks._masked import pretrained_record
from ._keyframe_recipe import pretrain_on_flow
from ._logging import JSONL, RunLogger, _clean
from ._loop import EpochLoop
from ._parts import RunContext, RunParts, assemble, wrap_network
from ._restore import restore
from ._resume import check_epochs, complete_message
from ._setup import build_model, check_resume_config, resolve_device
from ._state import TrainState
from ._stopping import TrainingInterrupted, _StopRequests

__all__ = ["TrainingInterrupted", "build_model", "run_training"]


def run_training(
    config: Config | dict | str | Path,
    out: str | Path | None = None,
    *,
    resume: bool = False,
    overrides: list[str] | None = None,
    progress: bool = True,
    stop_after_steps: int | None = None,
) -> dict:
    """Train as ``config`` says into ``out`` (default ``runs/<model>-<time>``); returns the
    summary also written to ``out/summary.json``.

    ``resume=True`` continues from ``out/last.pt`` (or starts fresh when there is none).
    ``stop_after_steps=N`` stops once the run has made N optimizer steps in all, after saving
    ``last.pt`` there (as an interruption would, but cleanly: e.g. for time-limited jobs); the
    summary then has ``"stopped": true`` and ``--resume`` continues.
    """
    cfg = load_config(config, overrides)
    device = resolve_device(cfg)
    d = setup(device.type)
    try:
        if device.type == "cuda" and d.active:
            device = torch.device("cuda", d.local_rank)
        show = progress and d.main
        run_dir = Path(out) if out is not None else _default_out(cfg)
        run_dir = Path(broadcast_object(str(run_dir.absolute()), d))
        created = d.main and not run_dir.exists()
        try:
            ck, complete = _open_run_dir(cfg, run_dir, resume, d, show)
            if complete:
                return _already_complete(ck, cfg, run_dir, d)
            ctx = RunContext(cfg, device, d, run_dir, show, _StopRequests(), stop_after_steps)
            return _train(ctx, ck)
        except BaseException:
            if created:
                _remove_if_nothing_trained(run_dir)
            raise
    finally:
        teardown(d)


def _remove_if_nothing_trained(run_dir: Path) -> None:
    """A run that failed before its first logged step or checkpoint (a store its sampler
    refuses, a model that does not fit) leaves no folder behind: only the one this call made,
    and only when it holds no checkpoint and no logged record."""
    log = run_dir / JSONL
    if any(run_dir.glob("*.pt")) or (log.exists() and log.stat().st_size > 0):
        return
    shutil.rmtree(run_dir, ignore_errors=True)


def _default_out(cfg: Config) -> Path:
    return Path("runs") / f"{cfg.model.name}-{time.strftime('%Y%m%d-%H%M%S')}"


def _open_run_dir(cfg: Config, run_dir: Path, resume: bool, d: Dist, show: bool):
    """``(checkpoint, complete)``: the run's ``last.pt`` to resume (None: a new run), and
    whether that run is complete; the folder made, with ``config.yaml``."""
    ck, complete = None, False
    last = run_dir / "last.pt"
    if resume and last.exists():
        ck = load_for_resume(run_dir)
        check_resume_config(ck["config"], cfg)
        complete = check_epochs(ck, cfg, run_dir)
    elif resume:
        if show:
            print(f"resume: no {last} yet; starting a new run", flush=True)
    elif last.exists():
        raise ConfigError(
            f"{run_dir} already holds a run (last.pt); resume to continue it, or "
            "choose another out folder"
        )
    barrier(d)
    if d.main:
        run_dir.mkdir(parents=True, exist_ok=True)
        save_config(cfg, run_dir / "config.yaml")
    return ck, complete


def _already_complete(ck: dict, cfg: Config, run_dir: Path, d: Dist) -> dict:
    """Say that the resumed run is complete, and how to train it longer; its summary."""
    said = complete_message(ck, cfg, run_dir)
    if d.main:
        print(said, file=sys.stderr, flush=True)
    summary = json.loads((run_dir / "summary.json").read_text())
    return {**summary, "already_complete": True, "message": said}


def _train(ctx: RunContext, ck: dict | None) -> dict:
    """The run, with the signal handlers installed: assembled, restored from ``ck``, trained
    and summarised; raises :class:`TrainingInterrupted` when a signal stopped it."""
    logger = None
    with ctx.stops:
        try:
            parts = assemble(ctx)
            state, resized = TrainState.fresh(parts.task), None
            if ck is not None:
                state, resized = restore(ctx, parts, ck)
            net = wrap_network(parts, ctx)
            logger = _open_logger(ctx, state, ck)
            loop = EpochLoop(ctx, parts, state, net, logger, resumed=ck is not None)
            if resized is not None:
                logger.log(resized)
            _report_pretrained(ctx, parts, logger, resumed=ck is not None)
            summary = _train_loop(loop)
        except BaseException:
            if logger is not None:
                logger.fail()  # an MLflow run ends FAILED, not left RUNNING
            raise
    if loop.hooks.signals.signum:
        raise loop.hooks.signals.interrupted(loop)
    return summary


def _open_logger(ctx: RunContext, state: TrainState, ck: dict | None) -> RunLogger:
    cfg, t = ctx.cfg, ctx.cfg.train
    mlflow = {"uri": t.mlflow_uri, "experiment": t.mlflow_experiment, "params": cfg.to_dict()}
    return RunLogger(
        ctx.run_dir,
        enabled=ctx.d.main,
        resume_step=int(ck["step"]) if ck is not None else None,
        resume_records=_log_records(ck),
        history=state.history,
        tensorboard="tensorboard" in t.loggers,
        mlflow=mlflow if "mlflow" in t.loggers else None,
    )


def _log_records(ck: dict | None) -> int | None:
    """A checkpoint's ``log_records`` (None when absent or not a count)."""
    value = ck.get("log_records") if ck is not None else None
    ok = isinstance(value, int) and not isinstance(value, bool) and value >= 0
    return value if ok else None


def _report_pretrained(ctx: RunContext, parts: RunParts, logger: RunLogger, *, resumed: bool):
    """``model.pretrained``: say what was loaded and what is new, and log it."""
    record = pretrained_record(parts.model)
    if record is not None and not resumed:
        ctx.say(record["message"])
        logger.log(record)


def _train_loop(loop: EpochLoop) -> dict:
    """Say what is trained, pre-train a keyframe model's G on flow (a fresh run), train the
    epochs left; the summary."""
    ctx, parts, st, sizes = loop.ctx, loop.parts, loop.state, loop.parts.sizes
    cfg, b = ctx.cfg, parts.bundle
    ctx.say(
        f"training {cfg.model.name} (T={cfg.data.frames}, {b.layout}) on "
        f"{len(b.train_ids)} train / {len(b.val_ids)} val videos ({b.split_source} split), "
        f"{sizes.total_steps} steps, lr {sizes.peak_lr:g}, global batch {sizes.global_batch}, "
        f"{ctx.d.world_size} process(es) -> {ctx.run_dir}"
    )
    fresh = st.step == 0 and st.epoch == 0 and st.batches_done == 0
    if fresh and cfg.train.flow_pretrain_epochs:
        pretrain_on_flow(cfg, parts.model, b, parts.store, ctx.device, ctx.say)
    try:
        stopped = loop.run()
    finally:
        loop.logger.close()
    if stopped and not loop.hooks.signals.signum:
        ctx.say(f"stopped at step {st.step}; continue with --resume")
    return _finish(loop, stopped)


def _summary(loop: EpochLoop, stopped: bool) -> dict:
    """``summary.json`` (before the video-level evaluation)."""
    ctx, b, st, sizes = loop.ctx, loop.parts.bundle, loop.state, loop.parts.sizes
    cfg, signum = ctx.cfg, loop.hooks.signals.signum
    busy = st.totals["wait"] + st.totals["compute"]
    summary = {
        "run_dir": str(ctx.run_dir),
        "task": b.task,
        "model": cfg.model.name,
        "frames": cfg.data.frames,
        "layout": b.layout,
        "classes": b.classes,
        "best": st.best,
        "final": st.history[-1] if st.history else {},
        "val_metrics": st.best_metrics,
        "train_seconds": st.elapsed,
        "data_wait_share": st.totals["wait"] / busy if busy else 0.0,
        "samples_per_s": st.samples / busy if busy else 0.0,
        "epochs": st.epoch,
        "steps": st.step,
        "stopped": stopped,
        "stop_signal": signal.Signals(signum).name if signum else None,
        "world_size": ctx.d.world_size,
        "lr": sizes.peak_lr,
        "global_batch": sizes.global_batch,
        "split": {
            "source": b.split_source,
            "train_videos": len(b.train_ids),
            "val_videos": len(b.val_ids),
        },
    }
    summary.update(loop.parts.task.summary(st.best_metrics))
    return summary


def _finish(loop: EpochLoop, stopped: bool) -> dict:
    """The summary, written by rank 0 with ``confusion.png`` and the video-level evaluation
    (unless stopped); with several processes stopped by a signal, where it stopped."""
    ctx, st, hooks = loop.ctx, loop.state, loop.hooks
    cfg, d = ctx.cfg, ctx.d
    barrier(d)
    summary = _summary(loop, stopped)
    if d.main:
        if st.best_metrics.get("confusion") is not None:
            plot_confusion(
                st.best_metrics["confusion"],
                loop.parts.bundle.classes,
                ctx.run_dir / "confusion.png",
                title=f"{cfg.model.name} T={cfg.data.frames}, epoch {st.best['epoch']} "
                "(validation)",
            )
        if hooks.evaluation.pending(cfg) and not stopped:
            summary["video_level"] = hooks.evaluation.video_level(loop)
        text = json.dumps(_clean(summary), indent=1, default=float)
        write_text_atomic(ctx.run_dir / "summary.json", text + "\n")  # never half a summary
        loop.logger.finish("KILLED" if stopped else "FINISHED")
    if hooks.signals.signum and d.active and d.main:
        # said here, before the ranks part: torchrun stops the other workers (this one
        # included) as soon as one exits
        print(
            f"{hooks.signals.interrupted(loop).where}; continue with the same torchrun "
            "command and --resume",
            file=sys.stderr,
            flush=True,
        )
    barrier(d)
    return summary
