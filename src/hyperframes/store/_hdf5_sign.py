"""``hyperframes verify --resign FILE.h5``: record the checksums an HDF5 store written by an
older hyperframes lacks (the frames' ``/index/frames_xxh3_64`` and the index's
``index_xxh3_64`` attribute, :mod:`hyperframes.store._hdf5`), in a copy of the file renamed
over it once written, so a resign that stops half-way leaves the file as it was."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np

from .._core._atomic import fsync_dir, remove_stale_temps, temp_path
from .._core._errors import StoreError
from ._hdf5 import H5_INDEX_SUM_ATTR, H5Store, frames_digest, h5_errors, h5_index_checksum


def resign_hdf5(path: Path) -> tuple[list[str], list[str]]:
    """``(what was signed, problems)``: nothing is written when the file records every
    checksum already, or when one it records does not match (a damaged file is reported,
    never re-signed)."""
    try:
        store = H5Store(path)
    except StoreError as e:
        return [], [str(e)]
    with store:
        problems = []
        for i in range(len(store)):
            if store.has_checksums:
                problem = store.frames_problem(i)
                if problem is not None:
                    problems.append(problem)
            problems += store.track_problems(i)
        if problems:
            return [], [f"{p} (not re-signed: restore the file or convert again)" for p in problems]
        sums = None
        if not store.has_checksums:
            with h5_errors(path):
                sums = np.array(
                    [frames_digest(store._video_dataset(i)) for i in range(len(store))], np.uint64
                )
        signed_index = store.unsigned is not None
    if sums is None and not signed_index:
        return [], []
    signed = []
    if sums is not None:
        signed.append(f"{path}:/index/frames_xxh3_64 ({len(sums)} videos)")
    signed.append(f"{path}: attribute {H5_INDEX_SUM_ATTR} (the index)")
    _write_signed(path, sums)
    H5Store(path).close()  # the signed file opens
    return signed, []


def _write_signed(path: Path, sums: np.ndarray | None) -> None:
    import h5py  # deferred: optional/heavy dependency

    remove_stale_temps(path.parent, path.name)
    tmp = temp_path(path)
    try:
        shutil.copyfile(path, tmp)
        with h5_errors(tmp), h5py.File(tmp, "r+") as h5:
            if sums is not None:
                h5["index"].create_dataset("frames_xxh3_64", data=sums)
            h5.attrs[H5_INDEX_SUM_ATTR] = h5_index_checksum(h5)
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        os.replace(tmp, path)
        fsync_dir(path.parent)
    finally:
        tmp.unlink(missing_ok=True)
