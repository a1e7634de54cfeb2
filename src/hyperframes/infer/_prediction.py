"""One window's prediction, as the predictor hands it out and the outputs write it."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Prediction"]


@dataclass
class Prediction:
    """The (smoothed) prediction of one window of T frames.

    Frame numbers count the frames the model saw (after frame-rate resampling; the decoded
    frames' own numbers when there is none). ``end_frame`` is exclusive; ``end_time`` is the
    last frame's time plus one frame interval, so windows cover ``[start_time, end_time)``.
    ``key_frame`` / ``key_time``: the window's middle frame ``T // 2`` (the frame a keyframe
    segmenter's mask belongs to). ``padded``: the video was shorter than T frames and its
    last frame was repeated.

    ``logits``: the model's raw output for this window ((K,) or (K, H, W) for
    segmentation); ``smoothed``: after the exponential moving average over windows;
    ``probs`` (K,): softmax of ``smoothed`` (for segmentation, averaged over pixels);
    ``mask``: (H, W) uint8 argmax of ``smoothed`` (segmentation only).
    """

    index: int
    start_frame: int
    end_frame: int
    start_time: float
    end_time: float
    key_frame: int
    key_time: float
    logits: np.ndarray
    smoothed: np.ndarray
    probs: np.ndarray
    classes: list[str]
    mask: np.ndarray | None = None
    padded: bool = False

    @property
    def label(self) -> str:
        """The most probable class."""
        return self.classes[int(np.argmax(self.probs))]

    def top(self, k: int = 3) -> list[tuple[str, float]]:
        """The ``k`` most probable classes with their probabilities, best first."""
        order = np.argsort(-self.probs, kind="stable")[:k]
        return [(self.classes[i], float(self.probs[i])) for i in order]

    @property
    def coverage(self) -> np.ndarray | None:
        """Segmentation: the fraction of the key frame's pixels given to each class."""
        if self.mask is None:
            return None
        counts = np.bincount(self.mask.ravel(), minlength=len(self.classes))
        return counts[: len(self.classes)] / max(1, self.mask.size)

    @property
    def centre_time(self) -> float:
        """The time the prediction stands for: the key frame's for masks, else the middle."""
        if self.mask is not None:
            return self.key_time
        return 0.5 * (self.start_time + self.end_time)

    def to_dict(self, top_k: int = 3) -> dict:
        """A JSON-ready summary (no logits, no mask)."""
        out = {
            "index": self.index,
            "start_frame": self.start_frame,
            "end_frame": self.end_frame,
            "start_time": round(self.start_time, 6),
            "end_time": round(self.end_time, 6),
            "key_frame": self.key_frame,
            "key_time": round(self.key_time, 6),
            "top": [{"class": c, "prob": round(p, 6)} for c, p in self.top(top_k)],
            "probs": {c: round(float(p), 6) for c, p in zip(self.classes, self.probs)},
        }
        cov = self.coverage
        if cov is not None:
            out["coverage"] = {c: round(float(v), 6) for c, v in zip(self.classes, cov)}
        if self.padded:
            out["padded"] = True
        return out
