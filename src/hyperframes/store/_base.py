"""What the folder store (``Store``) and the HDF5 form (``H5Store``) share once opened: the open
sequence's results kept as the reader's fields (:meth:`StoreBase._open_index`), and the
accessors that read only them (counts, video ids, scores, ``read_numpy``, ``read``, the track
reads of :class:`~hyperframes.store._tracks.TrackMethods`). Each form adds how it reads frame
bytes (``_check_indices``, ``_frame_shape``, ``_read_into``, ``_track_bytes``,
``_track_where``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .._core._device import window_requests
from .._core._errors import DataError, StoreError
from ._open import Check, IndexSource, open_index
from ._records import StoreIndex, VideoList, VideoRecord
from ._table_checks import ALTERED
from ._tracks import TrackMethods, Tracks

__all__ = ["StoreBase"]


class StoreBase(TrackMethods):
    """The fields and accessors every opened form of store has (see the module)."""

    path: Path | str
    manifest: dict
    dtype: np.dtype
    classes: list[str]
    #: the whole index (what ``convert_to_hdf5`` copies); ``videos`` reads it per video
    index: StoreIndex
    videos: VideoList
    check: Check
    _videos: np.ndarray
    _frames: np.ndarray
    _change: np.ndarray | None
    _motion: np.ndarray | None
    _motion_file: str
    _verified: set[int] | None

    def _open_index(self, src: IndexSource, check: Check) -> None:
        """Run the open sequence (:func:`~hyperframes.store._open.open_index`) on ``src``
        and keep what it read."""
        o = open_index(src)
        self.manifest = o.manifest
        self._videos, self._frames = o.videos, o.frames
        self._change, self._motion, self._motion_file = o.change, o.motion, o.motion_file
        self.classes = o.strings["classes"]
        build = o.manifest.get("build")
        self._tracks = Tracks(
            o.audio,
            o.flow,
            build if isinstance(build, dict) else {},
            o.strings["paths"],
            self._track_bytes,
            self._track_where,
            check=check == "video",
        )
        self.index = StoreIndex(o.videos, o.frames, o.strings, o.change, o.annotations, o.motion)
        self.videos = VideoList(self.index)
        self.dtype = np.dtype(o.manifest["dtype"])
        self.check = check
        self._verified = None

    def _track_bytes(self, kind: str, i: int, lo: int = 0, hi: int | None = None) -> np.ndarray:
        raise NotImplementedError

    def _track_where(self, kind: str, i: int) -> str:
        """What messages call video ``i``'s ``kind`` track payload."""
        raise NotImplementedError

    def _check_indices(self, i: int, idx: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def _frame_shape(self, i: int) -> tuple[int, ...]:
        """(C, H, W) of video ``i``'s frames."""
        raise NotImplementedError

    def _read_into(self, i: int, idx: np.ndarray, out: np.ndarray) -> None:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    # -- metadata -------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.videos)

    @property
    def num_frames(self) -> int:
        return int(self.manifest["num_frames"])

    @property
    def failed(self) -> list[dict]:
        return list(self.manifest.get("failed", []))

    def _video_id(self, video) -> int:
        i = video.id if isinstance(video, VideoRecord) else int(video)
        if not 0 <= i < len(self._videos):
            raise DataError(f"video {i} is out of range: {self.path} holds {len(self._videos)}")
        return i

    def change_scores(self, video) -> np.ndarray | None:
        """The video's per-frame change scores recorded at build time (float32, one per stored
        frame; see :func:`hyperframes.store.change_score`), or None if the store has none."""
        return change_slice(self._change, self._videos, self._video_id(video))

    def flow_scores(self, video) -> np.ndarray | None:
        """The video's per-frame flow scores recorded at a ``--flow`` build (float32, one per
        stored frame: frame k's is the mean length of the flow k-1 -> k in stored-frame
        pixels, 0 for frame 0), or None if the store has none (built without flow, or before
        they were recorded)."""
        i = self._video_id(video)
        return motion_slice(self._motion, self._videos, i, self._motion_file)

    # -- reads ----------------------------------------------------------------------------
    def read_numpy(self, video, frame_indices, *, out: np.ndarray | None = None) -> np.ndarray:
        """Frames ``frame_indices`` of ``video`` as an ``(n, C, H, W)`` array (a copy)."""
        i = self._video_id(video)
        idx = self._check_indices(i, np.asarray(frame_indices, dtype=np.int64).reshape(-1))
        shape = (len(idx), *self._frame_shape(i))
        if out is None:
            out = np.empty(shape, self.dtype)
        elif out.shape != shape or out.dtype != self.dtype:
            raise DataError(f"out has shape {out.shape} {out.dtype}; needs {shape} {self.dtype}")
        self._read_into(i, idx, out)
        return out

    def read(self, video, frame_indices):
        """Frames of ``video`` as a torch tensor ``(len(frame_indices), C, H, W)``."""
        import torch  # deferred: optional/heavy dependency

        return torch.from_numpy(self.read_numpy(video, frame_indices))

    def read_windows(self, videos, index, *, out=None):
        """``read_batch`` of windows given as columns: ``videos`` (B,) and ``index`` (B, T)."""
        return self.read_batch(window_requests(videos, index), out=out)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def change_slice(change, videos, i: int) -> np.ndarray | None:
    """Video ``i``'s change scores (a float32 copy), or None when the store has none."""
    if change is None:
        return None
    f0, n = int(videos["frame_start"][i]), int(videos["num_frames"][i])
    return np.array(change[f0 : f0 + n], dtype=np.float32)


def motion_slice(motion, videos, i: int, where) -> np.ndarray | None:
    """Video ``i``'s flow scores (float32 copy), checked finite and >= 0 (a StoreError naming
    ``where``, the file, otherwise), or None when the store has none."""
    out = change_slice(motion, videos, i)
    if out is not None and not (np.isfinite(out).all() and (out >= 0).all()):
        bad = int(np.flatnonzero(~(np.isfinite(out) & (out >= 0)))[0])
        raise StoreError(
            f"{where}: video {i}'s frame {bad} has flow score {out[bad]!r}; a flow score is a "
            f"finite length >= 0: {ALTERED}"
        )
    return out


def take(view: np.ndarray, idx: np.ndarray, out: np.ndarray) -> None:
    """Copy ``view[idx]`` into ``out``; strided runs become one slice copy."""
    n = len(idx)
    if n == 0:
        return
    if n == 1:
        out[0] = view[idx[0]]
        return
    step = int(idx[1] - idx[0])
    if step > 0 and np.all(np.diff(idx) == step):
        out[...] = view[idx[0] : idx[-1] + 1 : step]
    else:
        np.take(view, idx, axis=0, out=out)
