"""A cheap per-frame "visual change" score, computed from stored frames in small chunks.

``score[i]`` is the mean absolute difference between frame ``i`` and frame ``i - 1`` after both
are shrunk to about ``size`` pixels on the longer side (the mean of a 2x2 pixel group every
``block`` pixels) and turned grey (ITU-R BT.601 weights for 3 channels, the mean otherwise), on
a 0..255 scale. Frame 0 has no
predecessor: it gets the largest score of the other frames (0 for a one-frame video), so it
ranks with the strongest cuts and, ties going to the earlier frame, is picked first.
"""

from __future__ import annotations

import numpy as np

from .._errors import ConfigError, DataError

__all__ = ["ChangeScorer", "change_score"]

_BT601 = np.array([0.299, 0.587, 0.114], dtype=np.float32)


def _thumbnail(frame: np.ndarray, block: int) -> np.ndarray:
    """(C, H, W) -> (H//block, W//block) float32 grey thumbnail: every ``block`` pixels, the
    mean of a 2x2 pixel group (tolerant of single-pixel noise), then BT.601 grey.

    A few strided views and one small product: tens of microseconds per frame whatever its size,
    cheap enough to run for every frame of a build.
    """
    c, h, w = frame.shape
    hb, wb = max(h // block, 1), max(w // block, 1)
    x = frame[:, : hb * block, : wb * block]
    if block >= 2 and min(x.shape[1], x.shape[2]) >= 2:
        acc = x[:, 0::block, 0::block].astype(np.float32)
        acc += x[:, 1::block, 0::block]
        acc += x[:, 0::block, 1::block]
        acc += x[:, 1::block, 1::block]
        scale = np.float32(0.25)
    else:
        acc = x[:, ::block, ::block].astype(np.float32)
        scale = np.float32(1.0)
    weights = _BT601 if c == 3 else np.full(c, 1.0 / c, np.float32)
    return ((weights * scale) @ acc.reshape(c, -1)).reshape(acc.shape[1:])


def change_score(frames, *, size: int = 32, chunk: int = 64) -> np.ndarray:
    """Per-frame change score (float32, length F) of a (F, C, H, W) uint8 array.

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

    def __init__(self, size: int = 32) -> None:
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise ConfigError(f"change score size must be an integer >= 1, got {size!r}")
        self.size = size
        self._block: int | None = None
        self._prev: np.ndarray | None = None
        self._diffs: list[float] = []

    def add(self, frame: np.ndarray) -> None:
        frame = np.asarray(frame)
        if frame.ndim != 3:
            raise DataError(f"ChangeScorer.add needs one (C, H, W) frame, got shape {frame.shape}")
        if self._block is None:
            self._block = max(max(frame.shape[1], frame.shape[2]) // self.size, 1)
        small = _thumbnail(frame, self._block)
        if self._prev is not None:
            d = np.subtract(small, self._prev)
            np.abs(d, out=d)
            self._diffs.append(float(d.sum()) / d.size)
        self._prev = small

    def scores(self) -> np.ndarray:
        """Float32 scores, one per added frame (empty before the first)."""
        if self._prev is None:
            return np.zeros(0, dtype=np.float32)
        out = np.zeros(len(self._diffs) + 1, dtype=np.float32)
        out[1:] = self._diffs
        if len(out) > 1:
            out[0] = out[1:].max()
        return out
