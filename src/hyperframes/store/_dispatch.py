"""Which reader a path opens with: a URL (:func:`~._remote_store.open_remote`), an HDF5 file
(:class:`~._hdf5.H5Store`) or a store folder (:class:`~._reader.Store`) -- :func:`open_store`,
and :func:`is_store` for the same question without opening."""

from __future__ import annotations

import os
from pathlib import Path

from .._core._errors import ConfigError
from .._core._urls import is_url
from ._hdf5 import H5Store
from ._open import Check
from ._reader import Store
from ._remote_store import open_remote, remote_is_store
from .format import MANIFEST

__all__ = ["is_store", "open_store"]


def open_store(
    path: str | os.PathLike,
    *,
    check: Check = None,
    cache_dir: str | os.PathLike | None = None,
    cache_limit: int | None = None,
):
    """Open a store folder (or an HDF5 file written by ``convert``) for reading.

    ``check="video"`` verifies each video's payload checksum (taken at build) the first time
    the video is read, and raises StoreError naming the file and the video on a mismatch.

    ``path`` may be a URL (``s3://bucket/prefix``): the manifest and index are fetched once,
    windows by byte ranges. ``cache_dir`` / ``cache_limit`` (bytes): a node-local cache of
    the shards' blocks, shared by the processes of a node (see ``hyperframes.remote``).
    """
    if is_url(path):
        return open_remote(str(path), check=check, cache_dir=cache_dir, cache_limit=cache_limit)
    if cache_dir is not None or cache_limit is not None:
        raise ConfigError(
            f"cache_dir/cache_limit: a cache serves stores at a URL (s3://...); {path} is local"
        )
    p = Path(path)
    if p.is_file() and p.suffix.lower() in (".h5", ".hdf5"):
        return H5Store(p, check=check)
    return Store(p, check=check)


def is_store(path: str | os.PathLike) -> bool:
    """Whether ``path`` looks like a store (a folder with a manifest, or an HDF5 file), without
    opening it: ``open_store`` still checks everything."""
    if is_url(path):
        return remote_is_store(str(path))
    p = Path(path)
    if p.is_file():
        return p.suffix.lower() in (".h5", ".hdf5")
    return (p / MANIFEST).is_file()
