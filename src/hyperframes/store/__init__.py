"""The hyperframe store: build once from videos, read windows at memory speed."""

from ._build import BuildReport, build_store, dry_run
from ._codecs import list_codecs
from ._hdf5 import convert_to_hdf5
from ._options import BuildOptions
from ._reader import Store, open_store
from ._records import VideoRecord
from ._verify import verify_store

__all__ = [
    "BuildOptions",
    "BuildReport",
    "Store",
    "VideoRecord",
    "build_store",
    "convert_to_hdf5",
    "dry_run",
    "list_codecs",
    "open_store",
    "verify_store",
]
