"""Issue 34 item 4, an experiment (not a codec of the package): chunks of stored frames encoded as
short H.264 streams (libx264 ``ultrafast``, no B-frames, one keyframe per chunk) and decoded with
PyAV, registered in the benchmark's own process only, so ``bench_codecs.py`` builds and reads a
real store with it through the same loader as the package's codecs.

A chunk of ``chunk_frames`` frames is one GOP: a window starting anywhere decodes its chunks
and nothing before them. On disk a chunk is ``uint32 count, count x uint32 packet sizes, the
packets`` (the encoder's Annex-B packets, SPS/PPS in-band). Frames are converted RGB -> I420
(BT.601, limited range, swscale) before encoding and back after decoding; an odd height or
width is padded by one edge row/column for the 4:2:0 planes and cut off on decode.

It stays out of the package unless it lands on the frontier (smaller than jpeg at >= 0.5x its
windows/s); ``bench_codecs.py`` records its row marked ``experiment``.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

NAME = "x264-chunks"


def _even(frames_hwc: np.ndarray) -> np.ndarray:
    h, w = frames_hwc.shape[1:3]
    if h % 2 == 0 and w % 2 == 0:
        return frames_hwc
    return np.pad(frames_hwc, ((0, 0), (0, h % 2), (0, w % 2), (0, 0)), mode="edge")


def make_codec(chunk_frames: int = 8, crf: int = 18, preset: str = "ultrafast", **_: object):
    """The codec factory (``register_codec(NAME)(make_codec)`` in the measuring process)."""
    import av

    from hyperframes.store._codecs import Codec

    def encode(frames: np.ndarray) -> bytes:
        hwc = _even(np.ascontiguousarray(frames.transpose(0, 2, 3, 1)))
        n, h, w, _ = hwc.shape
        ctx = av.CodecContext.create("libx264", "w")
        ctx.width, ctx.height, ctx.pix_fmt = w, h, "yuv420p"
        ctx.time_base, ctx.framerate = Fraction(1, 25), Fraction(25)
        ctx.gop_size, ctx.max_b_frames, ctx.thread_count = n, 0, 1
        ctx.options = {"preset": preset, "crf": str(crf), "tune": "zerolatency"}
        packets: list[bytes] = []
        for i, f in enumerate(hwc):
            vf = av.VideoFrame.from_ndarray(f, format="rgb24").reformat(format="yuv420p")
            vf.pts = i
            packets += [bytes(p) for p in ctx.encode(vf)]
        packets += [bytes(p) for p in ctx.encode(None)]
        head = np.array([len(packets), *map(len, packets)], "<u4").tobytes()
        return head + b"".join(packets)

    def decode_into(data, out: np.ndarray) -> None:
        buf = memoryview(data).cast("B")
        count = int(np.frombuffer(buf[:4], "<u4")[0])
        sizes = np.frombuffer(buf[4 : 4 + 4 * count], "<u4")
        at = 4 + 4 * count
        ctx = av.CodecContext.create("h264", "r")
        ctx.thread_count = 1
        got = []
        for s in sizes:
            got += ctx.decode(av.Packet(bytes(buf[at : at + int(s)])))
            at += int(s)
        got += ctx.decode(None)
        n, h, w = out.shape[0], out.shape[2], out.shape[3]
        if len(got) != n:
            raise ValueError(f"an H.264 chunk decoded to {len(got)} frames, the index says {n}")
        for k, f in enumerate(got):
            out[k] = f.to_ndarray(format="rgb24")[:h, :w].transpose(2, 0, 1)

    params = {"chunk_frames": chunk_frames, "crf": crf, "preset": preset, "encoder": "libx264"}
    return Codec(NAME, chunk_frames, params, encode, decode_into, lossless=False, channels=(3,))


def register() -> str:
    """Register the experiment in this process (idempotent); returns its name."""
    from hyperframes.store._codecs import _REGISTRY, register_codec

    if NAME not in _REGISTRY:
        register_codec(NAME)(make_codec)
    return NAME


def unregister() -> None:
    from hyperframes.store._codecs import _REGISTRY

    _REGISTRY.pop(NAME, None)
