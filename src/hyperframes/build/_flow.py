"""Optical flow and global motion between consecutive stored frames: frames in, arrays out.

Pure computation (no file is touched): ``FlowEstimator`` takes a video's stored frames one at
a time (RGB, ``(H, W, C)`` uint8, as the build stores them) and gives, per consecutive pair
``k -> k+1``:

- the dense optical flow of OpenCV (``dis``: ``cv2.DISOpticalFlow``, preset MEDIUM;
  ``farneback``: ``cv2.calcOpticalFlowFarneback`` with pyramid scale 0.5, 3 levels, 15-pixel
  windows, 3 iterations, poly_n 5, sigma 1.2) from frame k to frame k+1, both turned to grey
  (``cv2.COLOR_RGB2GRAY``) and resized to the flow size (``cv2.INTER_AREA``): ``(2, h, w)``,
  component 0 = dx, 1 = dy, in pixels of the flow size: the content at (x, y) of frame k is
  at (x + dx, y + dy) in frame k+1;
- one homography ``H_k`` (3x3, ``H[2, 2] = 1``) mapping a pixel (x, y, 1) of frame k+1 to
  frame k, in the STORED frame's pixel coordinates (pixel centres at integers), estimated
  from the flow: a grid of points (every ``max(2, min(h, w) // 16)`` pixels, 10% border left
  out, where flow is least reliable) displaced by it, fitted by ``cv2.findHomography`` with
  RANSAC (1 flow pixel reprojection threshold). The identity where the fit fails (too few
  points, a degenerate or non-finite result).

``motion_score`` sums a pair's flow up in one number, the build's per-frame flow score
(``index/flow_score.npy``, what the ``keyframes`` sampler ranks by when a store has flow): the
mean length of the flow vectors, in pixels of the STORED frame (dx scaled by W / w, dy by
H / h, so the score does not depend on the flow size), from the float32 flow before it is
quantised. Steady motion gives about its speed every frame; a cut, where the next frame
matches nothing in the last, gives flow of arbitrary length, several times the usual.

``quantise`` stores flow as float16, or int8 with one scale per video (value = int8 * scale,
scale = the largest |component| / 127, so nothing is clipped: :func:`flow_scale`).
"""

from __future__ import annotations

import numpy as np

from .._core._errors import ConfigError
from ..store import FLOW_DTYPES

__all__ = [
    "FLOW_DTYPES",
    "FLOW_METHODS",
    "FlowEstimator",
    "flow_homography",
    "flow_scale",
    "motion_score",
    "quantise",
    "require_opencv",
]

FLOW_METHODS = ("dis", "farneback")


def require_opencv():
    """``cv2``, or a ConfigError saying how to install it."""
    try:
        import cv2  # deferred: heavy dependency, only a build with flow needs it
    except ImportError:
        raise ConfigError(
            "flow needs OpenCV, which is not installed: pip install opencv-python-headless "
            "(or hyperframes-video[opencv])"
        ) from None
    return cv2


class FlowEstimator:
    """Flow and homography of each pair of consecutive frames, computed as the frames arrive
    (only the previous frame is held): :meth:`add` returns the pair it completes.

    ``size``: (h, w) of the flow; None = each frame's own size."""

    def __init__(self, method: str, size: tuple[int, int] | None = None):
        if method not in FLOW_METHODS:
            raise ConfigError(f"flow must be one of {', '.join(FLOW_METHODS)}, got {method!r}")
        cv2 = require_opencv()
        self.method = method
        self.size = size
        self._cv2 = cv2
        self._dis = (
            cv2.DISOpticalFlow_create(cv2.DISOPTICAL_FLOW_PRESET_MEDIUM)
            if method == "dis"
            else None
        )
        self._prev: np.ndarray | None = None
        self._frame_size: tuple[int, int] | None = None

    def _grey(self, rgb: np.ndarray) -> np.ndarray:
        cv2 = self._cv2
        if rgb.ndim == 3 and rgb.shape[2] == 3:
            grey = cv2.cvtColor(np.ascontiguousarray(rgb), cv2.COLOR_RGB2GRAY)
        else:
            grey = np.ascontiguousarray(rgb.reshape(rgb.shape[0], rgb.shape[1]))
        if self.size is not None and grey.shape != tuple(self.size):
            h, w = self.size
            grey = cv2.resize(grey, (w, h), interpolation=cv2.INTER_AREA)
        return grey

    def add(self, rgb: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        """The next frame, ``(H, W, C)`` uint8 (C = 3 RGB, or 1): the flow ``(2, h, w)``
        float32 and the homography (3x3 float32) of the previous frame -> this one, or None for
        the first frame."""
        size = (int(rgb.shape[0]), int(rgb.shape[1]))
        if self._frame_size is None:
            self._frame_size = size
        grey = self._grey(rgb)
        prev, self._prev = self._prev, grey
        if prev is None:
            return None
        if self._dis is not None:
            hw2 = self._dis.calc(prev, grey, None)
        else:
            hw2 = self._cv2.calcOpticalFlowFarneback(prev, grey, None, 0.5, 3, 15, 3, 5, 1.2, 0)
        flow = np.ascontiguousarray(hw2.transpose(2, 0, 1), dtype=np.float32)
        return flow, flow_homography(flow, self._frame_size)

    @property
    def flow_size(self) -> tuple[int, int] | None:
        """(h, w) of the flow (None before the first frame)."""
        if self.size is not None:
            return (int(self.size[0]), int(self.size[1]))
        return self._frame_size


def flow_homography(flow: np.ndarray, frame_size: tuple[int, int]) -> np.ndarray:
    """The homography (3x3 float32) mapping frame k+1 to frame k in the coordinates of frames of
    ``frame_size`` (H, W), fitted to ``flow`` ``(2, h, w)`` (frame k -> k+1, flow pixels); the
    identity when the fit fails (module doc)."""
    import cv2  # deferred: heavy dependency, only a build with flow gets here

    _, h, w = flow.shape
    eye = np.eye(3, dtype=np.float32)
    step = max(2, min(h, w) // 16)
    my, mx = h // 10, w // 10
    ys, xs = np.mgrid[my : h - my : step, mx : w - mx : step]
    if ys.size < 4:
        return eye
    src = np.stack([xs.ravel(), ys.ravel()], 1).astype(np.float32)  # in frame k
    dst = src + np.stack([flow[0][ys, xs].ravel(), flow[1][ys, xs].ravel()], 1)  # in k+1
    if not np.isfinite(dst).all():
        return eye
    hom, _ = cv2.findHomography(dst, src, cv2.RANSAC, 1.0)
    if hom is None or not np.isfinite(hom).all() or abs(hom[2, 2]) < 1e-12:
        return eye
    # flow pixels -> stored frame pixels: x_store = (x_flow + 0.5) * s - 0.5
    sy, sx = frame_size[0] / h, frame_size[1] / w
    scale = np.array([[sx, 0, 0.5 * sx - 0.5], [0, sy, 0.5 * sy - 0.5], [0, 0, 1]], np.float64)
    out = scale @ (hom / hom[2, 2]) @ np.linalg.inv(scale)
    out /= out[2, 2]
    if not np.isfinite(out).all():
        return eye
    return out.astype(np.float32)


def motion_score(flow: np.ndarray, frame_size: tuple[int, int]) -> float:
    """Mean length, in pixels of a stored frame of ``frame_size`` (H, W), of the vectors of
    one pair's ``flow`` ``(2, h, w)`` (flow pixels); 0.0 for an empty flow. A non-finite
    vector counts as 0 (the score stays finite)."""
    _, h, w = flow.shape
    if h == 0 or w == 0:
        return 0.0
    dx = flow[0].astype(np.float64) * (frame_size[1] / w)
    dy = flow[1].astype(np.float64) * (frame_size[0] / h)
    length = np.hypot(dx, dy)
    length[~np.isfinite(length)] = 0.0
    return float(length.mean())


def flow_scale(peak: float, dtype: str) -> float:
    """The scale of a video's stored flow whose largest |component| is ``peak``: 1.0 for
    float16; for int8 ``peak / 127`` (as float32; 1/127 for a still video)."""
    if dtype == "float16":
        return 1.0
    if dtype == "int8":
        return float(np.float32(peak / 127.0 if peak > 0 and np.isfinite(peak) else 1 / 127))
    raise ConfigError(f"flow_dtype must be one of {', '.join(FLOW_DTYPES)}, got {dtype!r}")


def quantise(flow: np.ndarray, dtype: str, scale: float) -> np.ndarray:
    """``flow`` (any shape) as stored with ``scale`` (:func:`flow_scale`): value = stored *
    scale."""
    if dtype == "float16":
        return np.ascontiguousarray(flow, dtype=np.float16)
    q = np.clip(np.rint(np.asarray(flow, np.float32) / np.float32(scale)), -127, 127)
    return np.ascontiguousarray(q.astype(np.int8))
