"""Decoder backends behind one interface (PyAV default; torchcodec, decord, OpenCV optional)."""

from ._base import DecodedFrame, Decoder, VideoInfo, create_decoder, list_decoders, register_decoder

__all__ = [
    "DecodedFrame",
    "Decoder",
    "VideoInfo",
    "create_decoder",
    "list_decoders",
    "register_decoder",
]
