"""Synthetic datasets and the end-to-end showcase (``hyperframes demo``)."""

from .._core._moved import moved_attribute
from ._detection import make_detection_dataset
from ._detection_demo import run_detection_demo
from ._run import run_demo
from ._synthetic import make_motion_dataset, make_segmentation_dataset

__all__ = [
    "make_detection_dataset",
    "make_motion_dataset",
    "make_segmentation_dataset",
    "run_demo",
    "run_detection_demo",
]


def __getattr__(name: str):
    return moved_attribute(__name__, name)
