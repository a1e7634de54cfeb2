"""PNG pictures a person would rather see than read: a window of frames; a feature map's
principal components as colours (:func:`pca_rgb`, what ``viz.pca_image`` writes and the
keyframe models' hidden picture shows)."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence

import numpy as np

from ._errors import ConfigError, DataError, InputError

__all__ = ["ShownWindow", "pca_rgb", "show_window", "window_png"]


@dataclasses.dataclass(frozen=True)
class ShownWindow:
    """What ``show_window`` wrote: which stored frames of which video, and how many were asked.

    Frames are numbered as the store numbers them (``frame_indices``, what ``--start`` and
    ``--stride`` count), in the title and under each tile alike; ``source_frame_indices`` are
    the same frames in the source video's numbering (they differ when the build resampled the
    rate), which the title adds in brackets."""

    path: str
    video: int
    frame_indices: tuple[int, ...]  # stored frames drawn, in the store's numbering
    frames_requested: int
    num_frames: int  # frames the video holds
    source_frame_indices: tuple[int, ...] = ()  # the same frames in the source's numbering
    title: str = ""
    captions: tuple[str, ...] = ()  # under each tile: "#<stored frame> <seconds>s"

    def summary(self) -> str:
        first, last = self.frame_indices[0], self.frame_indices[-1]
        line = f"wrote {self.path}: video {self.video}, stored frames {first}..{last}"
        if self.source_frame_indices:
            line += (
                f" (source frames {self.source_frame_indices[0]}..{self.source_frame_indices[-1]})"
            )
        if len(self.frame_indices) < self.frames_requested:
            line += (
                f" ({len(self.frame_indices)} of the {self.frames_requested} frames asked for: "
                f"video {self.video} has {self.num_frames} frames, 0..{self.num_frames - 1})"
            )
        else:
            line += f" ({len(self.frame_indices)} frames)"
        return line


def show_window(
    store,
    video: int,
    path: str | os.PathLike,
    *,
    start: int = 0,
    frames: int = 8,
    stride: int = 1,
) -> ShownWindow:
    """Write frames ``start, start + stride, ...`` (``frames`` of them, fewer where the video
    ends first) of ``store``'s video ``video`` as a captioned PNG; ``ShownWindow`` says which."""
    n = len(store.videos)
    if not 0 <= video < n:
        last = f"0..{n - 1}" if n else "none: it is empty"
        raise ConfigError(
            f"video {video} is out of range: {store.path} holds {n} videos ({last}); "
            "hyperframes info lists them"
        )
    for name, value, low in (
        ("start", start, 0),
        ("frames", frames, 1),
        ("stride", stride, 1),
    ):
        if value < low:
            raise ConfigError(f"{name} must be at least {low}, got {value}")
    rec = store.videos[video]
    if start >= rec.num_frames:
        raise DataError(
            f"start {start} is past the end of video {video}: it has {rec.num_frames} frames "
            f"(0..{rec.num_frames - 1})"
        )
    idx = start + stride * np.arange(frames)
    idx = idx[idx < rec.num_frames]
    pixels = store.read_numpy(video, idx)
    source = [int(rec.source_frame_indices[i]) for i in idx]
    caps = [f"#{i} {rec.pts_seconds[i]:.2f}s" for i in idx]
    title = (
        f"{rec.path} [{rec.label}] stored frames {idx[0]}..{idx[-1]} stride {stride} "
        f"(source frames {source[0]}..{source[-1]}); tiles: #stored frame, time"
    )
    window_png(pixels, path, captions=caps, title=title)
    return ShownWindow(
        path=str(path),
        video=video,
        frame_indices=tuple(int(i) for i in idx),
        frames_requested=frames,
        num_frames=rec.num_frames,
        source_frame_indices=tuple(source),
        title=title,
        captions=tuple(caps),
    )


def wrap_text(text: str, width: int, measure) -> list[str]:
    """``text`` broken into lines no wider than ``width`` pixels (``measure(s)`` gives a width):
    after a space or a ``/`` where one is on the line, else anywhere. Joined, the lines give
    ``text`` back."""
    lines, line = [], ""
    for ch in text:
        if line and measure(line + ch) > width:
            cut = max(line.rfind(" "), line.rfind("/"))
            if cut > 0:
                lines.append(line[: cut + 1])
                line = line[cut + 1 :]
            else:
                lines.append(line)
                line = ""
        line += ch
    return [*lines, line] if line else lines


def window_png(
    frames: np.ndarray,
    path: str | os.PathLike,
    *,
    captions: Sequence[str] | None = None,
    title: str | None = None,
    columns: int = 8,
) -> str:
    """Tile ``frames`` (T, C, H, W) uint8 into a grid PNG with a caption under each frame and
    the whole ``title`` above (wrapped to the picture's width)."""
    from PIL import Image, ImageDraw  # deferred: optional/heavy dependency

    frames = np.asarray(frames)
    if frames.dtype != np.uint8:
        lo, hi = float(frames.min()), float(frames.max())
        frames = ((frames.astype(np.float32) - lo) / max(hi - lo, 1e-6) * 255).astype(np.uint8)
    t, c, h, w = frames.shape
    cols = min(columns, t)
    rows = -(-t // cols)
    cap_h = 14 if captions else 0
    pad = 2
    width = cols * (w + pad) + pad
    measure = ImageDraw.Draw(Image.new("RGB", (1, 1))).textlength
    title_lines = wrap_text(title, width - 2 * pad, measure) if title else []
    top = 14 * len(title_lines) + (2 if title_lines else 0)
    canvas = Image.new("RGB", (width, top + rows * (h + cap_h + pad) + pad), (255, 255, 255))
    draw = ImageDraw.Draw(canvas)
    for k, line in enumerate(title_lines):
        draw.text((pad, 2 + 14 * k), line, fill=(0, 0, 0))
    for i in range(t):
        r, k = divmod(i, cols)
        x, y = pad + k * (w + pad), top + pad + r * (h + cap_h + pad)
        img = frames[i].transpose(1, 2, 0)
        if c == 1:
            img = np.repeat(img, 3, axis=2)
        canvas.paste(Image.fromarray(np.ascontiguousarray(img[..., :3])), (x, y))
        if captions:
            draw.text((x, y + h), str(captions[i])[: max(4, w // 6)], fill=(0, 0, 0))
    canvas.save(path, format="PNG")
    return str(path)


def pca_rgb(features, *, scale: int = 1) -> np.ndarray:
    """The first three principal components of a (C, H, W) feature map (a tensor or an array,
    or (1, C, H, W)) as a uint8 RGB picture (H*scale, W*scale, 3): each pixel a C-vector, the
    three directions of largest variance across pixels red, green and blue, each stretched to
    0..255 (signs fixed, so the result is deterministic); fewer than 3 channels leave the
    missing colours black. :class:`InputError` for another shape, non-finite values or a bad
    ``scale``."""
    if hasattr(features, "detach"):  # a torch tensor (torch is not imported here)
        arr = features.detach().cpu().double().numpy()
    else:
        arr = np.asarray(features, dtype=np.float64)
    if arr.ndim == 4 and arr.shape[0] == 1:
        arr = arr[0]
    if arr.ndim != 3 or 0 in arr.shape:
        raise InputError(f"pca_image takes a (C, H, W) feature map, got shape {arr.shape}")
    if not np.isfinite(arr).all():
        raise InputError("pca_image: the feature map holds NaN or infinite values")
    if isinstance(scale, bool) or not isinstance(scale, int) or scale < 1:
        raise InputError(f"pca_image: scale must be a positive integer, got {scale!r}")
    c, h, w = arr.shape
    x = arr.reshape(c, h * w).T  # pixels x channels
    x = x - x.mean(axis=0, keepdims=True)
    k = min(3, c, h * w)
    _, _, vt = np.linalg.svd(x, full_matrices=False)
    comps = vt[:k]
    signs = np.sign(comps[np.arange(k), np.abs(comps).argmax(axis=1)])
    comps = comps * np.where(signs == 0, 1.0, signs)[:, None]
    proj = x @ comps.T  # pixels x k
    rgb = np.zeros((h * w, 3))
    lo, hi = proj.min(axis=0), proj.max(axis=0)
    span = np.where(hi - lo > 1e-12, hi - lo, 1.0)
    rgb[:, :k] = (proj - lo) / span
    img = (rgb.reshape(h, w, 3) * 255.0 + 0.5).astype(np.uint8)
    if scale > 1:
        img = img.repeat(scale, axis=0).repeat(scale, axis=1)
    return img
