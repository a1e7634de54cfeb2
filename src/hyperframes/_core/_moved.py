"""Names that left a public ``__all__``: still importable, with a warning saying where they live.

A public package lists what a user calls; helpers that only the package itself (or its tests)
uses live in its private modules. A name that was public once keeps working for a while::

    _MOVED = {"psnr": "hyperframes.models._outputs"}

    def __getattr__(name: str):
        return moved_attribute(__name__, name, _MOVED)

``hyperframes.train.psnr`` then returns the function and warns (``DeprecationWarning``) that
it is no longer public and names the module that holds it.
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Mapping
from typing import Any


def moved_attribute(module: str, name: str, moved: Mapping[str, str]) -> Any:
    """``name`` from the private module ``moved[name]``, with a ``DeprecationWarning``; an
    ``AttributeError`` (as a module without the name raises) when ``name`` never moved."""
    if name not in moved:
        raise AttributeError(f"module {module!r} has no attribute {name!r}")
    where = moved[name]
    warnings.warn(
        f"{module}.{name} is no longer public: it lives in {where} (a private module that "
        "may change without notice); import it from there, or use the public API in "
        f"{module}.__all__",
        DeprecationWarning,
        stacklevel=3,
    )
    return getattr(importlib.import_module(where), name)
