"""The ``folder`` input form: walk a data folder once and account for every file in it
(:func:`scan_folder`). The form is:

- a folder ``root/<label>/<video>`` (labels from folder names; a ``<video>`` may also be a
  folder of frame images),
- a folder ``root/<split>/<label>/<video>``: when every folder at the top is named like a split
  (:data:`~._sources.SPLIT_NAMES`: ``train``, ``val``, ``test``, ...), each is read as the folder form
  above and its videos record the folder's name (as written) as their split,
- a folder of frame folders ``root/<video_dir>/img_00001.jpg`` (mmaction2 "rawframes"),
- a single frame folder,
- a single video file.

Every regular file under a data folder is accounted for (:func:`scan_folder`): it is a source, an image
of a frame folder that is a source, or a skipped row ``{"path", "reason"}``. The rules:

- a name in :data:`~._sources.VIDEO_EXTENSIONS` is a video source without looking inside (a broken one is
  reported later by the build as failed); any other extension is decided by FFmpeg probing the
  content: a video stream makes it a source (``.nut``, ``.mxf``, ...), otherwise it is skipped as
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
import errno
import os
import stat
from pathlib import Path

from .._core._errors import InputError
from ._sources import (
    FOLDER_LAYOUTS,
    IMAGE_EXTENSIONS,
    SPLIT_NAMES,
    VIDEO_EXTENSIONS,
    Source,
    file_extension,
)

__all__ = ["scan_folder"]

# Probing a file of unknown extension: its first 16 KiB name the container (FFmpeg's default,
# 1 MiB, costs ~70 ms on each large junk file), 256 KiB list the streams; "file" keeps a
# playlist or SDP text from reaching out to the network.
_PROBE_OPTIONS = {
    "formatprobesize": str(16 * 1024),
    "probesize": str(256 * 1024),
    "protocol_whitelist": "file",
}


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
                ext = file_extension(e.name)
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
    import av  # deferred: optional/heavy dependency

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
            elif file_extension(path.name) not in IMAGE_EXTENSIONS:
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
        ext = file_extension(path.name)
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
