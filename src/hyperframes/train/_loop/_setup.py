"""The parts of a run made from its config before the first step: device, mixed precision,
model, optimizer; and the checks that refuse a run (a resumed run's config, leakage between
the splits)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch
from torch import nn

from ..._core._device import resolve_device as core_resolve_device
from ..._core._errors import ConfigError, DataError
from ...models import create
from ...store import CROP_MAX_VIDEOS
from .._config._config import Config, config_defaults
from .._config._leakage import check_leakage
from .._dist import Dist, broadcast_object

__all__ = [
    "RESUMABLE_CHANGES",
    "WithAux",
    "build_model",
    "build_optimizer",
    "check_leakage_of_split",
    "check_resume_config",
    "resolve_amp",
    "resolve_device",
]

#: config keys that may change when a run is resumed (the rest must match the checkpoint)
RESUMABLE_CHANGES = (
    "data.workers",
    "data.cache_dir",  # a node-local cache of a store at a URL: per node, changes no data
    "data.cache_limit",
    "data.val_batch_size",
    "data.check_leakage",
    "data.allow_leakage",
    "train.epochs",
    "train.eval_every",
    "train.loggers",  # where the logs go, not what is trained
    "train.mlflow_uri",
    "train.mlflow_experiment",
    "train.save_every",
    "train.log_every",
    "train.device",
    "eval.",
)


class WithAux(nn.Module):
    """Calls ``forward_with_aux`` through ``forward`` (so DDP sees one forward)."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, x, mask=None):
        return self.model.forward_with_aux(x, mask)


def resolve_device(cfg: Config) -> torch.device:
    return core_resolve_device(cfg.train.device, where="train.device")


def resolve_amp(cfg: Config, device: torch.device) -> tuple[bool, torch.dtype | None]:
    if not cfg.train.amp:
        return False, None
    name = cfg.train.amp_dtype
    if name == "auto":
        bf16_ok = device.type == "cpu" or torch.cuda.is_bf16_supported()
        name = "bfloat16" if bf16_ok else "float16"
    if name == "float16" and device.type != "cuda":
        raise ConfigError(
            "train.amp_dtype: float16 autocast needs a CUDA device; allowed on CPU: auto, bfloat16"
        )
    return True, getattr(torch, name)


def build_model(cfg: Config, num_classes: int, contract=None) -> nn.Module:
    """The registered model of ``cfg.model``, initialised from ``train.seed``; with the run's
    input ``contract``, the options its tracks imply (flow planes, log-mel size)."""

    torch.manual_seed(cfg.train.seed)
    implied = contract.model_options() if contract is not None else {}
    if cfg.model.norm is not None:  # model.norm: the CNN's normalisation
        implied["norm"] = cfg.model.norm
    model = create(
        cfg.model.name,
        num_classes=num_classes,
        frames=cfg.data.frames,
        pretrained=cfg.model.pretrained,
        **{**implied, **cfg.model.options},
    )
    if cfg.train.checkpointing:
        if not hasattr(model, "checkpointing"):
            raise ConfigError(
                f"train.checkpointing: model {cfg.model.name!r} has no gradient checkpointing; "
                "allowed: false"
            )
        # the model has it (checked above); torch types Module attributes as Tensor | Module
        want = cfg.train.checkpointing
        try:
            model.checkpointing = want  # type: ignore[assignment]
        except ConfigError as e:
            raise ConfigError(f"train.{e}") from None
    if cfg.train.amp:
        keep_float32(model, cfg.train.amp_float32)
    return model


#: the layer kinds ``train.amp_float32`` names
FLOAT32_LAYERS = {
    "batchnorm": nn.modules.batchnorm._BatchNorm,
    "groupnorm": nn.GroupNorm,
    "layernorm": nn.LayerNorm,
}


def _float32_input(module: nn.Module, args: tuple) -> tuple:
    return tuple(a.float() if torch.is_tensor(a) and a.is_floating_point() else a for a in args)


def keep_float32(model: nn.Module, kinds) -> int:
    """Run the normalisation layers of ``kinds`` (keys of :data:`FLOAT32_LAYERS`) in float32
    under autocast (their statistics are the layers mixed precision makes unstable, the seeds
    warn): a forward pre-hook casts their input to float32, and autocast leaves these ops in
    their input's type. Returns the number of layers hooked."""
    types = tuple(FLOAT32_LAYERS[k] for k in kinds)
    count = 0
    for m in model.modules():
        if types and isinstance(m, types):
            m.register_forward_pre_hook(_float32_input)
            count += 1
    return count


#: devices whose fused optimizer kernels a run uses: one kernel per step over every tensor (on
#: a CPU, AdamW's step over a ResNet-18 took 59 ms as a loop over its tensors and 9 ms fused)
FUSED_DEVICES = ("cpu", "cuda")


def fused_step(params: list[nn.Parameter]) -> bool:
    """Whether an optimizer over ``params`` can take the fused step (every tensor a float on
    one of :data:`FUSED_DEVICES`)."""
    return bool(params) and all(
        p.device.type in FUSED_DEVICES and p.is_floating_point() for p in params
    )


def build_optimizer(cfg: Config, model: nn.Module, lr: float) -> torch.optim.Optimizer:
    decay: list[nn.Parameter] = []
    no_decay: list[nn.Parameter] = []
    for p in model.parameters():
        if p.requires_grad:
            (decay if p.ndim > 1 else no_decay).append(p)
    groups = [
        {"params": decay, "weight_decay": cfg.train.weight_decay},
        {"params": no_decay, "weight_decay": 0.0},
    ]
    fused = fused_step(decay + no_decay)
    if cfg.train.optimizer == "sgd":
        return torch.optim.SGD(
            groups, lr=lr, momentum=cfg.train.momentum, nesterov=cfg.train.nesterov, fused=fused
        )
    return torch.optim.AdamW(groups, lr=lr, fused=fused)


def _flat(d: dict, prefix: str = "") -> dict:
    out = {}
    for k, v in d.items():
        if isinstance(v, dict) and k not in ("options", "sampler_options", "val_sampler_options"):
            out.update(_flat(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def check_resume_config(saved: dict, cfg: Config) -> None:
    """Refuse to resume a checkpoint with a config that differs beyond
    :data:`RESUMABLE_CHANGES`."""
    old, new = _flat(saved), _flat(cfg.to_dict())
    # keys added after the checkpoint was written count as their defaults there
    old.update({k: v for k, v in config_defaults().items() if k not in old})
    diff = [
        k
        for k in sorted(set(old) | set(new))
        if old.get(k) != new.get(k) and not any(k.startswith(r) for r in RESUMABLE_CHANGES)
    ]
    if diff:
        shown = ", ".join(f"{k}: {old.get(k)!r} -> {new.get(k)!r}" for k in diff[:6])
        raise ConfigError(
            f"resume: the config differs from the checkpoint's in {shown}; resume with the "
            f"same config (allowed changes: {', '.join(RESUMABLE_CHANGES)}) or start a new run "
            "in another out folder"
        )


def _roles(store, bundle) -> dict[int, str]:
    if bundle.split_source == "store":
        return {i: (v.split or "(none)") for i, v in enumerate(store.videos)}
    roles = {int(i): "train" for i in bundle.train_ids}
    roles.update({int(i): "val" for i in bundle.val_ids})
    return roles


def check_leakage_of_split(cfg: Config, store, bundle, d: Dist, run_dir: Path) -> None:
    """With ``data.check_leakage``: refuse (every rank) a split whose videos leak between
    roles, unless allowed; write ``leakage.json`` when duplicates were found."""
    if not cfg.data.check_leakage:
        return
    message, report = None, None
    if d.main:
        try:
            report = check_leakage(store, _roles(store, bundle), allow=cfg.data.allow_leakage)
        except DataError as e:
            message = str(e)
    message = broadcast_object(message, d)
    if message is not None:
        raise DataError(message)
    if d.main and report is not None and not report.crops_checked:
        print(
            f"note: the leakage check compared whole frames only: crops are looked for over "
            f"at most {CROP_MAX_VIDEOS} videos (this split has {len(_roles(store, bundle))})",
            file=sys.stderr,
        )
    if d.main and report is not None and (report.duplicates or report.similar):
        (run_dir / "leakage.json").write_text(json.dumps(report.to_dict(), indent=1) + "\n")
        if report.leaks:
            print(
                f"warning: leakage allowed by data.allow_leakage:\n{report.describe()}",
                file=sys.stderr,
            )
