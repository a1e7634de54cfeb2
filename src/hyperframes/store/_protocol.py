"""``StoreReader``: what every form of store offers its readers, and all that they may use.

Three classes implement it: :class:`~hyperframes.store.Store` (a folder store),
``H5Store`` (the HDF5 form, opened by :func:`~hyperframes.store.open_store` too) and
:class:`~hyperframes.data.InMemoryStore` (a store held in RAM or on a GPU). The dataset, the
loader, ``convert`` and the benchmarks use these names only, never a reader's private fields,
so a new form of store is one class with these members.

Tracks (audio, optical flow, homographies: ``has_audio``, ``audio_info``, ``read_audio``,
``has_flow``, ``flow_info``, ``flow_shape``, ``read_flow``, ``homographies``) are not part of
the protocol: ``Store`` and ``H5Store`` serve them (``_tracks.TrackMethods``), a reader without
them (an in-memory store) lacks them, so code asks ``getattr(store, "has_audio", False)``.

Reads return the frames as stored: ``(n, C, H, W)`` of ``dtype`` per video, in the order of
``frame_indices`` (repeats allowed); an index outside the video is a DataError naming it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from ._records import VideoList

__all__ = ["StoreReader"]


@runtime_checkable
class StoreReader(Protocol):
    #: where the store lives (a folder, an ``.h5`` file; an in-memory store names its source)
    path: Path
    #: the build's manifest (format, codec, dtype, shards, counts, failed and damaged videos)
    manifest: dict
    #: class names; ``videos.label_ids`` index into them
    classes: list[str]
    #: every video: ``videos[i]`` is a VideoRecord, and the index as columns
    #: (``num_frames``, ``fps``, ``label_ids``, ``frame_start``, ``pts_seconds_all``...);
    #: ``videos.annotations``: labelled segments, multi-label classes, signatures
    videos: VideoList
    #: element type of the stored frames (uint8, or float16 when normalised at build)
    dtype: np.dtype

    def __len__(self) -> int:
        """Number of videos."""
        ...

    def read_numpy(
        self, video, frame_indices, *, out: np.ndarray | None = None
    ) -> np.ndarray | Any:
        """Frames ``frame_indices`` of ``video`` (an id or a VideoRecord), ``(n, C, H, W)``;
        written into ``out`` when given."""
        ...

    def read(self, video, frame_indices) -> Any:
        """As :meth:`read_numpy`, as a torch tensor."""
        ...

    def read_batch(self, requests: Sequence[tuple], *, out=None) -> Any:
        """Many ``(video, frame_indices)`` reads in one call: one ``(B, T, C, H, W)`` tensor
        when every request has the same shape (written into ``out`` when given), else a list
        of tensors."""
        ...

    def read_windows(self, videos, index, *, out=None) -> Any:
        """``read_batch`` of windows given as columns, ``videos`` (B,) and ``index`` (B, T)
        (what the batch pipeline plans): one ``(B, T, C, H, W)`` tensor when every window has
        the same shape, else a list of tensors."""
        ...

    def change_scores(self, video) -> np.ndarray | None:
        """The video's per-frame change scores recorded at build (float32), or None."""
        ...

    def flow_scores(self, video) -> np.ndarray | None:
        """The video's per-frame flow (motion) scores recorded at a ``--flow`` build
        (float32), or None."""
        ...

    def close(self) -> None:
        """Release the files and memory the reader holds."""
        ...
