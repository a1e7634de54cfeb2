"""Synthetic datasets and the end-to-end showcase (``hyperframes demo``)."""

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
    "MOTION_CLASSES",
    "make_motion_dataset",
    "make_motion_frames",
    "make_segmentation_dataset",
    "make_segmentation_frames",
    "measure_reads",
    "run_demo",
    "write_h264",
]
