"""Measurements: store reads vs on-the-fly decoding vs memcpy (``hyperframes bench``), and
which codec to build with, measured on a sample (``hyperframes plan``)."""

from .._core._moved import moved_attribute
from ._plan import format_plan, plan_store
from ._plan import plan_verdict as plan_verdict  # for other hyperframes packages, not public
from ._run import format_bench, run_bench
from ._run import plan_windows as plan_windows  # for other hyperframes packages, not public
from ._run import time_onthefly as time_onthefly  # for other hyperframes packages, not public
from ._run import time_store as time_store  # for other hyperframes packages, not public

__all__ = [
    "format_bench",
    "format_plan",
    "plan_store",
    "run_bench",
]

#: names that left __all__, still importable with a DeprecationWarning saying where they live
_MOVED = {
    "PlanRow": "hyperframes.bench._plan",
    "StorePlan": "hyperframes.bench._plan",
    "available_window_decoders": "hyperframes.bench._onthefly",
    "cannot_decode": "hyperframes.bench._onthefly",
    "pick_sample": "hyperframes.bench._plan",
    "time_memcpy": "hyperframes.bench._run",
    "window_bytes": "hyperframes.bench._run",
    "window_decoder": "hyperframes.bench._onthefly",
}


def __getattr__(name: str):
    return moved_attribute(__name__, name, _MOVED)
