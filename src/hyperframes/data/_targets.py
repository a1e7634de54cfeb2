"""Targets beyond one class per window, from a store's annotations (labelled segments,
multi-label videos): ``HyperframeDataset(targets=...)``.

- ``"multi_hot"``: (C,) float32, the window's classes. An item of the ``per_segment`` sampler
  has its segment's classes; a window of a video with segments has the classes of the
  segments that hold any of its (unpadded) frames, by pts; a window of a video without
  segments has its video's classes (its label, or every class a multi-label source listed).
- ``"frames"``: (T, C) float32, each frame's classes: the segments holding its pts (a video
  without segments: its video's classes on every frame); padded positions are all 0.

C is the number of the store's classes. The ``label`` of a ``per_segment`` item is its
segment's first class (``-1`` without one), so single-label training on segments of
untrimmed videos needs nothing more; other items keep their video's label.
"""

from __future__ import annotations

import numpy as np
import torch

from ..sampling import SegmentTable, frame_labels

__all__ = ["TARGETS", "TargetMaker", "store_segments"]

TARGETS = ("multi_hot", "frames")


def store_segments(videos, ids: np.ndarray) -> tuple[SegmentTable | None, np.ndarray]:
    """The segments of the store videos ``ids`` as a :class:`SegmentTable` whose ``video``
    numbers them ``0 .. len(ids) - 1`` (the dataset's table), and the store's segment row of
    each table row; ``(None, [])`` when those videos have no segment."""
    ann = videos.annotations
    seg = ann.segments
    if not len(seg):
        return None, np.zeros(0, np.int64)
    pos = np.full(len(videos), -1, np.int64)
    pos[ids] = np.arange(len(ids))
    local = pos[np.asarray(seg["video"], np.int64)]
    rows = np.flatnonzero(local >= 0)
    if not rows.size:
        return None, np.zeros(0, np.int64)
    rows = rows[np.argsort(local[rows], kind="stable")]
    table = SegmentTable(
        local[rows],
        seg["start_seconds"][rows],
        seg["end_seconds"][rows],
        labels=np.asarray(ann.segment_labels, np.int64),
        label_start=seg["label_start"][rows],
        num_labels=seg["num_labels"][rows],
    )
    return table, rows


class TargetMaker:
    """Label and target of each item of a dataset over the store videos ``ids``, whose
    segments are ``segments`` (table rows numbering ``ids`` by position)."""

    def __init__(self, videos, ids: np.ndarray, segments: SegmentTable | None, kind: str | None):
        self.kind = kind
        self.num_classes = len(videos.classes)
        self.segments = segments
        self._videos = videos
        self._pos = np.full(len(videos), -1, np.int64)
        self._pos[ids] = np.arange(len(ids))
        has = np.zeros(len(ids), bool)
        if segments is not None:
            has[segments.video] = True
        self._has_segments = has

    def label(self, video_id: int, segment: int) -> int:
        """The item's class: its segment's first (a ``per_segment`` item), else its video's."""
        if segment >= 0 and self.segments is not None:
            ids = self.segments.labels_of(segment)
            return int(ids[0]) if ids.size else -1
        return int(self._videos.label_ids[video_id])

    def _video_classes(self, video_id: int) -> np.ndarray:
        ids = self._videos.annotations.video_label_ids(video_id)
        own = int(self._videos.label_ids[video_id])
        return np.union1d(ids, [own]) if own >= 0 else ids

    def target(
        self, video_id: int, segment: int, pts_seconds: np.ndarray, mask: np.ndarray
    ) -> torch.Tensor | None:
        """The item's target (module doc), or None when the dataset gives none."""
        if self.kind is None:
            return None
        c, mask = self.num_classes, np.asarray(mask, bool)
        local = int(self._pos[video_id])
        if self._has_segments[local]:
            assert self.segments is not None  # _has_segments is all False without them
            per_frame = frame_labels(self.segments, local, pts_seconds, c)
        else:
            per_frame = np.zeros((len(mask), c), bool)
            per_frame[:, self._video_classes(video_id)] = True
        per_frame &= mask[:, None]
        if self.kind == "frames":
            return torch.from_numpy(per_frame.astype(np.float32))
        if segment >= 0 and self.segments is not None:
            hot = np.zeros(c, bool)
            hot[self.segments.labels_of(segment)] = True
        else:
            # numpy's stubs: any(axis=0) may be a scalar; of a 2D array it is a 1D array
            hot = per_frame.any(axis=0)  # type: ignore[assignment]
        return torch.from_numpy(hot.astype(np.float32))
