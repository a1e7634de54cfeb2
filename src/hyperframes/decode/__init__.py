"""Decoder backends behind one interface (PyAV default; torchcodec, decord, OpenCV optional).

``create_decoder(name)`` gives a backend; ``frames(path)`` streams a video's decoded frames in
order, each with its index and presentation time; ``decode_audio(path)`` gives the first audio
stream resampled, with its start time on the frames' clock (``stream_audio`` block by block,
within a time span); ``FpsResampler`` picks frames for a
target frame rate as they stream by. Importing this package never imports the optional libraries.
"""

# ``from ._x import name as name``: for the other hyperframes packages, not public
from .._core._moved import moved_attribute
from . import _decord, _framefolder, _opencv, _pyav, _torchcodec  # noqa: F401  (registration)
from ._audio import DecodedAudio, decode_audio
from ._audio import stream_audio as stream_audio
from ._base import (
    DecodedFrame,
    Decoder,
    DecodeReport,
    VideoInfo,
    create_decoder,
    list_decoders,
    register_decoder,
)
from ._resample import FpsResampler as FpsResampler
from ._resample import Resampled as Resampled
from ._resize import resize_rgb as resize_rgb

__all__ = [
    "DecodeReport",
    "DecodedAudio",
    "DecodedFrame",
    "Decoder",
    "VideoInfo",
    "create_decoder",
    "decode_audio",
    "list_decoders",
    "register_decoder",
]


def __getattr__(name: str):
    return moved_attribute(__name__, name)
