"""What resuming a run may change: ``train.epochs``, and what it says when nothing is left.

* A run is **complete** when every epoch is trained and its ``summary.json`` written (a run
  stopped before its final evaluation is not: resuming finishes it). Resuming a complete run
  trains nothing; :func:`complete_message` says so, and how to train longer.
* ``train.epochs`` may be **raised**, or lowered to no fewer than the epochs trained. The
  learning-rate schedule then continues from the rate it has at the resume step
  (:func:`continued_schedule`, ``resumed_at`` of :func:`~hyperframes.train._loop._schedule.lr_at`)
  instead of being planned afresh over the new total, which would move the rate at once.
* A cosine schedule that has already decayed to ``train.min_lr`` = 0 cannot continue usefully
  (every further step at lr 0), and restarting it would be a warm restart, not a longer run:
  raising its epochs is refused, with the way to train longer (a new run from its weights).
* The **number of processes** may change (preempted on 2 nodes, resumed on 1): the checkpoint
  holds the training loader's state, the position reached in the epoch's *global* order (all
  ranks together; :mod:`hyperframes.data._loader_state`), and the new ranks share the rest of
  that order. Progress is measured in global samples, so the step counter is re-based to the
  new world size (:func:`resized_position`): with ``W'`` processes of batch ``b`` (and
  ``train.accumulate`` ``a``) an epoch has ``S' = ceil(ceil(ceil(N / W') / b) / a)`` steps, the
  ``R`` samples left in the epoch take ``ceil(ceil(ceil(R / W') / b) / a)`` of them, and the
  run stands at step ``(epoch + 1) * S'`` minus those: the step the new world size would have
  reached having read the same samples. ``train.epochs * S'`` is the new total and
  ``warmup_epochs * S'`` the new warmup, so the learning rate is the same function of the
  fraction of training done (up to the rounding of one step), and a re-planning point
  ``resumed_at`` is moved to the same fraction (:func:`rescaled_resumed_at`). The peak rate
  follows the linear scaling rule for the new global batch when ``train.base_batch_size`` is
  set (unchanged otherwise). ``log.jsonl`` gets a ``resize`` record where the step numbers
  change scale.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path

from ..._core._errors import ConfigError
from .._config._config import Config
from ._schedule import lr_at

__all__ = [
    "check_epochs",
    "complete_message",
    "continued_schedule",
    "read_resumed_at",
    "rescaled_resumed_at",
    "resized_position",
]


def _planned_epochs(ck: Mapping, cfg: Config) -> int:
    """The ``train.epochs`` the checkpoint's schedule was planned for."""
    train = ck["config"].get("train")
    saved = train.get("epochs", cfg.train.epochs) if isinstance(train, Mapping) else 0
    return saved if isinstance(saved, int) and not isinstance(saved, bool) else 0


def _where(ck: Mapping) -> tuple[int, bool]:
    """(epochs trained, whether part of the next one is)."""
    return int(ck["epoch"]), int(ck["batches_done"]) > 0


def _decayed_to_zero(ck: Mapping, cfg: Config) -> bool:
    """Whether the checkpoint's cosine schedule has run its course down to lr 0."""
    done, partial = _where(ck)
    ended = done >= _planned_epochs(ck, cfg) and not partial
    return ended and cfg.train.schedule == "cosine" and cfg.train.min_lr == 0


def _new_run_hint(run_dir: Path) -> str:
    return (
        "To train longer, start a new run from its weights: override "
        f"model.pretrained={run_dir / 'best.pt'} in a new out folder"
    )


def check_epochs(ck: Mapping, cfg: Config, run_dir: Path) -> bool:
    """Check ``cfg.train.epochs`` against where the checkpoint ``ck`` stands
    (:class:`ConfigError` when it cannot continue, module doc); True when the run is complete."""
    done, partial = _where(ck)
    epochs, planned = cfg.train.epochs, _planned_epochs(ck, cfg)
    if epochs < done + partial:
        trained = f"{done} epochs" + (" and part of the next" if partial else "")
        raise ConfigError(
            f"resume: train.epochs={epochs} but {run_dir} has trained {trained}; "
            f"allowed: {done + partial} or more"
        )
    if epochs > done and epochs != planned and _decayed_to_zero(ck, cfg):
        raise ConfigError(
            f"resume: train.epochs {planned} -> {epochs}, but {run_dir} has finished its "
            f"cosine schedule (step {int(ck['step'])}, lr 0 = train.min_lr): continuing it "
            "would train at lr 0, and restarting it would jump the rate back to its peak (a "
            f"warm restart, not a longer run). {_new_run_hint(run_dir)}"
        )
    if epochs > done or partial:
        return False
    try:
        summary = json.loads((run_dir / "summary.json").read_text())
    except (OSError, ValueError):
        return False  # never finished: resuming finishes it (summary, evaluation)
    return isinstance(summary, dict) and summary.get("stopped") is False


def complete_message(ck: Mapping, cfg: Config, run_dir: Path) -> str:
    """What resuming the complete run ``run_dir`` says: where it stands, and how to train it
    longer (more epochs, or a new run from its weights once its cosine is at lr 0)."""
    best = ck.get("best")
    if not isinstance(best, Mapping):
        best = {}
    said = f"{run_dir} is complete: {int(ck['epoch'])}/{cfg.train.epochs} epochs"
    value = best.get("value")
    if isinstance(value, int | float) and math.isfinite(value):
        said += f" (best {best.get('metric')} {value:.4g} at epoch {best.get('epoch')})"
    said += "; nothing to train. "
    if _decayed_to_zero(ck, cfg):
        return said + f"Its cosine schedule has decayed to lr 0. {_new_run_hint(run_dir)}"
    more = cfg.train.epochs + max(cfg.train.epochs // 2, 1)
    return said + (
        f"To train it longer, resume with more epochs: override train.epochs={more} "
        "(the learning rate continues from where it stands)"
    )


def continued_schedule(
    ck: Mapping,
    cfg: Config,
    *,
    step: int,
    steps_per_epoch: int,
    peak: float,
    warmup: int,
    resumed_at: tuple[int, float] | None,
) -> tuple[int, float] | None:
    """The ``resumed_at`` of a run resumed at ``step`` from ``ck`` with ``cfg``: the old one,
    or, when ``train.epochs`` changed after the cosine began, ``(step, the rate the old
    schedule gives there)``."""
    planned = _planned_epochs(ck, cfg)
    if cfg.train.schedule != "cosine" or planned == cfg.train.epochs or step <= warmup:
        return resumed_at
    rate = lr_at(
        step,
        planned * steps_per_epoch,
        peak=peak,
        warmup=warmup,
        schedule=cfg.train.schedule,
        min_lr=cfg.train.min_lr,
        resumed_at=resumed_at,
    )
    return (step, rate)


def read_resumed_at(value, path) -> tuple[int, float] | None:
    """A checkpoint's ``resumed_at`` (``[step, rate]`` or None), checked: a checkpoint is
    untrusted input."""
    if value is None:
        return None
    ok = isinstance(value, list | tuple) and len(value) == 2
    if ok:
        step, rate = value
        ok = (
            isinstance(step, int)
            and not isinstance(step, bool)
            and step >= 0
            and isinstance(rate, int | float)
            and not isinstance(rate, bool)
            and math.isfinite(rate)
            and rate >= 0
        )
    if not ok:
        raise ConfigError(
            f"checkpoint {path}: resumed_at: expected [step, learning rate] or None, got "
            f"{value!r:.80}"
        )
    return int(value[0]), float(value[1])


def resized_position(
    *, epoch: int, micro_per_epoch: int, micro_left: int, accumulate: int
) -> tuple[int, int]:
    """``(batches_done, step)`` of a run resumed in epoch ``epoch`` (0-based) with another world
    size, whose ranks now read ``micro_per_epoch`` micro-batches in a whole epoch and
    ``micro_left`` in the rest of this one: the micro-batches and optimizer steps the new world
    size would have made to get there (module doc). The epoch then ends at step
    ``(epoch + 1) * ceil(micro_per_epoch / accumulate)``, as its later epochs do."""
    if not 0 <= micro_left <= micro_per_epoch:
        raise ConfigError(
            f"resume: {micro_left} micro-batches left in an epoch of {micro_per_epoch}; the "
            "checkpoint's loader state does not fit this data"
        )
    per_epoch = math.ceil(micro_per_epoch / accumulate)
    step = (epoch + 1) * per_epoch - math.ceil(micro_left / accumulate)
    return micro_per_epoch - micro_left, step


def rescaled_resumed_at(
    resumed_at: tuple[int, float] | None, *, old_steps_per_epoch: int, steps_per_epoch: int
) -> tuple[int, float] | None:
    """A schedule's re-planning point ``(step, rate)`` moved from steps of
    ``old_steps_per_epoch`` to steps of ``steps_per_epoch`` per epoch (the same fraction of
    training; the rate is kept)."""
    if resumed_at is None or old_steps_per_epoch == steps_per_epoch:
        return resumed_at
    step = round(resumed_at[0] * steps_per_epoch / max(old_steps_per_epoch, 1))
    return step, resumed_at[1]
