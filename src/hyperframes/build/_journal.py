"""The journal record: what a shard's journal says of one stored video, from ingest to assembly.

A worker stores a video (``_ingest.ingest``), makes its :class:`JournalRecord` and commits it
as one JSON line of its shard's journal (:meth:`JournalRecord.to_json`, written by
``_shard.ShardWriter.commit``: the payload fsynced first, then the line). A rerun reads the
finished journals back (:func:`load_records`) to decide what it keeps (``_resume``), a Ray
driver reads a dead actor's (``_ray``, ``_ray_publish``), and ``_assemble`` makes the index
and the manifest from the records kept.

On disk a record is a flat JSON object whose keys are the fields below, in their order, with
the tracks (``"audio"``, ``"flow"``: :mod:`hyperframes.store.format`) as keys of their own.
Keys an older build did not write are optional when read: ``payload_xxh3_64`` (then the video
is decoded again), ``change_score``, ``signature``, the decode error counts, the details
(``codec`` ... ``color_range``), the tracks and ``timestamp_gaps``; they are left out when
written only where they are None. A line that is not such a record (a key missing, a value of
the wrong kind: the file was damaged or written by something else) is a :class:`JournalError`
naming the file and the line.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from .._core._errors import StoreError
from ..store import payload_ranges
from ..store.format import RECORDS_SUFFIX
from ._shard import load_shard

__all__ = ["TRACK_KEYS", "JournalError", "JournalRecord", "load_records"]

#: the record keys of a video's tracks (each a JSON object, or null: no audio stream)
TRACK_KEYS = ("audio", "flow")

#: written only when not None (absent from the journals of older builds)
_LEFT_OUT_WHEN_NONE = ("payload_xxh3_64", "change_score", "signature", "timestamp_gaps")


class JournalError(StoreError, ValueError):
    """A shard journal's line is not a journal record (damaged, or written by something else)."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class JournalRecord:
    """One stored video as its shard's journal lists it. Lengths are checked on creation:
    ``pts_seconds``, ``source_frame_indices`` and ``change_score`` (when there) hold one entry
    per stored frame."""

    path: str
    label: str | None
    split: str | None
    kind: str | None = None  # "video" or "frames" (a frame folder)
    source_bytes: int
    source_mtime_ns: int
    #: the frames' payload in the shard: byte offset, bytes, xxh3-64 (None: an older build)
    offset: int
    nbytes: int
    payload_xxh3_64: int | None = None
    shape: tuple[int, int, int]  # channels, height, width of a stored frame
    num_frames: int
    num_frames_decoded: int
    num_frames_from_header: int | None
    fps: float
    stream: int
    # the details (``store.format.DETAIL_KEYS``): for people, null where unknown
    codec: str | None = None
    source_size: tuple[int, int] | None = None  # height, width of the source's frames
    rotation: int | None = None
    color_matrix: str | None = None
    color_range: str | None = None
    pts_seconds: list[float]
    source_frame_indices: list[int]
    change_score: list[float] | None = None
    signature: list[int] | None = None
    #: (offset, nbytes, first frame, frames) of each compressed chunk (none for raw)
    chunks: list[tuple[int, int, int, int]]
    decode_errors: int = 0
    decode_error_counts: dict[str, int] = dataclasses.field(default_factory=dict)
    decode_error_messages: list[str] = dataclasses.field(default_factory=list)
    #: the tracks the build asked for, by key (``TRACK_KEYS``): a key is there when the build
    #: asked for that track, its value None when the video has none (no audio stream)
    tracks: dict[str, dict | None] = dataclasses.field(default_factory=dict)
    #: ``_ingest.gap_entry``: frames further apart than ``max_gap`` (None: no such gap)
    timestamp_gaps: dict | None = None

    def __post_init__(self) -> None:
        if len(self.shape) != 3:
            raise ValueError(f"shape has {len(self.shape)} entries, not 3 (channels, h, w)")
        n = self.num_frames
        for name in ("pts_seconds", "source_frame_indices", "change_score"):
            value = getattr(self, name)
            if value is not None and len(value) != n:
                raise ValueError(f"{name} has {len(value)} entries for {n} frames")
        unknown = set(self.tracks) - set(TRACK_KEYS)
        if unknown:
            raise ValueError(f"unknown tracks {sorted(unknown)}; known: {list(TRACK_KEYS)}")

    def __repr__(self) -> str:
        return (
            f"JournalRecord({self.path!r}, {self.num_frames} frames of {self.shape}, "
            f"offset={self.offset}, nbytes={self.nbytes}, tracks={sorted(self.tracks)})"
        )

    def payload_ranges(self) -> list[tuple[str, int, int, int | None]]:
        """``(what, offset, nbytes, xxh3_64)`` of the frames and of each track's payloads
        (:func:`hyperframes.store.payload_ranges`)."""
        frames = {"offset": self.offset, "nbytes": self.nbytes}
        return payload_ranges({**frames, "payload_xxh3_64": self.payload_xxh3_64, **self.tracks})

    def to_json(self) -> dict[str, Any]:
        """The journal line, as a JSON object (what ``json.dumps`` writes)."""
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.name == "tracks":
                out.update(value)
            elif value is None and f.name in _LEFT_OUT_WHEN_NONE:
                continue
            elif f.name in ("shape", "source_size") and value is not None:
                out[f.name] = list(value)
            elif f.name == "chunks":
                out[f.name] = [list(c) for c in value]
            else:
                out[f.name] = value
        return out

    @classmethod
    def from_json(cls, line: dict[str, Any], *, where: str = "a journal") -> JournalRecord:
        """The record of a journal line read back (``where``: the file, for the error)."""
        if not isinstance(line, dict):
            raise JournalError(
                f"{where}: not a journal record (a JSON {type(line).__name__}){_HINT}"
            )
        missing = [name for name in _REQUIRED if name not in line]
        if missing:
            raise JournalError(f"{where}: not a journal record (no {', '.join(missing)}){_HINT}")
        try:
            known = {k: v for k, v in line.items() if k in _FIELDS}
            if known.get("shape") is not None:
                known["shape"] = tuple(known["shape"])
            if known.get("source_size") is not None:
                known["source_size"] = tuple(known["source_size"])
            known["chunks"] = [tuple(c) for c in line["chunks"]]
            tracks = {k: line[k] for k in TRACK_KEYS if k in line}
            return cls(**known, tracks=tracks)
        except (TypeError, ValueError) as e:
            raise JournalError(f"{where}: not a journal record ({e}){_HINT}") from None


_FIELDS = {f.name for f in dataclasses.fields(JournalRecord)} - {"tracks"}
_REQUIRED = [
    f.name
    for f in dataclasses.fields(JournalRecord)
    if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
]
_HINT = (
    "; the journal is damaged: move that shard's files out of the store and rerun, which "
    "decodes its videos again"
)


def load_records(directory: Path, name: str) -> tuple[list[JournalRecord], dict]:
    """The records and the summary line of the finished shard ``name`` in ``directory``.
    ValueError when the journal lacks its summary line (``_shard.load_shard``); a
    :class:`JournalError` names the line that is not a record."""
    lines, summary = load_shard(directory, name)
    journal = Path(directory) / f"{name}{RECORDS_SUFFIX}"
    records = [
        JournalRecord.from_json(line, where=f"{journal}: line {i}")
        for i, line in enumerate(lines, 1)
    ]
    return records, summary
