"""The hyperframe store: the format (:mod:`hyperframes.store.format`), the reader
(:func:`open_store`, :class:`Store`; the HDF5 form :class:`H5Store`; a store at a URL), the
codecs, the tracks, verify and describe.

Reading a store imports no decoder. What a build writes is written by ``hyperframes.build``,
which takes the format's pieces from here (the second group of names below).

Inside: ``_open`` is the one open-and-validate sequence, run by both forms over their own bytes
(``_folder``: a folder's files, local or at a URL through ``_remote_store``; ``_hdf5``: the
HDF5 datasets), with the tables' checks in ``_table_checks`` and ``_track_checks``; ``_base``
holds what both readers share once open, ``_reader`` the folder store's reads and ``_batch``
its batched reads; ``_records``, ``_tracks`` and ``_annotations`` the index as values."""

import importlib
from typing import TYPE_CHECKING

from ._annotations import ANNOTATION_FILES, ANNOTATION_TOLERANCE, Annotations
from ._codecs import Codec, codec_parameters, create_codec, list_codecs
from ._crop import centre_boxes, read_boxes
from ._describe import describe_store, format_store_info, gap_text
from ._dispatch import is_store, open_store
from ._folder import generation_prefix
from ._hdf5 import H5_FORMAT, H5_INDEX_SUM_ATTR, H5_VERSION, H5Store, h5_index_checksum
from ._protocol import StoreReader
from ._rates import repeated_frames, upsampled_line, upsampled_rows
from ._reader import Store
from ._records import VideoRecord
from ._tracks import FLOW_DTYPES, dequantise, payload_ranges, track_keys, track_tables
from ._verify import checksum_file, resign_store, verify_store

if TYPE_CHECKING:
    from ._manifest import Manifest

__all__ = [
    "ANNOTATION_FILES",
    "ANNOTATION_TOLERANCE",
    "FLOW_DTYPES",
    "H5_FORMAT",
    "H5_INDEX_SUM_ATTR",
    "H5_VERSION",
    "Annotations",
    "Codec",
    "H5Store",
    "Manifest",
    "Store",
    "StoreReader",
    "VideoRecord",
    "centre_boxes",
    "checksum_file",
    "codec_parameters",
    "create_codec",
    "dequantise",
    "describe_store",
    "format_store_info",
    "gap_text",
    "generation_prefix",
    "h5_index_checksum",
    "is_store",
    "list_codecs",
    "open_store",
    "payload_ranges",
    "read_boxes",
    "repeated_frames",
    "resign_store",
    "track_keys",
    "track_tables",
    "upsampled_line",
    "upsampled_rows",
    "verify_store",
]


def __getattr__(name: str):
    """``Manifest`` loads on first use: its model imports pydantic, which ``import
    hyperframes.store`` (and so the command line's start-up) does without."""
    if name == "Manifest":
        return importlib.import_module("._manifest", __name__).Manifest
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
