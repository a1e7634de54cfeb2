"""Perceptual signatures of videos: what a video looks like, in 32 bytes, so that a copy of
it (remuxed, re-encoded, resized) is found by content where a hash of its bytes differs. The
store computes them at build (``index/signatures.npy``); the leakage check compares them.

A video's signature is :data:`SIGNATURE_FRAMES` 64-bit hashes, one per frame at the fixed
fractions :data:`SIGNATURE_FRACTIONS` (1/8, 3/8, 5/8, 7/8) of its duration by pts (from its
first frame to the end of its last: the last pts plus the last interval, the same for a copy
at another frame rate). A frame's hash is a pHash: grey (ITU-R BT.601), box-averaged to 32x32
whatever its size or aspect, 2-D DCT-II (orthonormal), the 8x8 lowest frequencies; bit k is
set when coefficient k (row-major, bit 63 first) is above their median. A re-encode, a remux
or a resize moves a few bits; unrelated frames differ in about half (32). A frame without
structure (the 32x32 grey's standard deviation under :data:`FLAT_STD` levels: black, a fade,
one flat colour) hashes to 0, "no hash", and is never compared: two black frames are not the
same content.

Which frames: the candidates are, on a time grid from the first frame (cells of 1/8 s,
doubled whenever more than 256 candidates are held, so memory is bounded whatever the
length), the first frame of each cell; each fraction takes the candidate nearest its time
(ties: the earlier). The choice depends on the frames' times only, so two copies of a clip
take the same moments whatever their frame rate, and a long video costs a thumbnail per cell,
not per frame. :class:`SignatureBuilder` does it while frames stream by (the build);
:func:`signature_frames` gives the same choice from a list of times (a store read later).

Two videos' distance (:func:`pairwise_distances`) is the mean Hamming distance of their
hashes at the same fractions, over the fractions where both have one; a distance of at most
:data:`SIMILAR_BITS` over at least :data:`MIN_FRAMES` frames is "the same content", and the
similarity shown is ``1 - distance / 64``.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import numpy as np

__all__ = [
    "FLAT_STD",
    "MIN_FRAMES",
    "SIGNATURE_FRACTIONS",
    "SIGNATURE_FRAMES",
    "SIMILAR_BITS",
    "SignatureBuilder",
    "frame_hash",
    "grey_thumbnail",
    "pairwise_distances",
    "popcount64",
    "signature_frames",
    "similar_pairs",
]

SIGNATURE_FRACTIONS = (0.125, 0.375, 0.625, 0.875)
SIGNATURE_FRAMES = len(SIGNATURE_FRACTIONS)
#: a frame whose 32x32 grey thumbnail varies less than this (grey levels, std) has no hash
FLAT_STD = 2.0
#: mean Hamming distance (of 64 bits) at or under which two videos are the same content
SIMILAR_BITS = 12.0
#: frames both videos must have a hash at before they are compared
MIN_FRAMES = 2

_SIDE = 32  # thumbnail side
_LOW = 8  # DCT frequencies kept per axis (8 x 8 = 64 bits)
_FIRST_CELL = 0.125  # seconds: the candidate grid's first cell size
_MAX_CANDIDATES = 256


def _dct_matrix() -> np.ndarray:
    """(8, 32) rows of the orthonormal DCT-II: coefficient k of a length-32 signal."""
    n = np.arange(_SIDE)
    k = np.arange(_LOW)[:, None]
    m = np.cos(np.pi * (2 * n + 1) * k / (2 * _SIDE)) * math.sqrt(2.0 / _SIDE)
    m[0] /= math.sqrt(2.0)
    return m.astype(np.float64)


_DCT = _dct_matrix()
_BITS = (np.uint64(1) << np.arange(63, -1, -1, dtype=np.uint64)).reshape(_LOW, _LOW)


def grey_thumbnail(frame: np.ndarray) -> np.ndarray:
    """(32, 32) float32 grey of one stored frame, ``(C, H, W)`` uint8 (C = 1 or 3), each pixel
    the mean of its box of the frame (PIL's box filter; frames smaller than 32 are enlarged)."""
    from PIL import Image

    frame = np.asarray(frame)
    if frame.ndim != 3 or frame.shape[0] not in (1, 3):
        raise ValueError(f"grey_thumbnail takes one (C, H, W) frame, C 1 or 3; got {frame.shape}")
    if frame.dtype != np.uint8:
        frame = np.clip(np.rint(frame.astype(np.float32)), 0, 255).astype(np.uint8)
    if frame.shape[0] == 3:
        grey = Image.fromarray(np.ascontiguousarray(frame.transpose(1, 2, 0))).convert("L")
    else:
        grey = Image.fromarray(np.ascontiguousarray(frame[0]))
    small = grey.convert("F").resize((_SIDE, _SIDE), Image.Resampling.BOX)
    return np.asarray(small, dtype=np.float32)


def frame_hash(thumbnail: np.ndarray) -> int:
    """The 64-bit pHash of a (32, 32) grey thumbnail; 0 ("no hash") for one without structure."""
    x = np.asarray(thumbnail, np.float64)
    if x.shape != (_SIDE, _SIDE):
        raise ValueError(f"frame_hash takes a ({_SIDE}, {_SIDE}) thumbnail, got {x.shape}")
    if x.std() < FLAT_STD:
        return 0
    coefs = _DCT @ x @ _DCT.T
    bits = coefs > np.median(coefs)
    return int(np.bitwise_or.reduce(_BITS[bits])) if bits.any() else 0


class _Candidates:
    """The candidate frames of a stream, by time (module doc): ``add(t, make)`` keeps
    ``make()`` when ``t`` starts a new cell of the grid; :meth:`choose` picks one per fraction."""

    def __init__(self) -> None:
        self.cell = _FIRST_CELL
        self.first = self.last = 0.0  # the first and last times added
        self.step = 0.0  # the last interval between frames
        self._last_cell = -1
        self.kept: list[tuple[float, object]] = []

    def _cell_of(self, t: float) -> int:
        return math.floor((t - self.first) / self.cell + 1e-9)

    def add(self, t: float, make: Callable[[], object]) -> None:
        if not self.kept:
            self.first = t
        elif t > self.last:
            self.step = t - self.last
        self.last = t
        c = self._cell_of(t)
        if c <= self._last_cell:
            return
        self._last_cell = c
        self.kept.append((t, make()))
        if len(self.kept) > _MAX_CANDIDATES:
            self.cell *= 2
            kept, last = [], -1
            for t_, value in self.kept:
                c = self._cell_of(t_)
                if c > last:
                    kept.append((t_, value))
                    last = c
            self.kept, self._last_cell = kept, last

    def choose(self) -> list[object]:
        """The candidate nearest each fraction's time (empty when nothing was added)."""
        if not self.kept:
            return []
        times = np.array([t for t, _ in self.kept])
        span = self.last + self.step - self.first  # to the end of the last frame
        out = []
        for f in SIGNATURE_FRACTIONS:
            k = int(np.argmin(np.abs(times - (self.first + f * span))))
            out.append(self.kept[k][1])
        return out


class SignatureBuilder:
    """A video's signature while its frames stream by: ``add(frame, pts_seconds)`` per stored
    frame ((C, H, W) uint8, in time order), then :meth:`signature`. A thumbnail is made only
    for the candidate frames (at most 8 a second, fewer for long videos)."""

    def __init__(self) -> None:
        self._candidates = _Candidates()

    def add(self, frame: np.ndarray, pts_seconds: float) -> None:
        self._candidates.add(float(pts_seconds), lambda: grey_thumbnail(frame))

    def signature(self) -> np.ndarray:
        """(SIGNATURE_FRAMES,) uint64 hashes (0: no hash; all 0 for a stream without frames)."""
        chosen = self._candidates.choose()
        out = np.zeros(SIGNATURE_FRAMES, np.uint64)
        for k, thumb in enumerate(chosen):
            out[k] = frame_hash(np.asarray(thumb))
        return out


def signature_frames(pts_seconds) -> np.ndarray:
    """Which frames (indices into ``pts_seconds``, in time order) a signature hashes: the
    choice :class:`SignatureBuilder` makes (empty for a video without frames)."""
    c = _Candidates()
    for i, t in enumerate(np.asarray(pts_seconds, np.float64).tolist()):
        c.add(t, functools.partial(int, i))
    return np.asarray(c.choose(), np.int64)


def popcount64(x: np.ndarray) -> np.ndarray:
    """Set bits of each uint64 (a uint8 array of the same shape)."""
    x = np.asarray(x, np.uint64)
    count = getattr(np, "bitwise_count", None)  # numpy >= 2.0
    if count is not None:
        return count(x)
    table = np.array([bin(i).count("1") for i in range(256)], np.uint8)
    return table[x.reshape(*x.shape, 1).view(np.uint8)].sum(axis=-1, dtype=np.uint8)


def _exact_distances(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    both = (a[:, None, :] != 0) & (b[None, :, :] != 0)
    bits = popcount64(a[:, None, :] ^ b[None, :, :])
    compared = both.sum(axis=-1)
    total = np.where(both, bits, 0).sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        distance = np.where(compared > 0, total / np.maximum(compared, 1), np.nan)
    return distance, compared


def pairwise_distances(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(distance, compared)`` of every signature of ``a`` (n, K) against every one of ``b``
    (m, K): the mean Hamming distance in bits over the K fractions where both have a hash
    (float64 (n, m), NaN where none), and how many fractions that was (int64 (n, m)).

    One pass per fraction over (n, m) small integers (about 15 ns a pair); the rows and
    columns of signatures with a missing hash are then redone exactly."""
    a, b = np.asarray(a, np.uint64), np.asarray(b, np.uint64)
    n, m, k = a.shape[0], b.shape[0], a.shape[1]
    total = np.zeros((n, m), np.uint16)
    for j in range(k):
        total += popcount64(a[:, j, None] ^ b[None, :, j]).astype(np.uint16)
    distance = total / np.float64(max(k, 1))
    compared = np.full((n, m), k, np.int64)
    rows = np.flatnonzero((a == 0).any(axis=1))
    cols = np.flatnonzero((b == 0).any(axis=1))
    if rows.size:
        distance[rows], compared[rows] = _exact_distances(a[rows], b)
    if cols.size:
        distance[:, cols], compared[:, cols] = _exact_distances(a, b[cols])
    return distance, compared


def similar_pairs(
    signatures: np.ndarray,
    *,
    max_bits: float = SIMILAR_BITS,
    min_frames: int = MIN_FRAMES,
    block: int = 1 << 22,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Every pair ``i < j`` of ``signatures`` (n, K) that is the same content: ``(i, j,
    distance, compared)`` (module doc). All pairs are compared, ``block`` of them at a time
    (bounded memory): one pass per fraction over small integers, a few ns a pair; signatures
    with a missing hash are compared exactly, apart."""
    sig = np.asarray(signatures, np.uint64)
    k = sig.shape[1]
    found: list[tuple[np.ndarray, ...]] = []
    full = np.flatnonzero((sig != 0).all(axis=1))
    part = np.flatnonzero(~(sig != 0).all(axis=1))
    if k >= min_frames and len(full) > 1:
        f = np.ascontiguousarray(sig[full].T)  # (K, F): one row per fraction
        limit = math.floor(max_bits * k + 1e-9)
        rows = max(1, block // len(full))
        xor = np.empty(rows * len(full), np.uint64)
        bits = np.empty(rows * len(full), np.uint8)
        total = np.empty(rows * len(full), np.uint16)
        for r0 in range(0, len(full) - 1, rows):
            r1 = min(r0 + rows, len(full) - 1)
            b, m = r1 - r0, len(full) - r0 - 1  # rows r0..r1-1 against columns r0+1..
            t = total[: b * m].reshape(b, m)
            t[...] = 0
            for j in range(k):
                x = xor[: b * m].reshape(b, m)
                np.bitwise_xor(f[j, r0:r1, None], f[j, None, r0 + 1 :], out=x)
                c = bits[: b * m].reshape(b, m)
                _popcount_into(x, c)
                t += c
            ii, jj = np.nonzero(t <= limit)
            keep = jj >= ii  # column r0+1+jj is after row r0+ii
            ii, jj = ii[keep], jj[keep]
            if ii.size:
                d = t[ii, jj] / np.float64(k)
                found.append((full[r0 + ii], full[r0 + 1 + jj], d, np.full(ii.size, k)))
    if part.size:
        d, c = _exact_distances(sig[part], sig)
        ii, jj = np.nonzero((c >= min_frames) & (d <= max_bits + 1e-9))
        a, b_ = part[ii], jj
        keep = (a != b_) & ((a < b_) | ~np.isin(b_, part))  # each pair once
        a, b_, ii, jj = a[keep], b_[keep], ii[keep], jj[keep]
        lo, hi = np.minimum(a, b_), np.maximum(a, b_)
        found.append((lo, hi, d[ii, jj], c[ii, jj].astype(np.int64)))
    if not found:
        e = np.zeros(0, np.int64)
        return e, e, np.zeros(0), e
    first, second, dist, comp = (np.concatenate(list(x)) for x in zip(*found))
    order = np.lexsort((second, first))
    return (
        first[order].astype(np.int64),
        second[order].astype(np.int64),
        dist[order].astype(np.float64),
        comp[order].astype(np.int64),
    )


def _popcount_into(x: np.ndarray, out: np.ndarray) -> None:
    count = getattr(np, "bitwise_count", None)
    if count is not None:
        count(x, out=out)
    else:
        out[...] = popcount64(x)
