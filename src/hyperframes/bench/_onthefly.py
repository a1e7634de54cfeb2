"""The anchor: decode a window of frames straight from the video file, as loaders without a
store do every epoch (seek to the keyframe before the window, decode, convert, resize)."""

from __future__ import annotations

import numpy as np


def pyav_window(
    path: str,
    pts_seconds: np.ndarray,
    *,
    size: tuple[int, int] | None = None,
    stream: int = 0,
) -> np.ndarray:
    """Frames at ``pts_seconds`` (sorted; nearest frame) as (T, C, H, W) uint8, via PyAV."""
    import av

    want = np.asarray(pts_seconds, np.float64)
    out: list[np.ndarray] = []
    h, w = size if size else (None, None)
    with av.open(path) as container:
        st = container.streams.video[stream]
        st.thread_type = "AUTO"
        tb = float(st.time_base)
        half = 0.5 / float(st.average_rate or 25)
        container.seek(max(0, int((want[0] - half) / tb)), stream=st, backward=True)
        prev = None
        for frame in container.decode(st):
            t = float(frame.pts * tb) if frame.pts is not None else float(frame.time or 0.0)
            rgb = None
            while len(out) < len(want) and want[len(out)] <= t + half:
                if want[len(out)] >= t - half or prev is None:
                    if rgb is None:
                        rgb = frame.to_ndarray(format="rgb24", width=w, height=h).transpose(2, 0, 1)
                    out.append(rgb)
                else:
                    out.append(prev)
            if len(out) >= len(want):
                break
            if rgb is not None:
                prev = rgb
            elif want[len(out)] - t < 4 * half:
                prev = frame.to_ndarray(format="rgb24", width=w, height=h).transpose(2, 0, 1)
        while len(out) < len(want):  # past the last frame: hold it
            out.append(prev if prev is not None else out[-1])
    return np.stack(out)
