"""Build options: parsing, validation, and which of them define a store's content."""

from __future__ import annotations

import dataclasses
import math
import numbers

from .._core._contract import IMAGENET_MEAN, IMAGENET_STD
from .._core._errors import ConfigError
from .._core._sizes import (
    DEFAULT_MAX_FRAMES,
    DEFAULT_MAX_GAP_SECONDS,
    DEFAULT_MAX_PIXELS,
    DEFAULT_SIZE,
    parse_size,
)
from ._flow import FLOW_DTYPES, FLOW_METHODS

DTYPES = ("uint8", "float16")
FORMATS = ("store", "hdf5")
ON_DAMAGED = ("keep", "fail")
AUDIO_CHANNELS = (1, 2)


@dataclasses.dataclass(frozen=True)
class BuildOptions:
    fps: float | None = None  # None: keep every decoded frame
    #: resample down to this rate a source whose header rate is faster; never up (None: off)
    fps_max: float | None = None
    size: str = DEFAULT_SIZE  # "128" short side, "112x112" exact HxW, "none" native
    codec: str = "raw"
    dtype: str = "uint8"
    decoder: str = "pyav"
    stream: int | None = None  # index among video streams; None = best
    jpeg_quality: int = 90
    chunk_frames: int = 4
    mean: tuple[float, float, float] = IMAGENET_MEAN
    std: tuple[float, float, float] = IMAGENET_STD
    frame_folder_fps: float = 30.0
    format: str = "store"
    hdf5_compression: str = "lzf"
    on_damaged: str = "keep"  # a video the decoder reported errors for: keep (listed) or fail
    # frames further apart than this (seconds) are not bridged by repeated frames at ``fps``:
    # the gap is skipped and listed (None: no bound)
    max_gap: float | None = DEFAULT_MAX_GAP_SECONDS
    # tracks (``_format``): audio decoded once, optical flow between stored frames
    audio: bool = False
    audio_rate: int = 16000  # Hz
    audio_channels: int = 1  # 1 mono, 2 stereo
    flow: str | None = None  # None, "dis" or "farneback"
    flow_size: str | None = None  # as ``size``; None = the stored frame size
    flow_dtype: str = "float16"  # or "int8" (with a scale per video)
    # not part of the content:
    max_pixels: int = DEFAULT_MAX_PIXELS  # frames larger than this are refused before decoding
    max_frames: int = DEFAULT_MAX_FRAMES  # a video that would store more fails (nothing kept)
    workers: int = 1
    shard_bytes: int = 1 << 30

    #: options that do not change what the store holds (may differ between resumed runs)
    RUNTIME = ("workers", "shard_bytes", "format", "hdf5_compression", "max_pixels", "max_frames")

    def __post_init__(self):
        from ..store import list_codecs

        parse_size(self.size)
        if self.codec not in list_codecs():
            raise ConfigError(
                f"codec must be one of {', '.join(list_codecs())}, got {self.codec!r}"
            )
        for name in ("fps", "fps_max"):
            value = getattr(self, name)
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, numbers.Real) or not value > 0
            ):
                raise ConfigError(f"{name} must be a positive number, got {value!r}")
        if self.fps is not None and self.fps_max is not None:
            raise ConfigError(
                f"fps_max {self.fps_max:g} given with fps {self.fps:g}: give one; fps resamples "
                "every video to that rate (up or down), fps_max only those faster than it"
            )
        if self.dtype not in DTYPES:
            raise ConfigError(f"dtype must be one of {', '.join(DTYPES)}, got {self.dtype!r}")
        if self.dtype == "float16" and self.codec == "jpeg":
            raise ConfigError("codec jpeg stores uint8 only; use dtype uint8 or another codec")
        if self.format not in FORMATS:
            raise ConfigError(f"format must be one of {', '.join(FORMATS)}, got {self.format!r}")
        if self.workers < 1:
            raise ConfigError(f"workers must be at least 1, got {self.workers}")
        if self.on_damaged not in ON_DAMAGED:
            raise ConfigError(
                f"on_damaged must be one of {', '.join(ON_DAMAGED)}, got {self.on_damaged!r}"
            )
        if self.max_pixels < 1:
            raise ConfigError(f"max_pixels must be at least 1, got {self.max_pixels}")
        mf = self.max_frames
        if isinstance(mf, bool) or not isinstance(mf, int) or mf < 1:
            raise ConfigError(
                f"max_frames must be a whole number of frames, at least 1, got {mf!r}; it "
                "bounds what one video may store"
            )
        gap = self.max_gap
        if gap is not None and (
            isinstance(gap, bool)
            or not isinstance(gap, (int, float))
            or not math.isfinite(gap)
            or gap <= 0
        ):
            raise ConfigError(
                f"max_gap must be a positive number of seconds or None (no bound), got {gap!r}"
            )
        if self.chunk_frames < 1:
            raise ConfigError(f"chunk_frames must be at least 1, got {self.chunk_frames}")
        self._check_tracks()

    def _check_tracks(self) -> None:
        if not isinstance(self.audio, bool):
            raise ConfigError(f"audio must be True or False, got {self.audio!r}")
        rate = self.audio_rate
        if isinstance(rate, bool) or not isinstance(rate, int) or not 1000 <= rate <= 384000:
            raise ConfigError(f"audio_rate must be an integer of Hz in 1000..384000, got {rate!r}")
        if self.audio_channels not in AUDIO_CHANNELS or isinstance(self.audio_channels, bool):
            raise ConfigError(
                f"audio_channels must be 1 (mono) or 2 (stereo), got {self.audio_channels!r}"
            )
        if self.flow is not None and self.flow not in FLOW_METHODS:
            raise ConfigError(
                f"flow must be one of {', '.join(FLOW_METHODS)} (or None: no flow), got "
                f"{self.flow!r}"
            )
        if self.flow_size is not None:
            parse_size(self.flow_size, where="flow_size")
        if self.flow_dtype not in FLOW_DTYPES:
            raise ConfigError(
                f"flow_dtype must be one of {', '.join(FLOW_DTYPES)}, got {self.flow_dtype!r}"
            )

    def target_fps(self, native_fps: float | None) -> float | None:
        """The rate a source of ``native_fps`` (its header's; None: unknown) is resampled to,
        or None to keep every decoded frame: ``fps``; under ``fps_max``, ``fps_max`` when the
        source is faster, else None (a source of unknown rate is kept as it is)."""
        if self.fps is not None:
            return float(self.fps)
        if self.fps_max is not None and native_fps and native_fps > self.fps_max * (1 + 1e-6):
            return float(self.fps_max)
        return None

    def content(self) -> dict:
        """The options that define the stored content (compared when a build resumes)."""
        d = dataclasses.asdict(self)
        for k in self.RUNTIME:
            d.pop(k)
        d["mean"], d["std"] = list(self.mean), list(self.std)
        if self.dtype == "uint8":
            d.pop("mean")
            d.pop("std")
        if self.codec != "jpeg":
            d.pop("jpeg_quality")
        if self.codec not in ("lz4", "zstd"):
            d.pop("chunk_frames")
        if self.fps_max is None:
            d.pop("fps_max")  # recorded when given (a store built without reads as before)
        # tracks are recorded when asked for (a store without them reads as before)
        if not self.audio:
            for k in ("audio", "audio_rate", "audio_channels"):
                d.pop(k)
        if self.flow is None:
            for k in ("flow", "flow_size", "flow_dtype"):
                d.pop(k)
        if self.fps is None:  # frames pass through: the bound changes only what is listed
            d.pop("max_gap")
        return d
