"""The index's own consistency checks, run at open and vectorised over every video: the
tables' dtypes and the string lists (:func:`check_table`, every form of store), and where each
video's payload and chunk rows lie in a folder store's shards (:func:`check_payload`). The
first violation is a StoreError naming the file and the video."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

from .._core._errors import StoreError
from .format import CHUNK_DTYPE, FRAME_DTYPE

#: a stored frame's channels, and the largest height or width, a reader accepts: larger is a
#: damaged or crafted index (and keeps every size product far from int64 overflow)
CHANNELS = (1, 3)
MAX_SIDE = 65536

ALTERED = "the store is damaged or was altered: rebuild it, or restore it from a good copy"


@dataclasses.dataclass(frozen=True)
class IndexFiles:
    """Where each part of an index lives, as the error messages name it."""

    videos: str
    frames: str
    strings: str
    chunks: str = ""


class _Rows:
    """Raises the first violation of a per-video condition, naming the file and the video."""

    def __init__(self, paths: list[str]):
        self.paths = paths

    def who(self, i: int) -> str:
        return f"video {i} ({self.paths[i]!r})"

    def require(self, ok: np.ndarray, file: str, what: Callable[[int], str]) -> None:
        if ok.all():
            return
        i = int(np.argmin(ok))
        raise StoreError(f"{file}: {self.who(i)}: {what(i)}; {ALTERED}")


def _columns(dtype: np.dtype) -> str:
    return f"columns ({', '.join(dtype.names)})" if dtype.names else f"dtype {dtype}"


def _string_lists(strings, file: str) -> None:
    if not isinstance(strings, dict):
        raise StoreError(f"{file}: holds {type(strings).__name__}, expected an object; {ALTERED}")
    for key in ("paths", "classes", "splits"):
        value = strings.get(key)
        # set(map(type, ...)): the type of every element without a Python-level loop
        if not isinstance(value, list) or not set(map(type, value)) <= {str}:
            raise StoreError(f"{file}: {key!r} is missing or not a list of strings; {ALTERED}")


def _contiguous(start: np.ndarray, count: np.ndarray) -> np.ndarray:
    """Per row: ``start`` follows the previous row's end (the first starts at 0). Check the
    rows' bounds first (then no sum overflows)."""
    ok = np.empty(len(start), bool)
    if len(start):
        ok[0] = start[0] == 0
        ok[1:] = start[1:] == start[:-1] + count[:-1]
    return ok


def check_table(
    videos: np.ndarray, frames: np.ndarray, strings, *, dtype: np.dtype, files: IndexFiles
) -> None:
    """What every form of a store (folder or HDF5) must satisfy: the tables' dtypes, the string
    lists' lengths, label and split ids, frame shapes, and each video's rows of ``frames``
    (back to back, covering all of it). Vectorised; the first violation is a StoreError."""
    if videos.ndim != 1 or videos.dtype != dtype:
        raise StoreError(
            f"{files.videos}: holds {_columns(videos.dtype)} in {videos.ndim} dimension(s); "
            f"this store's version reads one row per video with {_columns(dtype)}; {ALTERED}"
        )
    if frames.ndim != 1 or frames.dtype != FRAME_DTYPE:
        raise StoreError(
            f"{files.frames}: holds {_columns(frames.dtype)} in {frames.ndim} dimension(s); "
            f"expected one row per frame with {_columns(FRAME_DTYPE)}; {ALTERED}"
        )
    _string_lists(strings, files.strings)
    n_videos, n_frames = len(videos), len(frames)
    paths = strings["paths"]
    if len(paths) != n_videos:
        raise StoreError(
            f"{files.strings}: lists {len(paths)} paths, {files.videos} has {n_videos} "
            f"videos; {ALTERED}"
        )
    rows = _Rows(paths)
    n, start = videos["num_frames"], videos["frame_start"]
    rows.require(
        (start >= 0) & (start <= n_frames) & (n >= 0) & (n <= n_frames - start),
        files.videos,
        lambda i: (
            f"frames {start[i]}..{int(start[i]) + int(n[i])} (frame_start, num_frames) "
            f"lie outside the {n_frames} rows of {files.frames}"
        ),
    )
    rows.require(
        _contiguous(start, n),
        files.videos,
        lambda i: (
            f"frame_start {start[i]} should be {int(start[i - 1]) + int(n[i - 1]) if i else 0}"
            f" (each video's rows of {files.frames} follow the previous video's)"
        ),
    )
    end = int(start[-1]) + int(n[-1]) if n_videos else 0
    if end != n_frames:
        raise StoreError(
            f"{files.frames}: holds {n_frames} frames, {files.videos} describes {end}; {ALTERED}"
        )
    c, h, w = videos["channels"], videos["height"], videos["width"]
    rows.require(
        np.isin(c, CHANNELS) & (h >= 1) & (h <= MAX_SIDE) & (w >= 1) & (w <= MAX_SIDE),
        files.videos,
        lambda i: (
            f"frame shape (channels, height, width) = ({c[i]}, {h[i]}, {w[i]}) is not "
            f"allowed (channels {' or '.join(map(str, CHANNELS))}, sides 1..{MAX_SIDE})"
        ),
    )
    for column, names in (("label_id", "classes"), ("split_id", "splits")):
        ids, k = videos[column], len(strings[names])

        def out_of_range(
            i: int, ids: np.ndarray = ids, k: int = k, column: str = column, names: str = names
        ) -> str:
            return f"{column} {ids[i]} is not -1 or one of the {k} {names} in {files.strings}"

        rows.require((ids >= -1) & (ids < k), files.videos, out_of_range)
    fps = videos["fps"]
    rows.require(
        np.isfinite(fps) & (fps >= 0), files.videos, lambda i: f"fps {fps[i]} is not a rate"
    )
    _check_frames(rows, frames, start, n, files.frames)


#: rows of ``frames`` checked at a time: temporaries of a few MB on any index
_FRAME_BLOCK = 1 << 20


def _check_frames(rows: _Rows, frames: np.ndarray, start, n, file: str) -> None:
    """Each video's rows of ``frames`` as a build writes them: pts finite and never going
    back, source indices >= 0 and never going back (a frame ``--fps`` repeats keeps its
    source frame's index and pts). Call once the videos' rows tile ``frames``.

    A video's pts that never go back (NaN fails every comparison) are finite when its first
    and last are, and its source indices are >= 0 when its first is; so the rows are only
    compared with the row before, block by block (no copy of a 100M-row table). When every
    video's first pts is >= 0, a row's two columns are compared at once as int64 (finite
    doubles >= 0 order as their bits do; ~1 ns a row): a block that fails that is compared
    again as numbers (``_check_frame_block``), which says which rule."""
    pts, source = frames["pts_seconds"], frames["source_index"]
    has = n > 0
    firsts = start[has]  # each video's first row, in order
    ends = np.concatenate([firsts, firsts + n[has] - 1])
    frame_rows = _FrameRows(rows, start, file)
    frame_rows.require(np.isfinite(pts[ends]), ends, _not_finite(pts))
    frame_rows.require(
        source[firsts] >= 0,
        firsts,
        lambda j: f"source_index {source[j]} is negative (a decoded frame's number)",
    )
    fast = frames.flags.c_contiguous and not np.signbit(pts[firsts]).any()
    words = frames.view("<i8").reshape(-1, 2) if fast else None
    for a in range(0, len(frames), _FRAME_BLOCK):
        b = min(a + _FRAME_BLOCK, len(frames))
        lo = max(a - 1, 0)  # rows lo + 1 .. b - 1, each against the row before it
        # (a video's first row follows no row of its own)
        first = firsts[np.searchsorted(firsts, lo + 1) : np.searchsorted(firsts, b)] - lo - 1
        if words is not None:
            later = words[lo + 1 : b] >= words[lo : b - 1]
            later[first] = True
            if later.all():
                continue
        _check_frame_block(frame_rows, pts, source, lo, b, first)


def _not_finite(pts: np.ndarray) -> Callable[[int], str]:
    return lambda j: f"pts_seconds {pts[j]} is not a finite time (a stored frame's time in seconds)"


def _check_frame_block(frame_rows, pts, source, lo: int, b: int, first: np.ndarray) -> None:
    """Rows ``lo + 1 .. b - 1`` of the frames table against the row before each, as numbers
    (``first``: those that begin a video, counted from ``lo + 1``)."""
    p, s = pts[lo:b], source[lo:b]
    later = p[1:] >= p[:-1]
    later[first] = True
    if not later.all():
        frame_rows.require(np.isfinite(p), lo, _not_finite(pts))
        frame_rows.require(
            later,
            lo + 1,
            lambda j: (
                f"pts_seconds {pts[j]} is before the previous frame's {pts[j - 1]} (a "
                "video's frames are stored in time order)"
            ),
        )
    later = np.greater_equal(s[1:], s[:-1], out=later)
    later[first] = True
    frame_rows.require(
        later,
        lo + 1,
        lambda j: (
            f"source_index {source[j]} is below the previous frame's {source[j - 1]} (a "
            "video's frames are stored in decoding order)"
        ),
    )


class _FrameRows:
    """Raises the first violation of a per-frame condition, naming the file, the frame and
    its video (``start``: each video's first row; rows already checked to tile the table)."""

    def __init__(self, rows: _Rows, start: np.ndarray, file: str):
        self.rows, self.start, self.file = rows, start, file

    def require(self, ok: np.ndarray, at: int | np.ndarray, what: Callable[[int], str]) -> None:
        """``ok``: the condition of rows ``at ..`` (an int), or of the rows ``at`` lists."""
        if ok.all():
            return
        k = int(np.argmin(ok))
        j = at + k if isinstance(at, int) else int(at[k])
        # the last video starting at or before row j: the one holding it (empty videos
        # share their start with the next, which is the later one)
        i = int(np.searchsorted(self.start, j, side="right")) - 1
        raise StoreError(
            f"{self.file}: frame {j - int(self.start[i])} of {self.rows.who(i)}: {what(j)}; "
            f"{ALTERED}"
        )


def check_payload(
    videos: np.ndarray,
    chunks: np.ndarray,
    paths: list[str],
    *,
    shard_files: list[str],
    shard_bytes: np.ndarray,
    codec: str,
    chunk_frames: int,
    itemsize: int,
    files: IndexFiles,
    channels: tuple[int, ...] | None = None,
    max_chunk_bytes: Callable[[np.ndarray], np.ndarray] | None = None,
    chunk_bytes: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray] | None = None,
) -> None:
    """Where each video's payload lies in a folder store, against the shard files' sizes and
    each other: inside its shard, no two videos sharing bytes, raw sizes equal to the frame
    count times the frame size, chunk rows tiling the video's bytes and frames in order. The
    codec's own rules: the frame ``channels`` it stores (None: any), and no chunk longer
    than ``max_chunk_bytes`` of its frames' raw bytes (the compressor's bound; None: no
    bound), or, for a codec of fixed-size chunks, each exactly ``chunk_bytes`` of its frame
    count and the video's height and width. Call after :func:`check_table`. Vectorised; the first violation is a StoreError."""
    if chunks.ndim != 1 or chunks.dtype != CHUNK_DTYPE:
        raise StoreError(
            f"{files.chunks}: holds {_columns(chunks.dtype)} in {chunks.ndim} dimension(s); "
            f"expected one row per chunk with {_columns(CHUNK_DTYPE)}; {ALTERED}"
        )
    rows = _Rows(paths)
    if channels is not None:
        c = videos["channels"]
        rows.require(
            np.isin(c, channels),
            files.videos,
            lambda i: (
                f"{c[i]} channels: codec {codec!r} stores frames of "
                f"{' or '.join(map(str, channels))} channels"
            ),
        )
    n_shards = len(shard_files)
    shard = videos["shard"]
    rows.require(
        (shard >= 0) & (shard < n_shards),
        files.videos,
        lambda i: f"shard {shard[i]} is not one of the store's {n_shards} shards",
    )
    size = shard_bytes[shard] if len(shard) else np.zeros(0, np.int64)
    off, nb = videos["offset"], videos["nbytes"]
    rows.require(
        (off >= 0) & (nb >= 0) & (off <= size) & (nb <= size - off),
        files.videos,
        lambda i: (
            f"its payload, bytes {off[i]}..{int(off[i]) + int(nb[i])} (offset, nbytes), "
            f"lies outside {shard_files[shard[i]]} ({size[i]} bytes)"
        ),
    )
    _no_overlap(rows, shard, off, nb, shard_files, files.videos)
    if codec == "raw":
        n, count = videos["num_frames"], videos["num_chunks"]
        fb = _frame_bytes(videos, itemsize)
        q, r = np.divmod(nb, fb)
        rows.require(
            (r == 0) & (q == n),
            files.videos,
            lambda i: (
                f"nbytes {nb[i]} should be num_frames {n[i]} x frame bytes {fb[i]} = "
                f"{int(n[i]) * int(fb[i])}"
            ),
        )
        rows.require(
            count == 0, files.videos, lambda i: f"num_chunks {count[i]}: a raw store has none"
        )
        return
    _check_chunks(rows, videos, chunks, chunk_frames, files)
    if max_chunk_bytes is not None and len(chunks):
        owner = np.repeat(np.arange(len(videos)), videos["num_chunks"])
        raw = chunks["num_frames"] * _frame_bytes(videos, itemsize)[owner]
        most, c_nb = max_chunk_bytes(raw), chunks["nbytes"]
        _ChunkRows(rows, owner, files.chunks).require(
            c_nb <= most,
            lambda j: (
                f"{c_nb[j]} bytes for {chunks['num_frames'][j]} frames of the video's shape "
                f"({raw[j]} bytes); codec {codec!r} stores that in at most {most[j]} bytes "
                "(its compressor's bound)"
            ),
        )
    if chunk_bytes is not None and len(chunks):
        owner = np.repeat(np.arange(len(videos)), videos["num_chunks"])
        h, w = videos["height"].astype(np.int64)[owner], videos["width"].astype(np.int64)[owner]
        n, c_nb = chunks["num_frames"].astype(np.int64), chunks["nbytes"]
        exact = chunk_bytes(n, h, w)
        _ChunkRows(rows, owner, files.chunks).require(
            c_nb == exact,
            lambda j: (
                f"{c_nb[j]} bytes for {n[j]} frames of {h[j]}x{w[j]}; codec {codec!r} stores "
                f"them in exactly {exact[j]} bytes"
            ),
        )


def _frame_bytes(videos: np.ndarray, itemsize: int) -> np.ndarray:
    """Bytes of one frame per video (shapes checked first: no overflow)."""
    return (
        videos["channels"].astype(np.int64)
        * videos["height"]
        * videos["width"]
        * np.int64(itemsize)
    )


def _check_chunks(
    rows: _Rows, videos: np.ndarray, chunks: np.ndarray, chunk_frames: int, files: IndexFiles
) -> None:
    """``check_payload`` of a chunked codec: the videos' chunk rows tile ``chunks``, and each
    video's rows tile its payload bytes and its frames, in order."""
    off, nb, n = videos["offset"], videos["nbytes"], videos["num_frames"]
    first, count = videos["chunk_start"], videos["num_chunks"]
    n_chunks = len(chunks)
    rows.require(
        (first >= 0) & (first <= n_chunks) & (count >= 0) & (count <= n_chunks - first),
        files.videos,
        lambda i: (
            f"chunk rows {first[i]}..{int(first[i]) + int(count[i])} (chunk_start, "
            f"num_chunks) lie outside the {n_chunks} rows of {files.chunks}"
        ),
    )
    rows.require(
        _contiguous(first, count),
        files.videos,
        lambda i: (
            f"chunk_start {first[i]} should be "
            f"{int(first[i - 1]) + int(count[i - 1]) if i else 0} (each video's rows of "
            f"{files.chunks} follow the previous video's)"
        ),
    )
    end = int(first[-1]) + int(count[-1]) if len(first) else 0
    if end != n_chunks:
        raise StoreError(
            f"{files.chunks}: holds {n_chunks} chunks, {files.videos} describes {end}; {ALTERED}"
        )
    rows.require(
        (count > 0) | (n == 0),
        files.videos,
        lambda i: f"{n[i]} frames but no chunk rows in {files.chunks}",
    )
    if n_chunks:
        _check_chunk_rows(rows, chunks, off, nb, n, first, count, chunk_frames, files.chunks)


def _check_chunk_rows(rows, chunks, off, nb, n, first, count, chunk_frames, file) -> None:
    """Each chunk row lies in its video's payload, continues the previous row's bytes and
    frames, and holds 1 to ``chunk_frames`` frames."""
    n_chunks = len(chunks)
    owner = np.repeat(np.arange(len(first)), count)
    is_first = np.zeros(n_chunks, bool)
    is_first[first[count > 0]] = True
    is_last = np.zeros(n_chunks, bool)
    is_last[(first + count - 1)[count > 0]] = True
    chunk_rows = _ChunkRows(rows, owner, file)
    c_off, c_nb = chunks["offset"], chunks["nbytes"]
    v_off, v_end = off[owner], off[owner] + nb[owner]
    chunk_rows.require(
        (c_off >= v_off) & (c_off <= v_end) & (c_nb >= 0) & (c_nb <= v_end - c_off),
        lambda j: (
            f"bytes {c_off[j]}..{int(c_off[j]) + int(c_nb[j])} lie outside the video's "
            f"payload, bytes {v_off[j]}..{v_end[j]}"
        ),
    )
    want_off = np.where(is_first, v_off, _previous_end(c_off, c_nb))
    chunk_rows.require(
        (c_off == want_off) & (~is_last | (c_off + c_nb == v_end)),
        lambda j: (
            f"bytes {c_off[j]}..{int(c_off[j]) + int(c_nb[j])} do not continue the "
            f"video's payload (chunks lie back to back from byte {v_off[j]} to {v_end[j]})"
        ),
    )
    c_first, c_n = chunks["first_frame"], chunks["num_frames"]
    v_n = n[owner]
    chunk_rows.require(
        (c_n >= 1)
        & (c_n <= chunk_frames)
        & (c_first >= 0)
        & (c_first <= v_n)
        & (c_n <= v_n - c_first),
        lambda j: (
            f"frames {c_first[j]}..{int(c_first[j]) + int(c_n[j])} are not 1 to "
            f"{chunk_frames} frames (the codec's chunk) of the video's {v_n[j]}"
        ),
    )
    want_first = np.where(is_first, 0, _previous_end(c_first, c_n))
    chunk_rows.require(
        (c_first == want_first) & (~is_last | (c_first + c_n == v_n)),
        lambda j: (
            f"first_frame {c_first[j]} does not continue the video's frames in order "
            f"(expected {want_first[j]}; the last chunk ends at frame {v_n[j]})"
        ),
    )


def _previous_end(start: np.ndarray, count: np.ndarray) -> np.ndarray:
    """Per row, where the previous row ends (``start + count``; 0 for the first row)."""
    out = np.empty(len(start), np.int64)
    if len(start):
        out[0] = 0
        out[1:] = start[:-1] + count[:-1]
    return out


class _ChunkRows:
    def __init__(self, rows: _Rows, owner: np.ndarray, file: str):
        self.rows, self.owner, self.file = rows, owner, file

    def require(self, ok: np.ndarray, what: Callable[[int], str]) -> None:
        if ok.all():
            return
        j = int(np.argmin(ok))
        who = self.rows.who(int(self.owner[j]))
        raise StoreError(f"{self.file}: chunk row {j} of {who}: {what(j)}; {ALTERED}")


def first_overlap(shard, off, nb) -> tuple[int, int] | None:
    """Two used byte ranges (nbytes > 0) of the same shard that share a byte, as the row
    numbers (earlier, later) of the first such pair in shard/offset order; None when none."""
    ids = np.flatnonzero(nb > 0)
    order = ids[np.lexsort((off[ids], shard[ids]))]
    s, o, b = shard[order], off[order], nb[order]
    clash = (s[1:] == s[:-1]) & (o[1:] < o[:-1] + b[:-1])
    if not clash.any():
        return None
    k = int(np.argmax(clash))
    return int(order[k]), int(order[k + 1])


def _no_overlap(rows: _Rows, shard, off, nb, shard_files: list[str], file: str) -> None:
    """No two videos' payloads share a byte (one pointing at another's frames is refused)."""
    pair = first_overlap(shard, off, nb)
    if pair is not None:
        a, z = pair
        raise StoreError(
            f"{file}: {rows.who(z)}: its payload, bytes {off[z]}..{int(off[z]) + int(nb[z])}, "
            f"overlaps that of {rows.who(a)}, bytes {off[a]}..{int(off[a]) + int(nb[a])}, in "
            f"{shard_files[shard[z]]}; {ALTERED}"
        )
