"""The decoder backend interface and its registry.

A backend opens one video and streams its frames **in decode order, one at a time**, each with
its presentation time in seconds and its index among the frames actually decoded. Pixels are
converted to RGB only when asked (``to_rgb``), so frames that a frame-rate resampler drops cost
no colour conversion. Nothing here knows about stores, sampling or models.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from typing import Protocol

import numpy as np

from .._errors import ConfigError

__all__ = [
    "DecodedFrame",
    "Decoder",
    "VideoInfo",
    "create_decoder",
    "list_decoders",
    "register_decoder",
]


@dataclasses.dataclass(frozen=True)
class VideoInfo:
    """What a container says about the chosen video stream (the header: it may lie)."""

    path: str
    stream_index: int  # index among the file's *video* streams (0 = v:0)
    codec: str
    width: int  # as displayed, after rotation is applied
    height: int
    fps: float | None  # average frame rate from the header, None when unknown
    num_frames_from_header: int | None  # None when the container does not say
    duration_seconds: float | None
    rotation: int = 0  # degrees clockwise applied to decoded frames to display them
    pix_fmt: str | None = None
    color_matrix: str | None = None  # e.g. "bt709", "bt601"; None = unspecified
    color_range: str | None = None  # "tv" (limited) or "pc" (full); None = unspecified


class DecodedFrame(Protocol):
    """One decoded frame. ``index`` counts decoded frames from 0; ``pts_seconds`` is finite."""

    index: int
    pts_seconds: float

    def to_rgb(self, size: tuple[int, int] | None = None) -> np.ndarray:
        """Return the frame as an (H, W, 3) uint8 RGB array, resized to ``size=(height, width)``."""


class Decoder(Protocol):
    """A decoder backend. Instances are cheap; ``open`` does the work."""

    name: str
    #: how this backend resizes, recorded in store manifests ("swscale-area", "pil-bilinear", ...)
    resize_algorithm: str

    def version(self) -> str: ...

    def probe(self, path: str, *, stream: int | None = None) -> VideoInfo:
        """Read the header of ``path``; ``stream=None`` picks the best video stream."""

    def frames(self, path: str, *, stream: int | None = None) -> Iterator[DecodedFrame]:
        """Decode ``path`` once, in order, in bounded memory, yielding every decoded frame."""


_REGISTRY: dict[str, Callable[[], Decoder]] = {}
_UNAVAILABLE_HINT: dict[str, str] = {}


def register_decoder(name: str, *, install_hint: str = "") -> Callable:
    """Class decorator adding a backend to the registry under ``name``."""

    def wrap(factory: Callable[[], Decoder]):
        _REGISTRY[name] = factory
        _UNAVAILABLE_HINT[name] = install_hint
        return factory

    return wrap


def list_decoders() -> list[str]:
    """Names of every registered backend (installed or not), default first."""
    return sorted(_REGISTRY, key=lambda n: (n != "pyav", n))


def create_decoder(name: str = "pyav") -> Decoder:
    """Instantiate a backend by name; a clear error if unknown or not installed."""
    if name not in _REGISTRY:
        raise ConfigError(
            f"unknown decoder {name!r}; available decoders are {', '.join(list_decoders())}"
        )
    return _REGISTRY[name]()
