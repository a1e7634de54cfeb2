"""Measurements: store reads vs on-the-fly decoding vs memcpy (``hyperframes bench``), and
which codec to build with, measured on a sample (``hyperframes plan``)."""

from ._onthefly import available_window_decoders, cannot_decode, window_decoder
from ._plan import PlanRow, StorePlan, format_plan, pick_sample, plan_store, plan_verdict
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
    "PlanRow",
    "StorePlan",
    "available_window_decoders",
    "cannot_decode",
    "format_bench",
    "format_plan",
    "pick_sample",
    "plan_store",
    "plan_verdict",
    "plan_windows",
    "run_bench",
    "time_memcpy",
    "time_onthefly",
    "time_store",
    "window_bytes",
    "window_decoder",
]
