"""Find the videos a build should store, from the forms users keep their data in.

This module holds the records every input form produces (:class:`Source`, :class:`Segment`,
:class:`Inputs`), the entry points (:func:`scan_inputs`, :func:`scan`) and the ``folder``
form; the annotation formats (mmaction lists, CSV, UCF101, HMDB51, Kinetics, SSv2, Charades,
ActivityNet) live in :mod:`hyperframes.inputs._formats`, one module each. The ``folder``
form is:

- a folder ``root/<label>/<video>`` (labels from folder names; a ``<video>`` may also be a
  folder of frame images),
- a folder ``root/<split>/<label>/<video>``: when every folder at the top is named like a split
  (:data:`SPLIT_NAMES`: ``train``, ``val``, ``test``, ...), each is read as the folder form
  above and its videos record the folder's name (as written) as their split,
- a folder of frame folders ``root/<video_dir>/img_00001.jpg`` (mmaction2 "rawframes"),
- a single frame folder,
- a single video file.

Every regular file under a data folder is accounted for (:func:`scan`): it is a source, an image
of a frame folder that is a source, or a skipped row ``{"path", "reason"}``. The rules:

- a name in :data:`VIDEO_EXTENSIONS` is a video source without looking inside (a broken one is
  reported later by the build as failed); any other extension is decided by FFmpeg probing the
  content: a video stream makes it a source (``.nut``, ``.y4m``, ...), otherwise it is skipped as
  ``"no video stream (audio only)"``, ``"an image outside a frame folder"``, ``"not a media
  file"``, ...;
- hidden names (``.name``) are skipped and hidden folders are not entered;
- a symlink is followed once; a broken one, one that loops, and a folder link back into its own
  ancestors are skipped (``"broken symlink"``, ``"symlink loop"``); a file reached twice is
  stored once (``"same file as ..."``);
- files in a folder nested below a label folder that is not a frame folder are skipped
  (``"nested below a label folder"``), not stored under the top label: the usual cause is a
  ``root/<split>/<label>/<video>`` tree whose split folders are not named like splits, where
  recursing would store every video under the split's name as its label;
- a folder is a frame folder when it holds images and no videos; its files that are not images
  are skipped (``"not a frame image"``).
"""

from __future__ import annotations

import collections
import dataclasses
import errno
import math
import os
import stat
from pathlib import Path

from .._core._errors import InputError

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

# Probing a file of unknown extension: its first 16 KiB name the container (FFmpeg's default,
# 1 MiB, costs ~70 ms on each large junk file), 256 KiB list the streams; "file" keeps a
# playlist or SDP text from reaching out to the network.
_PROBE_OPTIONS = {
    "formatprobesize": str(16 * 1024),
    "probesize": str(256 * 1024),
    "protocol_whitelist": "file",
}


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
    ``input_format`` that read them."""

    sources: list[Source]
    skipped: list[dict]
    classes: list[str]
    failed_rows: list[dict] = dataclasses.field(default_factory=list)
    input_format: str = "folder"

    def __repr__(self) -> str:
        return (
            f"Inputs({self.input_format}: {len(self.sources)} sources, "
            f"{len(self.failed_rows)} failed rows, {len(self.skipped)} skipped, "
            f"{len(self.classes)} classes)"
        )


def _ext(name: str) -> str:
    return os.path.splitext(name)[1].lower()


def _is_file(entry: os.DirEntry) -> bool:
    try:
        return entry.is_file()
    except OSError:  # a symlink loop
        return False


def _is_frame_dir(path: str | os.PathLike[str]) -> bool:
    """A folder holding frame images and no videos (a label folder with a cover image in it
    stays a label folder)."""
    images = False
    try:
        with os.scandir(path) as it:
            for e in it:
                ext = _ext(e.name)
                if e.name.startswith(".") or not _is_file(e):
                    continue
                if ext in VIDEO_EXTENSIONS:
                    return False
                images = images or ext in IMAGE_EXTENSIONS
    except OSError:
        return False
    return images


def _why_not_a_video(path: str | os.PathLike) -> str | None:
    """``None`` when FFmpeg finds a video stream in the file's content, else why it is not a
    video (the reason a build's ``skipped`` row gives)."""
    import av

    try:
        with open(path, "rb") as f:
            if not f.read(1):
                return "empty file"
    except OSError as e:
        return f"cannot be read ({e.strerror})"
    try:
        with av.open(os.fspath(path), options=_PROBE_OPTIONS) as container:
            fmt = container.format.name
            streams = [
                "cover image" if s.disposition & av.stream.Disposition.attached_pic else s.type
                for s in container.streams
            ]
    except (av.FFmpegError, OSError, ValueError):
        return "not a media file"
    if fmt == "tty":  # FFmpeg shows text files as ANSI art
        return "not a media file"
    if fmt.startswith("image2") or fmt.endswith("_pipe"):  # the demuxers of single pictures
        return "an image outside a frame folder"
    if "video" in streams:
        return None
    kinds = sorted(set(streams) - {"cover image"})
    return f"no video stream ({', '.join(kinds)} only)" if kinds else "no video stream"


class _Scanner:
    """Walks a data folder once, collecting sources and the skipped rows."""

    def __init__(self) -> None:
        self.sources: list[Source] = []
        self.skipped: list[dict] = []
        self._first: dict[str, str] = {}  # resolved path -> the path it was first listed as
        self.split: str | None = None  # the split folder being walked (split layouts)

    def skip(self, path: Path, reason: str) -> None:
        self.skipped.append({"path": str(path), "reason": reason})

    def add(self, path: Path, label: str | None, kind: str) -> bool:
        """Add a source; False (and a skipped row) when it was already reached another way."""
        real = str(path.resolve())
        first = self._first.setdefault(real, str(path))
        if first != str(path):
            self.skip(path, f"same file as {first}")
            return False
        given = str(path) if str(path) != real else None
        self.sources.append(Source(real, label, self.split, kind, given=given))
        return True

    def entries(
        self, folder: Path, ancestors: frozenset[str], *, top: bool = False
    ) -> list[tuple[Path, str]]:
        """``(path, "file" | "dir")`` of ``folder`` sorted by name, symlinks followed; every
        other entry becomes a skipped row. ``ancestors``: real paths of the folders above."""
        try:
            names = sorted(os.listdir(folder))
        except OSError as e:
            if top:  # the data folder itself
                raise InputError(f"{folder}: cannot list the folder ({e.strerror})") from None
            self.skip(folder, f"cannot be read ({e.strerror})")
            return []
        out = []
        for name in names:
            path = folder / name
            kind = self._look(path, ancestors)
            if kind is not None:
                out.append((path, kind))
        return out

    def _look(self, path: Path, ancestors: frozenset[str]) -> str | None:
        hidden = path.name.startswith(".")
        try:
            mode = os.stat(path).st_mode
        except OSError as e:
            if hidden:
                self.skip(path, "hidden file")
            elif path.is_symlink():
                self.skip(path, "symlink loop" if e.errno == errno.ELOOP else "broken symlink")
            else:
                self.skip(path, f"cannot be read ({e.strerror})")
            return None
        if stat.S_ISDIR(mode):
            if hidden:
                self.skip(path, "hidden folder")  # not entered: .git, .cache, ...
            elif os.path.realpath(path) in ancestors:
                self.skip(path, "symlink loop")
            else:
                return "dir"
        elif hidden:
            self.skip(path, "hidden file")
        elif stat.S_ISREG(mode):
            return "file"
        else:
            self.skip(path, "not a regular file")
        return None

    def folder(self, root: Path) -> None:
        ancestors = frozenset([os.path.realpath(root)])
        listing = self.entries(root, ancestors, top=True)
        subdirs = [p for p, kind in listing if kind == "dir"]
        if _is_split_layout(subdirs):
            for path, kind in listing:
                if kind == "file":
                    self.file(path, None)
            for d in subdirs:
                self.split = d.name
                self.labels(d, ancestors | {os.path.realpath(d)})
            self.split = None
            return
        self.labels(root, ancestors, listing)

    def labels(self, root: Path, ancestors: frozenset[str], listing: list | None = None) -> None:
        """``root/<label>/<video>``, or ``root/<video_dir>/<frames>`` when every folder in
        ``root`` is a frame folder; ``root``'s own files are unlabelled sources."""
        if listing is None:
            listing = self.entries(root, ancestors)
        subdirs = [p for p, kind in listing if kind == "dir"]
        for path, kind in listing:
            if kind == "file":
                self.file(path, None)
        rawframes = bool(subdirs) and all(_is_frame_dir(d) for d in subdirs)
        for d in subdirs:
            below = ancestors | {os.path.realpath(d)}
            if rawframes:
                self.frames(d, None, below)
            else:
                self.label(d, below)

    def label(self, folder: Path, ancestors: frozenset[str]) -> None:
        for path, kind in self.entries(folder, ancestors):
            if kind == "file":
                self.file(path, folder.name)
            elif _is_frame_dir(path):
                self.frames(path, folder.name, ancestors | {os.path.realpath(path)})
            else:
                self.nested(path, ancestors, "nested below a label folder")

    def frames(self, folder: Path, label: str | None, ancestors: frozenset[str]) -> None:
        if not self.add(folder, label, "frames"):
            return
        for path, kind in self.entries(folder, ancestors):
            if kind == "dir":
                self.nested(path, ancestors, "nested below a frame folder")
            elif _ext(path.name) not in IMAGE_EXTENSIONS:
                self.skip(path, "not a frame image (in a frame folder)")

    def nested(self, folder: Path, ancestors: frozenset[str], reason: str) -> None:
        """Skip every file below ``folder``; folder links are not followed here."""
        if folder.is_symlink():
            self.skip(folder, reason)
            return
        below = ancestors | {os.path.realpath(folder)}
        for path, kind in self.entries(folder, below):
            if kind == "dir":
                self.nested(path, below, reason)
            else:
                self.skip(path, reason)

    def file(self, path: Path, label: str | None) -> None:
        ext = _ext(path.name)
        if ext in VIDEO_EXTENSIONS:
            self.add(path, label, "video")  # a broken one fails in the build, named
            return
        first = self._first.get(str(path.resolve()))
        if first is not None:
            self.skip(path, f"same file as {first}")
            return
        reason = "an image outside a frame folder" if ext in IMAGE_EXTENSIONS else None
        reason = reason or _why_not_a_video(path)
        if reason is None:
            self.add(path, label, "video")
        else:
            self.skip(path, reason)


def _is_split_layout(subdirs: list[Path]) -> bool:
    """Every top folder is named like a split and one is not a frame folder (a frame folder
    named ``train`` is a video)."""
    named = bool(subdirs) and all(d.name.lower() in SPLIT_NAMES for d in subdirs)
    return named and not all(_is_frame_dir(d) for d in subdirs)


def scan_inputs(
    data: str | os.PathLike,
    input_format: str | None = None,
    root: str | os.PathLike | None = None,
) -> Inputs:
    """Read ``data`` as ``input_format`` (``None``: detected from names, headers and JSON
    shapes; an ambiguous ``data`` asks for one). ``root``: the folder an annotation's paths are
    relative to (default: the annotation file's folder). The formats and how each assigns
    class ids: :func:`hyperframes.inputs._formats.list_input_formats`."""
    from ._formats import read_inputs

    return read_inputs(data, input_format=input_format, root=root)


def scan(data: str | os.PathLike) -> tuple[list[Source], list[dict]]:
    """``(sources, skipped)`` of ``data`` in its detected format (see :func:`scan_inputs`,
    which also returns the class names and the rows that failed)."""
    inputs = scan_inputs(data)
    return inputs.sources, inputs.skipped


def discover(data: str | os.PathLike) -> list[Source]:
    """Every source under ``data``, in a stable order (see :func:`scan`)."""
    return scan(data)[0]


def scan_folder(data: str | os.PathLike) -> tuple[list[Source], list[dict]]:
    """The ``folder`` form: every source under ``data`` and every file left out, as
    ``(sources, skipped)``; ``skipped`` rows are ``{"path": ..., "reason": ...}`` sorted by
    path (the rules are in the module docstring). Sources keep a stable order: the top
    folder's files, then its folders by name, each folder's entries by name."""
    root = Path(data)
    if not root.exists():
        raise InputError(f"{root}: no such file or folder (expected videos, a folder or a list)")
    if root.is_file():
        real, given = str(root.resolve()), os.path.abspath(root)
        return [Source(real, None, None, "video", given=given if given != real else None)], []
    scanner = _Scanner()
    root = Path(os.path.abspath(root))
    if _is_frame_dir(root):
        scanner.frames(root, None, frozenset([os.path.realpath(root)]))
    else:
        scanner.folder(root)
    if not scanner.sources:
        raise InputError(_found_nothing(root, scanner.skipped))
    return scanner.sources, sorted(scanner.skipped, key=lambda row: row["path"])


def _found_nothing(root: Path, skipped: list[dict]) -> str:
    msg = (
        f"{root}: found no videos and no frame folders; the folder layouts read are "
        + "; ".join(FOLDER_LAYOUTS)
        + " (or an annotation file: see --input-format)"
    )
    if not skipped:
        return msg
    example: dict[str, str] = {}
    for row in skipped:
        example.setdefault(row["reason"], row["path"])
    counts = collections.Counter(row["reason"] for row in skipped)
    parts = [f"{n} {reason} (e.g. {example[reason]})" for reason, n in counts.most_common()]
    msg = f"{msg}; skipped {len(skipped)}: " + ", ".join(parts)
    if "nested below a label folder" in counts:
        msg += (
            "; if the top folders are splits, name them train/val/test, or list the videos in "
            "a CSV with path,label,split columns"
        )
    return msg


def listed_kind(path: Path) -> str:
    """The kind of a path an annotation row names: a folder is a frame folder, unless it is
    named like a video (then it is an error the build reports: a directory where a video file
    was expected); anything else, missing included, is a video."""
    if path.is_dir() and path.suffix.lower() not in VIDEO_EXTENSIONS:
        return "frames"
    return "video"


def class_names(sources: list[Source], classes: list[str] | None = None) -> list[str]:
    """Class id -> name. A given label map (``classes``: classInd.txt, an SSv2 labels file,
    ...) is kept as it is, after checking that it names every label of ``sources``. Otherwise
    the names are sorted, and integer labels (mmaction2 lists and CSVs with class ids) keep
    their ids: the names are ``"0" .. str(max)``. Multi-label and segment labels count."""
    labels: set[str] = set()
    for s in sources:
        if s.label is not None:
            labels.add(s.label)
        labels.update(s.labels or ())
        for seg in s.segments:
            labels.update(seg.labels)
    if classes is not None:
        unknown = sorted(labels - set(classes))
        if unknown:
            raise InputError(
                f"labels {unknown[:5]} are not in the label map of {len(classes)} classes "
                f"({', '.join(classes[:5])}, ...); fix the labels or the label map"
            )
        return list(classes)
    if labels and all(lbl.isdigit() for lbl in labels):
        return [str(i) for i in range(max(int(lbl) for lbl in labels) + 1)]
    return sorted(labels)


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
