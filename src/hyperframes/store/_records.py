"""Per-video records of an opened store: small value objects, built lazily from the index."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence

import numpy as np


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

    def __repr__(self) -> str:
        c, h, w = self.shape
        return (
            f"VideoRecord(id={self.id}, path={self.path!r}, label={self.label!r}, "
            f"num_frames={self.num_frames}, fps={self.fps:g}, shape=({c}, {h}, {w}))"
        )


class VideoList(Sequence):
    """``store.videos``: a read-only sequence of ``VideoRecord`` made on access."""

    def __init__(self, videos: np.ndarray, frames: np.ndarray, strings: dict):
        # plain ndarray views of the memory maps: same bytes, no np.memmap overhead per access
        self._v = np.asarray(videos)
        self._f = np.asarray(frames)
        self._paths = strings["paths"]
        self._classes = strings["classes"]
        self._splits = strings["splits"]

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
        )

    # vectorised columns (computed once), for planners and loaders over many videos
    @functools.cached_property
    def num_frames(self) -> np.ndarray:
        return self._v["num_frames"].astype(np.int64)

    @functools.cached_property
    def label_ids(self) -> np.ndarray:
        return self._v["label_id"].astype(np.int64)

    @functools.cached_property
    def fps(self) -> np.ndarray:
        return self._v["fps"].astype(np.float64)

    @functools.cached_property
    def frame_start(self) -> np.ndarray:
        return self._v["frame_start"].astype(np.int64)

    @functools.cached_property
    def shapes(self) -> np.ndarray:
        """(N, 3) array of (C, H, W)."""
        return np.stack([self._v[k] for k in ("channels", "height", "width")], axis=1).astype(
            np.int64
        )

    @property
    def paths(self) -> list[str]:
        return self._paths

    @property
    def pts_seconds_all(self) -> np.ndarray:
        """Every stored frame's pts, videos back to back (index with ``frame_start``)."""
        return self._f["pts_seconds"]

    @property
    def source_index_all(self) -> np.ndarray:
        return self._f["source_index"]
