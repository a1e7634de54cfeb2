"""Frame codecs of the store, behind one small registry.

A codec turns a block of frames ``(n, C, H, W)`` into bytes and back. ``raw`` is special: its
payload is the array itself, read through a memory map with no decoding at all.

Decoding runs in the reader's threads, so it must not hold the GIL for long: every
``decode_into`` writes into the caller's (contiguous) array, the decompressors release the GIL,
and the only copies left are contiguous or transposed numpy copies (which release it too). A
codec whose chunks are single frames may also offer ``decode_frames`` (many chunks into one
``(T, C, H, W)`` array at once: jpeg decodes them into a per-thread ``(T, H, W, C)`` scratch
array and transposes once); one whose chunks are short to decode (lz4: ~20 µs) offers
``decode_to_address``, so that the reader's Python per chunk stays far below the decoding.

A codec carries its parameters, and this module is the one place that knows them: the keyword
parameters of a codec's factory are what ``create_codec`` takes (:func:`codec_parameters`;
each codec ignores the others, so one set of options makes any codec), ``Codec.params`` is
what the manifest records of it (``{"name": ..., **params}``) and what a reader makes it again
from, and ``Codec.dtypes`` the stored element types it holds (:func:`codec_dtypes`).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import dataclasses
import functools
import inspect
import threading
from collections.abc import Callable

import numpy as np

from .._core._errors import ConfigError
from .._core._registry import Registry
from . import _yuv
from ._jpeg_crop import crop_window
from .format import ALLOWED_DTYPES

__all__ = ["Codec", "codec_dtypes", "codec_parameters", "create_codec", "list_codecs"]


@dataclasses.dataclass(frozen=True)
class Codec:
    name: str
    #: frames per compressed chunk; 0 = not chunked (raw)
    chunk_frames: int
    #: its parameters as the manifest records them (``create_codec(name, **params)`` makes
    #: the same codec again)
    params: dict
    encode: Callable[[np.ndarray], bytes]
    decode_into: Callable[[bytes | memoryview | np.ndarray, np.ndarray], None]
    lossless: bool = True
    #: the stored element types it holds
    dtypes: tuple[str, ...] = ALLOWED_DTYPES
    #: optional: decode a list of one-frame chunks into ``out`` (T, C, H, W) in one call
    decode_frames: Callable[[list, np.ndarray], None] | None = None
    #: optional: ``(src_address, src_bytes, dst_address, dst_capacity) -> bytes written``
    #: (negative: corrupt), a C call that holds no GIL; the reader then decodes a window's
    #: chunks with plain integers, a microsecond of Python per chunk (see ``_read_chunks``)
    decode_to_address: Callable[[int, int, int, int], int] | None = None
    #: optional: the most bytes a chunk of ``raw`` bytes of frames is stored in (the
    #: compressor's bound, vectorised): a longer chunk row holds other frames than it says
    max_chunk_bytes: Callable[[np.ndarray], np.ndarray] | None = None
    #: the frame channels the codec stores (None: any the store allows)
    channels: tuple[int, ...] | None = None
    #: optional: what is wrong with a chunk's own header against the ``(n, C, H, W)`` of
    #: ``dtype`` the index says it holds (None: nothing), read without decoding it
    chunk_problem: (
        Callable[[bytes | memoryview | np.ndarray, tuple, np.dtype], str | None] | None
    ) = None
    #: optional: the exact bytes of a chunk of ``(num_frames, height, width)`` (int64 arrays,
    #: vectorised), for a codec whose chunks have a fixed size (yuv420); checked at open
    chunk_bytes: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray] | None = None
    #: optional: one frame's chunk from its I420 planes ``(y, u, v, matrix, full_range)``, for
    #: a decoder that hands them over before any RGB conversion (yuv420)
    encode_planes: Callable[..., bytes] | None = None
    #: optional: ``(chunks, (H, W), box, out (T, C, h, w), filter)``: a window's frames (one
    #: chunk each) cropped to ``box`` and resized into ``out`` without decoding them whole
    decode_box: Callable[[list, tuple, tuple, np.ndarray, str], None] | None = None
    #: optional: ``(datas, box, out, *, flip, filter, frame_hw) -> bool``: one-frame chunks of
    #: ``frame_hw`` (H, W) decoded only over ``box`` and resized into ``out`` (T, C, h, w),
    #: mirrored when ``flip`` (jpeg: :mod:`._jpeg_crop`); False when it cannot here (then
    #: the reader decodes whole frames)
    crop_frames: Callable[..., bool] | None = None


_REGISTRY: Registry[Callable[..., Codec]] = Registry("codec", replace=True)
register_codec = _REGISTRY.register


def list_codecs() -> list[str]:
    return _REGISTRY.names()


def create_codec(name: str, **params) -> Codec:
    """The codec ``name`` with ``params`` (those it does not take are ignored)."""
    return _factory(name)(**params)


def _factory(name: str) -> Callable[..., Codec]:
    return _REGISTRY.get(name)


@functools.cache
def codec_parameters(name: str) -> tuple[str, ...]:
    """The parameters codec ``name`` takes (``create_codec``'s keywords it uses)."""
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    sig = inspect.signature(_factory(name))
    return tuple(p.name for p in sig.parameters.values() if p.kind in kinds)


@functools.cache
def codec_dtypes(name: str) -> tuple[str, ...]:
    """The stored element types codec ``name`` holds."""
    return create_codec(name).dtypes


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


def _lz4_decompress_into() -> Callable | None:
    """liblz4's ``LZ4_decompress_safe(src, dst, src_size, dst_capacity)``, from the lz4
    package's own extension (which exports it) or the system's liblz4, called through ctypes
    (which releases the GIL): a chunk decompresses straight into the caller's array, where
    ``lz4.block.decompress`` returns a new bytes object per chunk to be copied again (measured:
    1.45x the windows/s of that). None when neither is found: then ``lz4.block.decompress``."""

    import lz4.block  # deferred: optional/heavy dependency

    for lib in (getattr(lz4.block._block, "__file__", None), ctypes.util.find_library("lz4")):
        if not lib:
            continue
        try:
            fn = ctypes.CDLL(lib).LZ4_decompress_safe
        except (OSError, AttributeError):
            continue
        fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_int]
        fn.restype = ctypes.c_int
        return fn
    return None


@register_codec("lz4")
def _lz4(chunk_frames: int = 4, **_: object) -> Codec:
    import lz4.block  # deferred: optional/heavy dependency

    into = _lz4_decompress_into()

    def encode(frames: np.ndarray) -> bytes:
        return lz4.block.compress(np.ascontiguousarray(frames), store_size=False)

    def decode_into(data, out: np.ndarray) -> None:
        if into is not None and out.flags.c_contiguous:
            src = np.frombuffer(data, np.uint8)
            # bounds-checked: never reads past the chunk nor writes past out
            got = into(src.ctypes.data, out.ctypes.data, src.nbytes, out.nbytes)
            if got != out.nbytes:
                raise ValueError(
                    f"an lz4 chunk decompresses to {got} bytes (negative: corrupt), the index "
                    f"says {out.nbytes}"
                )
            return
        try:
            raw = lz4.block.decompress(data, uncompressed_size=out.nbytes)
        except lz4.block.LZ4BlockError as e:
            raise ValueError(f"an lz4 chunk cannot be decompressed ({e})") from None
        if len(raw) != out.nbytes:
            raise ValueError(
                f"an lz4 chunk decompresses to {len(raw)} bytes, the index says {out.nbytes}"
            )
        out[...] = np.frombuffer(raw, dtype=out.dtype).reshape(out.shape)

    def decode_to_address(src: int, size: int, dst: int, capacity: int) -> int:
        assert into is not None  # only handed out below when into was found
        return into(src, dst, size, capacity)

    def chunk_problem(data, shape: tuple, dtype: np.dtype) -> str | None:
        """Decompressed into a scratch array of the size the index gives (lz4 blocks record
        no size: decoding is how to know)."""
        want = int(np.prod(shape)) * np.dtype(dtype).itemsize
        dst = _scratch((want,))
        if into is not None:
            src = np.frombuffer(data, np.uint8)
            got = into(src.ctypes.data, dst.ctypes.data, src.nbytes, want)
        else:
            try:
                got = len(lz4.block.decompress(data, uncompressed_size=want))
            except lz4.block.LZ4BlockError:
                got = -1
        if got != want:
            return (
                f"decompresses to {got} bytes (negative: corrupt, or more than {want}), the "
                f"index says {want} ({shape})"
            )
        return None

    params = {"chunk_frames": int(chunk_frames)}
    return Codec(
        "lz4",
        int(chunk_frames),
        params,
        encode,
        decode_into,
        decode_to_address=decode_to_address if into is not None else None,
        max_chunk_bytes=_lz4_bound,
        chunk_problem=chunk_problem,
    )


def _lz4_bound(raw: np.ndarray) -> np.ndarray:
    """liblz4's LZ4_COMPRESSBOUND."""
    return raw + raw // 255 + 16


def _zstd_bound(raw: np.ndarray) -> np.ndarray:
    """libzstd's ZSTD_COMPRESSBOUND."""
    small = 128 << 10
    return raw + (raw >> 8) + np.where(raw < small, (small - raw) >> 11, 0)


@register_codec("zstd")
def _zstd(chunk_frames: int = 4, level: int = 3, **_: object) -> Codec:
    import zstandard  # deferred: optional/heavy dependency

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
        try:
            raw = d.decompress(data, max_output_size=out.nbytes)
        except zstandard.ZstdError as e:
            raise ValueError(f"a zstd chunk cannot be decompressed ({e})") from None
        if len(raw) != out.nbytes:
            raise ValueError(
                f"a zstd chunk decompresses to {len(raw)} bytes, the index says {out.nbytes}"
            )
        out[...] = np.frombuffer(raw, dtype=out.dtype).reshape(out.shape)

    def chunk_problem(data, shape: tuple, dtype: np.dtype) -> str | None:
        want = int(np.prod(shape)) * np.dtype(dtype).itemsize
        try:
            got = zstandard.frame_content_size(data)
        except zstandard.ZstdError as e:
            return f"is not a zstd frame ({e})"
        if got != want:  # -1: a frame that does not say (the store's always do)
            return f"says it decompresses to {got} bytes, the index says {want} ({shape})"
        return None

    params = {"chunk_frames": int(chunk_frames), "level": int(level)}
    return Codec(
        "zstd",
        int(chunk_frames),
        params,
        encode,
        decode_into,
        max_chunk_bytes=_zstd_bound,
        chunk_problem=chunk_problem,
    )


@register_codec("jpeg")
def _jpeg(quality: int = 90, subsampling: str = "420", **_: object) -> Codec:
    import simplejpeg  # deferred: optional/heavy dependency

    if not 1 <= int(quality) <= 100:
        raise ConfigError(f"jpeg quality must be within 1..100, got {quality}")

    def encode(frames: np.ndarray) -> bytes:
        _check_uint8("jpeg", frames)
        (frame,) = frames  # one frame per chunk
        hwc = np.ascontiguousarray(frame.transpose(1, 2, 0))
        return simplejpeg.encode_jpeg(
            hwc, quality=int(quality), colorspace="RGB", colorsubsampling=subsampling
        )

    def decode_frames(datas: list, out: np.ndarray) -> None:
        """Each JPEG straight into a per-thread (T, H, W, C) scratch array (no array per frame;
        simplejpeg releases the GIL while decoding), then one transposed copy into ``out``."""
        t, c, h, w = out.shape
        hwc = _scratch((t, h, w, c))
        for k, data in enumerate(datas):
            got = simplejpeg.decode_jpeg(data, colorspace="RGB", buffer=hwc[k]).shape
            if got != (h, w, c):
                raise ValueError(f"a JPEG chunk holds a {got} image where {(h, w, c)} is stored")
        out[...] = hwc.transpose(0, 3, 1, 2)

    def decode_into(data, out: np.ndarray) -> None:
        decode_frames([data], out)

    def chunk_problem(data, shape: tuple, dtype: np.dtype) -> str | None:
        h, w = shape[2:]
        try:
            got = simplejpeg.decode_jpeg_header(data)[:2]
        except ValueError as e:
            return f"is not a JPEG ({e})"
        if got != (h, w):
            return f"holds a {got[0]} x {got[1]} image, the index says {h} x {w} (height x width)"
        return None

    params = {"quality": int(quality), "subsampling": subsampling, "library": "libjpeg-turbo"}
    return Codec(
        "jpeg",
        1,
        params,
        encode,
        decode_into,
        lossless=False,
        dtypes=("uint8",),
        decode_frames=decode_frames,
        channels=(3,),
        chunk_problem=chunk_problem,
        crop_frames=crop_window,
    )


@register_codec("yuv420")
def _yuv420(**_: object) -> Codec:
    def encode(frames: np.ndarray) -> bytes:
        _check_uint8("yuv420", frames)
        (frame,) = frames  # one frame per chunk
        return _yuv.encode_rgb(frame)

    def decode_into(data, out: np.ndarray) -> None:
        _yuv.decode_frames([data], out)

    def chunk_bytes(n: np.ndarray, h: np.ndarray, w: np.ndarray) -> np.ndarray:
        return n * _yuv.frame_bytes(h, w)

    return Codec(
        "yuv420",
        1,
        {"layout": "I420"},
        encode,
        decode_into,
        lossless=False,
        dtypes=("uint8",),
        decode_frames=_yuv.decode_frames,
        channels=(3,),
        chunk_problem=_yuv.chunk_problem,
        chunk_bytes=chunk_bytes,
        encode_planes=_yuv.encode_planes,
        decode_box=_yuv.decode_box,
    )


_local = threading.local()


def _scratch(shape: tuple[int, ...]) -> np.ndarray:
    """A uint8 array of ``shape`` owned by the calling thread, reused across calls."""
    buf = getattr(_local, "scratch", None)
    size = int(np.prod(shape))
    if buf is None or buf.size < size:
        buf = _local.scratch = np.empty(size, np.uint8)
    return buf[:size].reshape(shape)
