"""What a training run is made of, assembled from its config before the first step.

* :class:`RunContext` -- what was asked: the config, the device, the processes, the run
  folder, whether to print, the stop requests (signals) and ``stop_after_steps``;
* :class:`RunSizes` -- the numbers the schedule and the loop count with: the global batch,
  the peak learning rate, micro-batches and optimizer steps per epoch, the total and the
  warmup in steps;
* :class:`RunParts` -- the store and its data, the task, the model and the network trained
  (auxiliary loss, DDP), the optimizer and its gradient scaler, the loaders;
  :func:`assemble` makes them (and ``split.json``), :func:`wrap_network` the network.

The pieces themselves (model, optimizer, the checks that refuse a run) are
:mod:`~hyperframes.train._loop._setup`'s; the task's are :mod:`~hyperframes.train._tasks._base`'.
"""

from __future__ import annotations

import dataclasses
import json
import math
import random
import sys
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from ..._core._errors import DataError
from ...data import loader
from ...store import open_store
from .._config._config import AUTO_STEPS, Config
from .._config._data import build_data, loader_workers
from .._dist import Dist
from .._tasks._base import create_task
from ._schedule import scaled_lr
from ._setup import WithAux, build_model, build_optimizer, check_leakage_of_split, resolve_amp
from ._stopping import _StopRequests

__all__ = ["FEW_STEPS", "RunContext", "RunParts", "RunSizes", "assemble", "few_steps_warning"]

#: an epoch of fewer optimizer steps than this is warned about (a schedule and metrics of a
#: few steps say little: a small store with one window per video per epoch)
FEW_STEPS = 10


@dataclasses.dataclass(frozen=True)
class RunContext:
    """What the run was asked to do (module doc)."""

    cfg: Config
    device: torch.device
    d: Dist
    run_dir: Path
    #: print progress and messages (this process is rank 0 and progress is wanted)
    show: bool
    stops: _StopRequests
    #: ``stop_after_steps``: stop once the run has made this many optimizer steps in all
    stop_at: int | None = None

    def say(self, msg: str) -> None:
        if self.show:
            print(msg, flush=True)


@dataclasses.dataclass(frozen=True)
class RunSizes:
    """What the loop and the schedule count with (module doc)."""

    global_batch: int
    peak_lr: float
    micro_per_epoch: int
    steps_per_epoch: int
    total_steps: int
    warmup: int


@dataclasses.dataclass
class RunParts:
    """The run's store, data, task, model, optimizer and loaders (module doc)."""

    store: Any
    bundle: Any  # the data: datasets, split, classes, the input contract
    task: Any
    model: nn.Module
    #: (enabled, dtype) of mixed precision
    amp: tuple[bool, torch.dtype | None]
    #: the model's auxiliary loss is trained (``train.aux_weight``)
    use_aux: bool
    optimizer: torch.optim.Optimizer
    scaler: torch.amp.GradScaler | None
    train_loader: Any
    val_loader: Any
    sizes: RunSizes


def assemble(ctx: RunContext) -> RunParts:
    """Open the store, build the data (writing ``split.json``), the task, the model, the
    optimizer and the loaders; the training loader stands at epoch 0."""
    cfg, d = ctx.cfg, ctx.d
    random.seed(cfg.train.seed)
    np.random.seed(cfg.train.seed)
    store = open_store(
        cfg.data.store,
        cache_dir=cfg.data.cache_dir,
        cache_limit=cfg.data.cache_limit,
        check="video" if cfg.data.check == "video" else None,
    )
    b = build_data(cfg, store)
    check_leakage_of_split(cfg, store, b, d, ctx.run_dir)
    if d.main:
        _write_split(store, b, ctx.run_dir / "split.json")
    model = build_model(cfg, b.num_classes, b.contract).to(ctx.device)
    task = create_task(
        b.task,
        b.classes,
        class_weights=cfg.train.class_weights,
        label_smoothing=cfg.train.label_smoothing,
        mixup=cfg.train.mixup,
        cutmix=cfg.train.cutmix,
        seed=cfg.train.seed,
        device=ctx.device,
    )
    amp = resolve_amp(cfg, ctx.device)
    use_aux = (
        cfg.train.aux_weight > 0 and hasattr(model, "forward_with_aux") and cfg.data.frames >= 2
    )
    global_batch = cfg.data.batch_size * d.world_size * cfg.train.accumulate
    peak_lr = scaled_lr(cfg.train.lr, global_batch, cfg.train.base_batch_size)
    optimizer = build_optimizer(cfg, model, peak_lr)
    fp16 = amp[0] and amp[1] == torch.float16
    train_loader = _loader(cfg, d, b.train, train=True)
    val_loader = _loader(cfg, d, b.val, train=False)
    train_loader.set_epoch(0)  # the training loader always stands where training does
    sizes = _sizes(cfg, len(train_loader), global_batch, peak_lr, len(b.train))
    if sizes.steps_per_epoch < FEW_STEPS and d.main:
        items = len(b.train) * cfg.data.repeats
        warning = few_steps_warning(cfg, len(b.train_ids), items, sizes, d, b.train.sampler)
        print(warning, file=sys.stderr)
    return RunParts(
        store=store,
        bundle=b,
        task=task,
        model=model,
        amp=amp,
        use_aux=use_aux,
        optimizer=optimizer,
        scaler=torch.amp.GradScaler("cuda") if fp16 else None,
        train_loader=train_loader,
        val_loader=val_loader,
        sizes=sizes,
    )


def wrap_network(parts: RunParts, ctx: RunContext) -> nn.Module:
    """The network the step trains: the model (returning its auxiliary output too when that
    is trained), in :class:`~torch.nn.parallel.DistributedDataParallel` with several processes."""
    model = parts.model
    net: nn.Module = WithAux(model) if parts.use_aux else model
    if ctx.d.active:
        unused = hasattr(model, "forward_with_aux") and not parts.use_aux
        ids = [ctx.device.index] if ctx.device.type == "cuda" else None
        net = nn.parallel.DistributedDataParallel(
            net, device_ids=ids, find_unused_parameters=unused
        )
    return net


def _write_split(store, b, path: Path) -> None:
    split = {
        "source": b.split_source,
        "train": [store.videos[int(i)].path for i in b.train_ids],
        "val": [store.videos[int(i)].path for i in b.val_ids],
    }
    path.write_text(json.dumps(split, indent=1) + "\n")


def _sizes(cfg: Config, micro: int, global_batch: int, peak_lr: float, items: int) -> RunSizes:
    if micro == 0:
        raise DataError(
            f"the training split has {items} items, fewer than one batch of "
            f"{cfg.data.batch_size} per process with data.drop_last; lower data.batch_size "
            "or set data.drop_last: false"
        )
    steps_per_epoch = math.ceil(micro / cfg.train.accumulate)
    return RunSizes(
        global_batch=global_batch,
        peak_lr=peak_lr,
        micro_per_epoch=micro,
        steps_per_epoch=steps_per_epoch,
        total_steps=cfg.train.epochs * steps_per_epoch,
        warmup=round(cfg.train.warmup_epochs * steps_per_epoch),
    )


def _loader(cfg: Config, d: Dist, dataset, *, train: bool):
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


def few_steps_warning(
    cfg: Config, videos: int, items: int, sizes: RunSizes, d: Dist, sampler
) -> str:
    """The warning for an epoch of fewer than :data:`FEW_STEPS` steps, naming the keys
    (``sampler``: the training dataset's, with the windows it draws per video)."""
    data = cfg.data
    per = d.world_size * cfg.train.accumulate
    k = data.repeats  # ``items`` counts windows: with repeats, k of each drawn item
    drawn = sampler.clips_per_video // k
    want = math.ceil(AUTO_STEPS * data.batch_size * per * drawn / max(items, 1))
    if sampler.random:
        fix = (
            f"set data.clips_per_video: {max(want, drawn + 1)} (windows drawn per video per "
            "epoch; auto draws enough) or lower data.batch_size"
        )
    else:
        fix = (
            f"lower data.batch_size, or use a random data.sampler (not {data.sampler}) with "
            "data.clips_per_video"
        )
    return (
        f"warning: an epoch is only {sizes.steps_per_epoch} optimizer step(s): {items} "
        f"training items ({videos} videos, {drawn} window(s) drawn per video: "
        f"data.clips_per_video {data.clips_per_video}"
        + (f", {k} windows each: data.repeats" if k > 1 else "")
        + ") in batches of data.batch_size "
        f"{data.batch_size}"
        + (f" x {per} (processes x train.accumulate)" if per > 1 else "")
        + (", the last partial batch dropped (data.drop_last)" if data.drop_last else "")
        + f"; {FEW_STEPS} or more train better: {fix}"
    )
