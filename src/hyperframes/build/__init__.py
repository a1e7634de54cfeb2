"""Building a store: decode each video once and write what ``hyperframes.store`` reads.

The modules, in the order a build goes through them:

- ``_build``: :func:`build_store`, the entry of every build (which way it goes: to a folder,
  an HDF5 file or a URL; here or on Ray), and :func:`dry_run`;
- ``_folder``: the build of a store folder under its lock, resumable and crash-safe;
  ``_lock``: the lock; ``_resume``: what a rerun keeps (parameters, intact videos);
- ``_workers``: the build workers (in this process, in worker processes, in Ray actors);
- ``_ingest`` / ``_track_writer`` / ``_flow``: one video's frames, audio and flow encoded
  into a shard; ``_shard``: the shard files, their journals, recovery after a crash;
- ``_journal``: :class:`JournalRecord`, a stored video as its shard's journal lists it, from
  ingest to assembly;
- ``_assemble``: the index and the manifest from the journals, the manifest last;
  ``_index_tables`` / ``_annotations``: the index files; ``_report``: :class:`BuildReport`;
- ``_ray`` / ``_ray_cluster`` / ``_ray_reaper``: the same build on a Ray cluster;
  ``_ray_publish`` / ``_ray_url``: a Ray build to a URL, the actors publishing their shards;
- ``_publish``: staging and uploading to a URL, and :func:`gc_store` for what a killed run
  left there;
- ``_hdf5``: :func:`convert_to_hdf5` (to a path or a URL) and ``build --format hdf5``;
  ``_convert``: :func:`convert_codec`, a store folder written again in another codec;
- ``_options``: :class:`BuildOptions`, every option of a build, checked once.

The entry points load on first use: ``_build`` imports the decoders (PyAV), which
``BuildOptions`` and ``hyperframes build --help`` do not need; Ray, h5py and OpenCV are
imported only by what uses them."""

import importlib

from .._core._moved import moved_attribute
from ._options import BuildOptions

__all__ = [
    "BuildOptions",
    "BuildReport",
    "build_store",
    "convert_codec",
    "convert_to_hdf5",
]

#: public name -> the module holding it, imported when the name is first asked for
_LAZY = {
    "BuildReport": "._report",
    "build_store": "._build",
    "dry_run": "._build",
    "header_sizes": "._build",
    "gc_store": "._publish",
    "convert_codec": "._convert",
    "convert_to_hdf5": "._hdf5",
    "conversion_summary": "._hdf5",
}


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    return moved_attribute(__name__, name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
