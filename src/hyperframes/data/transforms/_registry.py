"""The transforms by name: ``create_transform("random_horizontal_flip", p=0.5)``.

Every transform of this package registers itself; a user's :class:`Transform` subclass joins
with ``@register_transform("my_name")``."""

from __future__ import annotations

from collections.abc import Callable

from ..._core._errors import ConfigError
from ..._core._registry import Registry
from ._base import Transform

__all__ = ["create_transform", "list_transforms", "register_transform"]

_TRANSFORMS: Registry[type[Transform]] = Registry(
    "transform",
    hint="register one with hyperframes.data.transforms.register_transform",
    sort=True,
)


def register_transform(name: str) -> Callable[[type[Transform]], type[Transform]]:
    """Class decorator adding a :class:`Transform` subclass to the registry as ``name``."""

    def wrap(cls: type[Transform]) -> type[Transform]:
        if not (isinstance(cls, type) and issubclass(cls, Transform)):
            raise ConfigError(
                f"register_transform({name!r}) needs a Transform subclass, got {cls!r}"
            )
        return _TRANSFORMS.register(name, cls)

    return wrap


def list_transforms() -> list[str]:
    """The registered transform names, sorted."""
    return _TRANSFORMS.names()


def create_transform(name: str, *args, **options) -> Transform:
    """The transform registered as ``name``, made with ``args`` and ``options`` (its class's
    own; a wrong one is a :class:`ConfigError` naming them)."""
    cls = _TRANSFORMS.get(name)
    try:
        return cls(*args, **options)
    except TypeError as e:
        raise ConfigError(f"transform {name!r} ({cls.__name__}): {e}") from None
