"""A store's annotations beyond one label per video: the labelled segments of untrimmed
videos, the classes of multi-label videos and each video's perceptual signature.

Built at assembly (:func:`build_annotations`) from the annotation (``Source.segments``,
``Source.labels``: the annotation as it is now, so a corrected annotation needs no decoding
again) and the journal (each record's pts and ``signature``); written as the optional index
files ``store.format`` describes (:func:`write_annotations`); read and checked at open like the
rest of the index (:func:`check_annotations`, vectorised). A store without them reads as
one whose videos have no segments, one label each and no signature.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

from .._core._errors import StoreError
from ._signature import SIGNATURE_FRAMES, SIGNATURE_WIDTH
from ._table_checks import ALTERED, _Rows
from .format import (
    BOX_DTYPE,
    BOXES_FILE,
    SEGMENT_DTYPE,
    SEGMENT_LABEL_DTYPE,
    SEGMENT_LABELS_FILE,
    SEGMENTS_FILE,
    SIGNATURE_DTYPE,
    SIGNATURES_FILE,
    VIDEO_LABEL_DTYPE,
    VIDEO_LABELS_FILE,
)

__all__ = [
    "ANNOTATION_FILES",
    "Annotations",
    "check_annotations",
    "read_annotations",
]

#: the optional index files, in the order they are listed
ANNOTATION_FILES = (
    SEGMENTS_FILE,
    SEGMENT_LABELS_FILE,
    VIDEO_LABELS_FILE,
    SIGNATURES_FILE,
    BOXES_FILE,
)

#: seconds a segment may end past its video's end before it counts as clamped
ANNOTATION_TOLERANCE = 1e-6


@dataclasses.dataclass(frozen=True, repr=False)
class Annotations:
    """``segments`` (``SEGMENT_DTYPE`` rows, a video's together, in video order) and their
    ``segment_labels`` (int32 class ids); ``video_labels`` (``VIDEO_LABEL_DTYPE``: the classes
    of multi-label videos); ``signatures`` ((num_videos, SIGNATURE_WIDTH) uint64; (num_videos,
    SIGNATURE_FRAMES) in a store built before crops were hashed) or None; ``boxes``
    (``BOX_DTYPE`` rows in (video, frame) order: ``build --boxes``) or None.
    Arrays may be memory maps: read-only."""

    segments: np.ndarray
    segment_labels: np.ndarray
    video_labels: np.ndarray
    signatures: np.ndarray | None = None
    boxes: np.ndarray | None = None

    @classmethod
    def empty(cls) -> Annotations:
        return cls(
            np.zeros(0, SEGMENT_DTYPE),
            np.zeros(0, SEGMENT_LABEL_DTYPE),
            np.zeros(0, VIDEO_LABEL_DTYPE),
        )

    def __repr__(self) -> str:
        sig = "yes" if self.signatures is not None else "no"
        return (
            f"Annotations(segments={len(self.segments)}, video_labels={len(self.video_labels)}, "
            f"signatures={sig})"
        )

    @property
    def has_segments(self) -> bool:
        return len(self.segments) > 0

    def files(self) -> dict[str, np.ndarray]:
        """The optional index files these annotations have content for: file name → array,
        in :data:`ANNOTATION_FILES` order (what :func:`read_annotations` reads back)."""
        arrays = {}
        if self.has_segments:
            arrays[SEGMENTS_FILE] = self.segments
            arrays[SEGMENT_LABELS_FILE] = self.segment_labels
        if len(self.video_labels):
            arrays[VIDEO_LABELS_FILE] = self.video_labels
        if self.signatures is not None:
            arrays[SIGNATURES_FILE] = self.signatures
        if self.boxes is not None:
            arrays[BOXES_FILE] = self.boxes
        return arrays

    def segment_rows(self, video: int) -> np.ndarray:
        """The rows of ``segments`` of store video ``video`` (int64, in time order)."""
        v = self.segments["video"]
        lo, hi = np.searchsorted(v, video, side="left"), np.searchsorted(v, video, side="right")
        return np.arange(lo, hi, dtype=np.int64)

    def segment_label_ids(self, row: int) -> np.ndarray:
        """The class ids of segment row ``row``."""
        s = self.segments[row]
        a = int(s["label_start"])
        return np.asarray(self.segment_labels[a : a + int(s["num_labels"])], np.int64)

    def video_label_ids(self, video: int) -> np.ndarray:
        """The classes a multi-label video's source listed (empty for other videos)."""
        v = self.video_labels["video"]
        lo, hi = np.searchsorted(v, video, side="left"), np.searchsorted(v, video, side="right")
        return np.asarray(self.video_labels["label_id"][lo:hi], np.int64)

    def boxes_of(self, video: int, frame: int) -> tuple[np.ndarray, np.ndarray]:
        """The boxes of stored frame ``frame`` of ``video``: corners (N, 4) float32 normalised
        to [0, 1] (x1, y1, x2, y2) and class ids (N,) int64; N = 0 when it has none."""
        b = self.boxes
        if b is None or not len(b):
            return np.zeros((0, 4), np.float32), np.zeros(0, np.int64)
        lo, hi = _span(b["video"], video)
        f = b["frame"][lo:hi]
        a, z = lo + np.searchsorted(f, frame, "left"), lo + np.searchsorted(f, frame, "right")
        rows = b[a:z]
        xyxy = np.stack([rows["x1"], rows["y1"], rows["x2"], rows["y2"]], 1).astype(np.float32)
        return xyxy.reshape(-1, 4), rows["label_id"].astype(np.int64)


def _span(column: np.ndarray, value: int) -> tuple[int, int]:
    return int(np.searchsorted(column, value, "left")), int(np.searchsorted(column, value, "right"))


# -- building ----------------------------------------------------------------------------


# -- reading -----------------------------------------------------------------------------


def read_annotations(
    load: Callable[[str], np.ndarray],
    present: set[str],
    *,
    where: Callable[[str], str],
    paths: list[str],
    num_classes: int,
    num_box_classes: int = 0,
    num_frames: np.ndarray | None = None,
) -> Annotations | None:
    """The annotations of an opened store, checked (:func:`check_annotations`): ``load(name)``
    reads the optional file ``name`` (one of ``present``); ``where(name)`` names it in
    messages. None when the store has none of them. ``num_box_classes``: the manifest's
    box classes; ``num_frames``: each video's stored frames (the boxes' bounds)."""
    if not present & set(ANNOTATION_FILES):
        return None
    if (SEGMENTS_FILE in present) != (SEGMENT_LABELS_FILE in present):
        have, lack = (
            (SEGMENTS_FILE, SEGMENT_LABELS_FILE)
            if SEGMENTS_FILE in present
            else (SEGMENT_LABELS_FILE, SEGMENTS_FILE)
        )
        raise StoreError(f"{where(have)}: present without {where(lack)}, its pair; {ALTERED}")
    empty = Annotations.empty()
    ann = Annotations(
        load(SEGMENTS_FILE) if SEGMENTS_FILE in present else empty.segments,
        load(SEGMENT_LABELS_FILE) if SEGMENT_LABELS_FILE in present else empty.segment_labels,
        load(VIDEO_LABELS_FILE) if VIDEO_LABELS_FILE in present else empty.video_labels,
        load(SIGNATURES_FILE) if SIGNATURES_FILE in present else None,
        load(BOXES_FILE) if BOXES_FILE in present else None,
    )
    check_annotations(ann, paths=paths, num_classes=num_classes, where=where)
    if ann.boxes is not None:
        check_boxes(
            ann.boxes,
            paths=paths,
            num_box_classes=num_box_classes,
            num_frames=num_frames,
            file=where(BOXES_FILE),
        )
    return ann


def check_boxes(
    boxes: np.ndarray,
    *,
    paths: list[str],
    num_box_classes: int,
    num_frames: np.ndarray | None,
    file: str,
) -> None:
    """Every box names a video and one of its stored frames, rows in (video, frame) order,
    corners in [0, 1] with x1 < x2 and y1 < y2, and a class among ``num_box_classes``."""
    rows = _Rows(paths)
    _table(boxes, BOX_DTYPE, file, "box")
    v, f = boxes["video"], boxes["frame"]
    n = len(paths)
    bad = _first_bad((v >= 0) & (v < n))
    if bad is not None:
        raise StoreError(f"{file}: row {bad} names video {v[bad]}; the store holds {n}; {ALTERED}")
    limit = np.asarray(num_frames, np.int64)[v] if num_frames is not None else None
    bad = _first_bad((f >= 0) & (f < limit) if limit is not None else f >= 0)
    if bad is not None:
        raise StoreError(
            f"{file}: row {bad} of {rows.who(int(v[bad]))} names stored frame {f[bad]}, not one "
            f"of the video's; {ALTERED}"
        )
    order = (np.diff(v) > 0) | ((np.diff(v) == 0) & (np.diff(f) >= 0))
    bad = _first_bad(order)
    if bad is not None:
        raise StoreError(
            f"{file}: row {bad + 1} ({rows.who(int(v[bad + 1]))}) is out of (video, frame) "
            f"order; {ALTERED}"
        )
    x1, y1, x2, y2 = (boxes[k] for k in ("x1", "y1", "x2", "y2"))
    ok = (x1 >= 0) & (y1 >= 0) & (x2 <= 1) & (y2 <= 1) & (x1 < x2) & (y1 < y2)
    bad = _first_bad(ok)
    if bad is not None:
        raise StoreError(
            f"{file}: row {bad} of {rows.who(int(v[bad]))}: box ({x1[bad]:g}, {y1[bad]:g}, "
            f"{x2[bad]:g}, {y2[bad]:g}) is not inside [0, 1] with x1 < x2, y1 < y2; {ALTERED}"
        )
    ids = boxes["label_id"]
    bad = _first_bad((ids >= 0) & (ids < num_box_classes))
    if bad is not None:
        raise StoreError(
            f"{file}: row {bad}: box class id {ids[bad]} is not one of the manifest's "
            f"{num_box_classes} box_classes; {ALTERED}"
        )


def _table(arr: np.ndarray, dtype: np.dtype, file: str, what: str) -> None:
    if arr.ndim != 1 or arr.dtype != dtype:
        cols = f"columns ({', '.join(dtype.names)})" if dtype.names else f"dtype {dtype}"
        raise StoreError(
            f"{file}: holds {arr.dtype} in {arr.ndim} dimension(s); expected one row per "
            f"{what} with {cols}; {ALTERED}"
        )


def _first_bad(ok: np.ndarray) -> int | None:
    return None if ok.all() else int(np.argmin(ok))


def check_annotations(
    ann: Annotations, *, paths: list[str], num_classes: int, where: Callable[[str], str]
) -> None:
    """Every row names a video of the store (rows of a video together, videos in order),
    segments run forward in finite seconds (0 <= start < end), their label rows lie inside
    segment_labels.npy, every class id is one of the store's ``num_classes``, and there is one
    signature row per video. Vectorised; the first violation is a StoreError naming the file,
    the row and the video."""
    n = len(paths)
    rows = _Rows(paths)
    seg, lab, vl = ann.segments, ann.segment_labels, ann.video_labels
    f_seg, f_lab, f_vl = where(SEGMENTS_FILE), where(SEGMENT_LABELS_FILE), where(VIDEO_LABELS_FILE)
    _table(seg, SEGMENT_DTYPE, f_seg, "segment")
    _table(lab, SEGMENT_LABEL_DTYPE, f_lab, "segment class")
    _table(vl, VIDEO_LABEL_DTYPE, f_vl, "(video, class) pair")
    for arr, file in ((seg, f_seg), (vl, f_vl)):
        v = arr["video"]
        bad = _first_bad((v >= 0) & (v < n))
        if bad is not None:
            raise StoreError(
                f"{file}: row {bad} names video {v[bad]}; the store holds {n} videos; {ALTERED}"
            )
        bad = _first_bad(np.diff(v) >= 0)
        if bad is not None:
            raise StoreError(
                f"{file}: row {bad + 1} ({rows.who(int(v[bad + 1]))}) comes after a row of "
                f"video {v[bad]}: rows are in video order; {ALTERED}"
            )
    s, e = seg["start_seconds"], seg["end_seconds"]
    bad = _first_bad(np.isfinite(s) & np.isfinite(e) & (s >= 0) & (e > s))
    if bad is not None:
        raise StoreError(
            f"{f_seg}: row {bad} of {rows.who(int(seg['video'][bad]))}: {s[bad]:g}..{e[bad]:g} "
            f"s is not a time range (0 <= start_seconds < end_seconds); {ALTERED}"
        )
    a, k, m = seg["label_start"], seg["num_labels"], len(lab)
    bad = _first_bad((a >= 0) & (a <= m) & (k >= 0) & (k <= m - a))
    if bad is not None:
        raise StoreError(
            f"{f_seg}: row {bad} of {rows.who(int(seg['video'][bad]))}: classes at rows "
            f"{a[bad]}..{int(a[bad]) + int(k[bad])} (label_start, num_labels) lie outside the "
            f"{m} rows of {f_lab}; {ALTERED}"
        )
    for ids, file in ((lab, f_lab), (vl["label_id"], f_vl)):
        bad = _first_bad((ids >= 0) & (ids < num_classes))
        if bad is not None:
            raise StoreError(
                f"{file}: row {bad}: class id {ids[bad]} is not one of the store's "
                f"{num_classes} classes; {ALTERED}"
            )
    sig = ann.signatures
    widths = (SIGNATURE_WIDTH, SIGNATURE_FRAMES)  # this version's, and the first's
    if sig is not None and (
        sig.dtype != SIGNATURE_DTYPE
        or sig.ndim != 2
        or sig.shape[0] != n
        or sig.shape[1] not in widths
    ):
        raise StoreError(
            f"{where(SIGNATURES_FILE)}: holds {sig.dtype} of shape {sig.shape}; expected "
            f"uint64 of shape ({n}, {SIGNATURE_WIDTH}) (or ({n}, {SIGNATURE_FRAMES}), a store "
            f"built before crops were hashed), one signature per video; {ALTERED}"
        )
