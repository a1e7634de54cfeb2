"""A cheap per-frame "content change" score, computed from stored frames in small chunks.

``score[i]`` is how much the coarse picture changed from frame ``i - 1`` to frame ``i``. Both
frames are shrunk to about ``size`` blocks on the longer side, each block the mean of a grid of
up to 8 x 8 pixels spread over it, and turned grey (ITU-R BT.601 weights for 3 channels, the
mean otherwise); the score is the mean absolute difference of the two thumbnails divided by
the standard deviation of every thumbnail pixel of the video (its coarse contrast). A score is
so a fraction of the video's own contrast, the same for uint8 frames and normalised float
frames: a cut between unrelated scenes scores about 1, slow motion a few hundredths.

Block means make it a score of content, not of compression: a codec's I-frame is a jump in
fine detail and blocking that leaves the block means nearly unchanged (about 0.05 on a
re-encoded test clip), while a cut replaces them. Frame 0 has no predecessor and scores 0.

Stores built before this definition recorded a different score (grey levels 0..255 of 2x2
pixel groups, frame 0 given the video's largest score); they keep it until rebuilt.
"""

from __future__ import annotations

import numpy as np

from .._core._errors import ConfigError, DataError

__all__ = ["ChangeScorer", "change_score"]

_BT601 = np.array([0.299, 0.587, 0.114], dtype=np.float32)


_SAMPLES = 8  # pixels per block side that a block mean reads (at most)

#: one axis of the thumbnail grid: the strided slice of sampled pixels and the
#: (blocks, samples) matrix averaging them per block
_Axis = tuple[slice, np.ndarray]


def _axis(length: int, block: int) -> _Axis:
    """Where one axis is sampled (evenly, at most ``_SAMPLES`` per block) and how averaged."""
    block = min(block, length)
    step = -(-block // _SAMPLES)
    per = block // step
    blocks = length // (per * step)
    mean = np.kron(np.eye(blocks, dtype=np.float32), np.full((1, per), 1 / per, np.float32))
    return slice(step // 2, blocks * per * step, step), mean


def _thumbnail(frame: np.ndarray, rows: _Axis, cols: _Axis) -> np.ndarray:
    """(C, H, W) -> (blocks_y, blocks_x) float32 grey thumbnail of block means.

    Each block's mean reads an evenly spread grid of at most 8 x 8 of its pixels (a strided
    view, a grey product and two small matrix products): compression noise and fine detail
    average out, and the cost stays a few tens of microseconds per frame whatever its size,
    cheap enough to run for every frame of a build.
    """
    (ys, mean_y), (xs, mean_x) = rows, cols
    x = frame[:, ys, xs].astype(np.float32)
    c = x.shape[0]
    grey = np.tensordot(_BT601 if c == 3 else np.full(c, 1.0 / c, np.float32), x, 1)
    return mean_y @ grey @ mean_x.T


def change_score(frames, *, size: int = 16, chunk: int = 64) -> np.ndarray:
    """Per-frame change score (float32, length F) of (F, C, H, W) frames (see the module doc).

    ``frames`` may be any array-like sliceable along its first axis (numpy array, memory map,
    HDF5 dataset, CPU tensor): ``chunk`` frames are read and converted at a time.
    """
    scorer = ChangeScorer(size)  # checks size
    if isinstance(chunk, bool) or not isinstance(chunk, int) or chunk < 1:
        raise ConfigError(f"change_score: chunk must be an integer >= 1, got {chunk!r}")
    shape = tuple(frames.shape)
    if len(shape) != 4:
        raise DataError(
            f"change_score needs frames shaped (F, C, H, W), got shape {shape}; "
            f"add a channel axis for grey frames"
        )
    for lo in range(0, shape[0], chunk):
        for frame in np.asarray(frames[lo : lo + chunk]):
            scorer.add(frame)
    return scorer.scores()


class ChangeScorer:
    """:func:`change_score` one frame at a time: what a store build computes while it decodes,
    so the ``keyframes`` sampler finds the scores in the store instead of reading every frame
    (:func:`change_score` itself feeds one of these, so both give the same numbers).

    ``add(frame)`` takes one (C, H, W) array; :meth:`scores` gives the score of every frame
    added so far.
    """

    def __init__(self, size: int = 16) -> None:
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise ConfigError(f"change score size must be an integer >= 1, got {size!r}")
        self.size = size
        self._grid: tuple[_Axis, _Axis] | None = None
        self._shape: tuple[int, ...] = ()
        self._prev: np.ndarray | None = None
        self._diffs: list[float] = []
        # every thumbnail pixel so far: count, mean, sum of squared deviations (Chan et al.)
        self._count = 0
        self._mean = 0.0
        self._m2 = 0.0

    def add(self, frame: np.ndarray) -> None:
        frame = np.asarray(frame)
        if frame.ndim != 3:
            raise DataError(f"ChangeScorer.add needs one (C, H, W) frame, got shape {frame.shape}")
        if self._grid is None:
            h, w = frame.shape[1:]
            block = max(max(h, w) // self.size, 1)
            self._grid = (_axis(h, block), _axis(w, block))
            self._shape = frame.shape
        elif frame.shape != self._shape:
            raise DataError(
                f"ChangeScorer.add: frame shape {frame.shape} differs from the first frame's "
                f"{self._shape}; score each video with its own scorer"
            )
        small = _thumbnail(frame, *self._grid)
        if self._prev is not None:
            d = np.subtract(small, self._prev)
            np.abs(d, out=d)
            self._diffs.append(float(d.sum()) / d.size)
        self._prev = small
        n, mean = small.size, float(small.mean(dtype=np.float64))
        total = self._count + n
        delta = mean - self._mean
        self._m2 += float(np.square(small - mean, dtype=np.float64).sum())
        self._m2 += delta * delta * self._count * n / total
        self._mean += delta * n / total
        self._count = total

    def scores(self) -> np.ndarray:
        """Float32 scores, one per added frame (empty before the first; frame 0 scores 0)."""
        if self._prev is None:
            return np.zeros(0, dtype=np.float32)
        out = np.zeros(len(self._diffs) + 1, dtype=np.float32)
        std = (self._m2 / self._count) ** 0.5
        if std > 0:  # a video of one flat colour changes nowhere: all zeros
            out[1:] = np.asarray(self._diffs, dtype=np.float64) / std
        return out
