"""A source's audio, decoded with PyAV as it is read and resampled to one rate and layout.

``stream_audio(path, rate=16000, channels=1, span_seconds=(t0, t1))`` opens the first audio
stream and gives its samples block by block (``AudioStream.blocks``: float32
``(channels, n)``, planar), keeping only those from ``t0 - margin`` to ``t1 + margin`` and
stopping the decode once past that, so memory stays one block whatever the audio's length and
a short video with hours of audio costs its own seconds. ``decode_audio`` gives the whole of it
(or the span) as one :class:`DecodedAudio`. Times are the source's own seconds (the clock of the
video frames' ``pts_seconds``): sample ``n`` is at ``start_seconds + n / rate``. A file
without an audio stream gives None.

Resampling is FFmpeg's (swresample through ``av.AudioResampler``); its output is contiguous,
so a gap in the source's audio timestamps is not reproduced (the samples close up). The start
is the first decoded audio frame's best-effort timestamp (its pts, else its dts); an AAC
stream's priming samples are in its timestamps already (the container's edit list), so they
do not shift the audio against the video.

Damage: as for video (``_pyav.decoded_frames``), a packet the decoder rejects is skipped and
counted; with a ``DecodeReport`` the audio decodes through damage (a failure that stops it
keeps the samples before it, counted as ``errors``), without one any damage is a DecodeError.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator

import numpy as np

from .._core._errors import DecodeError, InputError
from ._base import DecodeReport, check_path
from ._pyav import decoded_frames

__all__ = ["AUDIO_LAYOUTS", "AUDIO_MARGIN_SECONDS", "AudioStream", "DecodedAudio", "decode_audio"]

#: channel count -> FFmpeg layout name
AUDIO_LAYOUTS = {1: "mono", 2: "stereo"}
#: audio kept before and after the span asked for (``stream_audio``), in seconds
AUDIO_MARGIN_SECONDS = 0.5


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


class AudioStream:
    """The first audio stream of an opened file, decoded by :meth:`blocks` (once).

    After ``blocks`` is exhausted, ``num_samples`` is how many it gave and ``start_seconds``
    the time of the first of them (with none: the span's start, else 0).
    """

    def __init__(
        self,
        container,
        stream,
        path: str,
        *,
        rate: int,
        channels: int,
        span: tuple[float, float] | None,
        report: DecodeReport | None,
    ):
        self._container, self._stream, self.path = container, stream, path
        self.sample_rate, self.channels = rate, channels
        self._t0, self._t1 = span if span is not None else (-math.inf, math.inf)
        self._report = report
        self.num_samples = 0
        self.start_seconds: float | None = None

    def __enter__(self) -> AudioStream:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self._container.close()

    def blocks(self) -> Iterator[np.ndarray]:
        """float32 ``(channels, n)`` blocks of the kept samples, in order."""
        import av  # deferred: optional/heavy dependency

        rate = self.sample_rate
        resampler = av.AudioResampler(format="fltp", layout=AUDIO_LAYOUTS[self.channels], rate=rate)
        lo, hi = 0, None  # the kept samples, numbered from the first one decoded
        produced = 0
        begun = False
        frames = decoded_frames(self._container, self._stream, self._report)
        try:
            for frame in frames:
                if not begun:
                    begun = True
                    start = _seconds(frame)
                    lo, hi = self._window(start)
                    self.start_seconds = start + lo / rate
                for out in resampler.resample(frame):
                    block = out.to_ndarray()
                    yield from self._keep(block, produced, lo, hi)
                    produced += block.shape[1]
                if hi is not None and produced >= hi:
                    break  # past the span: the rest is never decoded
            else:
                for out in resampler.resample(None):
                    block = out.to_ndarray()
                    yield from self._keep(block, produced, lo, hi)
                    produced += block.shape[1]
        except (av.error.FFmpegError, ValueError) as e:
            if self._report is None:
                raise DecodeError(
                    f"{self.path}: audio stream {self._stream.index} cannot be decoded: {e}"
                ) from e
            self._report.add(
                "errors",
                message=f"audio stream {self._stream.index} stopped decoding after "
                f"{self.num_samples} samples: {e}",
            )
        finally:
            frames.close()
        if self.start_seconds is None:
            self.start_seconds = self._t0 if math.isfinite(self._t0) else 0.0

    def _window(self, start: float) -> tuple[int, int | None]:
        """Sample numbers ``lo .. hi`` (hi None: to the end) of the span, the first decoded
        sample being at ``start`` seconds."""
        rate = self.sample_rate
        lo = max(0, math.ceil((self._t0 - start) * rate - 1e-6)) if math.isfinite(self._t0) else 0
        if not math.isfinite(self._t1):
            return lo, None
        return lo, max(lo, math.floor((self._t1 - start) * rate + 1e-6))

    def _keep(self, block: np.ndarray, first: int, lo: int, hi: int | None) -> Iterator[np.ndarray]:
        a = max(lo - first, 0)
        b = block.shape[1] if hi is None else min(hi - first, block.shape[1])
        if b > a:
            self.num_samples += b - a
            yield np.ascontiguousarray(block[:, a:b], dtype=np.float32)


def _seconds(frame) -> float:
    stamp = frame.pts if frame.pts is not None else frame.dts
    if stamp is None or frame.time_base is None:
        return 0.0
    t = float(stamp * frame.time_base)
    return t if math.isfinite(t) else 0.0


def stream_audio(
    path: str,
    *,
    rate: int = 16000,
    channels: int = 1,
    span_seconds: tuple[float, float] | None = None,
    report: DecodeReport | None = None,
) -> AudioStream | None:
    """The first audio stream of ``path``, to be decoded by ``AudioStream.blocks`` (close it
    after, or use it as a context manager); None when the file has none. ``span_seconds``
    ``(t0, t1)``: keep only the samples from ``t0`` to ``t1`` (the source's seconds), with
    :data:`AUDIO_MARGIN_SECONDS` either side. ``report``: count the decoder's error signals
    there and decode through them (else damage is a DecodeError)."""
    import av  # deferred: optional/heavy dependency

    if channels not in AUDIO_LAYOUTS:
        raise ValueError(f"channels must be 1 or 2, got {channels}")
    if not (isinstance(rate, int) and rate > 0):
        raise ValueError(f"rate must be a positive integer, got {rate!r}")
    span = None
    if span_seconds is not None:
        t0, t1 = (float(t) for t in span_seconds)
        if not (math.isfinite(t0) and math.isfinite(t1) and t1 >= t0):
            raise ValueError(
                f"span_seconds must be finite (t0, t1) with t1 >= t0, got {span_seconds}"
            )
        span = (t0 - AUDIO_MARGIN_SECONDS, t1 + AUDIO_MARGIN_SECONDS)
    path = check_path(path)
    try:
        container = av.open(path, metadata_errors="ignore")
    except Exception as e:
        raise InputError(f"{path}: cannot be opened (PyAV: {e})") from e
    if not container.streams.audio:
        container.close()
        return None
    stream = container.streams.audio[0]
    for other in container.streams:  # the demuxer skips the other streams' packets
        if other.index != stream.index:
            other.discard = av.stream.Discard.all
    return AudioStream(
        container, stream, path, rate=rate, channels=channels, span=span, report=report
    )


def decode_audio(
    path: str,
    *,
    rate: int = 16000,
    channels: int = 1,
    span_seconds: tuple[float, float] | None = None,
) -> DecodedAudio | None:
    """The first audio stream of ``path`` resampled to ``rate`` Hz and ``channels`` (1: mono,
    2: stereo), or None when the file has no audio stream; ``span_seconds`` as
    :func:`stream_audio` takes it. A stream that cannot be decoded cleanly is a DecodeError
    naming the file."""
    report = DecodeReport()
    audio = stream_audio(
        path, rate=rate, channels=channels, span_seconds=span_seconds, report=report
    )
    if audio is None:
        return None
    with audio:
        parts = list(audio.blocks())
    if report.total:
        raise DecodeError(
            f"{audio.path}: the audio stream is damaged: the decoder reported {report}"
        )
    if parts:
        samples = np.ascontiguousarray(np.concatenate(parts, axis=1), dtype=np.float32)
    else:
        samples = np.zeros((channels, 0), np.float32)
    assert audio.start_seconds is not None  # set once blocks() is exhausted
    return DecodedAudio(samples=samples, sample_rate=rate, start_seconds=audio.start_seconds)
