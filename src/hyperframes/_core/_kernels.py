"""The optional C kernels of the batch transforms (``_pixels.c``, built by ``make setup``):
``pixels`` is the module, or None where it was not built (no compiler), and the callers use
OpenCV's slower passes instead."""

from __future__ import annotations

from types import ModuleType

pixels: ModuleType | None
try:
    from . import _pixels as pixels
except ImportError:  # built without a C compiler
    pixels = None

__all__ = ["pixels"]
