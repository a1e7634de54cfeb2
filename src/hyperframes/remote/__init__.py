"""Where a store's bytes come from when they are not a local memory map: objects at a URL
(``s3://``, ``gs://``, ``file://``; :class:`RemoteFiles`), the byte sources a reader asks for
ranges of shards (:class:`LocalShards`, :class:`RemoteShards`, with requests coalesced), the
node-local block cache of remote shards (:class:`BlockCache`) and the read-ahead that fetches
the next batches' ranges in the background (:class:`ReadAhead`).

Imports nothing of hyperframes above ``_core``; ``hyperframes.store`` reads through it and
``hyperframes.build`` publishes through it. The object-storage client (s3fs, gcsfs via
fsspec) is imported on first use."""

from .._core._moved import moved_attribute
from .._core._urls import is_url as is_url  # for other hyperframes packages, not public
from ._bytes import LocalShards as LocalShards  # for other hyperframes packages, not public
from ._bytes import RemoteShards as RemoteShards  # for other hyperframes packages, not public
from ._cache import BLOCK_BYTES as BLOCK_BYTES  # for other hyperframes packages, not public
from ._cache import BlockCache as BlockCache  # for other hyperframes packages, not public
from ._cache import CacheWarning
from ._files import RemoteFiles as RemoteFiles  # for other hyperframes packages, not public
from ._files import bare_url as bare_url  # for other hyperframes packages, not public
from ._files import client_reason as client_reason  # for other hyperframes packages, not public
from ._files import filesystem as filesystem  # for other hyperframes packages, not public
from ._files import (
    is_precondition_failed as is_precondition_failed,
)  # for other hyperframes packages, not public
from ._files import join_url as join_url  # for other hyperframes packages, not public
from ._ranges import BatchPlanner as BatchPlanner  # for other hyperframes packages, not public
from ._ranges import frame_runs as frame_runs  # for other hyperframes packages, not public
from ._ranges import read_ranges as read_ranges  # for other hyperframes packages, not public

__all__ = [
    "CacheWarning",
]

#: names that left __all__, still importable with a DeprecationWarning saying where they live
_MOVED = {
    "PIECE_BYTES": "hyperframes.remote._cache",
    "ReadAhead": "hyperframes.remote._ahead",
    "coalesce": "hyperframes.remote._bytes",
    "entry_bytes": "hyperframes.remote._cache",
    "plan_key": "hyperframes.remote._ahead",
}


def __getattr__(name: str):
    return moved_attribute(__name__, name, _MOVED)
