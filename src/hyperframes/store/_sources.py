"""Find the videos a build should store, from the forms users keep their data in.

- a folder ``root/<label>/<video>`` (labels from folder names; a ``<video>`` may also be a
  folder of frame images),
- a folder of frame folders ``root/<video_dir>/img_00001.jpg`` (mmaction2 "rawframes"),
- a single frame folder,
- an annotation file: ``relative/path label`` per line (mmaction2 lists; ``path frames label``
  rawframe lists too) or a CSV with a header ``path,label[,split]``,
- a single video file.
"""

from __future__ import annotations

import csv
import dataclasses
import os
from pathlib import Path

from .._errors import InputError

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


@dataclasses.dataclass(frozen=True)
class Source:
    path: str  # absolute
    label: str | None
    split: str | None
    kind: str  # "video" | "frames"


def _is_frame_dir(path: Path) -> bool:
    try:
        with os.scandir(path) as it:
            return any(
                e.is_file() and os.path.splitext(e.name)[1].lower() in IMAGE_EXTENSIONS for e in it
            )
    except OSError:
        return False


def _kind(path: Path) -> str:
    """A listed folder is a frame folder, unless it is named like a video (then it is an
    error the build reports: a directory where a video file was expected)."""
    if path.is_dir() and path.suffix.lower() not in VIDEO_EXTENSIONS:
        return "frames"
    return "video"


def discover(data: str | os.PathLike) -> list[Source]:
    """Every source under ``data``, in a stable order (sorted by label, then path)."""
    root = Path(data)
    if not root.exists():
        raise InputError(f"{root}: no such file or folder (expected videos, a folder or a list)")
    if root.is_file():
        if root.suffix.lower() in ANNOTATION_EXTENSIONS:
            return _from_annotation(root)
        return [Source(str(root.resolve()), None, None, "video")]
    if _is_frame_dir(root):
        return [Source(str(root.resolve()), None, None, "frames")]
    return _from_folder(root)


def _from_folder(root: Path) -> list[Source]:
    entries = sorted(root.iterdir())
    subdirs = [e for e in entries if e.is_dir() and not e.name.startswith(".")]
    files = [
        e
        for e in entries
        if e.is_file() and e.suffix.lower() in VIDEO_EXTENSIONS and not e.name.startswith(".")
    ]
    out: list[Source] = [Source(str(f.resolve()), None, None, "video") for f in files]
    if subdirs and all(_is_frame_dir(d) for d in subdirs):
        return out + [Source(str(d.resolve()), None, None, "frames") for d in subdirs]
    for label_dir in subdirs:
        for e in sorted(label_dir.iterdir()):
            if e.name.startswith("."):
                continue
            if e.is_dir():
                if _is_frame_dir(e):
                    out.append(Source(str(e.resolve()), label_dir.name, None, "frames"))
            elif e.suffix.lower() in VIDEO_EXTENSIONS:
                out.append(Source(str(e.resolve()), label_dir.name, None, "video"))
    if not out:
        raise InputError(
            f"{root}: found no videos (extensions {', '.join(sorted(VIDEO_EXTENSIONS))}) "
            "and no frame folders; expected root/<label>/<video>"
        )
    return out


def _resolve(base: Path, rel: str) -> Path:
    p = Path(rel)
    return p if p.is_absolute() else (base / p)


def _from_annotation(path: Path) -> list[Source]:
    base = path.parent
    text = path.read_text(encoding="utf-8", errors="replace")
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    if not lines:
        raise InputError(f"{path}: the annotation file is empty")
    out: list[Source] = []
    header = [h.strip().lower() for h in lines[0].split(",")]
    if path.suffix.lower() == ".csv" or (header and header[0] == "path" and "label" in header):
        if header[:1] != ["path"] or "label" not in header:
            raise InputError(f"{path}: a CSV annotation needs a header 'path,label[,split]'")
        reader = csv.DictReader(lines)
        reader.fieldnames = header
        for lineno, row in enumerate(reader, start=2):
            if not row.get("path"):
                raise InputError(f"{path}:{lineno}: empty path")
            p = _resolve(base, row["path"].strip())
            split = (row.get("split") or "").strip() or None
            out.append(Source(str(p.absolute()), row["label"].strip(), split, _kind(p)))
        return out
    for lineno, ln in enumerate(lines, start=1):
        parts = ln.split()
        if len(parts) < 2:
            raise InputError(
                f"{path}:{lineno}: expected 'relative/path label' (or 'path frames label'), "
                f"got {ln!r}"
            )
        p = _resolve(base, parts[0])
        out.append(Source(str(p.absolute()), parts[-1], None, _kind(p)))
    return out


def class_names(sources: list[Source]) -> list[str]:
    """Sorted class names. Integer labels (mmaction2 lists use class ids) keep their ids:
    the names are ``"0" .. str(max)``."""
    labels = {s.label for s in sources if s.label is not None}
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
