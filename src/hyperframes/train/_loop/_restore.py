"""Restoring a run from its ``last.pt``: the weights, optimizer, gradient scaler and RNG
states, the :class:`~hyperframes.train._loop._state.TrainState`, the training loader's position in
the epoch (re-based when the number of processes changed) and the schedule continued when
``train.epochs`` changed. What a resume may change, and the arithmetic of it, is
:mod:`~hyperframes.train._loop._resume`'s.
"""

from __future__ import annotations

from ..._core._errors import ConfigError
from ...checkpoint import load_weights, set_rng_state
from ._parts import RunContext, RunParts
from ._resume import continued_schedule, rescaled_resumed_at, resized_position
from ._state import TrainState

__all__ = ["restore"]


def restore(ctx: RunContext, parts: RunParts, ck: dict) -> tuple[TrainState, dict | None]:
    """The model, optimizer, scaler and RNG states from ``ck``, and the training loader stood
    where it stands; ``(state, resize)``: the training state and, when ``ck`` was saved by
    another number of processes, the ``resize`` log record (else None)."""
    load_weights(parts.model, ck)
    parts.optimizer.load_state_dict(ck["optimizer"])
    if parts.scaler is not None and ck.get("scaler") is not None:
        parts.scaler.load_state_dict(ck["scaler"])
    state = TrainState.from_checkpoint(ck)
    set_rng_state(ck["rng"])
    ctx.say(
        f"resuming {ctx.run_dir} at epoch {state.epoch + 1}, batch {state.batches_done}, "
        f"step {state.step}"
    )
    resized = _position_loader(ctx, parts, state, ck)
    _continue_schedule(ctx, parts, state, ck)
    return state, resized


def _position_loader(ctx: RunContext, parts: RunParts, state: TrainState, ck: dict):
    """Stand the training loader where the checkpoint's epoch stands. Saved by another
    number of processes: the new ranks share the rest of the epoch's global order, and
    ``batches_done``, ``step`` and ``resumed_at`` are re-based to this world size
    (:mod:`~hyperframes.train._loop._resume`); returns the ``resize`` log record then, else None."""
    path, loader_state, loader = ck.get("path"), ck.get("loader"), parts.train_loader
    if loader_state is None:  # written before loader states: continued by the same world size
        loader.set_epoch(state.epoch, start=state.batches_done * ctx.cfg.data.batch_size)
        return None
    try:
        loader.load_state_dict(loader_state)
    except ConfigError as e:
        raise ConfigError(f"checkpoint {path}: {e}") from None
    saved_world, old_spe = ck.get("world_size"), ck.get("steps_per_epoch")
    for key, value in (("world_size", saved_world), ("steps_per_epoch", old_spe)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ConfigError(f"checkpoint {path}: {key} must be an integer >= 1")
    assert isinstance(saved_world, int) and isinstance(old_spe, int)  # checked above
    if loader_state["epoch"] != state.epoch:
        raise ConfigError(
            f"checkpoint {path}: its loader state is in epoch {loader_state['epoch']}, its "
            f"training in epoch {state.epoch}; the checkpoint is damaged"
        )
    if saved_world == ctx.d.world_size:
        return None
    return _rebase(ctx, parts, state, loader_state, saved_world, old_spe)


def _rebase(
    ctx: RunContext, parts: RunParts, state: TrainState, loader_state, saved_world, old_spe
):
    """Re-base ``state`` to this world size (the loader already stands where it stands); the
    ``resize`` log record."""
    sizes, before = parts.sizes, state.step
    state.batches_done, state.step = resized_position(
        epoch=state.epoch,
        micro_per_epoch=sizes.micro_per_epoch,
        micro_left=len(parts.train_loader),
        accumulate=ctx.cfg.train.accumulate,
    )
    state.resumed_at = rescaled_resumed_at(
        state.resumed_at, old_steps_per_epoch=old_spe, steps_per_epoch=sizes.steps_per_epoch
    )
    ctx.say(
        f"{saved_world} -> {ctx.d.world_size} process(es): continuing epoch "
        f"{state.epoch + 1} at sample {loader_state['samples_yielded']}/"
        f"{loader_state['epoch_length']} of its global order; step {before} of {saved_world} "
        f"process(es) is step {state.step} of {sizes.total_steps} here (batch "
        f"{state.batches_done}/{sizes.micro_per_epoch})"
    )
    return {
        "kind": "resize",
        "epoch": state.epoch + 1,
        "step": state.step,
        "saved_step": before,
        "world_size": ctx.d.world_size,
        "saved_world_size": saved_world,
        "samples_yielded": loader_state["samples_yielded"],
        "epoch_length": loader_state["epoch_length"],
    }


def _continue_schedule(ctx: RunContext, parts: RunParts, state: TrainState, ck: dict) -> None:
    """With ``train.epochs`` changed on resume: continue the cosine from the rate it has
    now (:func:`~hyperframes.train._loop._resume.continued_schedule`)."""
    cfg, sizes, before = ctx.cfg, parts.sizes, state.resumed_at
    state.resumed_at = continued_schedule(
        ck,
        cfg,
        step=state.step,
        steps_per_epoch=sizes.steps_per_epoch,
        peak=sizes.peak_lr,
        warmup=sizes.warmup,
        resumed_at=before,
    )
    if state.resumed_at != before:
        assert state.resumed_at is not None  # changed: a new (step, rate)
        planned, rate = ck["config"]["train"]["epochs"], state.resumed_at[1]
        ctx.say(
            f"train.epochs {planned} -> {cfg.train.epochs}: the cosine schedule "
            f"continues from lr {rate:.3g} at step {state.step} down to "
            f"{cfg.train.min_lr:g} at step {sizes.total_steps} (not restarted)"
        )
