"""Crop + resize of uint8 or float32 planes with OpenCV, straight into a destination: the one
resize the batch pipeline, the store's box reads and the input contract's eval crop share
(a (..., H, W) array resized plane by plane: no channel-last copy, see
:mod:`hyperframes.store._crop`)."""

from __future__ import annotations

import numpy as np


def resize_planes(src: np.ndarray, box, dst: np.ndarray) -> None:
    """``src`` (..., H, W) cropped to ``box`` and resized into ``dst`` (..., h, w), plane by
    plane (uint8 or float32)."""
    import cv2

    y, x, bh, bw = box
    oh, ow = dst.shape[-2:]
    crop = src[..., y : y + bh, x : x + bw]
    if (bh, bw) == (oh, ow):
        np.copyto(dst, crop)
        return
    interp = cv2.INTER_AREA if bh > oh or bw > ow else cv2.INTER_LINEAR
    planes = crop.reshape(-1, bh, crop.shape[-1]) if crop.ndim > 2 else crop[None]
    outs = dst.reshape(-1, oh, ow)
    for p in range(planes.shape[0]):
        cv2.resize(planes[p], (ow, oh), dst=outs[p], interpolation=interp)
