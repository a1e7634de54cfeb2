"""Synthetic datasets and the end-to-end showcase (``hyperframes demo``)."""

from ._detection import DETECTION_CLASSES, make_detection_dataset, make_detection_frames
from ._detection_demo import run_detection_demo
from ._run import measure_reads, run_demo
from ._synthetic import (
    MOTION_CLASSES,
    make_motion_dataset,
    make_motion_frames,
    make_segmentation_dataset,
    make_segmentation_frames,
    write_h264,
)

__all__ = [
    "DETECTION_CLASSES",
    "MOTION_CLASSES",
    "make_detection_dataset",
    "make_detection_frames",
    "make_motion_dataset",
    "make_motion_frames",
    "make_segmentation_dataset",
    "make_segmentation_frames",
    "measure_reads",
    "run_demo",
    "run_detection_demo",
    "write_h264",
]
