"""Tiny real videos for tests, encoded with PyAV (H.264), whose pixels say which frame they are."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import numpy as np


def level(i: int) -> int:
    """The grey level frame ``i`` is painted with (distinct for i < 24, far apart)."""
    return 20 + (i * 9) % 216


def frame_level(frame_chw: np.ndarray) -> float:
    """Mean grey level of the frame's left half (the right half carries the video's colour)."""
    return float(frame_chw[:, :, : frame_chw.shape[2] // 2].astype(np.float32).mean())


def identify(frame_chw: np.ndarray, n: int) -> int:
    """Which of frames 0..n-1 this is (nearest painted level)."""
    levels = np.array([level(i) for i in range(n)], np.float32)
    return int(np.argmin(np.abs(levels - frame_level(frame_chw))))


def write_video(
    path: Path,
    *,
    frames: int = 20,
    width: int = 64,
    height: int = 48,
    fps: int = 20,
    colour: tuple[int, int, int] = (200, 30, 30),
    pts_seconds: list[float] | None = None,
    codec: str = "libx264",
) -> Path:
    """Write ``frames`` frames; frame i's left half is grey level ``level(i)``.

    ``pts_seconds`` gives explicit (e.g. variable-rate) timestamps.
    """
    import av

    path.parent.mkdir(parents=True, exist_ok=True)
    tb = Fraction(1, 1000) if pts_seconds is not None else Fraction(1, fps)
    with av.open(str(path), "w") as out:
        s = out.add_stream(codec, rate=fps)
        s.width, s.height, s.pix_fmt = width, height, "yuv420p"
        s.time_base = tb
        s.codec_context.time_base = tb
        if codec == "libx264":
            s.options = {"crf": "12", "preset": "ultrafast", "g": "8", "bf": "0"}
        for i in range(frames):
            img = np.empty((height, width, 3), np.uint8)
            img[:, : width // 2] = level(i)
            img[:, width // 2 :] = colour
            f = av.VideoFrame.from_ndarray(img, format="rgb24")
            f.pts = round(pts_seconds[i] / tb) if pts_seconds is not None else i
            f.time_base = tb
            for pkt in s.encode(f):
                out.mux(pkt)
        for pkt in s.encode():
            out.mux(pkt)
    return path


def write_audio_only(path: Path, seconds: float = 0.5) -> Path:
    import av

    with av.open(str(path), "w") as out:
        s = out.add_stream("aac", rate=16000)
        n = int(16000 * seconds)
        samples = (np.sin(np.arange(n) / 10.0) * 0.3).astype(np.float32)[None, :]
        for start in range(0, n, 1024):
            fr = av.AudioFrame.from_ndarray(
                samples[:, start : start + 1024], format="fltp", layout="mono"
            )
            fr.sample_rate = 16000
            fr.pts = start
            for pkt in s.encode(fr):
                out.mux(pkt)
        for pkt in s.encode():
            out.mux(pkt)
    return path


def make_class_folder(root: Path, *, classes=("a", "b", "c"), per_class=2, frames=20, **kw) -> Path:
    """root/<label>/<label>_<i>.mp4 with slightly different lengths."""
    colours = [(200, 30, 30), (30, 200, 30), (30, 30, 200), (200, 200, 30)]
    for c, label in enumerate(classes):
        for i in range(per_class):
            write_video(
                root / label / f"{label}_{i}.mp4",
                frames=frames + i + c,
                colour=colours[c % len(colours)],
                **kw,
            )
    return root
