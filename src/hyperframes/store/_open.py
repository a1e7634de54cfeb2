"""The one open-and-validate sequence every form of store runs (:func:`open_index`), and the
checks it is made of that are not the tables' own (``_table_checks``, ``_track_checks``): the
manifest's shape (``_manifest.check_manifest``), the ``check=`` option, the change and flow scores.

A form of store says only how it gets the bytes, as an :class:`IndexSource`: a folder (local,
or objects at a URL) reads index files (``_folder.FolderIndex``), the HDF5 form reads datasets
(``_hdf5.H5Index``). The sequence is the same for both, in the same order, so a damaged or
crafted index is refused with the same checks whatever holds it; what only one form has (a
folder's shards and chunk rows, the HDF5 file's per-video datasets) are the source's steps,
called at their place in the sequence.
"""

from __future__ import annotations

import dataclasses
import os
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from .._core._errors import ConfigError, StoreError
from ._annotations import ANNOTATION_FILES, Annotations, read_annotations
from ._table_checks import ALTERED, IndexFiles, check_table
from ._track_checks import check_track_tables
from .format import (
    AUDIO_FILE,
    CHANGE_FILE,
    FLOW_FILE,
    FLOW_SCORE_FILE,
    VIDEO_DTYPES,
)

if TYPE_CHECKING:
    from ._manifest import Manifest

__all__ = ["Check", "IndexSource", "OpenedIndex", "check_manifest", "check_option", "open_index"]

#: ``check=`` values of :func:`~hyperframes.store.open_store`
CHECKS = ("video",)
Check = Literal["video"] | None


def check_option(check) -> None:
    if check is not None and check not in CHECKS:
        raise ConfigError(
            f"check={check!r} is not known; use None (reads trust the build's checksums; "
            "`hyperframes verify` recomputes them) or 'video' (each video's payload is "
            "verified the first time it is read)"
        )


def check_manifest(m, path: str | os.PathLike) -> Manifest:
    """The manifest ``m`` (parsed JSON) of ``path`` checked through the typed model
    (``_manifest.check_manifest``): a StoreError naming ``path`` and the key."""
    # (pydantic, which the model imports, stays off `import hyperframes.store`: the CLI starts
    # without it)
    from ._manifest import check_manifest as check  # deferred: pydantic off the CLI start-up

    return check(m, path)


def check_change_scores(change: np.ndarray, n_frames: int, where) -> None:
    if change.ndim != 1 or change.dtype != np.float32 or len(change) != n_frames:
        raise StoreError(
            f"{where}: holds {change.dtype} of shape {change.shape}; expected float32, one per "
            f"stored frame ({n_frames}): {ALTERED}"
        )


#: flow scores are checked at open as change scores are (shape and dtype; values per video,
#: when read: ``_base.motion_slice``)
check_flow_scores = check_change_scores


class IndexSource:
    """How one form of store gives :func:`open_index` its bytes. Index files are named as a
    folder store names them (``change_score.npy``, ``audio.npy``...: ``format``); ``where``
    turns such a name into what messages call it. The ``check_*`` steps default to nothing:
    a form overrides those it has."""

    #: what messages call the manifest
    manifest_where: str | os.PathLike
    #: what messages call the tables (set by the time :meth:`tables` returns)
    named: IndexFiles

    def read_manifest(self) -> Any:
        """The manifest as stored (parsed JSON, not checked yet)."""
        raise NotImplementedError

    def check_files(self, m: dict) -> dict:
        """After :func:`check_manifest`: the form's checks of what the manifest lists; returns
        the manifest the reader keeps."""
        return m

    def tables(self) -> tuple[np.ndarray, np.ndarray, Any]:
        """The videos and frames tables and the strings (parsed JSON), not checked yet."""
        raise NotImplementedError

    def has(self, name: str) -> bool:
        """Whether the optional index file ``name`` is present."""
        raise NotImplementedError

    def npy(self, name: str) -> np.ndarray:
        raise NotImplementedError

    def where(self, name: str) -> str:
        raise NotImplementedError

    def frames_mismatch(self, said: int, held: int) -> StoreError:
        """The error of a manifest whose ``num_frames`` (``said``) is not the frames table's."""
        raise NotImplementedError

    def check_payload(self, videos: np.ndarray, strings: dict) -> None:
        """After :func:`check_table`: where the frames' payload lies (a folder's shards)."""

    def check_datasets(self, n_videos: int) -> None:
        """After the frame count: the form's per-video containers (HDF5's /videos)."""

    def check_checksums(self, n_videos: int) -> None:
        """After the scores: the form's own per-video checksums (HDF5's frames_xxh3_64)."""

    def check_track_payload(self, audio, flow, videos: np.ndarray, paths, files: dict) -> None:
        """After :func:`check_track_tables`: where the track payloads lie (a folder's shards)."""


@dataclasses.dataclass(frozen=True)
class OpenedIndex:
    """What :func:`open_index` read and checked: the reader's manifest, the tables, the
    strings, the optional scores (None when absent; ``motion_file`` names the flow scores),
    the annotations (None when absent) and the track tables (None when absent)."""

    manifest: dict
    videos: np.ndarray
    frames: np.ndarray
    strings: dict
    change: np.ndarray | None
    motion: np.ndarray | None
    motion_file: str
    annotations: Annotations | None
    audio: np.ndarray | None
    flow: np.ndarray | None


def open_index(src: IndexSource) -> OpenedIndex:
    """Read and check a store's manifest and index from ``src``, in this order: the manifest,
    the files it lists (``check_files``), the tables, their payload (``check_payload``), the
    frame count, the form's containers (``check_datasets``), the change and flow scores, the
    form's checksums (``check_checksums``), the annotations, the track tables and where their
    payloads lie (``check_track_payload``). Each array is read once; the first problem is a
    StoreError naming the file (and the video)."""
    m = src.read_manifest()
    check_manifest(m, src.manifest_where)
    m = src.check_files(m)
    videos, frames, strings = src.tables()
    check_table(videos, frames, strings, dtype=VIDEO_DTYPES[m["format_version"]], files=src.named)
    src.check_payload(videos, strings)
    if m["num_frames"] != len(frames):
        raise src.frames_mismatch(m["num_frames"], len(frames))
    src.check_datasets(len(videos))
    change = motion = None
    if src.has(CHANGE_FILE):
        change = src.npy(CHANGE_FILE)
        check_change_scores(change, len(frames), src.where(CHANGE_FILE))
    motion_file = src.where(FLOW_SCORE_FILE)
    if src.has(FLOW_SCORE_FILE):
        motion = src.npy(FLOW_SCORE_FILE)
        check_flow_scores(motion, len(frames), motion_file)
    src.check_checksums(len(videos))
    paths = strings["paths"]
    annotations = read_annotations(
        src.npy,
        {f for f in ANNOTATION_FILES if src.has(f)},
        where=src.where,
        paths=paths,
        num_classes=len(strings["classes"]),
        num_box_classes=len(m.get("box_classes") or ()),
        num_frames=videos["num_frames"],
    )
    audio = src.npy(AUDIO_FILE) if src.has(AUDIO_FILE) else None
    flow = src.npy(FLOW_FILE) if src.has(FLOW_FILE) else None
    track_files = {
        "videos": src.named.videos,
        "audio": src.where(AUDIO_FILE),
        "flow": src.where(FLOW_FILE),
    }
    check_track_tables(audio, flow, videos, paths, files=track_files)
    src.check_track_payload(audio, flow, videos, paths, track_files)
    return OpenedIndex(
        m, videos, frames, strings, change, motion, motion_file, annotations, audio, flow
    )
