"""The sources of an annotation held as columns (:class:`SourceColumns`): ten million rows
are a few arrays and one bytes blob of paths, not ten million :class:`Source` objects; a
:class:`Source` is made when one is asked for. A row appended with ``kind=None`` is looked
at (one stat: a folder is a frame folder) only when its source is first made, so reading ten
million rows touches none of their files."""

from __future__ import annotations

import dataclasses
import os
import sys
from array import array
from collections.abc import Collection, Iterator, Sequence
from typing import overload

import numpy as np
import xxhash

from ._sources import Source, listed_kind

_KINDS = ("video", "frames")
#: the kind code of a row whose file is not looked at yet (:meth:`SourceColumns.row` does)
_UNSEEN = 2
#: how ``os.fsdecode`` turns a path's bytes into text (the same, without its checks per call)
_FS_ENCODING, _FS_ERRORS = sys.getfilesystemencoding(), sys.getfilesystemencodeerrors()
#: rows :meth:`SourceColumns.plain_rows` looks up at a time
_CHUNK = 4096
#: positions in a selection of rows: a range, an array of them
Positions = Sequence[int] | np.ndarray


def path_hash(path: str) -> int:
    """The 64-bit hash the columns find a path by (collisions are checked by the path)."""
    return xxhash.xxh3_64_intdigest(os.fsencode(path))


class Strings:
    """Interned strings: each distinct one stored once, named by its id (``-1``: None)."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self._ids: dict[str, int] = {}

    def id(self, name: str | None) -> int:
        if name is None:
            return -1
        i = self._ids.get(name)
        if i is None:
            i = self._ids[name] = len(self.names)
            self.names.append(name)
        return i

    def name(self, i: int) -> str | None:
        return None if i < 0 else self.names[i]


class SourceColumns(Sequence[Source]):
    """Rows appended one at a time (:meth:`append`), then a selection of them (:meth:`take`)
    read as a sequence of :class:`Source`. A row that carries more than a path, a label, a
    split, a kind and ``"file:line"`` (segments, several labels, fields) is kept whole."""

    def __init__(self) -> None:
        self._blob = bytearray()
        self._ends = array("q")
        self._prefix = ""  # what the paths of the rows marked in ``_under`` start with
        self._under = bytearray()  # 1: the row's path is ``_prefix`` + its bytes in the blob
        self._label = array("i")
        self._split = array("i")
        self._kind = bytearray()
        self._file = array("i")
        self._line = array("I")  # 0: the row is not "file:line"
        self.strings = Strings()
        self._whole: dict[int, Source] = {}
        self._order: np.ndarray | None = None  # the selection, row numbers; None: every row
        self._lookup: tuple[np.ndarray, np.ndarray] | None = None

    def append(self, source: Source, *, seen: bool = True) -> int:
        """Add a row; returns its row number. ``seen=False``: its ``kind`` is not known yet
        (the row's file is looked at when its source is first made)."""
        n = len(self._ends)
        self._blob += os.fsencode(source.path)
        self._ends.append(len(self._blob))
        self._under.append(0)
        self._label.append(self.strings.id(source.label))
        self._split.append(self.strings.id(source.split))
        self._kind.append(_KINDS.index(source.kind) if seen else _UNSEEN)
        file, line = _where(source.row)
        self._file.append(self.strings.id(file))
        self._line.append(line if line < 1 << 32 else 0)
        if (
            source.segments
            or source.labels is not None
            or source.fields
            or source.given
            or line >= 1 << 32
        ):
            self._whole[n] = source
        return n

    def replace(self, n: int, source: Source) -> None:
        """Row ``n`` is ``source`` (a merge of rows of one path)."""
        self._whole[n] = source

    def path(self, n: int) -> str:
        start = self._ends[n - 1] if n else 0
        text = self._blob[start : self._ends[n]].decode(_FS_ENCODING, _FS_ERRORS)
        return self._prefix + text if self._under[n] else text

    def plain_rows(self, positions: Positions) -> Iterator[tuple[int, str, str | None, bool]]:
        """``(position, path, row, whole)`` of each of ``positions`` (in the selection), in
        order, with no :class:`Source` made nor file looked at; ``row`` is its
        ``"file:line"``; ``whole``: the row is kept whole (segments, several labels, a link's
        given path), so only :meth:`row` says all of it."""
        blob, ends, kept, line, file = self._blob, self._ends, self._whole, self._line, self._file
        names, prefix, under = self.strings.names, self._prefix, self._under
        for i, n in self._numbered(positions):
            path = blob[ends[n - 1] if n else 0 : ends[n]].decode(_FS_ENCODING, _FS_ERRORS)
            if under[n]:
                path = prefix + path
            f = names[file[n]] if file[n] >= 0 else None
            yield i, path, f if not line[n] else f"{f}:{line[n]}", n in kept

    def _numbered(self, positions: Positions) -> Iterator[tuple[int, int]]:
        """``(position, row number)`` of each of ``positions``, looked up a chunk at a time."""
        for at in range(0, len(positions), _CHUNK):
            chunk = np.asarray(positions[at : at + _CHUNK], np.int64)
            listed = chunk.tolist()
            if self._order is None:
                yield from zip(listed, listed)
            else:
                yield from zip(listed, self._order[chunk].tolist())

    def row(self, n: int) -> Source:
        """Row ``n`` (of every row appended, selected or not) as a :class:`Source`."""
        if self._kind[n] == _UNSEEN:
            self._see(n)
        whole = self._whole.get(n)
        if whole is not None:
            return whole
        line = self._line[n]
        file = self.strings.name(self._file[n])
        return Source(
            self.path(n),
            self.strings.name(self._label[n]),
            self.strings.name(self._split[n]),
            _KINDS[self._kind[n]],
            row=file if not line else f"{file}:{line}",
        )

    def _see(self, n: int) -> None:
        """Look at row ``n``'s file: its kind (:func:`listed_kind`), kept for the next ask."""
        kind = listed_kind(self.path(n))
        self._kind[n] = _KINDS.index(kind)
        whole = self._whole.get(n)
        if whole is not None and whole.kind != kind:
            self._whole[n] = dataclasses.replace(whole, kind=kind)

    def paths(self) -> Iterator[str]:
        """The selected rows' paths, in order (no file looked at, no :class:`Source` made)."""
        blob, ends, prefix, under = self._blob, self._ends, self._prefix, self._under
        for _, n in self._numbered(range(len(self))):
            path = blob[ends[n - 1] if n else 0 : ends[n]].decode(_FS_ENCODING, _FS_ERRORS)
            yield prefix + path if under[n] else path

    def take(self, rows) -> SourceColumns:
        """The same columns with only ``rows`` (row numbers, in the order given) selected."""
        out = SourceColumns.__new__(SourceColumns)
        out.__dict__.update(self.__dict__)
        out._order = np.asarray(rows, dtype=np.int64)
        out._lookup = None
        return out

    def rows(self) -> np.ndarray:
        """The selected row numbers, in order."""
        if self._order is None:
            return np.arange(len(self._ends), dtype=np.int64)
        return self._order

    def __len__(self) -> int:
        return len(self._ends) if self._order is None else len(self._order)

    @overload
    def __getitem__(self, i: int) -> Source: ...
    @overload
    def __getitem__(self, i: slice) -> list[Source]: ...
    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self.row(int(n)) for n in self.rows()[i]]
        if self._order is None:
            return self.row(range(len(self._ends))[i])
        return self.row(int(self._order[i]))

    def __iter__(self) -> Iterator[Source]:
        rows = range(len(self._ends)) if self._order is None else self._order
        for n in rows:
            yield self.row(int(n))

    def __eq__(self, other) -> bool:
        if isinstance(other, (list, tuple, SourceColumns)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"SourceColumns({len(self)} sources)"

    def label_names(self) -> set[str]:
        """Every class name the selected rows use (labels, several labels, segments')."""
        labels = np.frombuffer(self._label, dtype=np.int32)
        used = np.zeros(len(self.strings.names) + 1, dtype=np.bool_)
        if self._order is None:
            used[labels + 1] = True
        else:
            used[labels[self._order] + 1] = True
        names = {self.strings.names[i] for i in np.flatnonzero(used[1:]).tolist()}
        whole = np.fromiter(self._whole, np.int64, len(self._whole))
        if self._order is not None:
            whole = whole[np.isin(whole, self._order)]
        for n in whole.tolist():
            s = self._whole[n]
            if s.label is not None:
                names.add(s.label)
            names.update(s.labels or ())
            for seg in s.segments:
                names.update(seg.labels)
        return names

    def split_names(self) -> set[str]:
        """Every split the selected rows name."""
        splits = np.frombuffer(self._split, dtype=np.int32)
        used = np.zeros(len(self.strings.names) + 1, dtype=np.bool_)
        used[(splits if self._order is None else splits[self._order]) + 1] = True
        return {self.strings.names[i] for i in np.flatnonzero(used[1:]).tolist()}

    def find(self, path: str) -> Source | None:
        """The selected source of ``path``, or None."""
        if self._lookup is None:  # 16 bytes a row: the hashes, sorted, and their rows
            hashes = np.fromiter(map(path_hash, self.paths()), dtype=np.uint64, count=len(self))
            by = np.argsort(hashes)  # (paths of one hash are told apart below)
            hashes.sort()
            self._lookup = (hashes, by if self._order is None else self._order[by])
        hashes, rows = self._lookup
        h = np.uint64(path_hash(path))
        i = int(np.searchsorted(hashes, h))
        while i < len(hashes) and hashes[i] == h:
            n = int(rows[i])
            if self.path(n) == path:
                return self.row(n)
            i += 1
        return None


def _where(row: str | None) -> tuple[str | None, int]:
    """``"file:line"`` as ``(file, line)``; another row (or None) as ``(row, 0)``."""
    if row is None:
        return None, 0
    file, _, line = row.rpartition(":")
    if file and line.isdigit() and line == str(int(line)) and int(line) > 0:
        return file, int(line)
    return row, 0


def source_paths(sources: Sequence[Source]) -> Iterator[str]:
    """The paths of ``sources``, in order; columns make no :class:`Source` (nor look at a
    file) for it."""
    if isinstance(sources, SourceColumns):
        return sources.paths()
    return (s.path for s in sources)


def paths_at(sources: Sequence[Source], positions: Positions) -> Iterator[tuple[int, str]]:
    """``(position, path)`` of each of ``positions`` in ``sources`` (columns make no
    :class:`Source`, nor look at a file, for it)."""
    if isinstance(sources, SourceColumns):
        return ((i, path) for i, path, _, _ in sources.plain_rows(positions))
    return ((i, sources[i].path) for i in map(int, positions))


def source_splits(sources: Sequence[Source]) -> set[str]:
    """The splits ``sources`` name (columns make no :class:`Source` for it)."""
    if isinstance(sources, SourceColumns):
        return sources.split_names()
    return {s.split for s in sources if s.split is not None}


def sources_named(sources: Sequence[Source], paths: Collection[str]) -> dict[str, Source]:
    """{path: source} of the sources in ``sources`` whose path is one of ``paths``: one pass
    over the paths, no lookup of every source built (memory grows with ``paths`` only)."""
    if not paths:
        return {}
    return {p: sources[i] for i, p in enumerate(source_paths(sources)) if p in paths}


def source_finder(sources: Sequence[Source]):
    """A function from a path to its source in ``sources`` (None when not there)."""
    if isinstance(sources, SourceColumns):
        return sources.find
    return {s.path: s for s in sources}.get


def append_columns(
    columns: SourceColumns,
    blob: bytes,
    ends: np.ndarray,
    labels: tuple[np.ndarray, list[str]],
    splits: tuple[np.ndarray, list[str]],
    file: str,
    lines: np.ndarray,
    under: tuple[str, np.ndarray] | None = None,
) -> None:
    """Append rows given as whole columns (no Python work per row): ``blob`` the paths'
    bytes end to end, ``ends`` where each ends in it; ``labels`` and ``splits`` as ``(codes,
    names)`` (code -1: none); every row ``"file:line"`` with its line from ``lines``;
    ``under``: ``(prefix, marked)``, the rows ``marked`` (booleans) hold only what follows
    ``prefix`` in their path (a root's rows: the root is kept once, not once a row). The
    rows' files are not looked at (their kind is unseen)."""
    n = len(ends)
    base = len(columns._blob)
    columns._blob += blob
    columns._ends.frombytes((np.asarray(ends, np.int64) + base).tobytes())
    if under is None:
        columns._under += bytes(n)
    else:
        prefix, marked = under
        if columns._prefix and columns._prefix != prefix:
            raise ValueError(f"rows under {prefix!r} added to columns under {columns._prefix!r}")
        columns._prefix = prefix
        columns._under += np.asarray(marked, np.uint8).tobytes()
    for col, (codes, names) in ((columns._label, labels), (columns._split, splits)):
        ids = np.array([*(columns.strings.id(s) for s in names), -1], dtype=np.int32)
        col.frombytes(ids[np.asarray(codes, np.int64)].tobytes())
    columns._kind += bytes([_UNSEEN]) * n
    columns._file.frombytes(np.full(n, columns.strings.id(file), np.int32).tobytes())
    columns._line.frombytes(np.asarray(lines, np.uint32).tobytes())
