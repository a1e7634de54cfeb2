"""The model registry: ``register_model`` / ``create`` / ``list_models`` / ``describe``."""

from __future__ import annotations

import functools
import importlib.util
import inspect
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple, TypeVar

import torch
from pydantic import BaseModel, ConfigDict, TypeAdapter, create_model
from torch import nn

from .._core._errors import ConfigError, install_command
from .._core._limits import MAX_MODEL_PARAMS
from .._core._registry import Registry
from .._core._validate import did_you_mean, validate
from ._base import LAYOUTS, TASKS
from ._weights import load_pretrained

__all__ = [
    "ModelInfo",
    "ModelSpec",
    "check_model_size",
    "create",
    "describe",
    "get_spec",
    "list_models",
    "register_model",
]

#: Families in the order ``list_models`` shows them (cheap early fusion first, dense last);
#: families registered by users follow, in registration order.
FAMILY_ORDER = (
    "channel",
    "tsn",
    "tsm",
    "cnn3d",
    "transformer",
    "lstm",
    "keyframe",
    "detection",
)

DEFAULT_NUM_CLASSES = 10
DEFAULT_FRAMES = 8

B = TypeVar("B", bound=Callable[..., nn.Module])


@dataclass(frozen=True)
class ModelSpec:
    """One registry entry."""

    name: str
    layout: str
    family: str
    builder: Callable[..., nn.Module]
    task: str = "classification"
    onnx: bool = True  # torch.onnx.export + onnxruntime reproduce the fp32 output
    requires: tuple[str, ...] = ()  # optional packages it needs (e.g. "timm")
    summary: str = ""

    @property
    def available(self) -> bool:
        return all(importlib.util.find_spec(r) is not None for r in self.requires)

    def options(self) -> list[str]:
        """Keyword options of the builder beyond num_classes / frames."""
        params = inspect.signature(self.builder).parameters
        return [n for n in params if n not in ("num_classes", "frames")]

    def check_options(self, options: Mapping[str, Any], *, where: str = "") -> None:
        """Refuse an option the builder does not take (:class:`ConfigError` naming it, the
        closest option and the allowed ones; a builder with ``**kwargs`` takes any name) or a
        value its annotation does not allow (``options.dropout: expected a number, got
        'x'``). ``where``: the options' key in messages (``model.options``)."""
        allowed = self.options()
        params = inspect.signature(self.builder).parameters.values()
        takes_any = any(p.kind is p.VAR_KEYWORD for p in params)
        unknown = [k for k in options if k not in allowed]
        if unknown and not takes_any:
            raise ConfigError(
                f"{where + ': ' if where else ''}{self.name} has no option(s) "
                f"{', '.join(map(repr, unknown))}{did_you_mean(unknown[0], allowed)} "
                f"(allowed: {', '.join(allowed) or 'none'})"
            )
        validate(_options_model(self), options, where=where or "options")


@functools.cache
def _options_model(spec: ModelSpec) -> type[BaseModel]:
    """A strict model of ``spec``'s builder's keyword options, typed by its annotations (an
    option without one, or with one pydantic cannot check, takes any value)."""
    try:
        hints = typing.get_type_hints(spec.builder)
    except Exception:  # a third-party builder's annotations may not resolve
        hints = {}
    fields: dict[str, Any] = {}
    params = inspect.signature(spec.builder).parameters.values()
    for p in params:
        if p.name in ("num_classes", "frames") or p.kind in (p.VAR_KEYWORD, p.VAR_POSITIONAL):
            continue
        hint = hints.get(p.name, Any)
        try:
            TypeAdapter(hint, config=ConfigDict(strict=True))
        except Exception:  # e.g. an nn.Module type: the builder's to check
            hint = Any
        fields[p.name] = (hint, None)
    takes_any = any(p.kind is p.VAR_KEYWORD for p in params)
    config = ConfigDict(strict=True, extra="allow" if takes_any else "forbid")
    return create_model(f"{spec.name}_options", __config__=config, **fields)


class ModelInfo(NamedTuple):
    """A row of :func:`describe` (for ``hyperframes models``)."""

    name: str
    layout: str
    params: int | None  # parameter count with default options; None if unavailable
    family: str
    task: str
    available: bool
    summary: str


_REGISTRY: Registry[ModelSpec] = Registry("model")


def register_model(
    name: str,
    *,
    layout: str,
    family: str | None = None,
    task: str = "classification",
    onnx: bool = True,
    requires: tuple[str, ...] = (),
    summary: str | None = None,
) -> Callable[[B], B]:
    """Decorator registering ``builder(num_classes=..., frames=..., **options) -> nn.Module``.

    The built module must expose ``layout`` (equal to ``layout`` here) and
    ``example_input(batch, size)``; subclassing :class:`VideoModel` gives both.
    """
    if layout not in LAYOUTS:
        raise ConfigError(f"unknown layout {layout!r} for {name!r}; expected one of {LAYOUTS}")
    if task not in TASKS:
        raise ConfigError(f"unknown task {task!r} for {name!r}; expected one of {TASKS}")
    if not isinstance(name, str) or not name:
        raise ConfigError(f"model name must be a non-empty string, got {name!r}")

    def deco(builder: B) -> B:
        doc = (builder.__doc__ or "").strip().splitlines()
        spec = ModelSpec(
            name=name,
            layout=layout,
            family=family or builder.__module__.rsplit(".", 1)[-1].lstrip("_"),
            builder=builder,
            task=task,
            onnx=onnx,
            requires=tuple(requires),
            summary=summary if summary is not None else (doc[0] if doc else ""),
        )
        _REGISTRY.register(name, spec)
        return builder

    return deco


def get_spec(name: str) -> ModelSpec:
    """The registry entry of ``name`` (ConfigError with suggestions if unknown)."""
    return _REGISTRY.get(name)


def list_models(
    layout: str | None = None, family: str | None = None, task: str | None = None
) -> list[str]:
    """Registered model names, grouped by family (:data:`FAMILY_ORDER`), optionally filtered."""
    if layout is not None and layout not in LAYOUTS:
        raise ConfigError(f"unknown layout {layout!r}; expected one of {', '.join(LAYOUTS)}")
    return [
        s.name
        for s in _ordered()
        if (layout is None or s.layout == layout)
        and (family is None or s.family == family)
        and (task is None or s.task == task)
    ]


def _ordered() -> list[ModelSpec]:
    rank = {f: i for i, f in enumerate(FAMILY_ORDER)}
    specs = _REGISTRY.values()
    return sorted(specs, key=lambda s: rank.get(s.family, len(rank)))  # stable


def create(
    name: str,
    num_classes: int = DEFAULT_NUM_CLASSES,
    frames: int = DEFAULT_FRAMES,
    pretrained: str | Path | None = None,
    **options: Any,
) -> nn.Module:
    """Build the registered model ``name``; load ``pretrained`` (a local file) if given."""
    spec = get_spec(name)
    missing = [r for r in spec.requires if importlib.util.find_spec(r) is None]
    if missing:
        raise ConfigError(
            f"model {name!r} needs the optional package(s) {', '.join(missing)}: "
            + (
                install_command("timm")
                if missing == ["timm"]
                else f"pip install {' '.join(missing)}"
            )
        )
    spec.check_options(options)
    model = spec.builder(num_classes=num_classes, frames=frames, **options)
    if getattr(model, "layout", None) != spec.layout:
        raise ConfigError(
            f"model {name!r} was registered with layout {spec.layout!r} but its module says "
            f"{getattr(model, 'layout', None)!r}"
        )
    # nn.Module.__setattr__ takes any value; torch types it Tensor | Module
    model.registry_name = name  # type: ignore[assignment]
    if pretrained is not None:
        model.pretrained_report = load_pretrained(model, pretrained)  # type: ignore[assignment]
    return model


def check_model_size(
    name: str, *, num_classes: int, frames: int, options: Mapping[str, Any], where: str = ""
) -> None:
    """Build ``name`` with ``options`` on the ``meta`` device (shapes, no memory) and refuse
    more than :data:`MAX_MODEL_PARAMS` parameters: options are checked by what their values
    build, not only by name and type (``base_width: 100000000`` is a :class:`ConfigError`,
    not gigabytes allocated). ``where``: the options' key in messages (``model.options``)."""
    prefix = f"{where}: " if where else ""
    try:
        with torch.device("meta"):
            ghost = create(name, num_classes=num_classes, frames=frames, **options)
    except ConfigError as e:
        raise ConfigError(f"{prefix}{e}") from None
    count = count_parameters(ghost)
    if count > MAX_MODEL_PARAMS:
        raise ConfigError(
            f"{prefix}{name} with {dict(options)!r:.200} has {count:,} parameters; allowed: at "
            f"most {MAX_MODEL_PARAMS:,} (lower the widths or depths)"
        )


def count_parameters(model: nn.Module) -> int:
    """Parameters and buffers of ``model`` (meta tensors count by their shapes)."""
    tensors = [*model.parameters(), *model.buffers()]
    return sum(t.numel() for t in tensors)


def describe() -> list[ModelInfo]:
    """One :class:`ModelInfo` per registered model; counts parameters on the meta device."""
    rows = []
    for spec in _ordered():
        params = None
        if spec.available:
            try:
                with torch.device("meta"):
                    model = create(spec.name)
                params = sum(p.numel() for p in model.parameters())
            except Exception:  # a third-party builder may not support meta tensors
                params = None
        rows.append(
            ModelInfo(
                name=spec.name,
                layout=spec.layout,
                params=params,
                family=spec.family,
                task=spec.task,
                available=spec.available,
                summary=spec.summary,
            )
        )
    return rows
