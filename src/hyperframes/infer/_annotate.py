"""An annotated copy of the video: H.264 (PyAV), the predicted label drawn on every frame.

Frames come in decoding order at their own size; predictions come in window order as
the predictor produces them. Each frame shows the prediction whose time
(:attr:`Prediction.centre_seconds`: the window's middle, or the key frame for masks) is
nearest to it, so a frame waits only until a prediction past it has arrived: memory
stays bounded. Segmentation models' masks are drawn over the frame (classes other than
0, taken as background, in colour); detection models' boxes scoring 0.3 or more as
rectangles with their class and score.
"""

from __future__ import annotations

import os
from collections import deque
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from .._core._errors import InputError
from ..decode import resize_rgb
from ._prediction import Prediction

if TYPE_CHECKING:
    from av.container import OutputContainer
    from av.video.stream import VideoStream
    from PIL.ImageFont import FreeTypeFont, ImageFont

__all__ = ["VideoAnnotator"]

_PALETTE = np.array(
    [
        (0, 0, 0),
        (230, 25, 75),
        (60, 180, 75),
        (255, 225, 25),
        (0, 130, 200),
        (245, 130, 48),
        (145, 30, 180),
        (70, 240, 240),
        (240, 50, 230),
        (210, 245, 60),
    ],
    dtype=np.float32,
)


def _colour(k: int) -> np.ndarray:
    return _PALETTE[1 + (k - 1) % (len(_PALETTE) - 1)]


class VideoAnnotator:
    """Writes ``path`` (mp4, libx264, yuv420p) from frames and predictions (module doc)."""

    def __init__(
        self,
        path: str | os.PathLike,
        *,
        fps: float | None,
        mask_alpha: float = 0.5,
        crf: int = 20,
    ) -> None:
        self.path = Path(path)
        self.fps = Fraction(fps).limit_denominator(1001) if fps and fps > 0 else Fraction(30)
        self.mask_alpha = float(mask_alpha)
        #: the least score of a box drawn (detection)
        self.box_score = 0.3
        self.crf = crf
        self._frames: deque[tuple[np.ndarray, float]] = deque()
        self._prev: Prediction | None = None
        self._container: OutputContainer | None = None
        self._stream: VideoStream | None = None
        self._size: tuple[int, int] | None = None
        self._font: FreeTypeFont | ImageFont | None = None
        self.written = 0

    # -- input ------------------------------------------------------------------------------
    def add_frame(self, rgb: np.ndarray, pts_seconds: float) -> None:
        """Queue a decoded (H, W, 3) uint8 frame; it is written once its label is known."""
        self._frames.append((rgb, float(pts_seconds)))

    def add_prediction(self, pred: Prediction) -> None:
        """A new prediction: frames up to its time get their label and are written."""
        c = pred.centre_seconds
        while self._frames and self._frames[0][1] <= c:
            rgb, t = self._frames.popleft()
            prev = self._prev
            use = prev if prev is not None and (t - prev.centre_seconds) <= (c - t) else pred
            self._write(rgb, use)
        self._prev = pred

    def close(self) -> Path:
        """Write the frames left (with the last prediction) and finish the file."""
        while self._frames:
            rgb, _ = self._frames.popleft()
            self._write(rgb, self._prev)
        if self._container is None:
            raise InputError(f"{self.path}: no frames to annotate")
        assert self._stream is not None  # opened with the container
        for packet in self._stream.encode(None):
            self._container.mux(packet)
        self._container.close()
        self._container = None
        os.replace(self._tmp, self.path)
        return self.path

    def abort(self) -> None:
        """Drop the partial file after an error."""
        if self._container is not None:
            try:
                self._container.close()
            finally:
                self._container = None
                Path(self._tmp).unlink(missing_ok=True)

    # -- drawing ----------------------------------------------------------------------------
    def _open(self, height: int, width: int) -> None:
        import av  # deferred: optional/heavy dependency

        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._tmp = self.path.with_name(f".{self.path.stem}.partial{self.path.suffix or '.mp4'}")
        self._container = av.open(str(self._tmp), mode="w", format="mp4")
        s = self._container.add_stream(
            "libx264", rate=self.fps, options={"crf": str(self.crf), "preset": "veryfast"}
        )
        s.width, s.height, s.pix_fmt = width, height, "yuv420p"
        self._stream = s
        self._size = (height, width)

    def _write(self, rgb: np.ndarray, pred: Prediction | None) -> None:
        import av  # deferred: optional/heavy dependency

        h, w = rgb.shape[0] // 2 * 2, rgb.shape[1] // 2 * 2  # yuv420p: even sizes
        if h < 2 or w < 2:
            raise InputError(f"{self.path}: frames of {rgb.shape[0]}x{rgb.shape[1]} are too small")
        if self._container is None:
            self._open(h, w)
        # set by _open
        assert self._container is not None and self._stream is not None and self._size is not None
        if (h, w) != self._size:  # a size change mid-stream: fit to the first size
            rgb = resize_rgb(rgb, self._size)
        image = self._draw(np.ascontiguousarray(rgb[: self._size[0], : self._size[1]]), pred)
        frame = av.VideoFrame.from_ndarray(image, format="rgb24")
        frame.pts = self.written
        for packet in self._stream.encode(frame):
            self._container.mux(packet)
        self.written += 1

    def _draw(self, rgb: np.ndarray, pred: Prediction | None) -> np.ndarray:
        from PIL import Image, ImageDraw, ImageFont  # deferred: optional/heavy dependency

        if pred is None:
            return rgb
        if pred.mask is not None:
            rgb = self._overlay(rgb, pred.mask)
        image = Image.fromarray(rgb)
        h = rgb.shape[0]
        if self._font is None:
            self._font = ImageFont.load_default(size=max(10, h // 18))
        if pred.boxes is not None:
            self._boxes(image, pred)
        if pred.mask is not None:
            cov = pred.coverage
            assert cov is not None  # a mask has a coverage
            parts = [f"{c} {v:.0%}" for c, v in zip(pred.classes, cov) if v > 0][:3]
            text = "  ".join(parts)
        else:
            (c, p), *_ = pred.top(1)
            text = f"{c} {p:.0%}"
        draw = ImageDraw.Draw(image)
        timed = f"{text}  [{pred.start_seconds:.2f}-{pred.end_seconds:.2f}s]"
        if draw.textbbox((4, 2), timed, font=self._font)[2] + 4 <= rgb.shape[1]:
            text = timed  # the window's span, where it fits
        _, _, x1, y1 = draw.textbbox((4, 2), text, font=self._font)
        draw.rectangle((0, 0, min(rgb.shape[1], x1 + 4), y1 + 3), fill=(0, 0, 0))
        draw.text((4, 2), text, fill=(255, 255, 255), font=self._font)
        return np.asarray(image)

    def _boxes(self, image, pred: Prediction) -> None:
        """Draw a detection's boxes scoring at least :attr:`box_score` with their class and
        score."""
        from PIL import ImageDraw  # deferred: optional/heavy dependency

        assert pred.boxes is not None
        draw = ImageDraw.Draw(image)
        w, h = image.size
        for x1, y1, x2, y2, score, k in pred.boxes:
            if score < self.box_score:
                continue
            colour = tuple(int(c) for c in _colour(int(k) + 1))
            draw.rectangle((x1 * w, y1 * h, x2 * w, y2 * h), outline=colour, width=max(1, h // 120))
            label = f"{pred.classes[int(k)]} {score:.2f}"
            draw.text((x1 * w + 2, y2 * h + 1), label, fill=colour, font=self._font)

    def _overlay(self, rgb: np.ndarray, mask: np.ndarray) -> np.ndarray:
        from PIL import Image  # deferred: optional/heavy dependency

        h, w = rgb.shape[:2]
        if mask.shape != (h, w):
            mask = np.asarray(Image.fromarray(mask).resize((w, h), Image.Resampling.NEAREST))
        out = rgb.astype(np.float32)
        for k in np.unique(mask):
            if k == 0:
                continue
            sel = mask == k
            out[sel] = (1 - self.mask_alpha) * out[sel] + self.mask_alpha * _colour(int(k))
        return out.round().clip(0, 255).astype(np.uint8)
