"""The sampler registry: names to sampler classes."""

from __future__ import annotations

import inspect
from collections.abc import Callable

from .._core._errors import ConfigError
from .._core._registry import Registry
from ._base import Sampler

__all__ = ["create_sampler", "list_samplers", "register_sampler"]

#: a sampler registered again under its name replaces the first (as before the registry)
_REGISTRY: Registry[type[Sampler]] = Registry("sampler", replace=True, sort=True)


def register_sampler(name: str) -> Callable[[type[Sampler]], type[Sampler]]:
    """Class decorator adding a :class:`Sampler` subclass to the registry under ``name``."""

    def wrap(cls: type[Sampler]) -> type[Sampler]:
        if not (isinstance(cls, type) and issubclass(cls, Sampler)):
            raise ConfigError(f"register_sampler({name!r}) needs a Sampler subclass, got {cls!r}")
        cls.name = name
        return _REGISTRY.register(name, cls)

    return wrap


def list_samplers() -> list[str]:
    """Names of every registered sampler, sorted."""
    return _REGISTRY.names()


def _allowed_params(cls: type[Sampler]) -> list[str]:
    sig = inspect.signature(cls.__init__)
    return [
        p.name for p in sig.parameters.values() if p.name != "self" and p.kind is p.KEYWORD_ONLY
    ]


def create_sampler(name: str, *, frames: int, **params) -> Sampler:
    """Create the sampler registered as ``name`` with ``frames`` (T) frames per item."""
    cls = _REGISTRY.get(name)
    allowed = _allowed_params(cls)
    unknown = sorted(set(params) - set(allowed))
    if unknown:
        raise ConfigError(
            f"{name} sampler: unknown parameter(s) {', '.join(unknown)}; "
            f"allowed parameters are {', '.join(allowed)}"
        )
    return cls(frames=frames, **params)
