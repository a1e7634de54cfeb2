"""Importing an optional dependency with an error that says how to install it."""

from __future__ import annotations

import importlib
from types import ModuleType

from .._core._errors import ConfigError, install_command


def require(module: str, extra: str, what: str) -> ModuleType:
    """``import module``, or :class:`ConfigError` naming the pip extra that provides it."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise ConfigError(
            f"{what} needs the {module!r} package, which is not importable here ({e}); "
            f"install it with: {install_command(extra)}"
        ) from None
