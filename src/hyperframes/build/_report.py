"""What a build says it did: :class:`BuildReport` (``build_store``'s result, and the lines
``hyperframes build`` prints), and the report rows of failed and damaged videos, said under
the path the user gave (:func:`as_given`)."""

from __future__ import annotations

import dataclasses

from .._core._text import printable_lines, unlisted_line
from ..decode import DecodeReport
from ..inputs import Source
from ..store import gap_text, upsampled_line
from ._journal import JournalRecord

__all__ = ["BuildReport", "as_given", "damage_row"]


@dataclasses.dataclass
class BuildReport:
    store: str
    videos: int
    frames: int
    store_bytes: int
    source_bytes: int
    failed: list[dict]
    reused: int
    seconds: float
    damaged: list[dict] = dataclasses.field(default_factory=list)
    skipped: list[dict] = dataclasses.field(default_factory=list)
    #: segments clamped to their video's end or dropped: ``{"path", "row", "note"}``
    notes: list[dict] = dataclasses.field(default_factory=list)
    #: videos whose frames lie further apart than ``max_gap`` somewhere: ``{"path", "count",
    #: "seconds", "max_gap", "first"}`` (``first``: the first few gaps, [pts before, after])
    gaps: list[dict] = dataclasses.field(default_factory=list)
    #: videos stored at a rate above their source's (``--fps``): frames repeated
    #: (:func:`~hyperframes.store._rates.upsampled_rows`)
    upsampled: list[dict] = dataclasses.field(default_factory=list)
    #: videos at least as fast as ``--fps`` with frames repeated over timestamp gaps shorter
    #: than ``max_gap`` (the same rows, ``over_gaps=True``)
    filled: list[dict] = dataclasses.field(default_factory=list)
    #: every input not stored (``failed`` lists the first 1,000 of them); None: ``failed``
    #: lists every one
    failed_count: int | None = None
    #: the file listing every failure (the store's ``failures.jsonl``); None when none failed,
    #: or the store is elsewhere (a URL, an HDF5 file)
    failures_file: str | None = None

    @property
    def num_failed(self) -> int:
        """How many inputs were not stored (``failed`` lists the first 1,000)."""
        return len(self.failed) if self.failed_count is None else self.failed_count

    @property
    def exit_code(self) -> int:
        """0 when every video was stored clean; 2 when some failed or were stored damaged."""
        return 2 if self.num_failed or self.damaged else 0

    def summary(self) -> str:
        if self.source_bytes:
            ratio = f"{self.store_bytes / self.source_bytes:.2f}x the "
        else:
            ratio = ""
        lines = [
            f"store {self.store}: {self.videos} videos, {self.frames} frames, "
            f"{self.store_bytes / 1e6:.1f} MB ({ratio}{self.source_bytes / 1e6:.1f} MB "
            f"of source), {self.reused} kept from an earlier run, {self.seconds:.1f} s",
            f"failed: {self.num_failed}",
        ]
        if not self.videos and self.num_failed:
            n = self.num_failed
            lines[0] += "; nothing was stored: " + (
                "the one input failed" if n == 1 else f"all {n} inputs failed"
            )
        lines += [f"  {f['path']}: {f['error']}" for f in self.failed]
        lines += unlisted_line(self.num_failed, len(self.failed), self.failures_file)
        lines.append(f"damaged (stored, the decoder reported errors): {len(self.damaged)}")
        lines += [f"  {_named(d)}: {d['summary']}" for d in self.damaged]
        lines.append(f"skipped (not inputs): {len(self.skipped)}")
        lines += [f"  {d['path']}: {d['reason']}" for d in self.skipped]
        if self.gaps:
            lines.append(
                f"timestamp gaps skipped (frames further apart than max_gap, not filled with "
                f"repeated frames): {len(self.gaps)}"
            )
            lines += [f"  {g['path']}: {gap_text(g)}" for g in self.gaps]
        if self.upsampled:
            lines.append(
                f"upsampled (the source is slower than --fps: frames repeated, no new motion): "
                f"{len(self.upsampled)}; --fps-max resamples only faster videos, never up"
            )
            lines += [upsampled_line(r) for r in self.upsampled]
        if self.filled:
            lines.append(
                f"frames repeated over timestamp gaps (the source is not slower than --fps; "
                f"gaps shorter than max_gap are filled): {len(self.filled)}"
            )
            lines += [upsampled_line(r) for r in self.filled]
        if self.notes:
            lines.append(f"segments adjusted: {len(self.notes)}")
            lines += [f"  {n['path']} (listed at {n['row']}): {n['note']}" for n in self.notes]
        return printable_lines(lines)  # (names from files may hold newlines and ESC)


def _named(row: dict) -> str:
    """A report row's path, with the symlink's target beside it (``given -> target``)."""
    return f"{row['path']} -> {row['target']}" if row.get("target") else row["path"]


def as_given(row: dict, source: Source | None) -> dict:
    """A failed or damaged row of a source reached through a symlink, said under the path the
    user gave: ``path`` that path, ``target`` the file it leads to, and an error's first
    ``target:`` said as ``given -> target:``."""
    if source is None or source.given is None:
        return row
    out = {**row, "path": source.given, "target": source.path}
    if isinstance(row.get("error"), str):
        text, at = row["error"], row["error"].find(f"{source.path}:")
        if at >= 0:
            text = text[:at] + source.shown + text[at + len(source.path) :]
        else:
            text = f"{source.shown}: {text}"
        out["error"] = text
    return out


def damage_row(record: JournalRecord) -> dict:
    """The manifest's ``damaged`` entry for a stored video the decoder reported errors for."""
    counts = record.decode_error_counts or {}
    messages = record.decode_error_messages or []
    summary = str(DecodeReport(counts=dict(counts), messages=list(messages)))
    return {
        "path": record.path,
        "decode_errors": record.decode_errors,
        "counts": counts,
        "messages": messages,
        "summary": summary,
    }
