"""Which stored videos were resampled up: a rate above the source's repeats source frames.

``build --fps F`` takes, for each time ``k / F``, the source frame nearest it; a source slower
than F gives some source frame twice or more (a 6 fps clip at 15 fps: 57 decoded frames stored
as 142). The index already says it: a stored frame whose source index equals the one before
it repeats that frame. So the build summary and ``info`` count it from the index, for stores
of any age, and nothing more is recorded.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

__all__ = ["repeated_frames", "upsampled_line", "upsampled_rows"]


def repeated_frames(
    source_index: np.ndarray, frame_start: np.ndarray, num_frames: np.ndarray
) -> np.ndarray:
    """Per video (int64): its stored frames that repeat the source frame stored before them.
    ``source_index``: every stored frame's source index, videos back to back from
    ``frame_start``, ``num_frames`` each (the index's columns)."""
    source_index = np.asarray(source_index, np.int64)
    start = np.asarray(frame_start, np.int64)
    count = np.asarray(num_frames, np.int64)
    same = np.zeros(source_index.shape[0], bool)
    same[1:] = source_index[1:] == source_index[:-1]
    same[start[count > 0]] = False  # a video's first frame repeats nothing
    total = np.concatenate([[0], np.cumsum(same, dtype=np.int64)])
    return total[start + count] - total[start]


def upsampled_rows(
    paths,
    fps,
    num_frames,
    repeats: np.ndarray,
    decoded: Callable[[int], int],
    *,
    over_gaps: bool = False,
) -> list[dict]:
    """``{"path", "fps", "frames_decoded", "frames_stored", "frames_repeated"}`` of every
    video with repeated frames (``repeats`` from :func:`repeated_frames`; ``decoded(i)``: the
    frames decoded of video ``i``), in index order: those upsampled (fewer frames decoded
    than stored: the source is slower than the stored rate), or with ``over_gaps`` the
    others (a source at least as fast, e.g. 28 fps stored at 10, whose repeats fill the
    timestamp gaps shorter than ``max_gap``)."""
    rows = []
    for i in np.flatnonzero(np.asarray(repeats) > 0).tolist():
        n, stored = int(decoded(i)), int(num_frames[i])
        if (n >= stored) == over_gaps:
            rows.append(
                {
                    "path": paths[i],
                    "fps": float(fps[i]),
                    "frames_decoded": n,
                    "frames_stored": stored,
                    "frames_repeated": int(repeats[i]),
                }
            )
    return rows


def upsampled_line(row: dict) -> str:
    """One report line: ``path: 57 decoded frames stored as 142 at 15 fps (85 repeats)``."""
    return (
        f"  {row['path']}: {row['frames_decoded']} decoded frames stored as "
        f"{row['frames_stored']} at {row['fps']:g} fps ({row['frames_repeated']} repeats)"
    )
