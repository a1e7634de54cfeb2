"""Find the videos a build should store, from the forms users keep their data in.

This module holds the records every input form produces (:class:`Source`, :class:`Segment`,
:class:`Inputs`), the extensions and names the forms share, and the entry points
(:func:`scan_inputs`, :func:`scan`); the ``folder`` form (what its walk stores and skips) is
:mod:`hyperframes.inputs._folder_walk`, and the annotation formats (mmaction lists, CSV,
UCF101, HMDB51, Kinetics, SSv2, Charades, ActivityNet) live in
:mod:`hyperframes.inputs._formats`, one module each.
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Callable
from pathlib import Path

from .._core._errors import InputError
from .._core._limits import MAX_CLASSES

VIDEO_EXTENSIONS = frozenset(
    [
        ".mp4",
        ".avi",
        ".mkv",
        ".mov",
        ".webm",
        ".m4v",
        ".mpg",
        ".mpeg",
        ".flv",
        ".wmv",
        ".3gp",
        ".ts",
        ".mts",
        ".ogv",
        ".gif",
        # formats of video only: a damaged one fails, as a damaged .webm does (another
        # extension, .nut included, is probed by content and skipped when no video is found)
        ".y4m",
        ".ivf",
        ".m2ts",
        ".vob",
    ]
)
IMAGE_EXTENSIONS = frozenset([".jpg", ".jpeg", ".png", ".bmp"])
ANNOTATION_EXTENSIONS = frozenset([".txt", ".csv", ".lst", ".list"])
#: top folder names read as splits (compared lower-cased): ``root/<split>/<label>/<video>``
SPLIT_NAMES = frozenset(
    ["train", "training", "val", "valid", "validation", "dev", "test", "testing", "eval"]
)
#: the folder layouts the ``folder`` form reads (what an error about an unknown layout lists)
FOLDER_LAYOUTS = (
    "root/<label>/<video>",
    "root/<split>/<label>/<video> (split folders named " + "/".join(sorted(SPLIT_NAMES)) + ")",
    "root/<video_dir>/<frame images> (frame folders)",
    "a single frame folder",
    "a single video file",
)


@dataclasses.dataclass(frozen=True)
class Segment:
    """A time range of a source, in the source's own seconds, with the classes acting in it;
    ``row`` is where it was listed (``"file:line"``, when the format lists segments on rows of
    their own; not part of equality)."""

    start_seconds: float
    end_seconds: float
    labels: tuple[str, ...] = ()
    row: str | None = dataclasses.field(default=None, compare=False)

    def __post_init__(self) -> None:
        s, e = self.start_seconds, self.end_seconds
        if not (math.isfinite(s) and math.isfinite(e)) or s < 0 or e <= s:
            raise InputError(
                f"segment {s:g}..{e:g} s: expected 0 <= start < end (seconds of the video)"
            )


@dataclasses.dataclass(frozen=True)
class Source:
    """One input to store: a video file or a frame folder, with what its row said about it.

    ``label`` is the single class of a single-label source (``None``: unlabelled, or
    multi-label); ``labels`` lists every class of a multi-label source (``None`` for
    single-label formats); ``segments`` are labelled time ranges (Charades actions,
    ActivityNet annotations, a Kinetics clip cut from an untrimmed file, CSV ``start,end``);
    ``row`` is where the source was listed, ``"file:line"`` (``None`` for a scanned folder).
    """

    path: str  # absolute
    label: str | None
    split: str | None
    kind: str  # "video" | "frames"
    segments: tuple[Segment, ...] = ()
    labels: tuple[str, ...] | None = None
    row: str | None = None
    #: the path as the user gave it (under DATA) when it is a symlink to ``path``; None when
    #: the two are the same. Failures are reported under it, the target beside it.
    given: str | None = None
    #: other columns of the source's row, ``(name, value)`` (a videofolder's captions, ids);
    #: the manifest keeps them (``fields``), ``info --json`` shows them
    fields: tuple[tuple[str, str], ...] = ()

    @property
    def shown(self) -> str:
        """How reports name the source: ``given -> path`` for a symlink, else ``path``."""
        return self.path if self.given is None else f"{self.given} -> {self.path}"

    def __post_init__(self) -> None:
        if self.kind not in ("video", "frames"):
            raise ValueError(f"Source kind {self.kind!r}: expected 'video' or 'frames'")


@dataclasses.dataclass(frozen=True)
class Inputs:
    """What a build reads from DATA, every row accounted for: ``sources`` to store,
    ``failed_rows`` (``{"path", "error"}``: listed, but the row itself is unusable — a bad
    segment, an unknown label; the build reports them as failed), ``skipped`` (``{"path",
    "reason"}``: not inputs), ``classes`` (class id -> name, the order the store keeps) and the
    ``input_format`` that read them. ``root_check``: where the sources were not all checked
    to be inside the root yet (``scan_inputs(defer_checks=True)``), the check the build makes
    of each as it hands it out (``{"path", "error"}`` of a refused one, else None)."""

    sources: list[Source]
    skipped: list[dict]
    classes: list[str]
    failed_rows: list[dict] = dataclasses.field(default_factory=list)
    input_format: str = "folder"
    root_check: Callable[[Source], dict | None] | None = None

    def __repr__(self) -> str:
        return (
            f"Inputs({self.input_format}: {len(self.sources)} sources, "
            f"{len(self.failed_rows)} failed rows, {len(self.skipped)} skipped, "
            f"{len(self.classes)} classes)"
        )


def file_extension(name: str) -> str:
    """The extension of ``name``, lower-cased, with its dot (``".mp4"``; ``""`` for none)."""
    return os.path.splitext(name)[1].lower()


def listed_kind(path: str | os.PathLike) -> str:
    """The kind of a path an annotation row names: a folder is a frame folder, unless it is
    named like a video (then it is an error the build reports: a directory where a video file
    was expected); anything else, missing included, is a video. (No :class:`Path` is made:
    each interns its parts, which ten million rows would keep in the interpreter's table.)"""
    if os.path.isdir(path) and file_extension(os.path.basename(path)) not in VIDEO_EXTENSIONS:
        return "frames"
    return "video"


def class_names(sources: list[Source], classes: list[str] | None = None) -> list[str]:
    """Class id -> name. A given label map (``classes``: classInd.txt, an SSv2 labels file,
    ...) is kept as it is, after checking that it names every label of ``sources``. Otherwise
    the names are sorted, and integer labels (mmaction2 lists and CSVs with class ids) keep
    their ids: the names are ``"0" .. str(max)``. Multi-label and segment labels count."""
    label_names = getattr(sources, "label_names", None)  # columns know theirs
    labels: set[str] = (
        label_names() if label_names is not None else set().union(*map(_labels_of, sources))
    )
    if classes is not None:
        unknown = sorted(labels - set(classes))
        if unknown:
            raise InputError(
                f"labels {unknown[:5]} are not in the label map of {len(classes)} classes "
                f"({', '.join(classes[:5])}, ...); fix the labels or the label map"
            )
        return list(classes)
    if labels and all(lbl.isdigit() for lbl in labels):
        return [str(i) for i in range(_largest_class_id(sources, labels) + 1)]
    return sorted(labels)


def _is_class_id(label: str) -> bool:
    return label.isascii() and label.isdigit()


def _largest_class_id(sources: list[Source], labels: set[str]) -> int:
    """The largest of integer ``labels`` (class ids), each checked before any class list is
    made: written in 0-9 (``'²'`` is a digit to Python, not an id) and below
    :data:`MAX_CLASSES`. :class:`InputError` naming the row that lists the label."""
    bad = next((lbl for lbl in sorted(labels) if not _is_class_id(lbl)), None)
    if bad is not None:
        raise InputError(
            f"{_row_of(sources, bad)}: label {bad!r} reads as a number but is not a class id "
            "written in the digits 0-9; write class ids in 0-9, or give class names (text)"
        )
    # compared as text first: a label of a million digits is never made an int
    top = max(labels, key=lambda x: (len(x.lstrip("0")), x.lstrip("0")))
    if len(top.lstrip("0")) <= len(str(MAX_CLASSES)) and int(top) < MAX_CLASSES:
        return int(top)
    shown = top if len(top) <= 24 else f"{top[:20]}... ({len(top)} digits)"
    raise InputError(
        f"{_row_of(sources, top)}: class id {shown} is above the bound on classes; allowed: "
        f"ids 0..{MAX_CLASSES - 1} (integer labels are class ids, and the store lists every "
        "class from 0 to the largest); fix the label, or give class names (text) instead"
    )


def _row_of(sources: list[Source], label: str) -> str:
    """Where the first source with ``label`` was listed (``file:line``, else its path)."""
    return next((s.row or s.path for s in sources if label in _labels_of(s)), "a row")


def _labels_of(source: Source) -> set[str]:
    out = {source.label} if source.label is not None else set()
    out.update(source.labels or ())
    for seg in source.segments:
        out.update(seg.labels)
    return out


def source_stat(source: Source) -> tuple[int, int]:
    """(bytes, mtime_ns) identifying a source's content for resume; frame folders sum files."""
    p = Path(source.path)
    if p.is_dir():
        total, newest = 0, 0
        with os.scandir(p) as it:
            for e in it:
                if e.is_file():
                    st = e.stat()
                    total += st.st_size
                    newest = max(newest, st.st_mtime_ns)
        return total, newest
    st = p.stat()
    return st.st_size, st.st_mtime_ns
