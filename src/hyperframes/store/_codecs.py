"""Frame codecs of the store, behind one small registry.

A codec turns a block of frames ``(n, C, H, W)`` into bytes and back. ``raw`` is special: its
payload is the array itself, read through a memory map with no decoding at all.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable

import numpy as np

from .._errors import ConfigError

__all__ = ["Codec", "create_codec", "list_codecs"]


@dataclasses.dataclass(frozen=True)
class Codec:
    name: str
    #: frames per compressed chunk; 0 = not chunked (raw)
    chunk_frames: int
    params: dict
    encode: Callable[[np.ndarray], bytes]
    decode_into: Callable[[bytes | memoryview, np.ndarray], None]
    lossless: bool = True


_REGISTRY: dict[str, Callable[..., Codec]] = {}


def register_codec(name: str):
    def wrap(factory):
        _REGISTRY[name] = factory
        return factory

    return wrap


def list_codecs() -> list[str]:
    return list(_REGISTRY)


def create_codec(name: str, **params) -> Codec:
    if name not in _REGISTRY:
        raise ConfigError(f"unknown codec {name!r}; choose one of {', '.join(list_codecs())}")
    return _REGISTRY[name](**params)


def _check_uint8(name: str, frames: np.ndarray) -> None:
    if frames.dtype != np.uint8:
        raise ConfigError(f"codec {name!r} stores uint8 frames only, got {frames.dtype}")


@register_codec("raw")
def _raw(**_: object) -> Codec:
    def encode(frames: np.ndarray) -> bytes:
        return np.ascontiguousarray(frames).tobytes()

    def decode_into(data, out: np.ndarray) -> None:
        out[...] = np.frombuffer(data, dtype=out.dtype).reshape(out.shape)

    return Codec("raw", 0, {}, encode, decode_into)


@register_codec("lz4")
def _lz4(chunk_frames: int = 4, **_: object) -> Codec:
    import lz4.block

    def encode(frames: np.ndarray) -> bytes:
        return lz4.block.compress(np.ascontiguousarray(frames), store_size=False)

    def decode_into(data, out: np.ndarray) -> None:
        raw = lz4.block.decompress(data, uncompressed_size=out.nbytes)
        out[...] = np.frombuffer(raw, dtype=out.dtype).reshape(out.shape)

    return Codec("lz4", int(chunk_frames), {"chunk_frames": int(chunk_frames)}, encode, decode_into)


@register_codec("zstd")
def _zstd(chunk_frames: int = 4, level: int = 3, **_: object) -> Codec:
    import zstandard

    local = threading.local()

    def _ctx(attr, make):
        obj = getattr(local, attr, None)
        if obj is None:
            obj = make()
            setattr(local, attr, obj)
        return obj

    def encode(frames: np.ndarray) -> bytes:
        c = _ctx("c", lambda: zstandard.ZstdCompressor(level=level))
        return c.compress(np.ascontiguousarray(frames))

    def decode_into(data, out: np.ndarray) -> None:
        d = _ctx("d", zstandard.ZstdDecompressor)
        raw = d.decompress(data, max_output_size=out.nbytes)
        out[...] = np.frombuffer(raw, dtype=out.dtype).reshape(out.shape)

    params = {"chunk_frames": int(chunk_frames), "level": int(level)}
    return Codec("zstd", int(chunk_frames), params, encode, decode_into)


@register_codec("jpeg")
def _jpeg(quality: int = 90, subsampling: str = "420", **_: object) -> Codec:
    import simplejpeg

    if not 1 <= int(quality) <= 100:
        raise ConfigError(f"jpeg quality must be within 1..100, got {quality}")

    def encode(frames: np.ndarray) -> bytes:
        _check_uint8("jpeg", frames)
        (frame,) = frames  # one frame per chunk
        hwc = np.ascontiguousarray(frame.transpose(1, 2, 0))
        return simplejpeg.encode_jpeg(
            hwc, quality=int(quality), colorspace="RGB", colorsubsampling=subsampling
        )

    def decode_into(data, out: np.ndarray) -> None:
        hwc = simplejpeg.decode_jpeg(data, colorspace="RGB")
        out[0] = hwc.transpose(2, 0, 1)

    params = {"quality": int(quality), "subsampling": subsampling, "library": "libjpeg-turbo"}
    return Codec("jpeg", 1, params, encode, decode_into, lossless=False)
