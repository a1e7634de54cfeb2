"""The hyperframe store: build once from videos, read windows at memory speed.

Reading a store imports no decoder: the build (``build_store``, ``dry_run``, ``BuildReport``)
and the input formats it reads (``list_input_formats``) are imported on first use, so
``hyperframes info``/``verify``/``show`` start fast."""

import importlib

from ._codecs import list_codecs
from ._crop import centre_boxes, read_boxes
from ._describe import describe_store, format_store_info
from ._hdf5 import conversion_summary, convert_to_hdf5
from ._options import BuildOptions
from ._protocol import StoreReader
from ._reader import Store, is_store, open_store
from ._records import VideoRecord
from ._verify import resign_store, verify_store

__all__ = [
    "BuildOptions",
    "BuildReport",
    "Store",
    "StoreReader",
    "VideoRecord",
    "build_store",
    "centre_boxes",
    "conversion_summary",
    "convert_to_hdf5",
    "describe_store",
    "dry_run",
    "format_store_info",
    "gc_store",
    "is_store",
    "list_codecs",
    "list_input_formats",
    "open_store",
    "read_boxes",
    "resign_store",
    "verify_store",
]

_LAZY = {
    "BuildReport": "._build",
    "build_store": "._build",
    "dry_run": "._build",
    "gc_store": "._ray_publish",
    "list_input_formats": "._input_formats",
}


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
