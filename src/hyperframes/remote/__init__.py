"""Where a store's bytes come from when they are not a local memory map: objects at a URL
(``s3://``, ``gs://``, ``file://``; :class:`RemoteFiles`), the byte sources a reader asks for
ranges of shards (:class:`LocalShards`, :class:`RemoteShards`, with requests coalesced), the
node-local block cache of remote shards (:class:`BlockCache`) and the read-ahead that fetches
the next batches' ranges in the background (``_ahead.ReadAhead``).

Imports nothing of hyperframes above ``_core``; ``hyperframes.store`` reads through it and
``hyperframes.build`` publishes through it. The object-storage client (s3fs, gcsfs via
fsspec) is imported on first use."""

# ``from ._x import name as name``: for the other hyperframes packages, not public
from .._core._moved import moved_attribute
from .._core._urls import is_url as is_url
from ._bytes import LocalShards as LocalShards
from ._bytes import RemoteShards as RemoteShards
from ._cache import BLOCK_BYTES as BLOCK_BYTES
from ._cache import BlockCache as BlockCache
from ._cache import CacheWarning
from ._files import RemoteFiles as RemoteFiles
from ._files import bare_url as bare_url
from ._files import client_reason as client_reason
from ._files import filesystem as filesystem
from ._files import is_precondition_failed as is_precondition_failed
from ._files import join_url as join_url
from ._ranges import BatchPlanner as BatchPlanner
from ._ranges import frame_runs as frame_runs
from ._ranges import read_ranges as read_ranges

__all__ = [
    "CacheWarning",
]


def __getattr__(name: str):
    return moved_attribute(__name__, name)
