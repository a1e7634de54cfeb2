"""Memory and compute before training: ``hyperframes estimate CONFIG``.

From a config (and its store, for the frames' size, the classes and the tracks) the model is
built as training builds it and one real batch of two clips goes through a forward pass and
the loss, on the CPU, to count:

* **parameters** (and their bytes; gradients take as many again, the optimizer's state one
  (SGD with momentum) or two (AdamW) times more);
* **FLOPs per clip** of the forward pass: torch's ``FlopCounterMode``, which counts the
  convolutions and matrix products (2 FLOPs per multiply-add); backward costs about twice that;
* **activation memory**: the bytes of the tensors autograd saves for backward
  (``saved_tensors_hooks``, each storage once, parameters left out), per clip, times
  ``data.batch_size``; with activation checkpointing (``train.checkpointing``: every stage, or
  the stages named) a checkpointed stage keeps only its input, and backward recomputes one
  stage at a time, so the largest of those stages is added back once;
* the **step peak**: parameters + gradients + optimizer state + the batch + activations.

:func:`measure_step_peak` measures what a step really allocates on the CPU: glibc's
``mallinfo2`` (the bytes malloc has handed out, which torch's CPU allocator uses) read after
every aten operation of the step (a ``TorchDispatchMode``, which sees backward's operations
too), after one warm-up step; the suite checks the estimate against it within 25%.
"""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
from collections.abc import Callable
from typing import Any

import torch

from ..._core._errors import ConfigError
from ...data import loader
from ...models import STAGE_PROBE, stage_match
from ...store import open_store
from .._config._data import build_data
from .._tasks._base import create_task
from ._setup import build_model

__all__ = ["Estimate", "estimate", "format_estimate", "measure_step_peak"]

PROBE_CLIPS = 2  # clips of the measured batch (BatchNorm needs more than one value)


@dataclasses.dataclass
class Stage:
    """One checkpointable stage: its qualified name, the bytes saved inside it and the bytes of
    its input, per clip."""

    name: str
    saved: float
    input: float


@dataclasses.dataclass
class Estimate:
    model: str
    batch_size: int
    input_shape: list[int]
    parameters: int
    parameter_bytes: int
    optimizer_state_bytes: int
    flops_per_clip: int
    batch_bytes: int
    activation_bytes: int
    checkpointed_activation_bytes: int | None
    checkpointed_stages: list[str]
    stages: list[Stage]

    def step_bytes(self, checkpointed: bool = False) -> int:
        """Parameters + gradients + optimizer state + the batch + activations."""
        act = self.checkpointed_activation_bytes if checkpointed else self.activation_bytes
        return (
            2 * self.parameter_bytes
            + self.optimizer_state_bytes
            + self.batch_bytes
            + int(act if act is not None else self.activation_bytes)
        )

    def to_dict(self) -> dict:
        out = dataclasses.asdict(self)
        out["step_bytes"] = self.step_bytes()
        out["checkpointed_step_bytes"] = (
            self.step_bytes(True) if self.checkpointed_activation_bytes is not None else None
        )
        return out


class _Saved:
    """Counts the bytes autograd saves (each storage once), and which stage saved them."""

    def __init__(self, model: torch.nn.Module) -> None:
        self.seen = {p.untyped_storage().data_ptr() for p in model.parameters()}
        self.total = 0
        self.stages: list[Stage] = []

    def pack(self, t: torch.Tensor) -> torch.Tensor:
        storage = t.untyped_storage()
        key = storage.data_ptr()
        if key and key not in self.seen:
            self.seen.add(key)
            self.total += storage.nbytes()
        return t

    def probe(self, model, fn: Callable[..., Any], args: tuple) -> Any:
        size = sum(a.untyped_storage().nbytes() for a in args if torch.is_tensor(a))
        before = self.total
        out = fn(*args)
        self.stages.append(Stage(model.stage_name(fn) or repr(fn), self.total - before, size))
        return out


def _probe_batch(cfg, store):
    """The model as training builds it (no checkpointing), its input for two real clips, their
    mask, targets and task."""

    bundle = build_data(cfg, store)
    saved = cfg.train.checkpointing
    cfg.train.checkpointing = False
    try:
        model = build_model(cfg, bundle.num_classes, bundle.contract)
    finally:
        cfg.train.checkpointing = saved
    batches = loader(bundle.train, PROBE_CLIPS, shuffle=False, workers=0, drop_last=False)
    batch = next(iter(batches))
    if len(batch) < PROBE_CLIPS:
        raise ConfigError(
            f"data.store: the training split gives {len(batch)} window(s); the estimate "
            f"needs {PROBE_CLIPS}"
        )
    x = bundle.contract.prepare(
        batch.frames, flow=getattr(batch, "flow", None), audio=getattr(batch, "audio", None)
    )
    task = create_task(bundle.task, bundle.classes)
    return model, x, batch, task


def _tensors(x) -> list[torch.Tensor]:
    if torch.is_tensor(x):
        return [x]
    if isinstance(x, tuple):  # KeyframeWindow
        return [t for p in x for t in _tensors(p)]
    if dataclasses.is_dataclass(x) and not isinstance(x, type):  # AudioVisual
        return [t for f in dataclasses.fields(x) for t in _tensors(getattr(x, f.name))]
    return []


def _loss(model, x, batch, task) -> torch.Tensor:
    out = model(x, mask=batch.mask)
    if isinstance(out, tuple):
        out = out[0]
    return task.loss(out.float(), task.targets(batch))


def estimate(cfg, store=None) -> Estimate:
    """The :class:`Estimate` of ``cfg`` (a loaded :class:`~hyperframes.train.Config`)."""
    from torch.utils.flop_counter import FlopCounterMode  # deferred: optional/heavy dependency

    own = store is None
    if own:
        store = open_store(cfg.data.store, cache_dir=cfg.data.cache_dir)
    try:
        model, x, batch, task = _probe_batch(cfg, store)
    finally:
        if own:
            store.close()
    model.train()
    counter = _Saved(model)
    token = STAGE_PROBE.set(counter.probe)
    try:
        with torch.autograd.graph.saved_tensors_hooks(counter.pack, lambda t: t):
            _loss(model, x, batch, task)
    finally:
        STAGE_PROBE.reset(token)
    with torch.no_grad(), FlopCounterMode(display=False) as flops:
        model(x, mask=batch.mask)
    n = PROBE_CLIPS
    b = cfg.data.batch_size
    params = sum(p.numel() for p in model.parameters())
    pbytes = sum(p.numel() * p.element_size() for p in model.parameters() if p.requires_grad)
    slots = {"sgd": 1 if cfg.train.momentum > 0 else 0, "adamw": 2}[cfg.train.optimizer]
    stages = [Stage(s.name, s.saved / n, s.input / n) for s in counter.stages]
    chosen = _chosen(stages, cfg.train.checkpointing)
    act = counter.total / n * b
    ckpt = None if not chosen else _checkpointed(counter.total / n, stages, chosen) * b
    raw = sum(t.numel() * t.element_size() for t in _tensors(batch.frames))
    return Estimate(
        model=cfg.model.name,
        batch_size=b,
        input_shape=[b, *list(_tensors(x)[0].shape[1:])],
        parameters=params,
        parameter_bytes=pbytes,
        optimizer_state_bytes=slots * pbytes,
        flops_per_clip=int(flops.get_total_flops() // n),
        batch_bytes=int((raw + sum(t.numel() * t.element_size() for t in _tensors(x))) / n * b),
        activation_bytes=int(act),
        checkpointed_activation_bytes=None if ckpt is None else int(ckpt),
        checkpointed_stages=[s.name for s in chosen],
        stages=stages,
    )


def _checkpointed(total: float, stages: list[Stage], chosen: list[Stage]) -> float:
    """Saved bytes per clip at the peak with ``chosen`` checkpointed: the end of forward, or
    backward's recomputation of a stage, when the stages before it still hold what they
    keep (their saved tensors, or a checkpointed stage's input) and the later ones are freed.
    Tensors saved outside the stages (stem, head) are counted throughout."""
    other = total - sum(s.saved for s in stages)
    picked = {id(s) for s in chosen}
    kept = [s.input if id(s) in picked else s.saved for s in stages]
    during = [sum(kept[:k]) + s.saved for k, s in enumerate(stages)]
    return other + max([sum(kept), *during])


def _chosen(stages: list[Stage], setting) -> list[Stage]:
    """The stages ``train.checkpointing`` selects (all of them when it is false, to show
    what checkpointing would save)."""

    if setting is True or setting is False or not setting:
        return list(stages)
    return [s for s in stages if any(stage_match(s.name, n) for n in setting)]


def _size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"


def format_estimate(e: Estimate) -> str:
    """The report ``hyperframes estimate`` prints."""
    gf = e.flops_per_clip / 1e9
    lines = [
        f"model {e.model}: {e.parameters:,} parameters ({_size(e.parameter_bytes)})",
        f"input {' x '.join(map(str, e.input_shape))} (batch {e.batch_size})",
        f"FLOPs per clip (forward): {gf:.3f} G; a training step: about {3 * gf * e.batch_size:.2f} G",
        f"activation memory at batch {e.batch_size}: {_size(e.activation_bytes)}",
    ]
    if e.checkpointed_activation_bytes is not None:
        which = ", ".join(e.checkpointed_stages)
        lines.append(
            f"  with activation checkpointing ({len(e.checkpointed_stages)} stage(s): {which}): "
            f"{_size(e.checkpointed_activation_bytes)}"
        )
    else:
        lines.append("  activation checkpointing: the model has no checkpointable stages")
    lines.append(
        f"step peak (parameters, gradients, optimizer state, batch, activations): "
        f"{_size(e.step_bytes())}"
        + (
            f"; checkpointed {_size(e.step_bytes(True))}"
            if e.checkpointed_activation_bytes is not None
            else ""
        )
    )
    return "\n".join(lines)


# --------------------------------------------------------------------------- measuring


def _mallinfo() -> Callable[[], int] | None:
    """Bytes malloc has handed out now (glibc >= 2.33's mallinfo2), or None elsewhere."""
    try:
        fn = ctypes.CDLL(None).mallinfo2
    except (AttributeError, OSError):
        return None

    class Info(ctypes.Structure):
        _fields_ = [
            (n, ctypes.c_size_t)
            for n in [
                "arena",
                "ordblks",
                "smblks",
                "hblks",
                "hblkhd",
                "usmblks",
                "fsmblks",
                "uordblks",
                "fordblks",
                "keepcost",
            ]
        ]

    fn.restype = Info

    def used() -> int:
        m = fn()
        return int(m.uordblks + m.hblkhd)

    return used


def measure_step_peak(step: Callable[[], Any], *, warmup: int = 1) -> int:
    """The peak bytes a CPU ``step`` allocates beyond what was allocated before it (see the
    module doc); ``warmup`` steps run first, unmeasured. :class:`ConfigError` without glibc."""
    # deferred: optional/heavy dependency
    from torch.utils._python_dispatch import TorchDispatchMode

    used = _mallinfo()
    if used is None:
        raise ConfigError(
            "measuring a CPU step's peak memory needs glibc's mallinfo2 (Linux, glibc 2.33 "
            "or later)"
        )

    class Peak(TorchDispatchMode):
        peak = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            self.peak = max(self.peak, used())
            return out

    for _ in range(warmup):
        with Peak():
            step()
    with contextlib.ExitStack() as stack:
        base = used()
        mode = stack.enter_context(Peak())
        mode.peak = base
        step()
    return max(0, mode.peak - base)
