"""A plain CSV (no quotes, no start/end columns) read as whole columns with pyarrow: ten
million rows are parsed, made absolute and hashed without Python work per row. A file this
reader cannot take exactly as :func:`~._rows.csv_rows` would (quotes, a lone carriage
return, a row of another width, an empty path, text that is not UTF-8) is left to the
row-by-row reader, which says what is wrong."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import xxhash

from ._rows import Rows

#: bytes of the file looked at a time (line numbers) and parsed a time (pyarrow's blocks)
_BLOCK = 1 << 22
#: bytes of the file looked at a time for its line numbers
_SCAN = 1 << 18


def read_columns(data: Path, header: list[str], root: Path) -> Rows | None:
    """Every row of ``data`` (header ``header``) as columns of a :class:`Rows`; None when the
    file is not one this reader takes, or pyarrow is not installed."""
    try:
        import pyarrow as pa  # type: ignore[import-untyped]  # optional (the hf extra)
        import pyarrow.compute as pc  # type: ignore[import-untyped]
        import pyarrow.csv as pacsv  # type: ignore[import-untyped]
    except ImportError:
        return None
    lines = _data_lines(data)
    if lines is None:
        return None
    names = [f"c{i}" for i in range(len(header))]
    wanted: dict[str, str] = {
        h: names[header.index(h)] for h in ("path", "label", "split") if h in header
    }
    try:
        reader = pacsv.open_csv(
            data,
            read_options=pacsv.ReadOptions(column_names=names, skip_rows=1, block_size=_BLOCK),
            parse_options=pacsv.ParseOptions(quote_char=False, ignore_empty_lines=True),
            convert_options=pacsv.ConvertOptions(
                include_columns=list(wanted.values()),
                column_types={c: pa.string() for c in wanted.values()},
                strings_can_be_null=False,
            ),
        )
        rows = Rows(data, root)
        at = 0
        for blob, ends, hashes, labels, splits, first, under in _columns(
            reader, wanted, root, pa, pc
        ):
            if at + len(ends) > len(lines):
                return None
            block_lines = lines[at : at + len(ends)]
            rows.add_columns(blob, ends, hashes, labels, splits, block_lines, first, under)
            at += len(ends)
    except (pa.ArrowInvalid, _NotPlain):
        return None
    return rows if at == len(lines) else None


class _NotPlain(Exception):
    """A cell this reader does not take exactly as the row-by-row reader would."""


#: what Python's ``str.strip`` strips (pyarrow trims these from both ends of a cell)
_SPACE = "".join(c for c in map(chr, range(0x3001)) if c.isspace())
#: a joined path ``os.path.abspath`` would change (``.``, ``..``, ``//``, a trailing ``/``)
_NOT_NORMAL = r"//|/\.\.?(/|$)|/$"


def _columns(reader, wanted: dict[str, str], root: Path, pa, pc):
    """Per block of rows: ``(blob, ends, hashes, labels, splits, first listed path,
    under)``; the blob holds a path listed relative to the root without the root (``under``:
    ``(root + "/", which rows)``, see :func:`append_columns`)."""
    base = os.path.abspath(root)
    prefix = base if base.endswith("/") else base + "/"
    for batch in reader:
        if not batch.num_rows:
            continue
        listed = pc.utf8_trim(batch.column(wanted["path"]), _SPACE)
        if pc.any(pc.equal(listed, "")).as_py():
            raise _NotPlain  # the row-by-row reader skips a blank row, refuses an empty path
        absolute = pc.starts_with(listed, "/")
        joined = pc.if_else(absolute, listed, pc.binary_join_element_wise(prefix, listed, ""))
        odd = pc.match_substring_regex(joined, _NOT_NORMAL)
        if pc.any(odd).as_py():  # made exact by os.path.abspath, those rows only
            paths = joined.to_pylist()
            for i in np.flatnonzero(odd.to_numpy(zero_copy_only=False)).tolist():
                paths[i] = os.path.abspath(paths[i])
            joined = pa.array(paths, pa.string())
        whole = pc.or_(absolute, odd)  # (the rest are the root's: kept without it)
        stored = pc.if_else(whole, joined, listed).cast(pa.large_string())
        offsets = np.frombuffer(stored.buffers()[1], np.int64)[
            stored.offset : stored.offset + len(stored) + 1
        ]
        blob = stored.buffers()[2].to_pybytes()[offsets[0] : offsets[-1]]
        hashes = np.fromiter(
            map(xxhash.xxh3_64_intdigest, joined.cast(pa.binary()).to_pylist()),
            np.uint64,
            len(joined),
        )
        yield (
            blob,
            offsets[1:] - offsets[0],
            hashes,
            _codes(batch, wanted.get("label"), pa, pc),
            _codes(batch, wanted.get("split"), pa, pc),
            listed[0].as_py(),
            (prefix, np.logical_not(whole.to_numpy(zero_copy_only=False))),
        )


def _codes(batch, column: str | None, pa, pc) -> tuple[np.ndarray, list[str]]:
    """A text column as ``(codes, names)``; an empty cell (or no column) is code -1."""
    if column is None:
        return np.full(batch.num_rows, -1, np.int64), []
    cells = pc.utf8_trim(batch.column(column), _SPACE)
    cells = pc.if_else(pc.equal(cells, ""), pa.scalar(None, pa.string()), cells)
    encoded = cells.dictionary_encode()
    codes = encoded.indices.fill_null(-1).to_numpy().astype(np.int64)
    return codes, encoded.dictionary.to_pylist()


def _data_lines(data: Path) -> np.ndarray | None:
    """The line numbers of the non-empty lines after the header (as the row-by-row reader
    counts them), or None when the file has a quote or a carriage return not before a line
    feed (lines this reader would count otherwise)."""
    lines = 0  # line feeds so far
    blank = False  # an empty line somewhere (then each line's length is looked at)
    tail = b""
    with open(data, "rb") as f:
        while block := f.read(_SCAN):
            if b'"' in block or block.count(b"\r") != block.count(b"\r\n"):
                return None
            edge = tail + block[:2]
            blank = blank or any(b in s for s in (block, edge) for b in (b"\n\n", b"\n\r\n"))
            lines += block.count(b"\n")
            tail = block[-2:]
    if tail and not tail.endswith(b"\n"):
        lines += 1  # a last line with no line feed
    if not blank:
        return np.arange(2, lines + 1, dtype=np.uint32)
    return _non_empty_lines(data)


def _non_empty_lines(data: Path) -> np.ndarray:
    """:func:`_data_lines` of a file with empty lines: each line's length looked at."""
    out: list[np.ndarray] = []
    start = at = count = 0  # where the current line starts; where this block starts
    last = 0  # the byte before this block
    with open(data, "rb") as f:
        while block := f.read(_SCAN):
            buf = np.frombuffer(block, np.uint8)
            local = np.flatnonzero(buf == 10)
            ends = local + at
            starts = np.concatenate([[start], ends[:-1] + 1])
            before = buf[np.maximum(local - 1, 0)]
            before[local == 0] = last
            size = ends - starts - (before == 13)
            out.append(np.arange(count + 1, count + 1 + len(ends), dtype=np.int64)[size > 0])
            count += len(ends)
            if len(ends):
                start = int(ends[-1]) + 1
            last, at = block[-1], at + len(block)
    if at > start:  # a last line with no line feed
        out.append(np.array([count + 1], np.int64))
    numbers = np.concatenate(out) if out else np.zeros(0, np.int64)
    return numbers[numbers > 1].astype(np.uint32)
