"""Build options: every option of a build declared once, and which of them define a store's content.

:class:`BuildOptions` is a frozen, strict model (``_core._validate.Options``): each field's type,
bounds and allowed values are its declaration, its ``description`` is the help of
``hyperframes build --OPTION`` (the command line generates its options from these fields), and
a bad value is a :class:`ConfigError` naming the option, the value and what is allowed. A field's
``json_schema_extra`` may hold ``error`` (the option's own message), ``flag`` and ``metavar``
(how the command line spells it) or ``cli: False`` (an option of the library only).
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import BeforeValidator, Field, field_validator, model_validator
from pydantic.config import JsonDict
from pydantic_core import PydanticCustomError

from .._core._contract import IMAGENET_MEAN, IMAGENET_STD
from .._core._errors import ConfigError
from .._core._sizes import (
    DEFAULT_MAX_FRAMES,
    DEFAULT_MAX_GAP_SECONDS,
    DEFAULT_MAX_PIXELS,
    DEFAULT_SIZE,
    parse_size,
)
from .._core._validate import Number, Options, as_tuple
from ..store import Codec, codec_parameters, create_codec, list_codecs

__all__ = ["CODEC_OPTIONS", "DEFAULT_MAX_PIXELS", "BuildOptions", "make_codec"]

#: build option -> the codec parameter it gives (``store._codecs``: each codec takes its own)
CODEC_OPTIONS = {"jpeg_quality": "quality", "chunk_frames": "chunk_frames"}

#: the messages of options whose words say more than the shared ones
POSITIVE: JsonDict = {"error": "{key} must be a positive number, got {value}"}
AT_LEAST_1: JsonDict = {"error": "{key} must be at least 1, got {value}"}
MAX_FRAMES: JsonDict = {
    "error": "{key} must be a whole number of frames, at least 1, got {value}; it bounds what "
    "one video may store"
}
MAX_GAP: JsonDict = {
    "error": "{key} must be a positive number of seconds or None (no bound), got {value}"
}
LIBRARY_ONLY: JsonDict = {"cli": False}
#: the most frames per chunk and decoding workers a build takes
MAX_COUNT = 1024

#: a rate or a length of time: a finite number > 0 (an int stays an int: ``_validate.Number``)
Positive = Annotated[Number, Field(gt=0, allow_inf_nan=False)]
#: mean and std: three numbers, given as a tuple or a list
Triple = Annotated[tuple[float, float, float], BeforeValidator(as_tuple)]


def _not_bool(value):
    if isinstance(value, bool):  # True == 1: a Literal of numbers would take it
        raise PydanticCustomError("literal_error", "Input should be an allowed number, not a bool")
    return value


class BuildOptions(Options):
    """Every option of a build; made by keyword (``BuildOptions(fps=2, codec="lz4")``), changed
    with :meth:`replace`. :meth:`content` is what a store records and a resumed build compares."""

    fps: Positive | None = Field(
        None,
        json_schema_extra=POSITIVE,
        description="resample every video to this rate, down or up (a slower source gets "
        "repeated frames; the summary and info count them) (default: native)",
    )
    fps_max: Positive | None = Field(
        None,
        json_schema_extra={**POSITIVE, "metavar": "N"},
        description="resample down to N fps only the videos whose rate is higher; never upsample",
    )
    size: str = Field(
        DEFAULT_SIZE,
        description="stored frame size: short side (128), HxW (112x112) or none (native)",
    )
    codec: str = Field(
        "raw",
        description="how frames are stored; raw reads fastest, lz4/zstd are lossless and "
        "smaller, yuv420 half of raw (I420 planes), jpeg lossy and smallest",
    )
    dtype: Literal["uint8", "float16"] = Field("uint8", description="stored pixel type")
    decoder: str = Field("pyav", description="library that decodes the videos")
    stream: int | None = Field(
        None,
        ge=0,
        description="video stream to decode, v:K (or K) counting video streams only, v:0 the "
        "first (default: each file's widest)",
    )
    jpeg_quality: int = Field(90, ge=1, le=100, description="with --codec jpeg: quality 1-100")
    chunk_frames: int = Field(
        4, ge=1, json_schema_extra=AT_LEAST_1, description="frames per lz4/zstd chunk"
    )
    mean: Triple = Field(
        IMAGENET_MEAN,
        json_schema_extra=LIBRARY_ONLY,
        description="with dtype float16: the per-channel mean (of pixels in 0..1) subtracted",
    )
    std: Triple = Field(
        IMAGENET_STD,
        json_schema_extra=LIBRARY_ONLY,
        description="with dtype float16: the per-channel std (of pixels in 0..1) divided by",
    )
    frame_folder_fps: Positive = Field(
        30.0,
        json_schema_extra={"flag": "--frame-fps"},
        description="rate of frame folders",
    )
    format: Literal["store", "hdf5"] = Field("store", description="a store folder or one HDF5 file")
    hdf5_compression: Literal["lzf", "blosc", "gzip", "none"] = Field(
        "lzf", description="with --format hdf5: dataset compression"
    )
    on_damaged: Literal["keep", "fail"] = Field(
        "keep",
        description="a video the decoder reports errors for: keep it (listed under 'damaged', "
        "exit status 2) or fail it",
    )
    max_gap: Positive | None = Field(
        DEFAULT_MAX_GAP_SECONDS,
        json_schema_extra=MAX_GAP,
        description="with --fps: two frames further apart than this (seconds) are not bridged "
        "by repeated frames; the gap is skipped (the frames after it keep their times) and "
        "listed in the build summary; 'none' for no bound",
    )
    # tracks (``store.format``): audio decoded once, optical flow between stored frames
    audio: bool = Field(
        False,
        description="also store each video's first audio stream, decoded once (videos without "
        "one are stored without audio)",
    )
    audio_rate: int = Field(
        16000, ge=1000, le=384000, description="with --audio: sample rate in Hz"
    )
    audio_channels: Annotated[Literal[1, 2], BeforeValidator(_not_bool)] = Field(
        1, description="with --audio: 1 mono or 2 stereo"
    )
    flow: Literal["dis", "farneback"] | None = Field(
        None,
        description="also store OpenCV optical flow between consecutive stored frames, and one "
        "homography per pair (needs opencv)",
    )
    flow_size: str | None = Field(
        None,
        description="with --flow: flow size as --size takes it, a short side (64) or HxW "
        "(48x64) (default: the stored frame size)",
    )
    flow_dtype: Literal["float16", "int8"] = Field(
        "float16", description="with --flow: stored as float16 or int8 with a scale per video"
    )
    # not part of the content:
    max_pixels: int = Field(
        DEFAULT_MAX_PIXELS,
        ge=1,
        json_schema_extra=AT_LEAST_1,
        description="refuse videos whose frames exceed this many pixels; 8K frames pass the "
        "default",
    )
    max_frames: int = Field(
        DEFAULT_MAX_FRAMES,
        ge=1,
        json_schema_extra=MAX_FRAMES,
        description="a video that would store more frames than this fails, naming the count, "
        "and nothing of it is kept",
    )
    workers: int = Field(
        1,
        ge=1,
        json_schema_extra=AT_LEAST_1,
        description="decoding processes, or with --engine ray decoding actors of one CPU each",
    )
    shard_bytes: int = Field(
        1 << 30, ge=1, json_schema_extra=LIBRARY_ONLY, description="bytes per shard file"
    )
    boxes: str | None = Field(
        None,
        json_schema_extra={"metavar": "CSV"},
        description="boxes per frame for detection: a CSV of path,time,x1,y1,x2,y2,label "
        "(corners normalised to [0, 1], time in seconds on the video's clock) or AVA's layout; "
        "stored as index/boxes.npy, each box on the stored frame nearest its time",
    )
    allow_outside_root: bool = Field(
        False,
        description="store files an annotation lists outside --root (a '../' or absolute path, "
        "or a link leading out); without it such rows fail, each listed",
    )

    #: options that do not change what the store holds (may differ between resumed runs)
    RUNTIME: ClassVar[tuple[str, ...]] = (
        "workers",
        "shard_bytes",
        "format",
        "hdf5_compression",
        "max_pixels",
        "max_frames",
        "allow_outside_root",
        "boxes",  # read again at every assembly: the annotation as it is now
    )

    @field_validator("size")
    @classmethod
    def _size(cls, size: str) -> str:
        parse_size(size)
        return size

    @field_validator("flow_size")
    @classmethod
    def _flow_size(cls, size: str | None) -> str | None:
        if size is not None:
            parse_size(size, where="flow_size")
        return size

    @field_validator("chunk_frames", "workers")
    @classmethod
    def _at_most(cls, value: int, info) -> int:
        if value > MAX_COUNT:  # each drives memory or processes: bounded like every size
            raise ConfigError(f"{info.field_name} must be at most {MAX_COUNT}, got {value}")
        return value

    @field_validator("codec")
    @classmethod
    def _codec(cls, codec: str) -> str:
        if codec not in list_codecs():
            raise ConfigError(f"codec must be one of {', '.join(list_codecs())}, got {codec!r}")
        return codec

    @model_validator(mode="after")
    def _together(self) -> BuildOptions:
        if self.fps is not None and self.fps_max is not None:
            raise ConfigError(
                f"fps_max {self.fps_max:g} given with fps {self.fps:g}: give one; fps resamples "
                "every video to that rate (up or down), fps_max only those faster than it"
            )
        held = create_codec(self.codec).dtypes
        if self.dtype not in held:
            raise ConfigError(
                f"codec {self.codec} stores {' or '.join(held)} only; use dtype "
                f"{held[0]} or another codec"
            )
        return self

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
        d = self.as_dict()
        for k in self.RUNTIME:
            d.pop(k)
        d["mean"], d["std"] = list(self.mean), list(self.std)
        if self.dtype == "uint8":
            d.pop("mean")
            d.pop("std")
        taken = codec_parameters(self.codec)
        for option, param in CODEC_OPTIONS.items():
            if param not in taken:  # recorded for the codecs that take it
                d.pop(option)
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


def make_codec(options: BuildOptions) -> Codec:
    """The codec a build with ``options`` stores frames with (its parameters from the options
    in ``CODEC_OPTIONS``; the manifest records ``codec.params``)."""
    params = {param: getattr(options, option) for option, param in CODEC_OPTIONS.items()}
    return create_codec(options.codec, **params)
