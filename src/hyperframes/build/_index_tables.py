"""The index tables of a store, made from the journal records of the videos it keeps: one row
of ``videos.npy`` per video (:class:`~hyperframes.store.format.VideoRow`), its frames' rows in
``frames.npy`` and its chunks' in ``chunks.npy``, its frames' change and motion scores, and
its details line (``store.format`` describes each file)."""

from __future__ import annotations

import dataclasses

import numpy as np

from ..store.format import (
    CHUNK_DTYPE,
    DETAIL_KEYS,
    FRAME_DTYPE,
    VIDEO_DTYPE,
    VideoRow,
    pack_video_row,
)
from ._journal import JournalRecord

__all__ = ["IndexTables", "index_tables"]


@dataclasses.dataclass
class IndexTables:
    """The tables of the kept videos, in index order. ``change`` and ``motion`` are None when
    some record lacks the scores (journals of older builds; a build without flow)."""

    videos: np.ndarray  # VIDEO_DTYPE
    frames: np.ndarray  # FRAME_DTYPE
    chunks: np.ndarray  # CHUNK_DTYPE
    change: np.ndarray | None  # float32, one per frame
    motion: np.ndarray | None  # float32, one per frame
    details: list[dict]

    @property
    def num_frames(self) -> int:
        return len(self.frames)


def index_tables(
    records: list[JournalRecord],
    shard_ids: list[int],
    classes: list[str],
    splits: list[str],
    *,
    flow: bool,
) -> IndexTables:
    """The tables of the kept videos' ``records`` (index order; ``shard_ids``: the number of
    each one's shard). ``flow``: the build computed flow (then the motion scores, when every
    record lists them)."""
    label_id = {c: i for i, c in enumerate(classes)}
    split_id = {s: i for i, s in enumerate(splits)}
    n_frames = sum(r.num_frames for r in records)
    # journals written before change scores were recorded have none: then no file at all
    with_scores = all(r.change_score is not None for r in records)
    # so too flow scores: only a --flow build whose every journal lists them
    with_motion = flow and all("score" in (r.tracks.get("flow") or {}) for r in records)
    tables = IndexTables(
        videos=np.zeros(len(records), VIDEO_DTYPE),
        frames=np.zeros(n_frames, FRAME_DTYPE),
        chunks=np.zeros(sum(len(r.chunks) for r in records), CHUNK_DTYPE),
        change=np.zeros(n_frames, np.float32) if with_scores else None,
        motion=np.zeros(n_frames, np.float32) if with_motion else None,
        details=[],
    )
    f0 = c0 = 0
    for v, (r, shard) in enumerate(zip(records, shard_ids)):
        n, k = r.num_frames, len(r.chunks)
        label = label_id.get(r.label, -1) if r.label is not None else -1
        split = split_id.get(r.split, -1) if r.split is not None else -1
        tables.videos[v] = pack_video_row(_video_row(r, shard, label, split, f0, c0))
        tables.frames["pts_seconds"][f0 : f0 + n] = r.pts_seconds
        tables.frames["source_index"][f0 : f0 + n] = r.source_frame_indices
        if tables.change is not None:
            tables.change[f0 : f0 + n] = r.change_score
        if tables.motion is not None:
            tables.motion[f0 : f0 + n] = r.tracks["flow"]["score"]  # type: ignore[index]
        if k:
            tables.chunks[c0 : c0 + k] = [tuple(c) for c in r.chunks]
        tables.details.append({key: getattr(r, key) for key in DETAIL_KEYS})
        f0 += n
        c0 += k
    return tables


#: the columns of ``videos.npy`` that are the journal record's fields of the same name
_SAME_NAMED = (
    "offset",
    "nbytes",
    "num_frames",
    "fps",
    "num_frames_decoded",
    "source_bytes",
    "source_mtime_ns",
    "stream",
    "decode_errors",
)


def _video_row(
    r: JournalRecord, shard: int, label_id: int, split_id: int, frame_start: int, chunk_start: int
) -> VideoRow:
    channels, height, width = r.shape
    header = r.num_frames_from_header
    return VideoRow(
        **{name: getattr(r, name) for name in _SAME_NAMED},
        shard=shard,
        channels=channels,
        height=height,
        width=width,
        label_id=label_id,
        split_id=split_id,
        frame_start=frame_start,
        chunk_start=chunk_start,
        num_chunks=len(r.chunks),
        num_frames_from_header=-1 if header is None else header,
        payload_xxh3_64=0 if r.payload_xxh3_64 is None else r.payload_xxh3_64,
    )
