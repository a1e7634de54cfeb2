"""Measurements: store reads vs on-the-fly decoding vs memcpy (``hyperframes bench``), and
which codec to build with, measured on a sample (``hyperframes plan``)."""

# ``from ._x import name as name``: for the other hyperframes packages, not public
from .._core._moved import moved_attribute
from ._plan import format_plan, plan_store
from ._plan import plan_verdict as plan_verdict
from ._run import format_bench, run_bench
from ._run import plan_windows as plan_windows
from ._run import time_onthefly as time_onthefly
from ._run import time_store as time_store

__all__ = [
    "format_bench",
    "format_plan",
    "plan_store",
    "run_bench",
]


def __getattr__(name: str):
    return moved_attribute(__name__, name)
