"""One window's prediction, as the predictor hands it out and the outputs write it."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Prediction"]


@dataclass
class Prediction:
    """The (smoothed) prediction of one window of T frames.

    Frames are numbered as in the source: ``source_frames`` (T) are the indices of the frames
    the window used, 0-based, counting every frame decoded (or pushed) -- with frame-rate
    resampling to the model's rate a window skips or repeats source frames, and a padded
    window repeats its last. ``first_source_frame`` / ``last_source_frame`` are the first and
    last of them (both included), ``key_source_frame`` the window's middle one (``T // 2``,
    the frame a keyframe segmenter's mask belongs to).

    Times are the frames' presentation times in seconds: the window covers
    ``[start_seconds, end_seconds)`` (``end_seconds``: the last frame's time plus one frame
    interval at the model's rate); ``key_seconds`` is the key frame's time. ``padded``: the
    video was shorter than a window and its last frame was repeated. ``mirrored``: a dense
    task's window for one of the stream's first or last frames, the frames before the first
    (after the last) mirrored about it (``source_frames`` then repeat, out of order).

    ``logits``: the model's raw output for this window ((K,) or (K, H, W) for
    segmentation); ``smoothed``: after the exponential moving average over windows;
    ``probs`` (K,): softmax of ``smoothed`` (for segmentation, averaged over pixels; for a
    multi-label model, the sigmoid of each class: independent probabilities);
    ``mask``: (H, W) uint8 argmax of ``smoothed`` (segmentation only).
    """

    index: int
    source_frames: tuple[int, ...]
    start_seconds: float
    end_seconds: float
    key_seconds: float
    logits: np.ndarray
    smoothed: np.ndarray
    probs: np.ndarray
    classes: list[str]
    mask: np.ndarray | None = None
    padded: bool = False
    mirrored: bool = False
    #: detection: the key frame's boxes (D, 6): x1, y1, x2, y2 (normalised to [0, 1]),
    #: score, class id; decoded from ``smoothed`` (class scores after the EMA)
    boxes: np.ndarray | None = None

    @property
    def first_source_frame(self) -> int:
        """The source frame number of the window's first frame (the earliest it uses)."""
        return min(self.source_frames)

    @property
    def last_source_frame(self) -> int:
        """The source frame number of the window's last frame (included)."""
        return max(self.source_frames)

    @property
    def key_source_frame(self) -> int:
        """The source frame number of the window's middle frame (``T // 2``)."""
        return self.source_frames[len(self.source_frames) // 2]

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
    def centre_seconds(self) -> float:
        """The time the prediction stands for: the key frame's for masks, else the middle."""
        if self.mask is not None or self.boxes is not None:
            return self.key_seconds
        return 0.5 * (self.start_seconds + self.end_seconds)

    def to_dict(self, top_k: int = 3) -> dict:
        """A JSON-ready summary (no logits, no mask); keys as the timeline's columns."""
        out = {
            "index": self.index,
            "first_source_frame": self.first_source_frame,
            "last_source_frame": self.last_source_frame,
            "key_source_frame": self.key_source_frame,
            "source_frames": list(self.source_frames),
            "start_seconds": round(self.start_seconds, 6),
            "end_seconds": round(self.end_seconds, 6),
            "key_seconds": round(self.key_seconds, 6),
            "top": [{"class": c, "prob": round(p, 6)} for c, p in self.top(top_k)],
            "probs": {c: round(float(p), 6) for c, p in zip(self.classes, self.probs)},
        }
        cov = self.coverage
        if cov is not None:
            out["coverage"] = {c: round(float(v), 6) for c, v in zip(self.classes, cov)}
        if self.boxes is not None:
            out["boxes"] = [box_row(self.classes, b) for b in self.boxes]
        if self.padded:
            out["padded"] = True
        if self.mirrored:
            out["mirrored"] = True
        return out


def box_row(classes: list[str], box: np.ndarray) -> dict:
    """One detection (x1, y1, x2, y2, score, class id) as a JSON-ready row."""
    x1, y1, x2, y2, score, k = (float(v) for v in box)
    corners = {"x1": x1, "y1": y1, "x2": x2, "y2": y2}
    return {
        **{n: round(v, 6) for n, v in corners.items()},
        "label": classes[int(k)],
        "score": round(score, 6),
    }
