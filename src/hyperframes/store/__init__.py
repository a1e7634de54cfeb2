"""The hyperframe store: build once from videos, read windows at memory speed.

Reading a store imports no decoder: the build (``build_store``, ``dry_run``, ``BuildReport``)
is imported on first use, so ``hyperframes info``/``verify``/``show`` start fast."""

from ._codecs import list_codecs
from ._hdf5 import convert_to_hdf5
from ._options import BuildOptions
from ._protocol import StoreReader
from ._reader import Store, open_store
from ._records import VideoRecord
from ._verify import verify_store

__all__ = [
    "BuildOptions",
    "BuildReport",
    "Store",
    "StoreReader",
    "VideoRecord",
    "build_store",
    "convert_to_hdf5",
    "dry_run",
    "list_codecs",
    "open_store",
    "verify_store",
]

_LAZY = {"BuildReport", "build_store", "dry_run"}


def __getattr__(name: str):
    if name in _LAZY:
        from . import _build

        return getattr(_build, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
