"""``hyperframes recalibrate``: BatchNorm running statistics re-estimated at another T.

A BatchNorm layer normalises with the running mean and variance of the clips it was trained on
(seed 001 section 6.4): a 3D CNN trained at T=16 and run at T=8 sees features whose statistics
moved (more of each clip lies near its temporal border, where the convolutions read zeros),
and the error grows through the network. :func:`recalibrate` (remedy 4 of the seed) runs the
model over ``batches`` batches of T-frame windows of a store (the run's training split by
default: random windows, the evaluation crop, no gradients), with every BatchNorm layer in
training mode and a cumulative average (``momentum=None``) over them, the rest in eval mode
(dropout off), and writes a new checkpoint: the same weights, the new running statistics, and
an input contract of T frames whose ``calibration`` entry says so (``{"frames",
"trained_frames", "store", "clips"}``). Eval, predict, export and ``Predictor`` read it as any
checkpoint, at its T. Windows are drawn from the run's seed: the same statistics for any
number of workers.

Only models that take any T can be re-calibrated (a channel or TSM model refuses, saying why),
and only models with BatchNorm (``model.norm: group`` or ``layer`` normalises each clip by its
own statistics: nothing to re-estimate).
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import torch
from torch import nn

from ..._core._device import resolve_device
from ..._core._errors import ConfigError
from ..._core._text import model_name
from ...checkpoint import load_checkpoint, rebuild_model, save_checkpoint
from ...data import loader
from ...data.transforms import contract_transform
from ...store import open_store
from .._config._data import make_dataset
from .._config._load import config_from_dict
from .._config._splits import resolve_split
from ._predict import forward

__all__ = ["RecalibrateReport", "recalibrate"]

#: entries of a training checkpoint that describe the optimisation, not the model: a
#: re-calibrated checkpoint is for eval and inference, not for resuming
_TRAINING_ONLY = ("optimizer", "scaler", "rng", "loader", "epoch_state")


@dataclasses.dataclass
class RecalibrateReport:
    """What :func:`recalibrate` did."""

    path: Path
    frames: int
    trained_frames: int
    layers: int
    clips: int
    store: str
    seconds: float

    def summary(self) -> str:
        return (
            f"{self.path}: BatchNorm statistics of {self.layers} layers re-estimated at "
            f"T={self.frames} (trained at T={self.trained_frames}) over {self.clips} clips of "
            f"{self.store} in {self.seconds:.1f} s; evaluate with: hyperframes eval {self.path}"
        )


def _norm_layers(model: nn.Module) -> list[nn.modules.batchnorm._BatchNorm]:
    return [m for m in model.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]


def recalibrate(
    checkpoint: str | Path,
    store: str | Path | None = None,
    *,
    frames: int,
    split: str | None = None,
    batches: int = 50,
    batch_size: int | None = None,
    device: str = "auto",
    out: str | Path | None = None,
    workers: int = 0,
) -> RecalibrateReport:
    """Re-estimate ``checkpoint``'s BatchNorm statistics at ``frames`` (module doc) on
    ``store`` (default: the run's), split ``split`` (default: the run's training split);
    write the checkpoint to ``out`` (default ``RUN_DIR/recalibrated_T<frames>.pt``)."""
    if isinstance(batches, bool) or not isinstance(batches, int) or batches < 1:
        raise ConfigError(f"batches {batches!r}: allowed: an integer >= 1")
    t0 = time.perf_counter()
    ck = load_checkpoint(checkpoint)
    raw = ck["config"]
    if store is not None:
        raw = {**raw, "data": {**raw["data"], "store": str(store)}}
    cfg = config_from_dict(raw)
    dev = resolve_device(device)
    model, contract = rebuild_model(ck, device=dev, frames=frames)
    layers = _norm_layers(model)
    if not layers:
        who = model_name(model)
        raise ConfigError(
            f"recalibrate: model {who!r} has no BatchNorm layer, nothing to re-estimate (its "
            f"normalisation uses each clip's own statistics); evaluate it at T={frames} with "
            "--frames"
        )
    trained = int(getattr(model, "frames", frames))  # the T it was built and trained for
    cfg.data.frames, cfg.data.frame_choices = frames, None
    st = open_store(cfg.data.store, cache_dir=cfg.data.cache_dir, cache_limit=cfg.data.cache_limit)
    ids, _ = resolve_split(st, split or cfg.data.train_split, cfg.data, role="train")
    short = cfg.data.sampler_options.get("short")
    options = {"stride": contract.frame_stride, **({"short": short} if short else {})}
    ds = make_dataset(
        cfg,
        st,
        ids,
        train=False,
        sampler="random",
        sampler_options=options,
        transform=contract_transform(contract),
    )
    dl = loader(
        ds,
        batch_size=batch_size or cfg.data.batch_size,
        shuffle=True,
        workers=workers,
        seed=cfg.train.seed,
    )
    clips = _estimate(model, layers, dl, contract, dev, batches)
    cal = {
        "frames": frames,
        "trained_frames": trained,
        "store": str(cfg.data.store)[:200],
        "clips": clips,
    }
    contract = contract.replace(calibration=cal)
    state = {k: v for k, v in ck.items() if k not in (*_TRAINING_ONLY, "path")}
    state["model"] = {k: v.detach().cpu() for k, v in model.state_dict().items()}
    state["contract"] = contract.to_dict()
    target = (
        Path(out) if out is not None else Path(ck["path"]).parent / f"recalibrated_T{frames}.pt"
    )
    path = save_checkpoint(target, state)
    return RecalibrateReport(
        path, frames, trained, len(layers), clips, str(cfg.data.store), time.perf_counter() - t0
    )


@torch.no_grad()
def _estimate(model, layers, dl, contract, device, batches: int) -> int:
    """Cumulative BatchNorm statistics over ``batches`` batches (the loader's epochs in
    turn when it has fewer); the clips seen."""
    model.eval()
    momenta = [m.momentum for m in layers]
    for m in layers:
        m.reset_running_stats()
        m.momentum = None  # a cumulative average over every batch
        m.train()
    clips, epoch = 0, 0
    try:
        while batches > 0:
            dl.set_epoch(epoch)
            seen = 0
            for batch in dl:
                x = contract.prepare(batch.frames, device=device)
                forward(model, x, batch.mask.to(device))
                clips += len(batch)
                seen += 1
                batches -= 1
                if batches <= 0:
                    break
            if not seen:
                raise ConfigError("recalibrate: the store gives no window of that T")
            epoch += 1
    finally:
        for m, momentum in zip(layers, momenta):
            m.momentum = momentum
        model.eval()
    return clips
