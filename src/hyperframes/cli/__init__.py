"""The ``hyperframes`` command line: a thin shell over the library."""

from ._main import main

__all__ = ["main"]
