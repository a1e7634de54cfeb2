"""The videos a build did not store, kept on disk as they fail (:class:`FailureLog`): ten
million failed rows are a file of ten million lines, not ten million error texts held until
the manifest is written. The store's ``failures.jsonl`` (``store.format.FAILURES_FILE``) lists
every one, ``{"path", "error"}`` a line (``"target"`` beside a symlink's path); the manifest
and the report keep the count and the first :data:`LISTED_FAILURES`."""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Sequence
from pathlib import Path
from typing import BinaryIO

import numpy as np

from .._core._atomic import temp_path, write_atomic
from ..inputs import Source, paths_at
from ..store.format import FAILURES_FILE
from ._report import as_given

__all__ = ["LISTED_FAILURES", "NOT_STORED", "FailureLog"]

#: failures the manifest and the build's report list one by one (the rest are counted, and
#: listed in the store's ``failures.jsonl``)
LISTED_FAILURES = 1000
#: the error of a video neither stored nor said to have failed
NOT_STORED = "not stored (its build worker stopped before finishing it)"


class FailureLog:
    """The failures of one build run of ``store`` (whose inputs are ``sources`` sources), a
    line each in a file beside it as they happen (:meth:`add`, :meth:`add_row`), and a byte
    per source in memory (failed or not); :meth:`finish` settles them against what the disk
    holds and publishes ``failures.jsonl`` atomically."""

    def __init__(self, store: Path, sources: int, rows: Iterable[dict] = ()):
        """``rows``: the rows failed before any decoding (``Inputs.failed_rows``)."""
        self.store = store
        self._running = temp_path(store / f"{FAILURES_FILE}.part")
        self._file = open(self._running, "w", encoding="utf-8")  # noqa: SIM115 (closed in finish)
        self._failed = np.zeros(sources, dtype=np.bool_)
        self.count = 0
        self.listed: list[dict] = []
        for row in rows:
            self.add_row(row)

    def add(self, i: int, error: str, source: Source) -> None:
        """Source ``i`` of the build failed with ``error`` (said under the path the user gave:
        :func:`~hyperframes.build._report.as_given`)."""
        self._file.write(json.dumps(as_given({"path": source.path, "error": error}, source)))
        self._file.write("\n")
        self._failed[i] = True

    def add_path(self, i: int, path: str, error: str) -> None:
        """Source ``i``, of ``path`` as the user gave it (no link), failed with ``error``."""
        self._file.write(_line(path, error))
        self._failed[i] = True

    def add_row(self, row: dict) -> None:
        """A row that is no source (``{"path", "error"}``: unusable before decoding) failed."""
        self._file.write(_line(row["path"], row["error"]))

    def finish(self, live: Collection[str], sources: Sequence[Source]) -> None:
        """The failures as the disk says: a video stored after all (in ``live``) is not failed;
        one of ``sources`` neither stored nor failed (its worker died before saying) is failed,
        never silently missing. Writes ``failures.jsonl`` (removed when nothing failed) and
        sets :attr:`count` and :attr:`listed`."""
        self._file.close()
        self.count, self.listed = 0, []

        def write(out: BinaryIO) -> None:
            quoted = [json.dumps(p).encode() for p in live] if len(live) <= _SEARCHED else None
            with open(self._running, "rb") as f:
                rest = b""
                while block := f.read(_BLOCK):
                    lines, _, rest = (rest + block).rpartition(b"\n")
                    self._keep_block(out, lines + b"\n" if lines else b"", live, quoted)
                self._keep_block(out, rest + b"\n" if rest else b"", live, quoted)
            unsaid = np.flatnonzero(~self._failed)  # (the stored, and any not said to fail)
            for i, p in paths_at(sources, unsaid):
                if p not in live:
                    self._keep(out, as_given({"path": p, "error": NOT_STORED}, sources[i]))

        final = self.store / FAILURES_FILE
        try:
            write_atomic(final, write)
        finally:
            self.close()
        if not self.count:
            final.unlink(missing_ok=True)

    def _keep_block(
        self, out: BinaryIO, block: bytes, live: Collection[str], quoted: list[bytes] | None
    ) -> None:
        """The lines of ``block`` (of the running file) whose video is not in ``live``;
        ``quoted``: the paths of ``live`` as JSON (None: too many to look for). A block that
        names none of them is copied whole once the first failures are listed."""
        if not block:
            return
        if len(self.listed) >= LISTED_FAILURES and not (
            quoted is None or any(q in block for q in quoted)
        ):
            out.write(block)
            self.count += block.count(b"\n")
            return
        for text in block.decode("utf-8").split("\n")[:-1]:
            line = text + "\n"
            path = _plain_path(line)
            if path is None:  # (escapes, a link's target: read whole)
                row = json.loads(line)
                if row.get("target", row["path"]) not in live:
                    self._keep(out, row)
            elif path not in live:
                self._keep_line(out, line)

    def _keep(self, out: BinaryIO, row: dict) -> None:
        out.write(json.dumps(row).encode() + b"\n")
        self.count += 1
        if len(self.listed) < LISTED_FAILURES:
            self.listed.append(row)

    def _keep_line(self, out: BinaryIO, line: str) -> None:
        """:meth:`_keep` of a row written as ``json.dumps`` writes it (no parse, no dump)."""
        if len(self.listed) < LISTED_FAILURES:
            self._keep(out, json.loads(line))
            return
        out.write(line.encode())
        self.count += 1

    def close(self) -> None:
        """Stop, leaving no running file (a build that stopped before it finished)."""
        self._file.close()
        self._running.unlink(missing_ok=True)

    def __enter__(self) -> FailureLog:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


#: bytes of the running file read at a time when it is settled
_BLOCK = 1 << 20
#: stored videos looked for in each block of failures (with more, each line is read)
_SEARCHED = 64
#: how a plain failure line starts, and what follows its path
_PATH, _ERROR = '{"path": "', '", "error": "'


def _plain(text: str) -> bool:
    """Whether ``json.dumps`` writes ``text`` as it is, between quotes (printable ASCII,
    no quote or backslash)."""
    return text.isascii() and text.isprintable() and '"' not in text and "\\" not in text


def _line(path: str, error: str) -> str:
    """``{"path", "error"}`` as a line of ``failures.jsonl``, exactly as ``json.dumps``
    writes it (without it, for plain text)."""
    if _plain(path) and _plain(error):
        return f'{_PATH}{path}{_ERROR}{error}"}}\n'
    return json.dumps({"path": path, "error": error}) + "\n"


def _plain_path(line: str) -> str | None:
    """The path of a line :func:`_line` wrote of plain text, else None (read it whole)."""
    if "\\" in line or not line.startswith(_PATH) or not line.endswith('"}\n'):
        return None
    end = line.find(_ERROR)
    if end < 0 or line.count('"') != 8:  # (a link's row holds a "target" as well)
        return None
    return line[len(_PATH) : end]
