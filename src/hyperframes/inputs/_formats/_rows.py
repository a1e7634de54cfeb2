"""What every annotation format shares: rows that end as a source, a failed row or a skipped
row, each remembering where it was listed ("file:line"), and the small parsers of times,
text lines and JSON lists that keep those line numbers."""

from __future__ import annotations

import collections
import csv
import dataclasses
import io
import json
import math
import os
import re
import stat
from array import array
from collections.abc import Generator, Iterator
from pathlib import Path

import numpy as np

from ..._core._errors import InputError
from ..._core._json import TOO_DEEP, loads_json
from .._columns import SourceColumns, append_columns, path_hash, source_paths
from .._sources import (
    IMAGE_EXTENSIONS,
    VIDEO_EXTENSIONS,
    Inputs,
    Segment,
    Source,
    class_names,
)

#: what to do about an annotation that nests too deep
DEEP_HINT = "an annotation nests a few levels: the file is damaged or not an annotation"


class RowError(ValueError):
    """A row that cannot be used; the reader turns it into a failed row naming the row."""


def read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8-sig", errors="replace")
    except OSError as e:
        raise InputError(f"{path}: cannot be read ({e.strerror})") from None


def _open_text(path: Path) -> io.TextIOWrapper:
    """``path`` open for reading as ``read_text`` reads it (a BOM dropped, undecodable bytes
    replaced, universal newlines), a line at a time: a list of ten million rows is never
    held whole as text."""
    try:
        return open(path, encoding="utf-8-sig", errors="replace")
    except OSError as e:
        raise InputError(f"{path}: cannot be read ({e.strerror})") from None


def _streamed(path: Path, f: io.TextIOWrapper) -> Generator[str, None, None]:
    """The lines of the open file ``f`` (closed at the end), a read error an InputError."""
    with f:
        try:
            yield from f
        except OSError as e:
            raise InputError(f"{path}: cannot be read ({e.strerror})") from None


def text_lines(path: Path) -> Iterator[tuple[int, str]]:
    """``(line number, stripped line)`` of a text list, blank lines and ``#`` comments left
    out (they are not rows). Read a line at a time; lines are numbered as ``str.splitlines``
    splits the whole text."""
    lineno = 0
    for chunk in _streamed(path, _open_text(path)):
        for line in chunk.splitlines():
            lineno += 1
            line = line.strip()
            if line and not line.startswith("#"):
                yield lineno, line


def csv_header(path: Path) -> list[str]:
    """The lower-cased header of a CSV (its first line; the file closed again)."""
    lines = _streamed(path, _open_text(path))
    try:
        return _header(csv.reader(lines))
    finally:
        lines.close()


def _header(reader) -> list[str]:
    return [h.strip().lower() for h in next(reader, [])]


def csv_rows(path: Path) -> tuple[list[str], Iterator[tuple[int, dict[str, str]]]]:
    """The lower-cased header of a CSV and its rows as ``(line number, {column: value})``;
    blank lines are not rows. The rows are read as they are asked for (a line at a time)."""
    lines = _streamed(path, _open_text(path))
    reader = csv.reader(lines)
    header = _header(reader)

    def rows():
        for cells in reader:
            if not any(c.strip() for c in cells):
                continue
            yield reader.line_num, {h: c.strip() for h, c in zip(header, cells)}

    return header, rows()


_WS = re.compile(r"\s*")


def _skip_ws(text: str, i: int = 0) -> int:
    """The index of the first non-whitespace character of ``text`` at or after ``i``."""
    m = _WS.match(text, i)
    assert m is not None  # \s* matches the empty string
    return m.end()


def json_list(path: Path) -> Iterator[tuple[int, object]]:
    """``(line number, item)`` of a JSON file holding one list."""
    text = read_text(path)
    decoder = json.JSONDecoder()
    i = _skip_ws(text)
    if text[i : i + 1] != "[":
        raise InputError(f"{path}: expected a JSON list [{{...}}, ...]")
    i = _skip_ws(text, i + 1)
    line, counted = 1, 0
    if text[i : i + 1] == "]":
        return
    while True:
        line += text.count("\n", counted, i)
        counted = i
        try:
            item, i = decoder.raw_decode(text, i)
        except json.JSONDecodeError as e:
            raise InputError(f"{path}:{e.lineno}: not valid JSON ({e.msg})") from None
        except RecursionError:
            raise InputError(f"{path}:{line}: {TOO_DEEP}; {DEEP_HINT}") from None
        yield line, item
        i = _skip_ws(text, i)
        if text[i : i + 1] == "]":
            return
        if text[i : i + 1] != ",":
            line += text.count("\n", counted, i)
            raise InputError(f"{path}:{line}: not valid JSON (expected ',' or ']')")
        i = _skip_ws(text, i + 1)


def json_file(path: Path) -> object:
    """A JSON document; an object holding a key twice is an error (the first would vanish)."""

    def pairs(items):
        out = {}
        for key, value in items:
            if key in out:
                raise InputError(f"{path}: key {key!r} appears twice (a duplicate id)")
            out[key] = value
        return out

    try:
        return loads_json(
            read_text(path), path, InputError, hint=DEEP_HINT, object_pairs_hook=pairs
        )
    except json.JSONDecodeError as e:
        raise InputError(f"{path}:{e.lineno}: not valid JSON ({e.msg})") from None


_CLOCK = re.compile(r"(?:(\d+):)?(\d+):(\d+(?:\.\d*)?)")


def parse_seconds(text: object, what: str = "time") -> float:
    """Seconds from ``12.5``, ``"12.5"`` or ``"H:MM:SS.ff"`` / ``"MM:SS"``."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        value = float(text)
    else:
        s = str(text).strip()
        try:
            value = float(s)
        except ValueError:
            m = _CLOCK.fullmatch(s)
            if m is None:
                raise RowError(
                    f"unparsable {what} {s!r} (expected seconds, e.g. 12.5, or H:MM:SS)"
                ) from None
            value = int(m[1] or 0) * 3600 + int(m[2]) * 60 + float(m[3])
    if not math.isfinite(value) or value < 0:
        raise RowError(f"{what} {text!r}: expected a finite number of seconds >= 0")
    return value


def segment(start: object, end: object, labels: tuple[str, ...], row: str | None = None) -> Segment:
    s, e = parse_seconds(start, "start time"), parse_seconds(end, "end time")
    if e <= s:
        raise RowError(f"segment end {e:g} s <= start {s:g} s")
    return Segment(s, e, labels, row)


def split_from_name(path: Path) -> str:
    """``something-something-v2-train.json`` -> ``train``, ``Charades_v1_test.csv`` -> ``test``."""
    return re.split(r"[-_.\s]", path.stem)[-1].lower()


class Rows:
    """One read of an annotation: every row ends as a source, a failed row or a skipped row.

    Paths are made absolute against ``root``. A path listed twice is one source: rows with
    segments are merged into it (one file, several labelled ranges); an identical row is
    skipped (``"listed again"``); a row giving the same file another label is an error. A
    listed file that does not exist stays a source (the build fails it, naming the row), but
    when none of the listed files exists the read stops and says which ``--root`` to try.

    The rows are held as columns (:class:`~hyperframes.inputs._columns.SourceColumns`, a
    64-bit hash of each path): a path listed twice is found when the read ends, and only the
    rows of such paths (and of failed ones) are replayed one by one.
    """

    def __init__(self, data: Path, root: Path):
        self.data, self.root = data, root
        self._columns = SourceColumns()
        self._hashes = array("Q")
        self._first_listed: str | None = None  # the first added row as listed (--root hint)
        self._fails: list[tuple[int, str, str, str]] = []  # (seq, path, row, why)
        self._skips: list[tuple[int, dict]] = []
        self.rows = 0

    @property
    def skipped(self) -> list[dict]:
        return [entry for _, entry in self._skips]

    def path(self, listed: str) -> str:
        """The absolute path of a listed path (relative ones are relative to the root)."""
        return os.path.abspath(os.path.join(self.root, listed))

    def add(
        self,
        path: str | os.PathLike,
        row: str,
        *,
        label: str | None = None,
        split: str | None = None,
        labels: tuple[str, ...] | None = None,
        segments: tuple[Segment, ...] = (),
        kind: str | None = None,
        listed: str | None = None,
        fields: tuple[tuple[str, str], ...] = (),
    ) -> None:
        self.rows += 1
        key = os.fspath(path)
        # kind None: its file is looked at when its source is first made, not here (ten
        # million rows are read without a stat each)
        new = Source(key, label, split, kind or "video", segments, labels, row, fields=fields)
        if self._first_listed is None:
            self._first_listed = listed or key
        self._columns.append(new, seen=kind is not None)
        self._hashes.append(path_hash(key))

    def add_columns(
        self,
        blob: bytes,
        ends: np.ndarray,
        hashes: np.ndarray,
        labels: tuple[np.ndarray, list[str]],
        splits: tuple[np.ndarray, list[str]],
        lines: np.ndarray,
        first_listed: str,
        under: tuple[str, np.ndarray] | None = None,
    ) -> None:
        """Add rows given as columns (:func:`append_columns`; ``hashes``: each path's
        :func:`path_hash`), each ``"{data}:line"``, none looked at: what :meth:`add` does
        for each, with no Python work per row."""
        if not len(ends):
            return
        self.rows += len(ends)
        if self._first_listed is None:
            self._first_listed = first_listed
        append_columns(self._columns, blob, ends, labels, splits, str(self.data), lines, under)
        self._hashes.frombytes(np.asarray(hashes, np.uint64).tobytes())

    def fail(self, path: str | os.PathLike, row: str, why: str) -> None:
        """The row names ``path`` but cannot be used: ``path`` is not stored, and is listed in
        the build's failed rows with why and where."""
        self.rows += 1
        self._fails.append((self.rows, os.fspath(path), row, why))

    def skip(self, path: str | os.PathLike, row: str, reason: str) -> None:
        self.rows += 1
        self._skips.append((self.rows, {"path": os.fspath(path), "reason": f"{reason} (at {row})"}))

    def _settle(self) -> tuple[SourceColumns, list[dict]]:
        """The sources (rows of a path listed once as they are; the rows of a path listed
        again, or failed, replayed in their order) and the failed rows."""
        hashes = np.frombuffer(self._hashes, dtype=np.uint64)
        ordered = np.sort(hashes)  # (8 bytes a row, for a moment)
        again = ordered[1:][ordered[1:] == ordered[:-1]]
        del ordered
        if self._fails:
            failing = np.fromiter((path_hash(p) for _, p, _, _ in self._fails), np.uint64)
            again = np.concatenate([again, failing])
        special = _marked(hashes, np.unique(again))
        # an added row's place among all rows: its number plus the fails and skips before it
        others = np.sort(np.fromiter((e[0] for e in (*self._fails, *self._skips)), np.int64))
        adds_before = others - 1 - np.arange(len(others))
        keep = ~special
        replay = np.flatnonzero(special)
        before = np.searchsorted(adds_before, replay, side="right")
        events = sorted(
            [(int(n) + 1 + int(b), int(n)) for n, b in zip(replay, before)]
            + [(seq, (p, row, why)) for seq, p, row, why in self._fails],
            key=lambda e: e[0],
        )
        first: dict[str, int] = {}  # path -> the row number that holds its source
        failed: dict[str, dict] = {}
        for seq, event in events:
            if not isinstance(event, int):
                p, row, why = event
                first.pop(p, None)
                failed.setdefault(p, {"path": p, "error": f"InputError: {why} (at {row})"})
                continue
            new = self._columns.row(event)
            key = new.path
            if key in failed:
                continue  # another row of this file failed: the file fails, this row with it
            n = first.get(key)
            if n is None:
                first[key] = event
                continue
            old = self._columns.row(n)
            if old.segments and new.segments and old.split == new.split:
                self._columns.replace(n, _merge(old, new))
            elif (old.label, old.split, old.labels, old.segments) == (
                new.label,
                new.split,
                new.labels,
                new.segments,
            ):
                reason = f"listed again at {new.row} (first at {old.row})"
                self._skips.append((seq, {"path": key, "reason": reason}))
            else:
                raise InputError(
                    f"{new.row}: {key} is listed again with another label or split (first at "
                    f"{old.row}); list each file once"
                )
        self._skips.sort(key=lambda e: e[0])
        if first:
            keep[np.fromiter(first.values(), np.int64, len(first))] = True
        if keep.all():
            return self._columns, list(failed.values())
        return self._columns.take(np.flatnonzero(keep)), list(failed.values())

    def inputs(self, classes: list[str] | None = None) -> Inputs:
        """The sources, failed and skipped rows; ``classes`` is the label map the format
        gives (``None``: sorted names, integer labels keeping their ids)."""
        if not self.rows:
            raise InputError(f"{self.data}: the annotation lists no videos")
        sources, failed = self._settle()
        if not len(sources):
            raise InputError(_nothing_usable(self.data, failed, self.skipped))
        # the files are looked at in order until one exists (one stat when the first does)
        if not any(map(os.path.exists, source_paths(sources))):
            raise InputError(self._all_missing(sources[0], len(sources)))
        return Inputs(sources, self.skipped, class_names(sources, classes), failed)  # type: ignore[arg-type]

    def _all_missing(self, first: Source, count: int) -> str:
        listed = self._first_listed if first.path == self._columns.path(0) else None
        if listed is None:
            listed = os.path.relpath(first.path, self.root)
        msg = (
            f"{self.data}: none of the {count} listed files exists under "
            f"{self.root} (the first, at {first.row}: {first.path})"
        )
        hint = _root_hint(self.data, listed)
        if hint is not None:
            return f"{msg}; they are under {hint}: pass root {hint}"
        return (
            f"{msg}; pass root DIR, the folder the listed paths are relative to (or the "
            "videos are under)"
        )


class RootCheck:
    """The refusal of a source whose file is not inside ``root`` once links are followed (a
    ``../`` or absolute path, or a link whose target is elsewhere); nothing of it is opened.
    A build makes it as it hands each video out (:attr:`Inputs.root_check`), so ten million
    rows are not each resolved before the first is decoded. A path is resolved as
    ``os.path.realpath`` resolves it, with one ``lstat`` of the file and the real path of
    its folder (found once per folder: a folder of a million rows is resolved once)."""

    def __init__(self, root: Path):
        self.root = root
        self.base = os.path.realpath(root)
        self._inside = self.base.rstrip("/") + "/"
        self._odd = self.base.startswith("//")
        self._folders: dict[str, str] = {}  # a folder -> its real path

    def __call__(self, s: Source) -> dict | None:
        """``{"path", "error"}`` (the failed row) when ``s`` is outside the root, else None."""
        return self.refusal(s.path, s.row)[0]

    def refusal(self, path: str, row: str | None) -> tuple[dict | None, bool]:
        """:meth:`__call__` of the source of ``path`` listed at ``row``, and whether nothing
        is at ``path`` (its ``lstat`` found no such file: the build fails it unopened)."""
        real, missing = self.resolve(path)
        if self._odd or real.startswith("//"):  # (two slashes first: commonpath says)
            inside = os.path.commonpath([self.base, real]) == self.base
        else:
            inside = real == self.base or real.startswith(self._inside)
        if inside:
            return None, missing
        link = "" if real == path else f" (a link to {real})"
        return {
            "path": path,
            "error": f"InputError: {path}{link} is outside root {self.root} (at {row}); "
            "pass a root that holds it, or allow_outside_root (build --allow-outside-root)",
        }, missing

    def resolve(self, path: str) -> tuple[str, bool]:
        """``(os.path.realpath(path), whether nothing is at path)``: a file that is no link
        (or is missing) is its folder's real path joined with its name, as ``realpath``
        makes it; a link, or a path not plainly absolute, is resolved whole."""
        folder, _, name = path.rpartition("/")
        if name in ("", ".", "..") or not path.startswith("/"):
            return os.path.realpath(path), False
        try:
            link = stat.S_ISLNK(os.lstat(path).st_mode)
        except (FileNotFoundError, NotADirectoryError):
            link, missing = False, True
        except OSError:  # (a loop, no permission): realpath takes the name as it is
            link, missing = False, False
        else:
            missing = False
        if link:
            return os.path.realpath(path), False
        real = self._folders.get(folder)
        if real is None:
            if len(self._folders) >= _FOLDERS_KEPT:
                self._folders.clear()
            real = os.path.realpath(folder or "/")
            real = self._folders[folder] = real if real.endswith("/") else real + "/"
        return real + name, missing


#: folders whose real path a :class:`RootCheck` keeps (then it starts over)
_FOLDERS_KEPT = 1 << 16


def inside_root(inputs: Inputs, root: Path, data: Path, *, defer: bool = False) -> Inputs:
    """``inputs`` with every source whose file is not inside ``root`` (:class:`RootCheck`)
    moved to the failed rows, each naming its row. When no source is left it is an error
    listing every refused row. ``defer``: the sources are checked in order only until one is
    inside (the error needs no more); the rest are left to ``inputs.root_check``, which the
    build calls as it hands each video out."""
    check = RootCheck(root)
    if defer:
        for s in inputs.sources:
            if check(s) is None:
                return dataclasses.replace(inputs, root_check=check)
    out: list[int] = []  # positions refused (the rest are kept: no list of every row)
    refused: list[dict] = []
    for i, s in enumerate(inputs.sources):
        why = check(s)
        if why is not None:
            out.append(i)
            refused.append(why)
    if not refused:
        return inputs
    if len(out) == len(inputs.sources):
        listed = "\n".join(f"  {r['error'].removeprefix('InputError: ')}" for r in refused)
        raise InputError(
            f"{data}: every listed file is outside root {root}; none is read ({len(refused)} "
            f"refused):\n{listed}"
        )
    sources = inputs.sources
    if isinstance(sources, SourceColumns):
        keep = np.ones(len(sources), dtype=np.bool_)
        keep[out] = False
        kept: list[Source] | SourceColumns = sources.take(sources.rows()[keep])
    else:
        gone = set(out)
        kept = [s for i, s in enumerate(sources) if i not in gone]
    return dataclasses.replace(inputs, sources=kept, failed_rows=[*inputs.failed_rows, *refused])


def _marked(hashes: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Which of ``hashes`` are among the sorted ``values`` (no copy of ``hashes`` made)."""
    if not len(values):
        return np.zeros(len(hashes), dtype=np.bool_)
    at = np.searchsorted(values, hashes)
    np.minimum(at, len(values) - 1, out=at)
    return values[at] == hashes


def _merge(old: Source, new: Source) -> Source:
    labels = tuple(dict.fromkeys((*(old.labels or _own(old)), *(new.labels or _own(new)))))
    return Source(
        old.path,
        old.label if old.label == new.label else None,
        old.split,
        old.kind,
        old.segments + new.segments,
        labels,
        old.row,
    )


def _own(source: Source) -> tuple[str, ...]:
    return () if source.label is None else (source.label,)


def _root_hint(data: Path, listed: str) -> Path | None:
    """A folder near the annotation where the first listed path exists: the usual layout keeps
    lists and videos side by side (``ucfTrainTestlist/`` beside ``UCF-101/``)."""
    if Path(listed).is_absolute():
        return None
    here = data if data.is_dir() else data.parent
    here = Path(os.path.abspath(here))
    for base in (here.parent, here.parent.parent):
        candidates = [base]
        try:
            candidates += sorted(p for p in base.iterdir() if p.is_dir() and p != here)
        except OSError:
            continue
        for c in candidates:
            if (c / listed).exists():
                return c
    return None


def _nothing_usable(data: Path, failed: list[dict], skipped: list[dict]) -> str:
    why = collections.Counter(re.sub(r" \(at .*\)$", "", f["error"]) for f in failed).most_common(3)
    parts = [f"{n} failed: {w}" for w, n in why]
    if skipped:
        parts.append(f"{len(skipped)} skipped (e.g. {skipped[0]['reason']})")
    example = f" (e.g. {failed[0]['error']})" if failed else ""
    return f"{data}: no listed video can be stored; " + "; ".join(parts) + example


def find_by_name(root: Path, wanted: set[str]) -> dict[str, list[tuple[str, str]]]:
    """Videos (and frame folders) anywhere under ``root`` whose name without its extension is
    in ``wanted``: ``{name: [(path, kind)]}``. One walk; a matching folder is not entered,
    hidden folders are not entered, and a folder reached twice through links is walked once."""
    found: dict[str, list[tuple[str, str]]] = collections.defaultdict(list)
    seen: set[str] = set()
    stack = [os.fspath(root)]
    while stack:
        folder = stack.pop()
        real = os.path.realpath(folder)
        if real in seen:
            continue
        seen.add(real)
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            continue
        below = []
        for e in entries:
            if e.name.startswith("."):
                continue
            try:
                is_dir = e.is_dir()
            except OSError:
                continue
            stem, ext = os.path.splitext(e.name)
            if is_dir:
                if e.name in wanted:
                    found[e.name].append((e.path, "frames"))
                elif ext.lower() not in IMAGE_EXTENSIONS:
                    below.append(e.path)
            elif ext.lower() in VIDEO_EXTENSIONS and stem in wanted:
                found[stem].append((e.path, "video"))
        stack.extend(reversed(below))
    return found


def pick(found: dict[str, list[tuple[str, str]]], names: list[str]) -> tuple[str, str] | None:
    """``(path, kind)`` of the one file found for the first of ``names`` that was found; a
    name found twice is a row error (which file is meant?)."""
    for name in names:
        paths = found.get(name)
        if paths:
            if len(paths) > 1:
                where = ", ".join(p for p, _ in paths[:3])
                raise RowError(
                    f"{name} found {len(paths)} times ({where}): keep one, or point root at "
                    "the one to use"
                )
            return paths[0]
    return None
