"""A cheap per-frame "visual change" score, computed from stored frames in small chunks.

``score[i]`` is the mean absolute difference between frame ``i`` and frame ``i - 1`` after both
are turned grey (ITU-R BT.601 weights for 3 channels, the mean otherwise) and shrunk by block
averaging to about ``size`` pixels on the longer side, on a 0..255 scale. Frame 0 has no
predecessor: it gets the largest score of the other frames (0 for a one-frame video), so it
ranks with the strongest cuts and, ties going to the earlier frame, is picked first.
"""

from __future__ import annotations

import numpy as np

from .._errors import ConfigError, DataError

__all__ = ["ChangeScorer", "change_score"]

_BT601 = np.array([0.299, 0.587, 0.114], dtype=np.float32)


def _small_grey(chunk: np.ndarray, block: int) -> np.ndarray:
    """(n, C, H, W) uint8 -> (n, H//block, W//block) float32 grey thumbnails."""
    x = chunk.astype(np.float32)
    if x.shape[1] == 3:
        grey = np.einsum("nchw,c->nhw", x, _BT601)
    else:
        grey = x.mean(axis=1)
    n, h, w = grey.shape
    hb, wb = max(h // block, 1), max(w // block, 1)
    bh, bw = h // hb, w // wb
    grey = grey[:, : hb * bh, : wb * bw].reshape(n, hb, bh, wb, bw)
    return grey.mean(axis=(2, 4))


def change_score(frames, *, size: int = 32, chunk: int = 64) -> np.ndarray:
    """Per-frame change score (float32, length F) of a (F, C, H, W) uint8 array.

    ``frames`` may be any array-like sliceable along its first axis (numpy array, memory map,
    HDF5 dataset, CPU tensor): ``chunk`` frames are read and converted at a time.
    """
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise ConfigError(f"change_score: size must be an integer >= 1, got {size!r}")
    if isinstance(chunk, bool) or not isinstance(chunk, int) or chunk < 1:
        raise ConfigError(f"change_score: chunk must be an integer >= 1, got {chunk!r}")
    shape = tuple(frames.shape)
    if len(shape) != 4:
        raise DataError(
            f"change_score needs frames shaped (F, C, H, W), got shape {shape}; "
            f"add a channel axis for grey frames"
        )
    num, _, h, w = shape
    scores = np.zeros(num, dtype=np.float32)
    block = max(max(h, w) // size, 1)
    prev = None
    for lo in range(0, num, chunk):
        small = _small_grey(np.asarray(frames[lo : lo + chunk]), block)
        if prev is not None:
            small_all = np.concatenate([prev, small])
        else:
            small_all = small
        diff = np.abs(np.diff(small_all, axis=0)).mean(axis=(1, 2))
        start = lo if prev is not None else lo + 1
        scores[start : start + diff.shape[0]] = diff
        prev = small[-1:]
    if num > 1:
        scores[0] = scores[1:].max()
    return scores


class ChangeScorer:
    """:func:`change_score` one frame at a time: what a store build computes while it decodes,
    so the ``keyframes`` sampler finds the scores in the store instead of reading every frame.

    ``add(frame)`` takes one (C, H, W) array; :meth:`scores` gives what :func:`change_score`
    gives on the stacked frames.
    """

    def __init__(self, size: int = 32) -> None:
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise ConfigError(f"ChangeScorer: size must be an integer >= 1, got {size!r}")
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
        small = _small_grey(frame[None], self._block)
        if self._prev is not None:
            self._diffs.append(np.abs(np.diff(np.concatenate([self._prev, small]), axis=0)).mean())
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
