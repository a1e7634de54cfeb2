"""The store's optional annotation index files, built at assembly: the labelled segments of
untrimmed videos, the classes of multi-label videos and each video's perceptual signature,
from the annotation as it is now (``Source.segments``, ``Source.labels``) and the journal
(each record's pts and ``signature``). :mod:`hyperframes.store._annotations` reads and checks
what this module writes."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .._core._atomic import save_npy_atomic
from ..inputs import BoxRows, Source
from ..store import ANNOTATION_FILES, ANNOTATION_TOLERANCE, SIGNATURE_WIDTH, Annotations
from ..store.format import (
    BOX_DTYPE,
    SEGMENT_DTYPE,
    SEGMENT_LABEL_DTYPE,
    SIGNATURE_DTYPE,
    VIDEO_LABEL_DTYPE,
)
from ._journal import JournalRecord


def _video_end(record: JournalRecord) -> tuple[float, float]:
    """(first pts, end): the end is the last frame's pts plus one frame interval."""
    pts = record.pts_seconds
    fps = float(record.fps or 0.0)
    if len(pts) > 1:
        step = pts[-1] - pts[-2]
    else:
        step = 1.0 / fps if fps > 0 else 0.0
    return float(pts[0]), float(pts[-1]) + max(step, 0.0)


def build_annotations(
    kept: list[Source],
    records: list[JournalRecord],
    classes: list[str],
    boxes: tuple[BoxRows, list[str]] | None = None,
) -> tuple[Annotations, list[dict]]:
    """The annotations of the stored videos ``kept`` (index order) with their journal
    ``records``, and the notes about segments clamped to their video's end or dropped
    (``{"path", "row", "note"}``). A segment's labels must be among ``classes`` (the
    annotation readers make sure of it). ``boxes``: the rows of ``build --boxes`` and the
    source path each names (:func:`box_table`)."""
    label_id = {c: i for i, c in enumerate(classes)}
    seg_rows: list[tuple] = []
    seg_labels: list[int] = []
    video_labels: list[tuple[int, int]] = []
    notes: list[dict] = []
    for v, (source, record) in enumerate(zip(kept, records)):
        if source.labels:
            ids = sorted({label_id[lbl] for lbl in source.labels})
            video_labels += [(v, i) for i in ids]
        if not source.segments:
            continue
        _, end = _video_end(record)
        for seg in sorted(source.segments, key=lambda s: (s.start_seconds, s.end_seconds)):
            s, e = seg.start_seconds, seg.end_seconds
            if s >= end:
                notes.append(
                    _note(
                        source,
                        seg,
                        f"segment {s:g}..{e:g} s starts at or after the "
                        f"video's end ({end:g} s); dropped",
                    )
                )
                continue
            if e > end + ANNOTATION_TOLERANCE:
                notes.append(
                    _note(
                        source,
                        seg,
                        f"segment {s:g}..{e:g} s ends after the video's end "
                        f"({end:g} s); clamped to {end:g} s",
                    )
                )
                e = end
            ids = sorted({label_id[lbl] for lbl in seg.labels})
            seg_rows.append((v, s, e, len(seg_labels), len(ids)))
            seg_labels += ids
    # every record's of this version (one kept from an older build has 4 whole-frame hashes
    # only: then none is written, and the leakage check computes them from the frames)
    with_sigs = bool(records) and all(len(r.signature or ()) == SIGNATURE_WIDTH for r in records)
    signatures = None
    if with_sigs:
        signatures = np.array([r.signature for r in records], dtype=SIGNATURE_DTYPE)
        signatures = signatures.reshape(len(records), SIGNATURE_WIDTH)
    ann = Annotations(
        np.array(seg_rows, SEGMENT_DTYPE),
        np.array(seg_labels, SEGMENT_LABEL_DTYPE),
        np.array(video_labels, VIDEO_LABEL_DTYPE),
        signatures,
        box_table(boxes, kept, records, notes) if boxes is not None else None,
    )
    return ann, notes


def box_table(
    boxes: tuple[BoxRows, list[str]],
    kept: list[Source],
    records: list[JournalRecord],
    notes: list[dict],
) -> np.ndarray:
    """``boxes.npy``: each box on the stored frame whose pts is nearest its time, rows in
    (video, frame) order; a box of a video not stored is left out, one more than half a frame
    past the video's first or last frame is dropped with a note."""
    rows, row_paths = boxes
    label_id = {c: i for i, c in enumerate(rows.classes)}
    video_of = {s.path: v for v, s in enumerate(kept)}
    out = np.zeros(len(rows), BOX_DTYPE)
    keep = np.zeros(len(rows), bool)
    for r, path in enumerate(row_paths):
        v = video_of.get(path)
        if v is None:
            continue
        pts = np.asarray(records[v].pts_seconds, np.float64)
        first, end = _video_end(records[v])
        half = (end - float(pts[-1])) / 2
        t = float(rows.time[r])
        if t < first - half or t >= end - half + ANNOTATION_TOLERANCE:
            notes.append(
                {
                    "path": path,
                    "row": f"{rows.file}:{int(rows.lines[r])}",
                    "note": f"box at {t:g} s lies outside the stored frames "
                    f"({first:g}..{float(pts[-1]):g} s); dropped",
                }
            )
            continue
        k = int(np.clip(np.searchsorted(pts, t), 1, len(pts) - 1)) if len(pts) > 1 else 0
        if len(pts) > 1 and abs(pts[k - 1] - t) <= abs(pts[k] - t):
            k -= 1
        x1, y1, x2, y2 = (float(c) for c in rows.xyxy[r])
        out[r] = (v, k, x1, y1, x2, y2, label_id[rows.labels[r]])
        keep[r] = True
    out = out[keep]
    return out[np.lexsort((out["frame"], out["video"]))]


def _note(source: Source, segment, note: str) -> dict:
    return {"path": source.path, "row": segment.row or source.row, "note": note}


def write_annotations(index: Path, ann: Annotations) -> list[str]:
    """Write the optional files ``ann`` has content for into ``index`` (removing those it has
    none for, left by an earlier assembly); returns the names written."""
    arrays = ann.files()
    for name in ANNOTATION_FILES:
        if name in arrays:
            save_npy_atomic(index / name, arrays[name])
        else:
            (index / name).unlink(missing_ok=True)
    return list(arrays)
