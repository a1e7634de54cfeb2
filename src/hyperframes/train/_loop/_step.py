"""``StepRunner``: one micro-batch of training, and the optimizer step that ends its group.

A micro-batch is prepared (the T it draws, the input contract's ``prepare``, the task's
targets: :meth:`StepRunner._inputs`), its loss computed under autocast (the task's mixing and
loss, plus the model's auxiliary loss: :meth:`StepRunner._loss`) and back-propagated, scaled
by the size of its group of ``train.accumulate`` micro-batches (and by the gradient scaler
with float16). With several processes the gradients are only all-reduced on a group's last
micro-batch (``no_sync`` before). After the last, :meth:`StepRunner._optimizer_step` sets the
learning rate of the step, unscales, clips and steps, and counts the step in the
:class:`~hyperframes.train._loop._state.TrainState`. The global torch generator is reseeded from
``(seed, rank, epoch, batch)`` before each micro-batch (dropout, drop-path).

On a CUDA device (or with :attr:`StepRunner.prefetch`) the training batches come through a
:class:`~hyperframes.data.PrefetchLoader` (:meth:`StepRunner.feed`): the next micro-batch is
prepared on a side stream while this one runs (:mod:`hyperframes.train._loop._trainer`).
"""

from __future__ import annotations

import contextlib

import numpy as np
import torch
from torch import nn

from ...data import PrefetchLoader
from ...models import aux_weight
from .._config._frames import draw_frames, narrow_batch
from .._eval._predict import autocast, forward
from ._keyframe_recipe import drop_g_grads, freeze_phase
from ._parts import RunContext, RunParts
from ._schedule import lr_at
from ._state import TrainState

__all__ = ["StepRunner"]


def _step_seed(seed: int, rank: int, epoch: int, batch: int) -> int:
    """The global torch seed of one micro-step (dropout, drop-path...): a function of where
    training stands only, so neither data workers nor resuming change what a model draws."""
    seq = np.random.SeedSequence([seed, rank, epoch, batch], spawn_key=(5,))
    return int(seq.generate_state(1, dtype=np.uint64)[0] & ((1 << 63) - 1))


class StepRunner:
    """Runs the micro-batches and optimizer steps of a run (module doc) on ``net`` (the model
    as trained: auxiliary output, DDP), advancing ``state``."""

    #: training batches through a PrefetchLoader (moved and prepared on a side CUDA stream
    #: one step ahead): None, on a CUDA device; True / False to choose (tests compare both)
    prefetch: bool | None = None

    def __init__(self, ctx: RunContext, parts: RunParts, net: nn.Module, state: TrainState):
        self.cfg, self.device, self.d = ctx.cfg, ctx.device, ctx.d
        #: the run's stop requests: a step in progress is finished whatever they say (the
        #: loop asks the ranks after it)
        self.stops = ctx.stops
        self.parts, self.net, self.state = parts, net, state
        self.model, self.task = parts.model, parts.task
        self.lr = parts.optimizer.param_groups[0]["lr"]  # the rate of the last step
        self.prefetched = False  # set by feed
        self._prepare_at = 0  # the micro-batch the prefetcher prepares next (_prepare_next)

    @property
    def step(self) -> int:
        return self.state.step

    @property
    def epoch(self) -> int:
        return self.state.epoch

    # -- the batches ------------------------------------------------------------------------
    def feed(self, loader):
        """``loader``'s batches as the steps take them: through a PrefetchLoader that
        prepares each one on a side stream (:attr:`prefetch`, by default on a CUDA device),
        else as they are."""
        self.prefetched = self.device.type == "cuda" if self.prefetch is None else self.prefetch
        if not self.prefetched:
            return loader
        return PrefetchLoader(loader, self.device, prepare=self._prepare_next, move=False)

    def _prepare_next(self, batch) -> tuple:
        """The prefetcher's ``prepare``: :meth:`_inputs` of the next micro-batch (batches come
        in order, one ahead of the step; :meth:`start_epoch` sets where an epoch's first is)."""
        i, self._prepare_at = self._prepare_at, self._prepare_at + 1
        return self._inputs(batch, i)

    def _inputs(self, batch, i: int) -> tuple:
        """Micro-batch ``i``'s ``(batch, x, target)``: the batch at the T it draws, the model's
        input and the task's targets (computed on the CPU batch), both on the device."""
        batch, contract = self._batch_frames(batch, i)
        x = contract.prepare(batch.frames, device=self.device, flow=batch.flow, audio=batch.audio)
        return batch, x, self.task.targets(batch).to(self.device, non_blocking=True)

    def _batch_frames(self, batch, i: int):
        """``batch`` and its contract at the T this micro-batch draws (``data.frames: [8,
        16]``, :mod:`~hyperframes.train._config._frames`); as they are for one T."""
        choices = self.cfg.data.frame_choices
        contract = self.parts.bundle.contract
        if not choices or len(choices) == 1:
            return batch, contract
        t, offset = draw_frames(choices, self.cfg.train.seed, self.epoch, i)
        if t == contract.frames:
            return batch, contract
        return narrow_batch(batch, t, offset), contract.replace(frames=t)

    def wait_for_data(self) -> None:
        """Prefetching: wait for the batch prepared on the side stream (the data wait)."""
        if self.prefetched:
            self.sync()

    def sync(self) -> None:
        """Wait for the step on a CUDA device (timing). Prefetching, only for the caller's
        stream: the side stream's work on the next batch is the next wait for data."""
        if self.device.type != "cuda":
            return
        if self.prefetched:
            torch.cuda.current_stream(self.device).synchronize()
        else:
            torch.cuda.synchronize(self.device)

    # -- the step ---------------------------------------------------------------------------
    def start_epoch(self) -> None:
        """Before an epoch's first micro-batch (or the first after a resume)."""
        self.net.train()
        freeze_phase(self.model, self.cfg, self.epoch)
        self._prepare_at = self.state.batches_done

    def micro_step(self, item, i: int, *, first: int) -> tuple[bool, float]:
        """Train on ``item``, micro-batch ``i`` of the epoch (this session's first: ``first``;
        accumulation groups count from it); ``(stepped, loss)``: whether the optimizer stepped
        after it (its group's last), and its loss."""
        cfg, d, acc = self.cfg, self.d, self.cfg.train.accumulate
        n = self.parts.sizes.micro_per_epoch
        batch, x, target = item[1] if self.prefetched else self._inputs(item, i)
        group_start = first + ((i - first) // acc) * acc
        group = min(acc, n - group_start)
        last_in_group = i + 1 == group_start + group
        ctx: contextlib.AbstractContextManager = contextlib.nullcontext()
        if d.active and not last_in_group:  # d.active: self.net is the DDP wrapper
            assert isinstance(self.net, nn.parallel.DistributedDataParallel)
            ctx = self.net.no_sync()
        torch.manual_seed(_step_seed(cfg.train.seed, d.rank, self.epoch, i))
        scaler = self.parts.scaler
        with ctx:
            loss, correct, count = self._loss(x, batch, target)
            scaled = loss / group
            if scaler is not None:
                scaler.scale(scaled).backward()
            else:
                scaled.backward()
        value = float(loss.detach())
        es = self.state.epoch_state
        es["loss_sum"] += value * count
        es["correct"] += float(correct)
        es["count"] += count
        self.state.samples += count * d.world_size
        if last_in_group:
            self._optimizer_step()
            self.state.batches_done = i + 1
        return last_in_group, value

    def _loss(self, x, batch, target):
        """``(loss, correct, count)`` of one micro-batch: the task's loss (after its batch
        mixing), plus the model's auxiliary loss when it has one."""
        mask = batch.mask.to(self.device)
        total = self.parts.sizes.total_steps
        with autocast(self.device, *self.parts.amp):
            x, mixed = self.task.mix(x, target, rank=self.d.rank, step=self.step)
            out = forward(self.net, x, mask)
            aux = None
            if self.parts.use_aux:
                out, aux = out
            out = out.float()
            loss = self.task.loss(out, target, mixed=mixed)
            if aux is not None:
                w = aux_weight(self.step, total, initial=self.cfg.train.aux_weight)
                loss = loss + w * self.model.aux_loss(aux, x)
            correct = self.task.correct(out, target)
        return loss, correct, target.shape[0]

    def _optimizer_step(self) -> None:
        cfg, sizes = self.cfg, self.parts.sizes
        optimizer, scaler = self.parts.optimizer, self.parts.scaler
        drop_g_grads(self.model, cfg, self.epoch)  # keyframe models: F's phase leaves G alone
        lr = lr_at(
            self.step,
            sizes.total_steps,
            peak=sizes.peak_lr,
            warmup=sizes.warmup,
            schedule=cfg.train.schedule,
            min_lr=cfg.train.min_lr,
            resumed_at=self.state.resumed_at,
        )
        for g in optimizer.param_groups:
            g["lr"] = lr
        if scaler is not None:
            scaler.unscale_(optimizer)
        if cfg.train.clip_grad:
            nn.utils.clip_grad_norm_(self.model.parameters(), cfg.train.clip_grad)
        if scaler is not None:
            scaler.step(optimizer)
            scaler.update()
        else:
            optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        self.state.step += 1
        self.lr = lr
