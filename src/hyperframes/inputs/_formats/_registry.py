"""The input formats a build reads, by name: each detects itself and reads DATA into Inputs.

A format registers a reader ``read(data, root) -> Inputs`` and a detector
``detect(probe) -> int``: 0 says "not this format", 1 "could be" (a folder, a ``.txt`` list),
2 "this format" (a file name, a CSV header or a JSON shape only it has). Detection keeps the
formats with the highest answer; more than one is ambiguous and asks for ``--input-format``.
"""

from __future__ import annotations

import csv
import dataclasses
import functools
import os
from collections.abc import Callable
from pathlib import Path

from ..._core._errors import InputError
from ..._core._registry import Registry
from .._sources import Inputs
from ._rows import inside_root

GENERIC, SPECIFIC = 1, 2
_HEAD_BYTES = 64 * 1024


class Probe:
    """What detectors look at, read once: the path, its top-level names (a folder) and the
    first bytes / CSV header of a file. Reading stays cheap: nothing is parsed in full."""

    def __init__(self, path: Path):
        self.path = path
        self.is_dir = path.is_dir()
        self._heads: dict[Path, str] = {}

    @functools.cached_property
    def names(self) -> list[str]:
        """The folder's own file names, sorted (hidden ones left out)."""
        if not self.is_dir:
            return []
        try:
            with os.scandir(self.path) as it:
                return sorted(e.name for e in it if not e.name.startswith(".") and _is_file(e))
        except OSError:
            return []

    def files(self, suffix: str) -> list[Path]:
        """The folder's files (the file itself, for a file) ending with ``suffix``."""
        if not self.is_dir:
            return [self.path] if self.path.name.lower().endswith(suffix) else []
        return [self.path / n for n in self.names if n.lower().endswith(suffix)]

    def head(self, path: Path | None = None) -> str:
        """The first 64 KiB of a file as text ("" for a folder or an unreadable file)."""
        path = path or self.path
        if path not in self._heads:
            self._heads[path] = _head(path)
        return self._heads[path]

    def header(self, path: Path | None = None) -> list[str]:
        """The first row of a CSV, lower-cased and stripped."""
        return csv_header(self.head(path))


def _is_file(entry: os.DirEntry) -> bool:
    try:
        return entry.is_file()
    except OSError:
        return False


def _head(path: Path) -> str:
    try:
        with open(path, "rb") as f:
            return f.read(_HEAD_BYTES).decode("utf-8-sig", errors="replace")
    except OSError:
        return ""


def csv_header(text: str) -> list[str]:
    """The first row of CSV ``text``, lower-cased and stripped."""
    first = text.splitlines()[:1]
    if not first:
        return []
    return [c.strip().lower() for c in next(csv.reader(first))]


@dataclasses.dataclass(frozen=True)
class InputFormat:
    name: str
    summary: str  # what DATA is, one line (the CLI help and errors quote it)
    detect: Callable[[Probe], int]
    read: Callable[[Path, Path | None], Inputs]


_FORMATS: Registry[InputFormat] = Registry("input format")


def register_input_format(name: str, detect: Callable[[Probe], int]):
    """Decorator registering ``read(data, root) -> Inputs`` as the input format ``name``; the
    first line of the reader's docstring is the format's summary (the ambiguous-input error
    lists every format with it)."""

    def deco(read):
        summary = (read.__doc__ or "").strip().splitlines()[0].rstrip(".")
        if not summary:
            raise TypeError(f"input format {name!r}: its reader needs a docstring (the summary)")
        _FORMATS.register(name, InputFormat(name, summary, detect, read))
        return read

    return deco


def files_of_kind(data: Path, suffix: str, test: Callable[[Probe, Path], bool]) -> list[Path]:
    """The files of ``data`` (the file itself, or a folder's own files) ending with ``suffix``
    that pass ``test(probe, path)``: the annotation files a format reads."""
    probe = Probe(data)
    return [p for p in probe.files(suffix) if test(probe, p)]


def detect_kind(suffix: str, test: Callable[[Probe, Path], bool]) -> Callable[[Probe], int]:
    """A detector: SPECIFIC when one of the probe's files ending with ``suffix`` passes
    ``test`` (a header or JSON shape only this format has), else 0."""

    def detect(probe: Probe) -> int:
        return SPECIFIC if any(test(probe, p) for p in probe.files(suffix)) else 0

    return detect


def list_input_formats() -> list[str]:
    """The registered input format names, in registration order."""
    return _FORMATS.names()


def get_input_format(name: str) -> InputFormat:
    return _FORMATS.get(name)


def detect_input_format(data: str | os.PathLike) -> str:
    """The one format ``data`` is in, judged by names, CSV headers and JSON shapes."""
    path = Path(data)
    if not path.exists():
        raise InputError(f"{path}: no such file or folder (expected videos, a folder or a list)")
    probe = Probe(path)
    scores = {name: fmt.detect(probe) for name, fmt in _FORMATS.items()}
    best = max(scores.values())
    found = [name for name, score in scores.items() if score == best]
    if best == 0:
        raise InputError(
            f"{path}: cannot tell its input format from its name or content; pass "
            f"input_format, one of: {', '.join(_FORMATS)} ("
            + "; ".join(f"{f.name}: {f.summary}" for f in _FORMATS.values())
            + ")"
        )
    if len(found) > 1:
        raise InputError(
            f"{path}: could be read as {' or '.join(found)}; pass input_format "
            f"{found[0]} (or {', '.join(found[1:])})"
        )
    return found[0]


def scan_inputs(
    data: str | os.PathLike,
    *,
    input_format: str | None = None,
    root: str | os.PathLike | None = None,
    allow_outside_root: bool = False,
    defer_checks: bool = False,
) -> Inputs:
    """Every source of ``data`` (a folder, a file list or an annotation) read as
    ``input_format`` (default: detected from names, headers and JSON shapes; an ambiguous
    ``data`` asks for one), paths relative to ``root`` (default: the annotation file's folder,
    a folder DATA itself). An annotation's
    file that is not inside ``root`` once links are followed is a failed row (see
    :func:`~hyperframes.inputs._formats._rows.inside_root`) unless ``allow_outside_root``;
    ``defer_checks``: that check is left to ``Inputs.root_check`` (the build's, one video at a
    time) once one source is known to pass it. The formats and how each assigns class ids:
    :func:`list_input_formats`."""
    path = Path(data)
    fmt = get_input_format(input_format) if input_format else None
    if not path.exists():
        raise InputError(f"{path}: no such file or folder (expected videos, a folder or a list)")
    if root is not None and not Path(root).is_dir():
        raise InputError(f"root {root}: no such folder (the folder the listed paths are in)")
    fmt = fmt or _FORMATS[detect_input_format(path)]
    inputs = fmt.read(path, None if root is None else Path(os.path.abspath(root)))
    inputs = dataclasses.replace(inputs, input_format=fmt.name)
    if allow_outside_root or fmt.name == "folder":  # a folder's walk lists only what is in it
        return inputs
    base = Path(root) if root is not None else _default_root(path)
    return inside_root(inputs, base, path, defer=defer_checks)


def _default_root(data: Path) -> Path:
    """The folder an annotation's paths are confined to without ``root``: a folder DATA (a
    videofolder, a saved dataset) itself, else the annotation file's folder."""
    return data if data.is_dir() else data.parent
