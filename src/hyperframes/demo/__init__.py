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

#: names that left __all__, still importable with a DeprecationWarning saying where they live
_MOVED = {
    "DETECTION_CLASSES": "hyperframes.demo._detection",
    "MOTION_CLASSES": "hyperframes.demo._synthetic",
    "make_detection_frames": "hyperframes.demo._detection",
    "make_motion_frames": "hyperframes.demo._synthetic",
    "make_segmentation_frames": "hyperframes.demo._synthetic",
    "measure_reads": "hyperframes.demo._run",
    "write_h264": "hyperframes.demo._synthetic",
}


def __getattr__(name: str):
    return moved_attribute(__name__, name, _MOVED)
