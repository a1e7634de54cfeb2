"""Where a store's bytes come from when they are not a local memory map: objects at a URL
(``s3://``, ``gs://``, ``file://``; :class:`RemoteFiles`), the byte sources a reader asks for
ranges of shards (:class:`LocalShards`, :class:`RemoteShards`, with requests coalesced), the
node-local block cache of remote shards (:class:`BlockCache`) and the read-ahead that fetches
the next batches' ranges in the background (:class:`ReadAhead`).

Imports nothing of hyperframes above ``_core``; ``hyperframes.store`` reads through it and
``hyperframes.build`` publishes through it. The object-storage client (s3fs, gcsfs via
fsspec) is imported on first use."""

from .._core._urls import is_url
from ._ahead import ReadAhead, plan_key
from ._bytes import LocalShards, RemoteShards, coalesce
from ._cache import BLOCK_BYTES, PIECE_BYTES, BlockCache, CacheWarning, entry_bytes
from ._files import (
    RemoteFiles,
    bare_url,
    client_reason,
    filesystem,
    is_precondition_failed,
    join_url,
)
from ._ranges import BatchPlanner, frame_runs, read_ranges

__all__ = [
    "BLOCK_BYTES",
    "PIECE_BYTES",
    "BatchPlanner",
    "BlockCache",
    "CacheWarning",
    "LocalShards",
    "ReadAhead",
    "RemoteFiles",
    "RemoteShards",
    "bare_url",
    "client_reason",
    "coalesce",
    "entry_bytes",
    "filesystem",
    "frame_runs",
    "is_precondition_failed",
    "is_url",
    "join_url",
    "plan_key",
    "read_ranges",
]
