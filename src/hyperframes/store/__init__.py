"""The hyperframe store: the format (:mod:`hyperframes.store.format`), the reader
(:func:`open_store`, :class:`Store`; the HDF5 form :class:`H5Store`; a store at a URL), the
codecs, the tracks, verify and describe.

Reading a store imports no decoder. What a build writes is written by ``hyperframes.build``,
which takes the format's pieces from here (the names re-exported ``as`` themselves below,
kept out of ``__all__``).

Inside: ``_open`` is the one open-and-validate sequence, run by both forms over their own bytes
(``_folder``: a folder's files, local or at a URL through ``_remote_store``; ``_hdf5``: the
HDF5 datasets), with the tables' checks in ``_table_checks`` and ``_track_checks``; ``_base``
holds what both readers share once open, ``_reader`` the folder store's reads and ``_batch``
its batched reads; ``_records``, ``_tracks`` and ``_annotations`` the index as values."""

import importlib
from typing import TYPE_CHECKING

# ``from ._x import name as name``: for the other hyperframes packages, not public
from .._core._moved import moved_attribute
from ._annotations import ANNOTATION_FILES as ANNOTATION_FILES
from ._annotations import ANNOTATION_TOLERANCE as ANNOTATION_TOLERANCE
from ._annotations import Annotations
from ._change import ChangeScorer as ChangeScorer
from ._change import change_score as change_score
from ._codecs import Codec, codec_parameters, create_codec, list_codecs
from ._crop import centre_boxes as centre_boxes
from ._crop import read_boxes
from ._describe import describe_store
from ._describe import format_store_info as format_store_info
from ._describe import gap_text as gap_text
from ._dispatch import is_store as is_store
from ._dispatch import open_store
from ._folder import generation_prefix as generation_prefix
from ._hdf5 import H5_FORMAT as H5_FORMAT
from ._hdf5 import H5_INDEX_SUM_ATTR as H5_INDEX_SUM_ATTR
from ._hdf5 import H5_VERSION as H5_VERSION
from ._hdf5 import H5Store
from ._hdf5 import h5_index_checksum as h5_index_checksum
from ._protocol import StoreReader
from ._rates import repeated_frames as repeated_frames
from ._rates import upsampled_line as upsampled_line
from ._rates import upsampled_rows as upsampled_rows
from ._reader import Store
from ._records import VideoRecord
from ._signature import CROP_MAX_VIDEOS as CROP_MAX_VIDEOS
from ._signature import CROP_SIMILAR_BITS as CROP_SIMILAR_BITS
from ._signature import MIN_FRAMES as MIN_FRAMES
from ._signature import SIGNATURE_FRAMES as SIGNATURE_FRAMES
from ._signature import SIGNATURE_WIDTH as SIGNATURE_WIDTH
from ._signature import SignatureBuilder as SignatureBuilder
from ._signature import crop_candidates as crop_candidates
from ._signature import grey_base as grey_base
from ._signature import refine_crop as refine_crop
from ._signature import signature_frames as signature_frames
from ._signature import signature_of_frames as signature_of_frames
from ._signature import similar_pairs as similar_pairs
from ._tracks import FLOW_DTYPES as FLOW_DTYPES
from ._tracks import payload_ranges as payload_ranges
from ._tracks import track_keys as track_keys
from ._tracks import track_tables as track_tables
from ._verify import checksum_file as checksum_file
from ._verify import resign_store as resign_store
from ._verify import verify_store

if TYPE_CHECKING:
    from ._manifest import Manifest

__all__ = [
    "Annotations",
    "Codec",
    "H5Store",
    "Manifest",
    "Store",
    "StoreReader",
    "VideoRecord",
    "codec_parameters",
    "create_codec",
    "describe_store",
    "list_codecs",
    "open_store",
    "read_boxes",
    "verify_store",
]


def __getattr__(name: str):
    """``Manifest`` loads on first use: its model imports pydantic, which ``import
    hyperframes.store`` (and so the command line's start-up) does without."""
    if name == "Manifest":
        return importlib.import_module("._manifest", __name__).Manifest
    return moved_attribute(__name__, name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
