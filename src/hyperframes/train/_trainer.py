"""``run_training``: train a registered model on a store from a config, into a run folder.

The run folder gets ``config.yaml`` (the resolved config), ``log.jsonl`` and ``epochs.csv``
(and ``tb/`` with TensorBoard installed), ``curves.png`` and ``confusion.png``, ``last.pt``
(and ``last.prev.pt``, the save before it) and ``best.pt`` (atomic, checksummed,
``weights_only``-loadable), ``split.json`` and ``summary.json``.

What the run learns is its task's (:mod:`hyperframes.train._tasks`, chosen by the model's
``task``): the targets of a batch, the loss, the running training metric, the validation
metrics, the metric that picks ``best.pt`` and what is logged, printed and plotted. The loop
below only asks it.

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
(``_Run.prefetch`` chooses either way; both give the same weights).

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
size (:mod:`~hyperframes.train._resume`); the samples trained on are then an uninterrupted
run's, though not the weights (the batches group them differently). A signal
during validation lets it finish: the epoch is then saved complete. A second Ctrl-C, a second
or more after the first, stops at once without saving (``last.pt`` keeps the previous save);
repeated SIGTERMs are ignored (torchrun forwards the one it gets to workers that may have had
their own).

Resuming a complete run trains nothing: it says so on stderr, with how to train longer, and
returns the run's summary (``"already_complete": true``). ``train.epochs`` may change on
resume; the learning-rate schedule then continues from where it stands instead of restarting,
or the resume is refused with the reason (:mod:`~hyperframes.train._resume`).

With several processes (torchrun) the ranks agree after every optimizer step: one all-reduce
of the signal number (the highest wins), so a signal that reached any rank stops every rank
after the same step; rank 0 writes ``last.pt`` and prints where it stopped, then every rank
raises (torchrun, seeing a worker exit with 143, stops the others and reports the failure in
its own words). Send the signal to ``torchrun`` (it forwards SIGINT and SIGTERM to its
workers, and kills them after its own grace period) or to every worker, or to one; a rank
killed outright (SIGKILL) leaves the others waiting in their next collective, as any crash
does.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import random
import signal
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from .._core._errors import ConfigError, DataError
from .._core._plots import plot_confusion, plot_curves
from ..data import PrefetchLoader
from ..models import aux_weight
from ._checkpoint import (
    PREVIOUS,
    get_rng_state,
    load_for_resume,
    load_weights,
    save_checkpoint,
    set_rng_state,
)
from ._config import AUTO_STEPS, Config, load_config, save_config
from ._data import build_data, loader_workers
from ._ddp import Dist, barrier, broadcast_object, setup, teardown
from ._frames import draw_frames, narrow_batch
from ._keyframe_recipe import drop_g_grads, freeze_phase, pretrain_on_flow, save_epoch_picture
from ._logging import EpochProgress, RunLogger, _clean, format_duration
from ._predict import autocast, forward, predict
from ._resume import (
    check_epochs,
    complete_message,
    continued_schedule,
    read_resumed_at,
    rescaled_resumed_at,
    resized_position,
)
from ._schedule import lr_at, scaled_lr
from ._setup import (
    WithAux,
    build_model,
    build_optimizer,
    check_leakage_of_split,
    check_resume_config,
    resolve_amp,
    resolve_device,
)
from ._stopping import TrainingInterrupted, _StopRequests
from ._tasks import create_task

__all__ = ["TrainingInterrupted", "build_model", "run_training"]

#: seconds between redraws of curves.png during training (always drawn after the last epoch)
PLOT_EVERY_S = 20.0


#: an epoch of fewer optimizer steps than this is warned about (a schedule and metrics of a
#: few steps say little: a small store with one window per video per epoch)
FEW_STEPS = 10


def few_steps_warning(cfg: Config, videos: int, items: int, trainer, sampler) -> str:
    """The warning for an epoch of fewer than :data:`FEW_STEPS` steps, naming the keys
    (``sampler``: the training dataset's, with the windows it draws per video)."""
    d = cfg.data
    per = trainer.d.world_size * cfg.train.accumulate
    k = d.repeats  # ``items`` counts windows: with repeats, k of each drawn item
    drawn = sampler.clips_per_video // k
    want = math.ceil(AUTO_STEPS * d.batch_size * per * drawn / max(items, 1))
    if sampler.random:
        fix = (
            f"set data.clips_per_video: {max(want, drawn + 1)} (windows drawn per video per "
            "epoch; auto draws enough) or lower data.batch_size"
        )
    else:
        fix = (
            f"lower data.batch_size, or use a random data.sampler (not {d.sampler}) with "
            "data.clips_per_video"
        )
    return (
        f"warning: an epoch is only {trainer.steps_per_epoch} optimizer step(s): {items} "
        f"training items ({videos} videos, {drawn} window(s) drawn per video: "
        f"data.clips_per_video {d.clips_per_video}"
        + (f", {k} windows each: data.repeats" if k > 1 else "")
        + ") in batches of data.batch_size "
        f"{d.batch_size}"
        + (f" x {per} (processes x train.accumulate)" if per > 1 else "")
        + (", the last partial batch dropped (data.drop_last)" if d.drop_last else "")
        + f"; {FEW_STEPS} or more train better: {fix}"
    )


def _say(msg: str, enabled: bool) -> None:
    if enabled:
        print(msg, flush=True)


def _default_out(cfg: Config) -> Path:
    return Path("runs") / f"{cfg.model.name}-{time.strftime('%Y%m%d-%H%M%S')}"


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
        return _Run(cfg, out, resume, progress, device, d, stop_after_steps).train()
    finally:
        teardown(d)


class _Run:
    """One training run. Its attributes are created in two places only: ``__init__`` (what
    was asked: config, device, processes, run folder, the checkpoint to resume, the signal
    state) and :meth:`_setup` (everything built from them, and the training state); the
    other methods update them."""

    resumed_at: tuple[int, float] | None  # set in _setup (declared here: used above it)
    #: training batches through a PrefetchLoader (moved and prepared on a side CUDA stream
    #: one step ahead): None, on a CUDA device; True / False to choose (tests compare both)
    prefetch: bool | None = None

    def __init__(
        self, cfg: Config, out, resume: bool, progress: bool, device, d: Dist, stop_at=None
    ) -> None:
        self.cfg, self.device, self.d = cfg, device, d
        self.stop_at = stop_at
        self.show = progress and d.main
        run_dir = Path(out) if out is not None else _default_out(cfg)
        self.run_dir = Path(broadcast_object(str(run_dir.absolute()), d))
        self.ckpt = None
        self.complete = False  # resumed a finished run: nothing to train
        last = self.run_dir / "last.pt"
        if resume and last.exists():
            self.ckpt = load_for_resume(self.run_dir)
            check_resume_config(self.ckpt["config"], cfg)
            self.complete = check_epochs(self.ckpt, cfg, self.run_dir)
        elif resume:
            _say(f"resume: no {last} yet; starting a new run", self.show)
        elif last.exists():
            raise ConfigError(
                f"{self.run_dir} already holds a run (last.pt); resume to continue it, or "
                "choose another out folder"
            )
        barrier(d)
        if d.main:
            self.run_dir.mkdir(parents=True, exist_ok=True)
            save_config(cfg, self.run_dir / "config.yaml")
        self.stops = _StopRequests()
        self.signum = 0  # the signal that stopped training, the same on every rank (0: none)

    # -- resuming (_resume) -----------------------------------------------------------------
    def _already_complete(self) -> dict:
        """Say that the resumed run is complete, and how to train it longer; its summary."""
        assert self.ckpt is not None  # complete is only set from a loaded checkpoint
        said = complete_message(self.ckpt, self.cfg, self.run_dir)
        if self.d.main:
            print(said, file=sys.stderr, flush=True)
        summary = json.loads((self.run_dir / "summary.json").read_text())
        return {**summary, "already_complete": True, "message": said}

    def _continue_schedule(self, ck: dict) -> None:
        """With ``train.epochs`` changed on resume: continue the cosine from the rate it has
        now (:func:`~hyperframes.train._resume.continued_schedule`)."""
        before = self.resumed_at
        self.resumed_at = continued_schedule(
            ck,
            self.cfg,
            step=self.step,
            steps_per_epoch=self.steps_per_epoch,
            peak=self.peak_lr,
            warmup=self.warmup,
            resumed_at=before,
        )
        if self.resumed_at != before:
            assert self.resumed_at is not None  # changed: a new (step, rate)
            planned, rate = ck["config"]["train"]["epochs"], self.resumed_at[1]
            _say(
                f"train.epochs {planned} -> {self.cfg.train.epochs}: the cosine schedule "
                f"continues from lr {rate:.3g} at step {self.step} down to "
                f"{self.cfg.train.min_lr:g} at step {self.total_steps} (not restarted)",
                self.show,
            )

    # -- set-up -----------------------------------------------------------------------------
    def _setup(self) -> None:
        """Create the run's attributes: data, task, model, optimizer, loaders, schedule, the
        training state (restored when resuming), this session's bookkeeping, the network as
        trained (aux, DDP) and the logger."""
        from ..store import open_store

        cfg, d = self.cfg, self.d
        random.seed(cfg.train.seed)
        np.random.seed(cfg.train.seed)
        self.store = open_store(
            cfg.data.store,
            cache_dir=cfg.data.cache_dir,
            cache_limit=cfg.data.cache_limit,
            check="video" if cfg.data.check == "video" else None,
        )
        self.bundle = b = build_data(cfg, self.store)
        check_leakage_of_split(cfg, self.store, b, d, self.run_dir)
        if d.main:
            split = {
                "source": b.split_source,
                "train": [self.store.videos[int(i)].path for i in b.train_ids],
                "val": [self.store.videos[int(i)].path for i in b.val_ids],
            }
            (self.run_dir / "split.json").write_text(json.dumps(split, indent=1) + "\n")
        self.model = build_model(cfg, b.num_classes, b.contract).to(self.device)
        self.task = create_task(
            b.task,
            b.classes,
            class_weights=cfg.train.class_weights,
            label_smoothing=cfg.train.label_smoothing,
            mixup=cfg.train.mixup,
            cutmix=cfg.train.cutmix,
            seed=cfg.train.seed,
            device=self.device,
        )
        self.amp = resolve_amp(cfg, self.device)
        self.use_aux = (
            cfg.train.aux_weight > 0
            and hasattr(self.model, "forward_with_aux")
            and cfg.data.frames >= 2
        )
        self.global_batch = cfg.data.batch_size * d.world_size * cfg.train.accumulate
        self.peak_lr = scaled_lr(cfg.train.lr, self.global_batch, cfg.train.base_batch_size)
        self.optimizer = build_optimizer(cfg, self.model, self.peak_lr)
        fp16 = self.amp[0] and self.amp[1] == torch.float16
        self.scaler = torch.amp.GradScaler("cuda") if fp16 else None
        self.train_loader = self._loader(b.train, train=True)
        self._prepare_at = 0  # the micro-batch the prefetcher prepares next (_prepare_next)
        if self._prefetching():
            self.train_loader = PrefetchLoader(
                self.train_loader, self.device, prepare=self._prepare_next, move=False
            )
        self.val_loader = self._loader(b.val, train=False)
        self.train_loader.set_epoch(0)  # the training loader always stands where training does
        self.micro_per_epoch = len(self.train_loader)
        if self.micro_per_epoch == 0:
            raise DataError(
                f"the training split has {len(b.train)} items, fewer than one batch of "
                f"{cfg.data.batch_size} per process with data.drop_last; lower data.batch_size "
                "or set data.drop_last: false"
            )
        acc = cfg.train.accumulate
        self.steps_per_epoch = math.ceil(self.micro_per_epoch / acc)
        if self.steps_per_epoch < FEW_STEPS and d.main:
            print(
                few_steps_warning(
                    cfg, len(b.train_ids), len(b.train) * cfg.data.repeats, self, b.train.sampler
                ),
                file=sys.stderr,
            )
        self.total_steps = cfg.train.epochs * self.steps_per_epoch
        self.warmup = round(cfg.train.warmup_epochs * self.steps_per_epoch)
        # the training state (what last.pt holds)
        self.epoch, self.batches_done, self.step, self.samples = 0, 0, 0, 0
        self.history: list[dict] = []
        self.best: dict[str, Any] = {
            "metric": self.task.best_key,
            "value": self.task.worst,
            "epoch": 0,
        }
        self.best_metrics: dict = {}
        self.elapsed = 0.0
        self.totals = {"wait": 0.0, "compute": 0.0}
        self.epoch_state = self._fresh_epoch_state()
        self._saved_at: tuple[int, int] | None = None
        self.resumed_at = None  # the schedule's re-planning point
        resized = None
        if self.ckpt is not None:
            self._restore(self.ckpt)
            resized = self._position_loader(self.ckpt)
            self._continue_schedule(self.ckpt)
        self.lr = self.optimizer.param_groups[0]["lr"]
        # this session: where it started, when curves.png was last drawn
        self._start_step = self.step
        self._elapsed_base = self.elapsed
        self._plotted = -math.inf
        net: nn.Module = WithAux(self.model) if self.use_aux else self.model
        if d.active:
            unused = hasattr(self.model, "forward_with_aux") and not self.use_aux
            ids = [self.device.index] if self.device.type == "cuda" else None
            net = nn.parallel.DistributedDataParallel(
                net, device_ids=ids, find_unused_parameters=unused
            )
        self.net = net
        self.logger = RunLogger(
            self.run_dir,
            enabled=d.main,
            resume_step=int(self.ckpt["step"]) if self.ckpt is not None else None,
            resume_records=_log_records(self.ckpt),
            history=self.history,
            tensorboard="tensorboard" in cfg.train.loggers,
            mlflow=_mlflow_options(cfg) if "mlflow" in cfg.train.loggers else None,
        )
        if resized is not None:
            self.logger.log(resized)
        self._report_pretrained()

    def _report_pretrained(self) -> None:
        """``model.pretrained``: say what was loaded and what is new, and log it."""
        from ._masked import pretrained_record

        record = pretrained_record(self.model)
        if record is not None and self.ckpt is None:
            _say(record["message"], self.show)
            self.logger.log(record)

    def _loader(self, dataset, *, train: bool):
        from ..data import loader

        cfg, d = self.cfg, self.d
        # data.repeats: an item is that many windows, data.batch_size counts windows
        per_item = getattr(dataset, "repeats", 1)
        return loader(
            dataset,
            batch_size=cfg.data.batch_size // per_item
            if train
            else (cfg.data.val_batch_size or cfg.data.batch_size),
            shuffle=train,
            workers=loader_workers(cfg),
            balanced=train and cfg.train.balanced,
            rank=d.rank,
            world_size=d.world_size,
            drop_last=train and cfg.data.drop_last,
            seed=cfg.train.seed,
        )

    def _prefetching(self) -> bool:
        """Whether training batches come through a :class:`~hyperframes.data.PrefetchLoader`:
        :attr:`prefetch`, or by default on a CUDA device (module doc)."""
        return self.device.type == "cuda" if self.prefetch is None else self.prefetch

    def _prepare_next(self, batch) -> tuple:
        """The prefetcher's ``prepare``: :meth:`_inputs` of the next micro-batch (batches come
        in order, one ahead of the step; ``_train_epoch`` sets where an epoch's first is)."""
        i, self._prepare_at = self._prepare_at, self._prepare_at + 1
        return self._inputs(batch, i)

    def _inputs(self, batch, i: int) -> tuple:
        """Micro-batch ``i``'s ``(batch, x, target)``: the batch at the T it draws, the model's
        input and the task's targets (computed on the CPU batch), both on the device."""
        batch, contract = self._batch_frames(batch, i)
        x = contract.prepare(batch.frames, device=self.device, flow=batch.flow, audio=batch.audio)
        return batch, x, self.task.targets(batch).to(self.device, non_blocking=True)

    def _sync(self) -> None:
        """Wait for the step on a CUDA device (timing). Prefetching, only for the caller's
        stream: the side stream's work on the next batch is the next wait for data."""
        if self.device.type != "cuda":
            return
        if isinstance(self.train_loader, PrefetchLoader):
            torch.cuda.current_stream(self.device).synchronize()
        else:
            torch.cuda.synchronize(self.device)

    def _fresh_epoch_state(self) -> dict:
        return {"loss_sum": 0.0, "correct": 0.0, "count": 0, "wait": 0.0, "compute": 0.0}

    # -- checkpoints ------------------------------------------------------------------------
    def _state(self, metrics: dict) -> dict:
        return {
            "model": self.model.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "scaler": self.scaler.state_dict() if self.scaler is not None else None,
            "config": self.cfg.to_dict(),
            "model_name": self.cfg.model.name,
            "num_classes": self.bundle.num_classes,
            "frames": self.cfg.data.frames,
            "layout": self.bundle.layout,
            "task": self.bundle.task,
            "classes": list(self.bundle.classes),
            "contract": self.bundle.contract.to_dict(),  # how input is prepared, everywhere
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
            "rng": get_rng_state(),
            # where the epoch stands in its global order, for any number of processes
            "loader": self.train_loader.state_dict(),
            "world_size": self.d.world_size,
            "steps_per_epoch": self.steps_per_epoch,
            "log_records": self.logger.records,
        }

    def _save(self, name: str, metrics: dict) -> None:
        if self.d.main:
            keep = self.run_dir / PREVIOUS if name == "last.pt" else None
            save_checkpoint(self.run_dir / name, self._state(metrics), keep=keep)
        if name == "last.pt":
            self._saved_at = self.step, self.batches_done

    # -- stopping on a signal ---------------------------------------------------------------
    def _stop_signal(self) -> int:
        """The signal that asks training to stop (0: none), the same on every rank: a
        collective, so every rank calls it at the same points (each step, each epoch start)."""
        signum = self.stops.signum
        if self.d.active:
            import torch.distributed as dist

            nccl = dist.get_backend() == "nccl"
            on = torch.device("cuda", torch.cuda.current_device()) if nccl else "cpu"
            flag = torch.tensor([signum], dtype=torch.int64, device=on)
            dist.all_reduce(flag, op=dist.ReduceOp.MAX)
            signum = int(flag.item())
        self.signum = signum
        return signum

    def _save_where_stopped(self, now: float) -> None:
        if self._saved_at != (self.step, self.batches_done):
            self.elapsed = self._elapsed_base + now
            self._save("last.pt", {})

    def _interrupted(self) -> TrainingInterrupted:
        name = signal.Signals(self.signum).name
        n, epochs = self.micro_per_epoch, self.cfg.train.epochs
        if self.batches_done == 0 and self.epoch > 0:
            at = f"after epoch {self.epoch}/{epochs}"
        else:
            at = f"in epoch {self.epoch + 1}/{epochs} after batch {self.batches_done}/{n}"
        where = (
            f"training stopped by {name} {at} (step {self.step} of {self.total_steps}); "
            f"saved {self.run_dir / 'last.pt'}"
        )
        if self.epoch == self.cfg.train.epochs:
            where += " (the video-level evaluation is still to run)"
        return TrainingInterrupted(
            where,
            signum=self.signum,
            run_dir=self.run_dir,
            step=self.step,
            rank=self.d.rank,
            world_size=self.d.world_size,
        )

    def _restore(self, ck: dict) -> None:
        load_weights(self.model, ck)
        self.optimizer.load_state_dict(ck["optimizer"])
        if self.scaler is not None and ck.get("scaler") is not None:
            self.scaler.load_state_dict(ck["scaler"])
        self.epoch, self.batches_done = int(ck["epoch"]), int(ck["batches_done"])
        self.step, self.samples = int(ck["step"]), int(ck["samples"])
        self.elapsed = float(ck["elapsed"])
        self.totals = dict(ck["totals"])
        self.best = dict(ck["best"])
        self.best_metrics = ck["best_metrics"]
        self.history = list(ck["history"])
        self.epoch_state = dict(ck["epoch_state"])
        self.resumed_at = read_resumed_at(ck.get("resumed_at"), ck.get("path"))
        set_rng_state(ck["rng"])
        self._saved_at = self.step, self.batches_done
        _say(
            f"resuming {self.run_dir} at epoch {self.epoch + 1}, batch {self.batches_done}, "
            f"step {self.step}",
            self.show,
        )

    def _position_loader(self, ck: dict) -> dict | None:
        """Stand the training loader where the checkpoint's epoch stands. Saved by another
        number of processes: the new ranks share the rest of the epoch's global order, and
        ``batches_done``, ``step`` and ``resumed_at`` are re-based to this world size
        (:mod:`~hyperframes.train._resume`); returns the ``resize`` log record then, else None."""
        path, state = ck.get("path"), ck.get("loader")
        if state is None:  # written before loader states: continued by the same world size
            bs = self.cfg.data.batch_size
            self.train_loader.set_epoch(self.epoch, start=self.batches_done * bs)
            return None
        try:
            self.train_loader.load_state_dict(state)
        except ConfigError as e:
            raise ConfigError(f"checkpoint {path}: {e}") from None
        saved_world, old_spe = ck.get("world_size"), ck.get("steps_per_epoch")
        for key, value in (("world_size", saved_world), ("steps_per_epoch", old_spe)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ConfigError(f"checkpoint {path}: {key} must be an integer >= 1")
        assert isinstance(saved_world, int) and isinstance(old_spe, int)  # checked above
        if state["epoch"] != self.epoch:
            raise ConfigError(
                f"checkpoint {path}: its loader state is in epoch {state['epoch']}, its "
                f"training in epoch {self.epoch}; the checkpoint is damaged"
            )
        if saved_world == self.d.world_size:
            return None
        before = self.step
        self.batches_done, self.step = resized_position(
            epoch=self.epoch,
            micro_per_epoch=self.micro_per_epoch,
            micro_left=len(self.train_loader),
            accumulate=self.cfg.train.accumulate,
        )
        self.resumed_at = rescaled_resumed_at(
            self.resumed_at, old_steps_per_epoch=old_spe, steps_per_epoch=self.steps_per_epoch
        )
        self._saved_at = self.step, self.batches_done
        _say(
            f"{saved_world} -> {self.d.world_size} process(es): continuing epoch "
            f"{self.epoch + 1} at sample {state['samples_yielded']}/{state['epoch_length']} of "
            f"its global order; step {before} of {saved_world} process(es) is step {self.step} "
            f"of {self.total_steps} here (batch {self.batches_done}/{self.micro_per_epoch})",
            self.show,
        )
        return {
            "kind": "resize",
            "epoch": self.epoch + 1,
            "step": self.step,
            "saved_step": before,
            "world_size": self.d.world_size,
            "saved_world_size": saved_world,
            "samples_yielded": state["samples_yielded"],
            "epoch_length": state["epoch_length"],
        }

    # -- training ---------------------------------------------------------------------------
    def _loss(self, x, batch, target):
        """``(loss, correct, count)`` of one micro-batch: the task's loss (after its batch
        mixing), plus the model's auxiliary loss when it has one."""
        mask = batch.mask.to(self.device)
        with autocast(self.device, *self.amp):
            x, mixed = self.task.mix(x, target, rank=self.d.rank, step=self.step)
            out = forward(self.net, x, mask)
            aux = None
            if self.use_aux:
                out, aux = out
            out = out.float()
            loss = self.task.loss(out, target, mixed=mixed)
            if aux is not None:
                w = aux_weight(self.step, self.total_steps, initial=self.cfg.train.aux_weight)
                loss = loss + w * self.model.aux_loss(aux, x)
            correct = self.task.correct(out, target)
        return loss, correct, target.shape[0]

    def _optimizer_step(self) -> None:
        cfg = self.cfg
        drop_g_grads(self.model, cfg, self.epoch)  # keyframe models: F's phase leaves G alone
        lr = lr_at(
            self.step,
            self.total_steps,
            peak=self.peak_lr,
            warmup=self.warmup,
            schedule=cfg.train.schedule,
            min_lr=cfg.train.min_lr,
            resumed_at=self.resumed_at,
        )
        for g in self.optimizer.param_groups:
            g["lr"] = lr
        if self.scaler is not None:
            self.scaler.unscale_(self.optimizer)
        if cfg.train.clip_grad:
            nn.utils.clip_grad_norm_(self.model.parameters(), cfg.train.clip_grad)
        if self.scaler is not None:
            self.scaler.step(self.optimizer)
            self.scaler.update()
        else:
            self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        self.step += 1
        self.lr = lr

    def _train_epoch(self, t_run: float) -> None:
        cfg, d = self.cfg, self.d
        acc = cfg.train.accumulate
        self.net.train()
        freeze_phase(self.model, cfg, self.epoch)
        n = self.micro_per_epoch
        bar = EpochProgress(
            self.show, n - self.batches_done, f"epoch {self.epoch + 1}/{cfg.train.epochs}"
        )
        es = self.epoch_state
        prefetched = isinstance(self.train_loader, PrefetchLoader)
        self._prepare_at = self.batches_done
        it = iter(self.train_loader)  # positioned by _setup / _position_loader / _end_epoch
        i = i0 = self.batches_done
        try:
            while i < n:
                t0 = time.perf_counter()
                item = next(it)
                if prefetched:  # wait for the batch prepared on the side stream: data wait
                    self._sync()
                t1 = time.perf_counter()
                batch, x, target = item[1] if prefetched else self._inputs(item, i)
                group_start = i0 + ((i - i0) // acc) * acc  # groups count from the resume
                group = min(acc, n - group_start)
                last_in_group = i + 1 == group_start + group
                sync = d.active and not last_in_group
                ctx: contextlib.AbstractContextManager = contextlib.nullcontext()
                if sync:  # d.active: self.net is the DistributedDataParallel wrapper
                    assert isinstance(self.net, nn.parallel.DistributedDataParallel)
                    ctx = self.net.no_sync()
                torch.manual_seed(_step_seed(cfg.train.seed, d.rank, self.epoch, i))
                with ctx:
                    loss, correct, count = self._loss(x, batch, target)
                    scaled = loss / group
                    if self.scaler is not None:
                        self.scaler.scale(scaled).backward()
                    else:
                        scaled.backward()
                es["loss_sum"] += float(loss.detach()) * count
                es["correct"] += float(correct)
                es["count"] += count
                i += 1
                self.samples += count * d.world_size
                if last_in_group:
                    self._optimizer_step()
                    self.batches_done = i
                self._sync()
                t2 = time.perf_counter()
                es["wait"] += t1 - t0
                es["compute"] += t2 - t1
                self._after_micro_step(bar, last_in_group, t_run, float(loss.detach()))
        finally:
            bar.close()
            del it

    def _batch_frames(self, batch, i: int):
        """``batch`` and its contract at the T this micro-batch draws (``data.frames: [8,
        16]``, :mod:`~hyperframes.train._frames`); as they are for one T."""
        choices = self.cfg.data.frame_choices
        contract = self.bundle.contract
        if not choices or len(choices) == 1:
            return batch, contract
        t, offset = draw_frames(choices, self.cfg.train.seed, self.epoch, i)
        if t == contract.frames:
            return batch, contract
        return narrow_batch(batch, t, offset), dataclasses.replace(contract, frames=t)

    def _after_micro_step(self, bar, stepped: bool, t_run: float, loss: float) -> None:
        cfg, es = self.cfg, self.epoch_state
        busy = es["wait"] + es["compute"]
        rate = es["count"] * self.d.world_size / busy if busy > 0 else 0.0
        wait = es["wait"] / busy if busy > 0 else 0.0
        done = self.step
        now = time.perf_counter() - t_run
        steps_this_session = max(done - self._start_step, 1)
        eta = now / steps_this_session * (self.total_steps - done)
        bar.update(
            f"loss {es['loss_sum'] / max(es['count'], 1):.3f}, {rate:.0f} samples/s, "
            f"data wait {wait:.0%}, ETA {format_duration(eta)}"
        )
        if not stepped:
            return
        mid_epoch = self.batches_done < self.micro_per_epoch
        if done % cfg.train.log_every == 0:
            self.logger.log(
                {
                    "kind": "step",
                    "epoch": self.epoch + 1,
                    "step": done,
                    "lr": self.lr,
                    "loss": loss,
                    "samples_per_s": rate,
                    "data_wait_share": wait,
                }
            )
        stop = self.stop_at is not None and done >= self.stop_at
        if mid_epoch and (stop or (cfg.train.save_every and done % cfg.train.save_every == 0)):
            self.elapsed = self._elapsed_base + now
            self._save("last.pt", {})
        if self._stop_signal():
            # also after an epoch's last step: resuming then validates the epoch
            self._save_where_stopped(now)
            raise _Stopped
        if mid_epoch and stop:
            raise _Stopped

    def _validate(self) -> dict:
        b = self.bundle
        pred = predict(
            self.model,
            self.val_loader,
            task=self.task,
            contract=b.contract,
            device=self.device,
            num_classes=b.num_classes,
            amp=self.amp,
            dist=self.d,
        )
        return self.task.metrics(pred)

    def _end_epoch(self, t_run: float, t_epoch: float) -> dict:
        cfg, es = self.cfg, self.epoch_state
        busy = es["wait"] + es["compute"]
        self.totals["wait"] += es["wait"]
        self.totals["compute"] += es["compute"]
        record = {
            "kind": "epoch",
            "epoch": self.epoch + 1,
            "step": self.step,
            "lr": self.lr,
            "train_loss": es["loss_sum"] / max(es["count"], 1),
            self.task.train_metric: es["correct"] / max(es["count"], 1),
        }
        metrics: dict = {}
        last = self.epoch + 1 == cfg.train.epochs
        if (self.epoch + 1) % cfg.train.eval_every == 0 or last:
            metrics = self._validate()
            record.update(self.task.epoch_record(metrics))
            save_epoch_picture(self)  # keyframe models: K_t beside PCA(H_t)
        record.update(
            {
                "samples_per_s": es["count"] * self.d.world_size / busy if busy else 0.0,
                "data_wait_share": es["wait"] / busy if busy else 0.0,
                "epoch_seconds": time.perf_counter() - t_epoch,
                "elapsed_seconds": self._elapsed_base + time.perf_counter() - t_run,
            }
        )
        self.history.append(record)
        if self.d.main:  # before last.pt: a run resumed from it keeps this record
            self.logger.log(record)
        self.epoch += 1
        self.batches_done = 0
        self.train_loader.set_epoch(self.epoch)
        self.epoch_state = self._fresh_epoch_state()
        self.elapsed = record["elapsed_seconds"]
        key = self.task.best_key
        improved = key in record and self.task.improved(record[key], self.best["value"])
        if improved:
            self.best = {
                "metric": key,
                "value": record[key],
                "epoch": self.epoch,
            }
            self.best_metrics = metrics
        self._save("last.pt", metrics)
        if improved:
            self._save("best.pt", metrics)
        if self.d.main:
            self.logger.write_csv(self.history)
            now = time.perf_counter()
            if last or now - self._plotted >= PLOT_EVERY_S:  # short epochs: not every time
                plot_curves(
                    self.history,
                    self.run_dir / "curves.png",
                    metrics=self.task.curves,
                    title=self.task.curves_title,
                )
                self._plotted = now
        return record

    def _epoch_line(self, rec: dict) -> str:
        parts = [f"epoch {rec['epoch']}/{self.cfg.train.epochs}", f"loss {rec['train_loss']:.3f}"]
        parts += [f"{label} {rec[key]:.3f}" for key, label in self.task.shown if key in rec]
        parts.append(f"{rec['samples_per_s']:.0f} samples/s")
        parts.append(f"data wait {rec['data_wait_share']:.0%}")
        left = (self.cfg.train.epochs - rec["epoch"]) * rec["epoch_seconds"]
        parts.append(f"ETA {format_duration(left)}")
        return " | ".join(parts)

    def train(self) -> dict:
        if self.complete:
            return self._already_complete()
        with self.stops:
            try:
                summary = self._train()
            except BaseException:
                if getattr(self, "logger", None) is not None:
                    self.logger.fail()  # an MLflow run ends FAILED, not left RUNNING
                raise
        if self.signum:
            raise self._interrupted()
        return summary

    def _train(self) -> dict:
        self._setup()
        cfg = self.cfg
        b = self.bundle
        _say(
            f"training {cfg.model.name} (T={cfg.data.frames}, {b.layout}) on "
            f"{len(b.train_ids)} train / {len(b.val_ids)} val videos ({b.split_source} split), "
            f"{self.total_steps} steps, lr {self.peak_lr:g}, global batch {self.global_batch}, "
            f"{self.d.world_size} process(es) -> {self.run_dir}",
            self.show,
        )
        fresh = self.step == 0 and self.epoch == 0 and self.batches_done == 0
        if fresh and cfg.train.flow_pretrain_epochs:
            pretrain_on_flow(
                cfg, self.model, b, self.store, self.device, lambda m: _say(m, self.show)
            )
        t_run = time.perf_counter()
        stopped = False
        try:
            while self.epoch < cfg.train.epochs:
                if self._stop_signal():  # came during set-up or validation
                    self._save_where_stopped(time.perf_counter() - t_run)
                    raise _Stopped
                t_epoch = time.perf_counter()
                self._train_epoch(t_run)
                rec = self._end_epoch(t_run, t_epoch)
                _say(self._epoch_line(rec), self.show)
                if self.stop_at is not None and self.step >= self.stop_at:
                    stopped = self.epoch < cfg.train.epochs
                    break
            if not stopped and self._stop_signal() and self._evaluation_pending():
                stopped = True  # trained to the end, but no time for the evaluation left
            elif not stopped:
                self.signum = 0  # nothing left to stop: finish the run
        except _Stopped:
            stopped = True
        finally:
            self.logger.close()
        if stopped and not self.signum:
            _say(f"stopped at step {self.step}; continue with --resume", self.show)
        return self._finish(stopped)

    def _evaluation_pending(self) -> bool:
        return self.cfg.eval.clips > 1 or self.cfg.eval.crops > 1

    def _finish(self, stopped: bool = False) -> dict:
        cfg, b, d = self.cfg, self.bundle, self.d
        barrier(d)
        busy = self.totals["wait"] + self.totals["compute"]
        summary = {
            "run_dir": str(self.run_dir),
            "task": b.task,
            "model": cfg.model.name,
            "frames": cfg.data.frames,
            "layout": b.layout,
            "classes": b.classes,
            "best": self.best,
            "final": self.history[-1] if self.history else {},
            "val_metrics": self.best_metrics,
            "train_seconds": self.elapsed,
            "data_wait_share": self.totals["wait"] / busy if busy else 0.0,
            "samples_per_s": self.samples / busy if busy else 0.0,
            "epochs": self.epoch,
            "steps": self.step,
            "stopped": stopped,
            "stop_signal": signal.Signals(self.signum).name if self.signum else None,
            "world_size": d.world_size,
            "lr": self.peak_lr,
            "global_batch": self.global_batch,
            "split": {
                "source": b.split_source,
                "train_videos": len(b.train_ids),
                "val_videos": len(b.val_ids),
            },
        }
        summary.update(self.task.summary(self.best_metrics))
        if d.main:
            if self.best_metrics.get("confusion") is not None:
                plot_confusion(
                    self.best_metrics["confusion"],
                    b.classes,
                    self.run_dir / "confusion.png",
                    title=f"{cfg.model.name} T={cfg.data.frames}, epoch {self.best['epoch']} "
                    "(validation)",
                )
            if self._evaluation_pending() and not stopped:
                from ._eval import evaluate

                summary["video_level"] = evaluate(
                    self.run_dir / "best.pt",
                    split=cfg.data.val_split,
                    clips=cfg.eval.clips,
                    crops=cfg.eval.crops,
                    workers=loader_workers(cfg),
                    device=str(self.device),
                    out=self.run_dir / "eval_metrics.json",
                    verbose=False,
                )
            text = json.dumps(_clean(summary), indent=1, default=float)
            (self.run_dir / "summary.json").write_text(text + "\n")
            self.logger.finish("KILLED" if stopped else "FINISHED")
        if self.signum and d.active and d.main:
            # said here, before the ranks part: torchrun stops the other workers (this one
            # included) as soon as one exits
            print(
                f"{self._interrupted().where}; continue with the same torchrun command and "
                "--resume",
                file=sys.stderr,
                flush=True,
            )
        barrier(d)
        return summary


def _mlflow_options(cfg: Config) -> dict:
    """The MLflow logger's options (:mod:`~hyperframes.train._mlflow`) from ``cfg.train``."""
    t = cfg.train
    return {"uri": t.mlflow_uri, "experiment": t.mlflow_experiment, "params": cfg.to_dict()}


def _log_records(ck: dict | None) -> int | None:
    """A checkpoint's ``log_records`` (None when absent or not a count)."""
    value = ck.get("log_records") if ck is not None else None
    ok = isinstance(value, int) and not isinstance(value, bool) and value >= 0
    return value if ok else None


def _step_seed(seed: int, rank: int, epoch: int, batch: int) -> int:
    """The global torch seed of one micro-step (dropout, drop-path...): a function of where
    training stands only, so neither data workers nor resuming change what a model draws."""
    seq = np.random.SeedSequence([seed, rank, epoch, batch], spawn_key=(5,))
    return int(seq.generate_state(1, dtype=np.uint64)[0] & ((1 << 63) - 1))


class _Stopped(Exception):
    """Raised inside the epoch loop when ``stop_after_steps`` is reached mid-epoch."""
