"""Audio windows: a log-mel spectrogram aligned column by column with a window's frames.

Pure functions (torch and numpy only, no store): the dataset reads one span of samples per
window (:meth:`Store.read_audio`) and gives it to :func:`logmel_columns` with the times
:func:`column_times` plans.

**Time alignment.** A window shows T frames at stored pts ``t_0 .. t_{T-1}``. Frame ``j`` is
on screen during ``[t_j, t_j + d_j)`` with ``d_j = t_{j+1} - t_j`` (the next frame *of the
window*, so a stride or a sampler with gaps spreads the frame's columns over the stored frames
it stands for); the last frame lasts as long as the step before it, and a window of one frame
(or a step that is not positive: repeated or reordered frames) lasts one frame period
``1 / fps``. Each frame has ``k`` columns, column ``i`` of frame ``j`` centred at
``t_j + (i + 0.5) * d_j / k``: columns ``j*k .. j*k + k - 1`` belong to frame ``j``, each at
its own time by pts, so strides, gaps and variable frame rates stay aligned.

**Spectrum.** Each column is one STFT frame centred at its time: ``window_ms`` of samples
(zero outside the stored audio), a periodic Hann window, an rfft of ``n_fft`` (the next
power of two), the power spectrum through a triangular mel filterbank on the HTK mel scale
(``mel = 2595 log10(1 + f / 700)``, filters peaking at 1, ``fmin`` .. ``fmax`` = 0 .. rate/2),
then ``log(mel + eps)`` (natural log, ``eps = 1e-6``). Several channels are averaged to mono.
Samples are float in [-1, 1].
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping
from typing import Any

import numpy as np
import torch

from .._core._errors import ConfigError

__all__ = [
    "AUDIO_MISSING",
    "LogMelOptions",
    "column_grid",
    "column_times",
    "frame_intervals",
    "frame_intervals_batch",
    "frames_at",
    "logmel_columns",
    "logmel_of",
    "mel_filterbank",
    "resolve_audio",
]

#: what a dataset does for a video with no stored audio
AUDIO_MISSING = ("zeros", "error")


@dataclasses.dataclass(frozen=True)
class LogMelOptions:
    """Parameters of the log-mel columns (module doc)."""

    n_mels: int = 64
    window_ms: float = 25.0
    columns_per_frame: int = 4
    fmin: float = 0.0
    fmax: float | None = None
    eps: float = 1e-6

    def __post_init__(self) -> None:
        for name in ("n_mels", "columns_per_frame"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= 1024:
                raise ConfigError(f"audio {name} must be an integer from 1 to 1024, got {v!r}")
        w = self.window_ms
        if isinstance(w, bool) or not isinstance(w, int | float) or not 1 <= w <= 1000:
            raise ConfigError(f"audio window_ms must be a number from 1 to 1000, got {w!r}")
        if self.fmin < 0 or (self.fmax is not None and self.fmax <= self.fmin):
            raise ConfigError(
                f"audio fmin/fmax: need 0 <= fmin < fmax, got fmin={self.fmin!r}, "
                f"fmax={self.fmax!r}"
            )
        if not self.eps > 0:
            raise ConfigError(f"audio eps must be > 0, got {self.eps!r}")

    def window_samples(self, rate: int) -> int:
        """Samples of one STFT frame at ``rate`` Hz (at least 2)."""
        return max(2, round(self.window_ms * rate / 1000.0))

    def n_fft(self, rate: int) -> int:
        return 1 << (self.window_samples(rate) - 1).bit_length()

    def to_dict(self) -> dict:
        return {
            "n_mels": self.n_mels,
            "window_ms": float(self.window_ms),
            "columns_per_frame": self.columns_per_frame,
        }


_KEYS = ("n_mels", "window_ms", "columns_per_frame", "fmin", "fmax", "eps")


def resolve_audio(audio: Any) -> LogMelOptions | None:
    """``audio=`` of a dataset: None (no audio), ``"logmel"`` (the defaults), a mapping of
    :class:`LogMelOptions` fields (``n_mels``, ``window_ms``, ``columns_per_frame``...) or
    a :class:`LogMelOptions`."""
    if audio is None or audio is False:
        return None
    if isinstance(audio, LogMelOptions):
        return audio
    if audio == "logmel" or audio is True:
        return LogMelOptions()
    if isinstance(audio, Mapping):
        kind = audio.get("kind", "logmel")
        unknown = sorted(str(k) for k in audio if k not in (*_KEYS, "kind"))
        if kind != "logmel" or unknown:
            raise ConfigError(
                f"audio={dict(audio)!r}: unknown keys {unknown} or kind {kind!r}; allowed keys: "
                f"{', '.join(_KEYS)} (kind: logmel)"
            )
        return LogMelOptions(**{k: audio[k] for k in _KEYS if k in audio})
    raise ConfigError(
        f"audio={audio!r:.80}: allowed: None, 'logmel' or a dict with n_mels, window_ms, "
        "columns_per_frame"
    )


def frame_intervals(pts_seconds, fps: float) -> tuple[np.ndarray, np.ndarray]:
    """(start, duration) in seconds of each frame of a window shown at ``pts_seconds`` (T,)
    (module doc: ``d_j = t_{j+1} - t_j``, the last frame as the step before it, ``1/fps``
    where a step is not positive)."""
    t = np.asarray(pts_seconds, np.float64).reshape(1, -1)
    start, dur = frame_intervals_batch(t, [fps], np.ones(t.shape, bool))
    return start[0], dur[0]


def frame_intervals_batch(pts_seconds, fps, mask) -> tuple[np.ndarray, np.ndarray]:
    """:func:`frame_intervals` of B windows at once: ``pts_seconds`` (B, T), ``fps`` (B,),
    ``mask`` (B, T) the frames that count (a window's padding is left out: each valid frame
    lasts until the next valid one). (start, duration) (B, T); unmasked entries are
    meaningless."""
    t = np.asarray(pts_seconds, np.float64)
    m = np.asarray(mask, bool)
    rate = np.asarray(fps, np.float64).reshape(-1)
    ok = np.isfinite(rate) & (rate > 0)
    period = np.where(ok, 1.0 / np.where(ok, rate, 1.0), 1.0 / 30.0)[:, None]
    order = np.argsort(~m, axis=1, kind="stable")  # the valid frames first, in order
    start = np.take_along_axis(t, order, 1)
    count = m.sum(1)
    d = np.broadcast_to(period, t.shape).copy()
    if t.shape[1] > 1:
        steps = np.diff(start, axis=1)
        inner = np.arange(t.shape[1] - 1)[None, :] < (count - 1)[:, None]
        d[:, :-1] = np.where(inner, steps, d[:, :-1])
        rows = np.flatnonzero(count > 1)
        d[rows, count[rows] - 1] = steps[rows, count[rows] - 2]
    d = np.where(d > 0, d, period)
    dur = np.empty_like(d)
    np.put_along_axis(dur, order, d, 1)
    return t, dur


def column_times(pts_seconds, fps: float, columns_per_frame: int) -> np.ndarray:
    """Centre time (seconds) of each of the T*k columns: ``t_j + (i + 0.5) * d_j / k``."""
    start, dur = frame_intervals(pts_seconds, fps)
    return column_grid(start, dur, columns_per_frame).reshape(-1)


def column_grid(start: np.ndarray, dur: np.ndarray, columns_per_frame: int) -> np.ndarray:
    """(..., T, k) column centres of frames starting at ``start`` lasting ``dur`` (..., T)."""
    k = int(columns_per_frame)
    offsets = (np.arange(k, dtype=np.float64) + 0.5) / k
    return start[..., None] + offsets * dur[..., None]


def mel_filterbank(
    n_mels: int, n_fft: int, rate: int, fmin: float = 0.0, fmax: float | None = None
) -> torch.Tensor:
    """(n_fft // 2 + 1, n_mels) triangular filters on the HTK mel scale, each peaking at 1."""
    return _filterbank(int(n_mels), int(n_fft), int(rate), float(fmin), fmax).clone()


@functools.lru_cache(maxsize=16)
def _filterbank(n_mels: int, n_fft: int, rate: int, fmin: float, fmax: float | None):
    fmax = rate / 2.0 if fmax is None else min(float(fmax), rate / 2.0)

    def mel(f):
        return 2595.0 * np.log10(1.0 + np.asarray(f, np.float64) / 700.0)

    def hz(m):
        return 700.0 * (10.0 ** (np.asarray(m, np.float64) / 2595.0) - 1.0)

    edges = hz(np.linspace(mel(fmin), mel(fmax), n_mels + 2))
    freqs = np.arange(n_fft // 2 + 1) * rate / n_fft
    lo, mid, hi = edges[:-2, None], edges[1:-1, None], edges[2:, None]
    up = (freqs[None] - lo) / np.maximum(mid - lo, 1e-9)
    down = (hi - freqs[None]) / np.maximum(hi - mid, 1e-9)
    fb = np.clip(np.minimum(up, down), 0.0, None)
    return torch.from_numpy(fb.T.astype(np.float32))


def logmel_columns(
    samples,
    rate: int,
    first_sample_seconds: float,
    times_seconds,
    options: LogMelOptions,
) -> torch.Tensor:
    """(n_mels, M) log-mel of the STFT frames centred at ``times_seconds`` (M,), from
    ``samples`` (C, N) or (N,) whose first sample is at ``first_sample_seconds``; samples
    outside the array count as silence."""
    x = torch.as_tensor(np.asarray(samples, np.float32))
    if x.ndim == 2:
        x = x.mean(0)
    x = x.reshape(-1)
    times = np.asarray(times_seconds, np.float64).reshape(-1)
    win = options.window_samples(rate)
    centre = np.rint((times - first_sample_seconds) * rate).astype(np.int64)
    start = centre - win // 2
    # only the stretch the columns touch (each frame read as n_fft samples, of which the
    # window keeps the first win), zero-padded where they reach past the samples
    n_fft = options.n_fft(rate)
    lo, hi = int(start.min()), int(start.max()) + n_fft
    span = torch.zeros(hi - lo, dtype=torch.float32)
    a, b = max(lo, 0), min(hi, x.numel())
    if b > a:
        span[a - lo : b - lo] = x[a:b]
    return logmel_of(frames_at(span, start - lo, n_fft), int(rate), options).T.contiguous()


def frames_at(span: torch.Tensor, starts: np.ndarray, win: int) -> torch.Tensor:
    """(M, win): the ``win`` samples of ``span`` from each of ``starts`` (M,), copied as rows
    of a strided view (no per-sample index)."""
    return span.unfold(0, win, 1).index_select(0, torch.from_numpy(np.asarray(starts, np.int64)))


@functools.lru_cache(maxsize=16)
def _twice(fb: torch.Tensor) -> torch.Tensor:
    return fb.repeat_interleave(2, dim=0)


@functools.lru_cache(maxsize=8)
def _hann(win: int, n_fft: int) -> torch.Tensor:
    """A periodic Hann window of ``win`` samples, zero to ``n_fft``."""
    out = torch.zeros(n_fft)
    out[:win] = torch.hann_window(win, periodic=True)
    return out


def logmel_of(frames: torch.Tensor, rate: int, options: LogMelOptions) -> torch.Tensor:
    """(M, n_mels) log-mel of ``frames`` (M, n_fft) of samples (module doc: the first
    window_samples of each are windowed, the rest count as zeros; an rfft of n_fft, the
    power through the mel filterbank, ``log(mel + eps)``). One batched transform for all M
    frames (of any number of windows); ``frames`` is overwritten."""
    win, n_fft = options.window_samples(rate), options.n_fft(rate)
    # the rfft of a whole n_fft row: torch's own zero padding (n=) is several times slower
    spec = torch.fft.rfft(frames.mul_(_hann(win, n_fft)))
    parts = torch.view_as_real(spec).square_().flatten(1)  # (M, 2 (n_fft//2+1)): re², im²
    fb = _filterbank(options.n_mels, n_fft, int(rate), float(options.fmin), options.fmax)
    # the power re² + im² summed by the filterbank's matmul: each filter row twice
    return torch.log_(parts @ _twice(fb) + options.eps)
