"""Measurements: store reads vs on-the-fly decoding vs memcpy (``hyperframes bench``)."""

from ._onthefly import available_window_decoders, cannot_decode, window_decoder
from ._run import (
    format_bench,
    plan_windows,
    run_bench,
    time_memcpy,
    time_onthefly,
    time_store,
    window_bytes,
)

__all__ = [
    "available_window_decoders",
    "cannot_decode",
    "format_bench",
    "plan_windows",
    "run_bench",
    "time_memcpy",
    "time_onthefly",
    "time_store",
    "window_bytes",
    "window_decoder",
]
