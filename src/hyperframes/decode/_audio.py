"""A source's audio, decoded once with PyAV and resampled to one rate and channel layout.

``decode_audio(path, rate=16000, channels=1)`` returns the first audio stream's samples as
float32 ``(channels, num_samples)`` (planar), with the time of the first sample in the
source's own seconds (the same clock as the video frames' ``pts_seconds``): sample ``n`` is at
``start_seconds + n / rate``. A file without an audio stream gives None.

Resampling is FFmpeg's (swresample through ``av.AudioResampler``); its output is contiguous,
so a gap in the source's audio timestamps is not reproduced (the samples close up). The start
is the first decoded audio frame's best-effort timestamp (its pts, else its dts); an AAC
stream's priming samples are in its timestamps already (the container's edit list), so they
do not shift the audio against the video.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from .._core._errors import DecodeError, InputError
from ._base import check_path

__all__ = ["AUDIO_LAYOUTS", "DecodedAudio", "decode_audio"]

#: channel count -> FFmpeg layout name
AUDIO_LAYOUTS = {1: "mono", 2: "stereo"}


@dataclasses.dataclass(frozen=True, repr=False)
class DecodedAudio:
    """``samples`` (channels, num_samples) float32 at ``sample_rate``; the first sample is at
    ``start_seconds`` (the source's seconds)."""

    samples: np.ndarray
    sample_rate: int
    start_seconds: float

    def __post_init__(self):
        if self.samples.ndim != 2 or self.samples.dtype != np.float32:
            raise ValueError(
                f"samples must be float32 (channels, num_samples), got {self.samples.dtype} "
                f"of shape {self.samples.shape}"
            )

    @property
    def channels(self) -> int:
        return int(self.samples.shape[0])

    @property
    def num_samples(self) -> int:
        return int(self.samples.shape[1])

    def __repr__(self) -> str:
        return (
            f"DecodedAudio(channels={self.channels}, num_samples={self.num_samples}, "
            f"sample_rate={self.sample_rate}, start_seconds={self.start_seconds:g})"
        )


def decode_audio(path: str, *, rate: int = 16000, channels: int = 1) -> DecodedAudio | None:
    """The first audio stream of ``path`` resampled to ``rate`` Hz and ``channels`` (1: mono,
    2: stereo), or None when the file has no audio stream. A stream that cannot be decoded is
    a DecodeError naming the file."""
    import av

    if channels not in AUDIO_LAYOUTS:
        raise ValueError(f"channels must be 1 or 2, got {channels}")
    if not (isinstance(rate, int) and rate > 0):
        raise ValueError(f"rate must be a positive integer, got {rate!r}")
    path = check_path(path)
    try:
        container = av.open(path, metadata_errors="ignore")
    except Exception as e:
        raise InputError(f"{path}: cannot be opened (PyAV: {e})") from e
    try:
        if not container.streams.audio:
            return None
        stream = container.streams.audio[0]
        for other in container.streams:  # the demuxer skips the other streams' packets
            if other.index != stream.index:
                other.discard = av.stream.Discard.all
        resampler = av.AudioResampler(format="fltp", layout=AUDIO_LAYOUTS[channels], rate=rate)
        parts: list[np.ndarray] = []
        start: float | None = None
        try:
            for frame in container.decode(stream):
                if start is None:
                    stamp = frame.pts if frame.pts is not None else frame.dts
                    if stamp is not None and frame.time_base is not None:
                        start = float(stamp * frame.time_base)
                for out in resampler.resample(frame):
                    parts.append(out.to_ndarray())
            for out in resampler.resample(None):
                parts.append(out.to_ndarray())
        except av.error.FFmpegError as e:
            raise DecodeError(f"{path}: audio stream {stream.index} cannot be decoded: {e}") from e
    finally:
        container.close()
    if parts:
        samples = np.ascontiguousarray(np.concatenate(parts, axis=1), dtype=np.float32)
    else:
        samples = np.zeros((channels, 0), np.float32)
    if start is None or not math.isfinite(start):
        start = 0.0
    return DecodedAudio(samples=samples, sample_rate=rate, start_seconds=start)
