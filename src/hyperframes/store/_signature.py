"""Perceptual signatures of videos: what a video looks like, in 32 bytes, so that a copy of
it (remuxed, re-encoded, resized) is found by content where a hash of its bytes differs. The
store computes them at build (``index/signatures.npy``); the leakage check compares them.

A video's signature is :data:`SIGNATURE_FRAMES` frames, one at each of the fixed fractions
:data:`SIGNATURE_FRACTIONS` (1/8, 3/8, 5/8, 7/8) of its duration by pts (from its first frame
to the end of its last: the last pts plus the last interval, the same for a copy at another
frame rate), each hashed :data:`CROP_HASHES` times: the whole frame, then the
:data:`CROP_BOXES` (parts of it keeping 70-92% of its width and height at the corners, edges
and centre). The index keeps them as :data:`SIGNATURE_WIDTH` uint64 columns: the four
whole-frame hashes first, then four per box, box by box.

A hash is a pHash made blind to a horizontal mirror: grey (ITU-R BT.601), box-averaged to a
96x96 base image whatever the frame's size or aspect (:func:`grey_base`), the frame (or box) of
it box-averaged to 32x32, 2-D DCT-II (orthonormal), the 8x8 lowest frequencies. A mirror
negates the coefficients of odd horizontal frequency and keeps the rest, so bit k (row-major,
bit 63 first) is set when coefficient k is above the median of its kind: its value for even
horizontal frequencies, its magnitude for odd ones. A re-encode, a remux, a resize or a mirror
moves a few bits; unrelated frames differ in about half (32). A frame without structure (the
32x32 grey's standard deviation under :data:`FLAT_STD` levels: black, a fade, one flat colour)
hashes to 0, "no hash", and is never compared: two black frames are not the same content.

Which frames: the candidates are, on a time grid from the first frame (cells of 1/8 s,
doubled whenever more than 256 candidates are held, so memory is bounded whatever the
length), the first frame of each cell; each fraction takes the candidate nearest its time
(ties: the earlier). The choice depends on the frames' times only, so two copies of a clip
take the same moments whatever their frame rate, and a long video costs a thumbnail per cell,
not per frame. :class:`SignatureBuilder` does it while frames stream by (the build);
:func:`signature_frames` gives the same choice from a list of times (a store read later).

Two videos' distance (:func:`pairwise_distances`) is the mean Hamming distance of their
whole-frame hashes at the same fractions, over the fractions where both have one; a distance
of at most :data:`SIMILAR_BITS` over at least :data:`MIN_FRAMES` frames is "the same content",
and the similarity shown is ``1 - distance / 64``.

A crop of a clip (keeping 70% of its area or more, anywhere in the frame) is found in two
steps. :func:`crop_candidates` compares each video's whole-frame hashes with every box hash of
every other video (the nearest box is within a few per cent of any such crop) and keeps the
pairs within :data:`CROP_GATE_BITS`; :func:`refine_crop` then moves a part of the shape such a
crop has (the two videos' aspects say it) in steps of 1-2% of the frame over the base images
of the possible original, to the smallest distance, and the pair is the same content when
that is at most :data:`CROP_SIMILAR_BITS`. Measured on the six real test clips, each mirrored
and cropped and encoded again (tests/test_leakage_content.py): mirrors differ by 0-1.5 bits
(10.5 on the 128x128 HEVC clip of little texture), crops by 1-3 after the refinement (a mild
one is found by the whole frames at 12), different clips by 23.5 or more and none comes within
the crop gate.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import numpy as np

__all__ = [
    "CROP_BOXES",
    "CROP_GATE_BITS",
    "CROP_HASHES",
    "CROP_SIMILAR_BITS",
    "FLAT_STD",
    "MIN_FRAMES",
    "SIGNATURE_FRACTIONS",
    "SIGNATURE_FRAMES",
    "SIGNATURE_WIDTH",
    "SIMILAR_BITS",
    "SignatureBuilder",
    "crop_candidates",
    "frame_hash",
    "frame_hashes",
    "grey_base",
    "grey_thumbnail",
    "pairwise_distances",
    "popcount64",
    "refine_crop",
    "signature_frames",
    "signature_of_frames",
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


def _crop_boxes() -> tuple[tuple[float, float, float, float], ...]:
    """(x0, y0, x1, y1) fractions of the frame: 6 shapes at the corners, edge middles and
    centre (a shape as wide or as tall as the frame is placed along the other side only)."""
    out: dict[tuple[float, float, float, float], None] = {}
    for w, h in ((0.84, 0.84), (0.7, 1.0), (1.0, 0.7), (0.92, 0.92), (0.77, 0.92), (0.92, 0.77)):
        for px in (0.0, 0.5, 1.0):
            for py in (0.0, 0.5, 1.0):
                x0, y0 = round((1 - w) * px, 4), round((1 - h) * py, 4)
                out[(x0, y0, round(x0 + w, 4), round(y0 + h, 4))] = None
    return tuple(out)


#: the parts of a frame hashed beside the whole frame, for finding crops (module doc)
CROP_BOXES = _crop_boxes()
#: hashes per signature frame: the whole frame and each box
CROP_HASHES = 1 + len(CROP_BOXES)
#: uint64 columns of one signature in the index
SIGNATURE_WIDTH = SIGNATURE_FRAMES * CROP_HASHES
#: a whole-frame signature this near (mean bits) to one box of another video's is refined
CROP_GATE_BITS = 18.0
#: a refined crop at most this far (mean bits) is the same content: stricter than
#: SIMILAR_BITS, as the search tries many parts (generated clips of plain discs over smooth
#: backgrounds come to 8.5; real crops to 1-3)
CROP_SIMILAR_BITS = 7.0
#: the largest number of videos the crop search runs over (it compares every video's frames
#: with every other's boxes, (videos^2 x boxes x 4) small integers: measured 2.5 s for 500
#: videos and 36 s for 2000 on 2 busy CPU cores)
CROP_MAX_VIDEOS = 2000
_FULL = (0.0, 0.0, 1.0, 1.0)
_BASE = 96  # side of the grey base image the frame and its boxes are hashed from

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


def grey_base(frame: np.ndarray) -> np.ndarray:
    """(96, 96) float32 grey of one stored frame, ``(C, H, W)`` uint8 (C = 1 or 3), each pixel
    the mean of its box of the frame (PIL's box filter; smaller frames are enlarged)."""
    from PIL import Image  # deferred: optional/heavy dependency

    frame = np.asarray(frame)
    if frame.ndim != 3 or frame.shape[0] not in (1, 3):
        raise ValueError(f"grey_base takes one (C, H, W) frame, C 1 or 3; got {frame.shape}")
    if frame.dtype != np.uint8:
        frame = np.clip(np.rint(frame.astype(np.float32)), 0, 255).astype(np.uint8)
    if frame.shape[0] == 3:
        grey = Image.fromarray(np.ascontiguousarray(frame.transpose(1, 2, 0))).convert("L")
    else:
        grey = Image.fromarray(np.ascontiguousarray(frame[0]))
    base = grey.convert("F").resize((_BASE, _BASE), Image.Resampling.BOX)
    return np.asarray(base, dtype=np.float32)


def _thumbnail(base: np.ndarray, box=_FULL) -> np.ndarray:
    """(32, 32) of the part ``box`` (fractions x0, y0, x1, y1) of a base image."""
    from PIL import Image  # deferred: optional/heavy dependency

    img = Image.fromarray(np.asarray(base, np.float32), mode="F")
    x0, y0, x1, y1 = (min(max(v, 0.0), 1.0) * _BASE for v in box)
    small = img.resize((_SIDE, _SIDE), Image.Resampling.BOX, box=(x0, y0, x1, y1))
    return np.asarray(small, dtype=np.float32)


def grey_thumbnail(frame: np.ndarray) -> np.ndarray:
    """(32, 32) float32 grey of one stored frame, ``(C, H, W)`` uint8 (C = 1 or 3): its
    :func:`grey_base` box-averaged to 32x32."""
    return _thumbnail(grey_base(frame))


#: which of the 8x8 coefficients have an odd horizontal frequency (a mirror negates them)
_ODD = np.tile(np.arange(_LOW) % 2 == 1, (_LOW, 1))


def frame_hash(thumbnail: np.ndarray) -> int:
    """The 64-bit mirror-blind pHash of a (32, 32) grey thumbnail (module doc); 0 ("no hash")
    for one without structure."""
    x = np.asarray(thumbnail, np.float64)
    if x.shape != (_SIDE, _SIDE):
        raise ValueError(f"frame_hash takes a ({_SIDE}, {_SIDE}) thumbnail, got {x.shape}")
    if x.std() < FLAT_STD:
        return 0
    coefs = _DCT @ x @ _DCT.T
    even, odd = coefs[~_ODD], np.abs(coefs[_ODD])
    bits = np.zeros((_LOW, _LOW), bool)
    bits[~_ODD] = even > np.median(even)
    bits[_ODD] = odd > np.median(odd)
    return int(np.bitwise_or.reduce(_BITS[bits])) if bits.any() else 0


def frame_hashes(base: np.ndarray) -> np.ndarray:
    """(CROP_HASHES,) uint64 of a base image: the whole frame's hash, then each box's."""
    return np.array([frame_hash(_thumbnail(base, box)) for box in (_FULL, *CROP_BOXES)], np.uint64)


def signature_of_frames(bases) -> np.ndarray:
    """(SIGNATURE_WIDTH,) uint64 signature from the base images of the chosen frames (at
    most SIGNATURE_FRAMES; missing ones have no hash): whole-frame hashes, then box by box."""
    out = np.zeros((CROP_HASHES, SIGNATURE_FRAMES), np.uint64)
    for k, base in enumerate(bases):
        out[:, k] = frame_hashes(np.asarray(base))
    return out.reshape(-1)


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
    frame ((C, H, W) uint8, in time order), then :meth:`signature`. A base image is made only
    for the candidate frames (at most 8 a second, fewer for long videos)."""

    def __init__(self) -> None:
        self._candidates = _Candidates()

    def add(self, frame: np.ndarray, pts_seconds: float) -> None:
        self._candidates.add(float(pts_seconds), lambda: grey_base(frame))

    def signature(self) -> np.ndarray:
        """(SIGNATURE_WIDTH,) uint64 hashes (0: no hash; all 0 for a stream without frames)."""
        return signature_of_frames(self._candidates.choose())


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


def crop_candidates(
    signatures: np.ndarray, *, gate_bits: float = CROP_GATE_BITS, min_frames: int = MIN_FRAMES
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Pairs that may be one video and a crop of it: ``(copy, original, distance, box)``, the
    mean bits between ``copy``'s whole-frame hashes and ``original``'s hashes of box ``box``
    (the nearest box), at most ``gate_bits`` over at least ``min_frames`` frames. Ordered
    pairs (the copy may be either video), ``copy != original``; signatures (n,
    SIGNATURE_WIDTH). Every video against every other's boxes, a block of rows at a time."""
    sig = np.asarray(signatures, np.uint64)
    n, k = sig.shape[0], SIGNATURE_FRAMES
    full, boxes = sig[:, :k], sig[:, k:].reshape(n, len(CROP_BOXES), k)
    found: list[tuple[np.ndarray, ...]] = []
    rows = max(1, (1 << 20) // max(n, 1))
    for r0 in range(0, n, rows):
        part = full[r0 : r0 + rows]
        best = np.full((part.shape[0], n), np.inf)
        which = np.zeros((part.shape[0], n), np.int64)
        for b in range(len(CROP_BOXES)):
            d, compared = pairwise_distances(part, boxes[:, b, :])
            d = np.where(compared >= min_frames, d, np.inf)
            closer = d < best
            best[closer], which[closer] = d[closer], b
        best[np.arange(part.shape[0]), r0 + np.arange(part.shape[0])] = np.inf  # not itself
        ii, jj = np.nonzero(best <= gate_bits + 1e-9)
        found.append((r0 + ii, jj, best[ii, jj], which[ii, jj]))
    if not found:
        e = np.zeros(0, np.int64)
        return e, e, np.zeros(0), e
    copy, original, dist, box = (np.concatenate(list(x)) for x in zip(*found))
    return copy.astype(np.int64), original.astype(np.int64), dist, box.astype(np.int64)


def refine_crop(
    copy_hashes: np.ndarray, original_bases, box: int, *, aspect: float = 1.0
) -> tuple[float, int, tuple[float, ...]]:
    """The smallest mean distance (bits) between ``copy_hashes`` (a video's SIGNATURE_FRAMES
    whole-frame hashes) and the hashes of one part of the other video's frames
    (``original_bases``: their :func:`grey_base` images, the signature's frames). The part has
    the shape a crop of the original to the copy has: its width over its height, as fractions
    of the original's, is ``aspect`` (the copy's width/height over the original's), and it
    keeps at least 65% of the area. It starts at box ``box`` of :data:`CROP_BOXES` (its
    centre and area, in that shape) and moves its centre and size in steps of 2%, then 1% of
    the frame while the distance falls. Returns (distance, frames compared, the part)."""
    copy_hashes = np.asarray(copy_hashes, np.uint64)
    use = [f for f in range(min(len(original_bases), copy_hashes.shape[0])) if copy_hashes[f]]

    def part_of(cx: float, cy: float, w: float) -> tuple[float, float, float, float] | None:
        h = w / aspect
        if not (w <= 1 + 1e-9 and h <= 1 + 1e-9 and w * h >= 0.65):
            return None
        x0, y0 = min(max(cx - w / 2, 0.0), 1 - w), min(max(cy - h / 2, 0.0), 1 - h)
        return (x0, y0, x0 + w, y0 + h)

    def distance(part) -> tuple[float, int]:
        bits, n = 0, 0
        for f in use:
            h = frame_hash(_thumbnail(original_bases[f], part))
            if h:
                bits += bin(int(copy_hashes[f]) ^ h).count("1")
                n += 1
        return (bits / n if n >= MIN_FRAMES else math.inf), n

    x0, y0, x1, y1 = CROP_BOXES[box]
    area = (x1 - x0) * (y1 - y0)
    state = [(x0 + x1) / 2, (y0 + y1) / 2, min(math.sqrt(area * aspect), 1.0, aspect)]
    start = part_of(*state)
    if start is None:  # no part of this shape keeps enough of the original
        return math.inf, 0, CROP_BOXES[box]
    best, compared = distance(start)
    part = start
    for step in (0.02, 0.01):
        moved = True
        while moved:
            moved = False
            for axis in range(3):
                for delta in (-step, step):
                    trial = state.copy()
                    trial[axis] += delta
                    box_ = part_of(*trial)
                    if box_ is None:
                        continue
                    d, n = distance(box_)
                    if d < best - 1e-9:
                        best, compared, part, state, moved = d, n, box_, trial, True
    return best, compared, part
