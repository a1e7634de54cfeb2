"""PNG pictures a person would rather see than read: a window of frames."""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np


def window_png(
    frames: np.ndarray,
    path: str | os.PathLike,
    *,
    captions: Sequence[str] | None = None,
    title: str | None = None,
    columns: int = 8,
) -> str:
    """Tile ``frames`` (T, C, H, W) uint8 into a grid PNG with a caption under each frame."""
    from PIL import Image, ImageDraw

    frames = np.asarray(frames)
    if frames.dtype != np.uint8:
        lo, hi = float(frames.min()), float(frames.max())
        frames = ((frames.astype(np.float32) - lo) / max(hi - lo, 1e-6) * 255).astype(np.uint8)
    t, c, h, w = frames.shape
    cols = min(columns, t)
    rows = -(-t // cols)
    cap_h = 14 if captions else 0
    top = 16 if title else 0
    pad = 2
    canvas = Image.new(
        "RGB", (cols * (w + pad) + pad, top + rows * (h + cap_h + pad) + pad), (255, 255, 255)
    )
    draw = ImageDraw.Draw(canvas)
    if title:
        draw.text((pad, 2), title, fill=(0, 0, 0))
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
