"""Building a store: decode each video once and write what ``hyperframes.store`` reads.

- ``_build``: the entry point (:func:`build_store`, :func:`dry_run`, :class:`BuildReport`),
  its worker processes and the resumable run (the store's lock, recovery of killed runs);
- ``_ingest`` / ``_track_writer`` / ``_shard``: one video's frames, audio and flow encoded
  into a shard, and the shard's journal (one record per video);
- ``_assemble``: the index and the manifest from the journals, the manifest last;
- ``_ray`` / ``_ray_publish`` / ``_ray_reaper``: the same build on a Ray cluster, actors
  publishing their own shards to a URL;
- ``_publish``: a build or a conversion to a URL (staged locally, uploaded, the manifest
  last), and :func:`gc_store` for what a killed run left there;
- ``_hdf5``: :func:`convert_to_hdf5` and ``build --format hdf5``;
- ``_options``: :class:`BuildOptions`, every option of a build, checked once.

Decoders and Ray are imported on first use."""

import importlib

from ._options import BuildOptions

__all__ = [
    "BuildOptions",
    "BuildReport",
    "build_store",
    "conversion_summary",
    "convert_to_hdf5",
    "dry_run",
    "gc_store",
]

_LAZY = {
    "BuildReport": "._build",
    "build_store": "._build",
    "dry_run": "._build",
    "gc_store": "._ray_publish",
    "convert_to_hdf5": "._hdf5",
    "conversion_summary": "._hdf5",
}


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
