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


# -- videos with an audio track, and moving textures (issue 12: audio and flow tracks) --------


def beep_samples(
    seconds: float,
    sample_rate: int,
    beeps=((0.50, 0.60), (1.30, 1.40)),
    *,
    freq: float = 1000.0,
    amplitude: float = 0.5,
) -> np.ndarray:
    """Mono float32 samples: a ``freq`` Hz sine during each ``(start, end)`` of ``beeps`` (in
    seconds from the first sample), silence elsewhere."""
    t = np.arange(round(seconds * sample_rate)) / sample_rate
    on = np.zeros(len(t), bool)
    for a, b in beeps:
        on |= (t >= a) & (t < b)
    return np.where(on, amplitude * np.sin(2 * np.pi * freq * t), 0.0).astype(np.float32)


def make_beep_video(
    path: Path,
    *,
    seconds: float = 2.0,
    fps: int = 25,
    width: int = 64,
    height: int = 48,
    sample_rate: int = 48000,
    beeps=((0.50, 0.60), (1.30, 1.40)),
    freq: float = 1000.0,
    audio_codec: str = "pcm_s16le",
    pts_seconds: list[float] | None = None,
) -> Path:
    """A video (H.264, frames painted as :func:`write_video` paints them) with one mono audio
    stream: a ``freq`` Hz beep during each of ``beeps`` (seconds), silence elsewhere, at
    ``sample_rate``. Video and audio both start at time 0. ``pts_seconds``: explicit (e.g.
    variable-rate) frame times instead of ``seconds * fps`` frames at ``fps``. Use .mkv for
    pcm_s16le (exact timing); aac in .mp4 works too (the encoder's priming delay is in its
    timestamps)."""
    import av

    path.parent.mkdir(parents=True, exist_ok=True)
    n_frames = len(pts_seconds) if pts_seconds is not None else round(seconds * fps)
    tb = Fraction(1, 1000) if pts_seconds is not None else Fraction(1, fps)
    samples = beep_samples(seconds, sample_rate, beeps, freq=freq)
    with av.open(str(path), "w") as out:
        vs = out.add_stream("libx264", rate=fps)
        vs.width, vs.height, vs.pix_fmt = width, height, "yuv420p"
        vs.time_base = tb
        vs.codec_context.time_base = tb
        vs.options = {"crf": "12", "preset": "ultrafast", "g": "8", "bf": "0"}
        aus = out.add_stream(audio_codec, rate=sample_rate, layout="mono")
        fmt = "s16" if audio_codec == "pcm_s16le" else "fltp"
        block = aus.codec_context.frame_size or 1024
        packets = []
        for i in range(n_frames):
            img = np.empty((height, width, 3), np.uint8)
            img[:, : width // 2] = level(i)
            img[:, width // 2 :] = (200, 30, 30)
            f = av.VideoFrame.from_ndarray(img, format="rgb24")
            f.pts = round(pts_seconds[i] / tb) if pts_seconds is not None else i
            f.time_base = tb
            packets += vs.encode(f)
        packets += vs.encode()
        for start in range(0, len(samples), block):
            chunk = samples[start : start + block]
            data = (chunk * 32767).astype(np.int16)[None] if fmt == "s16" else chunk[None]
            af = av.AudioFrame.from_ndarray(data, format=fmt, layout="mono")
            af.sample_rate = sample_rate
            af.pts = start
            af.time_base = Fraction(1, sample_rate)
            packets += aus.encode(af)
        packets += aus.encode()
        # interleave by time, as a muxer expects
        packets.sort(key=lambda p: float((p.dts if p.dts is not None else 0) * p.time_base))
        for p in packets:
            out.mux(p)
    return path


def make_vfr_beep_video(path: Path, *, seconds: float = 2.0, **kw) -> Path:
    """:func:`make_beep_video` with variable frame durations: frames 40 ms apart, then 80 ms,
    then 20 ms, repeating, over ``seconds``."""
    pts, t, steps, k = [], 0.0, (0.04, 0.08, 0.02), 0
    while t < seconds - 1e-9:
        pts.append(round(t, 3))
        t += steps[k % 3]
        k += 1
    return make_beep_video(path, seconds=seconds, pts_seconds=pts, **kw)


def smooth_texture(height: int, width: int, *, seed: int = 0, blur: float = 3.0) -> np.ndarray:
    """A uint8 grey texture of Gaussian-blurred noise, scaled to 0..255 (flow has corners and
    gradients everywhere to follow)."""
    import cv2

    rng = np.random.default_rng(seed)
    noise = rng.random((height, width)).astype(np.float32)
    tex = cv2.GaussianBlur(noise, (0, 0), blur)
    tex = (tex - tex.min()) / max(float(tex.max() - tex.min()), 1e-6)
    return (tex * 255).astype(np.uint8)


def make_translating_video(
    path: Path,
    dx: float,
    dy: float,
    *,
    frames: int = 6,
    size: int = 64,
    fps: int = 25,
    seed: int = 0,
) -> Path:
    """A ``size`` x ``size`` grey texture moving by (``dx``, ``dy``) pixels per frame (content at
    x in frame k is at x + dx in frame k+1), subpixel shifts included: each frame is the
    texture of a larger canvas sampled at a shifted grid (bilinear). Encoded losslessly (FFV1,
    .mkv)."""
    import cv2

    pad = int(np.ceil(max(abs(dx), abs(dy)) * frames)) + 8
    canvas = smooth_texture(size + 2 * pad, size + 2 * pad, seed=seed).astype(np.float32)
    images = []
    for k in range(frames):
        # frame k shows canvas at (x - k*dx, y - k*dy): content moves by +dx, +dy per frame
        m = np.float32([[1, 0, pad - k * dx], [0, 1, pad - k * dy]])
        grey = cv2.warpAffine(
            canvas,
            m,
            (size, size),
            flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP,
            borderMode=cv2.BORDER_REFLECT,
        )
        images.append(np.repeat(np.clip(grey + 0.5, 0, 255).astype(np.uint8)[:, :, None], 3, 2))
    return write_lossless(path, images, fps)


def write_lossless(path: Path, images, fps: int) -> Path:
    """RGB ``images`` (H, W, 3) uint8 as a lossless FFV1 clip (.mkv) at ``fps``."""
    import av

    h, w = images[0].shape[:2]
    path.parent.mkdir(parents=True, exist_ok=True)
    with av.open(str(path), "w") as out:
        s = out.add_stream("ffv1", rate=fps)
        s.width, s.height, s.pix_fmt = w, h, "yuv444p"
        for k, img in enumerate(images):
            f = av.VideoFrame.from_ndarray(np.ascontiguousarray(img), format="rgb24")
            f.pts = k
            for pkt in s.encode(f):
                out.mux(pkt)
        for pkt in s.encode():
            out.mux(pkt)
    return path


# -- crafted timestamps and audio (issue 27: timestamps and audio that multiply the output) ---


def write_timed_video(
    path: Path, pts_ticks: list[int], *, time_base: Fraction, container: str | None = None
) -> Path:
    """One 32x32 intra-coded frame per entry of ``pts_ticks``, whose packets carry exactly those
    timestamps (pts = dts, in ``time_base``): a gap, a clock reset, a start near a wrap.
    Frame i is painted ``level(i)``."""
    import av

    path.parent.mkdir(parents=True, exist_ok=True)
    with av.open(str(path), "w", format=container) as out:
        s = out.add_stream("libx264", rate=10)
        s.width, s.height, s.pix_fmt = 32, 32, "yuv420p"
        s.codec_context.time_base = Fraction(1, 10)
        s.options = {"preset": "ultrafast", "bf": "0", "g": "1"}
        n = len(pts_ticks)
        for i in range(n + 1):
            frame = None
            if i < n:
                img = np.full((32, 32, 3), level(i), np.uint8)
                frame = av.VideoFrame.from_ndarray(img, format="rgb24")
                frame.pts, frame.time_base = i, Fraction(1, 10)
            for pkt in s.encode(frame):  # one packet per frame, in order (no B-frames)
                pkt.pts = pkt.dts = pts_ticks[pkt.pts]
                pkt.time_base = time_base
                out.mux(pkt)
    return path


def write_video_with_audio(
    path: Path,
    *,
    video_seconds: float = 1.0,
    audio_seconds: float = 600.0,
    fps: int = 10,
    sample_rate: int = 8000,
    tone_seconds: float = 2.0,
    damaged_packets: tuple[int, ...] = (),
) -> Path:
    """An mkv of ``video_seconds`` of 32x32 H.264 and ``audio_seconds`` of mono FLAC: a
    sine for the first ``tone_seconds``, then silence (which FLAC packs to a few bytes, so
    10 minutes take ~160 kB). The audio packets numbered in ``damaged_packets`` are replaced
    by random bytes of the same size (the decoder rejects them)."""
    import av

    path.parent.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    with av.open(str(path), "w") as out:
        v = out.add_stream("libx264", rate=fps)
        v.width, v.height, v.pix_fmt = 32, 32, "yuv420p"
        v.options = {"preset": "ultrafast", "bf": "0", "g": "1"}
        a = out.add_stream("flac", rate=sample_rate)
        a.layout = "mono"
        for i in range(round(video_seconds * fps)):
            f = av.VideoFrame.from_ndarray(np.full((32, 32, 3), level(i), np.uint8), "rgb24")
            f.pts = i
            for pkt in v.encode(f):
                out.mux(pkt)
        for pkt in v.encode():
            out.mux(pkt)
        count = 0

        def put(pkt) -> None:
            nonlocal count
            if count in damaged_packets:
                bad = av.Packet(rng.integers(0, 256, pkt.size, dtype=np.uint8).tobytes())
                bad.pts, bad.dts, bad.duration = pkt.pts, pkt.dts, pkt.duration
                bad.time_base, bad.stream = pkt.time_base, pkt.stream
                pkt = bad
            count += 1
            out.mux(pkt)

        tone = round(tone_seconds * sample_rate)
        t = np.arange(tone)
        loud = (np.sin(t / 5.0) * 8000).astype(np.int16)
        block = 4096
        for start in range(0, round(audio_seconds * sample_rate), block):
            x = np.zeros((1, block), np.int16)
            if start < tone:
                part = loud[start : start + block]
                x[0, : len(part)] = part
            fr = av.AudioFrame.from_ndarray(x, format="s16", layout="mono")
            fr.sample_rate, fr.pts = sample_rate, start
            for pkt in a.encode(fr):
                put(pkt)
        for pkt in a.encode():
            put(pkt)
    return path
