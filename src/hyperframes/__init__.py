"""hyperframes: decode video once, serve windows of frames at memory speed.

::

    import hyperframes

    store = hyperframes.open_store("STORE")
    ds = hyperframes.HyperframeDataset(store, sampler="random", frames=16, layout="temporal")
    for batch in hyperframes.loader(ds, batch_size=32):
        ...

Heavy modules (torch, the decoders) load on first use, so ``import hyperframes`` is cheap; the
sub-packages too (``hyperframes.models.create(...)`` works after ``import hyperframes`` alone).
"""

from __future__ import annotations

import importlib

from ._core._errors import (
    ConfigError,
    DataError,
    DecodeError,
    HyperframesError,
    InputError,
    StoreError,
)
from ._core._fork import register as _register_fork_handlers
from ._version import __version__

_register_fork_handlers()  # garbage frozen and OpenCV's pool stopped around os.fork (_core._fork)

_LAZY = {
    "open_store": "hyperframes.store",
    "build_store": "hyperframes.build",
    "BuildOptions": "hyperframes.build",
    "verify_store": "hyperframes.store",
    "HyperframeDataset": "hyperframes.data",
    "Hyperframe": "hyperframes.data",
    "HyperframeBatch": "hyperframes.data",
    "loader": "hyperframes.data",
}
#: the sub-packages, each imported on first attribute access (``hyperframes.models``)
_SUBPACKAGES = frozenset(
    {
        "bench",
        "build",
        "checkpoint",
        "cli",
        "data",
        "decode",
        "demo",
        "infer",
        "inputs",
        "integrations",
        "models",
        "remote",
        "sampling",
        "store",
        "train",
        "viz",
    }
)

__all__ = [
    "BuildOptions",
    "ConfigError",
    "DataError",
    "DecodeError",
    "Hyperframe",
    "HyperframeBatch",
    "HyperframeDataset",
    "HyperframesError",
    "InputError",
    "StoreError",
    "__version__",
    "build_store",
    "loader",
    "open_store",
    "verify_store",
]


def __getattr__(name: str):
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    if name in _SUBPACKAGES:
        return importlib.import_module(f"{__name__}.{name}")  # (sets the attribute itself)
    raise AttributeError(f"module 'hyperframes' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
