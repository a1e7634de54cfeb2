"""Per-video records of an opened store: small value objects built lazily from the index
(:class:`VideoRecord`), the whole index (:class:`StoreIndex`) and its columns
(:class:`VideoList`). The index's checks at open are in ``_table_checks``."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence

import numpy as np

from ._annotations import Annotations


def _column(
    name: str, dtype: type, doc: str | None = None
) -> functools.cached_property[np.ndarray]:
    """A column of the index's ``videos`` table as an array of ``dtype``, read once."""

    def read(self) -> np.ndarray:
        return self._v[name].astype(dtype)

    read.__doc__ = doc
    return functools.cached_property(read)


@dataclasses.dataclass(frozen=True, repr=False)
class VideoRecord:
    id: int
    path: str
    label: str | None
    label_id: int  # -1 when unlabelled
    split: str | None
    num_frames: int  # frames stored (at the store's rate)
    fps: float  # rate of the stored frames
    shape: tuple[int, int, int]  # (C, H, W)
    pts_seconds: np.ndarray  # per stored frame, seconds
    source_frame_indices: np.ndarray  # per stored frame, index among the decoded frames
    num_frames_decoded: int
    num_frames_from_header: int | None
    source_bytes: int
    source_mtime_ns: int
    stream: int
    decode_errors: int = 0  # error signals the decoder reported (a damaged source); 0 = clean

    def __repr__(self) -> str:
        c, h, w = self.shape
        return (
            f"VideoRecord(id={self.id}, path={self.path!r}, label={self.label!r}, "
            f"num_frames={self.num_frames}, fps={self.fps:g}, shape=({c}, {h}, {w}))"
        )


@dataclasses.dataclass(frozen=True, repr=False)
class StoreIndex:
    """A store's whole index, as every form of store (folder, HDF5) holds it: ``videos`` one
    row per video (``store.format.VIDEO_DTYPES``), ``frames`` one row per stored frame
    (``FRAME_DTYPE``), ``strings`` the paths, class names and splits, ``change_score``
    one float32 per stored frame, or None, ``annotations`` (segments, multi-label
    classes, signatures: :class:`~hyperframes.store._annotations.Annotations`), or None when
    the store has none, and ``flow_score`` (a ``--flow`` build's motion score, one float32
    per stored frame), or None. Arrays may be memory maps: read-only."""

    videos: np.ndarray
    frames: np.ndarray
    strings: dict
    change_score: np.ndarray | None = None
    annotations: Annotations | None = None
    flow_score: np.ndarray | None = None

    def __repr__(self) -> str:
        return (
            f"StoreIndex(videos={len(self.videos)}, frames={len(self.frames)}, "
            f"change_score={'yes' if self.change_score is not None else 'no'}, "
            f"flow_score={'yes' if self.flow_score is not None else 'no'})"
        )


class VideoList(Sequence):
    """``store.videos``: a read-only sequence of ``VideoRecord`` made on access, and the same
    index as columns (``num_frames``, ``fps``, ``label_ids``...) for code that works on every
    video at once (never a Python object per video)."""

    def __init__(self, index: StoreIndex):
        # plain ndarray views of the memory maps: same bytes, no np.memmap overhead per access
        self._v = np.asarray(index.videos)
        self._f = np.asarray(index.frames)
        self._change = None if index.change_score is None else np.asarray(index.change_score)
        self._motion = None if index.flow_score is None else np.asarray(index.flow_score)
        self._annotations = index.annotations
        self._paths = index.strings["paths"]
        self._classes = index.strings["classes"]
        self._splits = index.strings["splits"]

    def __len__(self) -> int:
        return len(self._v)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        n = len(self._v)
        if not -n <= i < n:
            raise IndexError(f"video {i} is out of range: the store holds {n} videos")
        i = int(i) % n
        r = self._v[i]
        f0, nf = int(r["frame_start"]), int(r["num_frames"])
        lid, sid = int(r["label_id"]), int(r["split_id"])
        hdr = int(r["num_frames_from_header"])
        return VideoRecord(
            id=i,
            path=self._paths[i],
            label=self._classes[lid] if lid >= 0 else None,
            label_id=lid,
            split=self._splits[sid] if sid >= 0 else None,
            num_frames=nf,
            fps=float(r["fps"]),
            shape=(int(r["channels"]), int(r["height"]), int(r["width"])),
            pts_seconds=self._f["pts_seconds"][f0 : f0 + nf],
            source_frame_indices=self._f["source_index"][f0 : f0 + nf],
            num_frames_decoded=int(r["num_frames_decoded"]),
            num_frames_from_header=hdr if hdr >= 0 else None,
            source_bytes=int(r["source_bytes"]),
            source_mtime_ns=int(r["source_mtime_ns"]),
            stream=int(r["stream"]),
            decode_errors=int(r["decode_errors"]) if "decode_errors" in r.dtype.names else 0,
        )

    # vectorised columns (computed once), for planners and loaders over many videos
    num_frames = _column("num_frames", np.int64)
    label_ids = _column("label_id", np.int64)

    @functools.cached_property
    def decode_errors(self) -> np.ndarray:
        """Decoder error signals per video (zeros for stores from before they were counted)."""
        if "decode_errors" in (self._v.dtype.names or ()):
            return self._v["decode_errors"].astype(np.int64)
        return np.zeros(len(self._v), np.int64)

    streams = _column(
        "stream",
        np.int64,
        "The video stream decoded per video: K of v:K, counting the source's video streams.",
    )
    fps = _column("fps", np.float64)
    frame_start = _column("frame_start", np.int64)

    @functools.cached_property
    def shapes(self) -> np.ndarray:
        """(N, 3) array of (C, H, W)."""
        return np.stack([self._v[k] for k in ("channels", "height", "width")], axis=1).astype(
            np.int64
        )

    split_ids = _column(
        "split_id",
        np.int64,
        "Index into :attr:`splits` per video (-1 when the video has no split).",
    )
    nbytes = _column(
        "nbytes",
        np.int64,
        "Payload bytes per video (as stored: compressed for a compressed codec).",
    )

    @property
    def paths(self) -> list[str]:
        return self._paths

    @property
    def classes(self) -> list[str]:
        return self._classes

    @property
    def splits(self) -> list[str]:
        """Split names; :attr:`split_ids` index into them."""
        return self._splits

    @property
    def annotations(self) -> Annotations:
        """Labelled segments, multi-label classes and signatures of the videos (empty, and
        ``signatures`` None, for a store without them)."""
        if self._annotations is None:
            self._annotations = Annotations.empty()
        return self._annotations

    @property
    def change_score_all(self) -> np.ndarray | None:
        """Every stored frame's change score, videos back to back (index with
        ``frame_start``), or None when the store has none."""
        return self._change

    @property
    def flow_score_all(self) -> np.ndarray | None:
        """Every stored frame's flow score (``Store.flow_scores``), videos back to back, or
        None when the store has none. Unchecked: the sampler checks a video's when it plans."""
        return self._motion

    @property
    def pts_seconds_all(self) -> np.ndarray:
        """Every stored frame's pts, videos back to back (index with ``frame_start``)."""
        return self._f["pts_seconds"]

    @property
    def source_index_all(self) -> np.ndarray:
        return self._f["source_index"]
