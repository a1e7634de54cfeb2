"""hyperframes: decode video once, serve windows of frames at memory speed."""

from ._errors import (
    ConfigError,
    DataError,
    DecodeError,
    HyperframesError,
    InputError,
    StoreError,
)
from ._version import __version__

__all__ = [
    "ConfigError",
    "DataError",
    "DecodeError",
    "HyperframesError",
    "InputError",
    "StoreError",
    "__version__",
]
