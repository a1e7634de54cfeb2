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
from ..inputs import Source, source_paths
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

    def add_row(self, row: dict) -> None:
        """A row that is no source (``{"path", "error"}``: unusable before decoding) failed."""
        self._file.write(json.dumps({"path": row["path"], "error": row["error"]}) + "\n")

    def finish(self, live: Collection[str], sources: Sequence[Source]) -> None:
        """The failures as the disk says: a video stored after all (in ``live``) is not failed;
        one of ``sources`` neither stored nor failed (its worker died before saying) is failed,
        never silently missing. Writes ``failures.jsonl`` (removed when nothing failed) and
        sets :attr:`count` and :attr:`listed`."""
        self._file.close()
        self.count, self.listed = 0, []

        def write(out: BinaryIO) -> None:
            with open(self._running, encoding="utf-8") as f:
                for line in f:
                    row = json.loads(line)
                    if row.get("target", row["path"]) not in live:
                        self._keep(out, row)
            for i, p in enumerate(source_paths(sources)):
                if p not in live and not self._failed[i]:
                    self._keep(out, as_given({"path": p, "error": NOT_STORED}, sources[i]))

        final = self.store / FAILURES_FILE
        try:
            write_atomic(final, write)
        finally:
            self.close()
        if not self.count:
            final.unlink(missing_ok=True)

    def _keep(self, out: BinaryIO, row: dict) -> None:
        out.write(json.dumps(row).encode() + b"\n")
        self.count += 1
        if len(self.listed) < LISTED_FAILURES:
            self.listed.append(row)

    def close(self) -> None:
        """Stop, leaving no running file (a build that stopped before it finished)."""
        self._file.close()
        self._running.unlink(missing_ok=True)

    def __enter__(self) -> FailureLog:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
