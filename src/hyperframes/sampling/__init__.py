"""Samplers: pure planners from video metadata and (seed, epoch, item) to frame indices.

A sampler never reads pixels and never imports torch. Give it per-video metadata
(:class:`VideoMeta`, or the column form :class:`VideoTable`); it defines an item space
(``num_items``) and plans each item (``plan`` -> :class:`Plan`)::

    s = create_sampler("random", frames=16, stride=2, short="pad")
    plan = s.plan(videos, item, seed=0, epoch=3)   # plan.video, plan.frame_indices, plan.mask

Registered samplers: ``sliding``, ``random``, ``segments``, ``uniform``, ``duration``,
``candidates`` (one of K even clips per epoch), ``scattered`` (N random frames anywhere),
``keyframes``, ``motion`` (random windows whose stored motion score is above a threshold),
``per_segment`` (one item per labelled segment of an untrimmed video:
``VideoTable.segments``, a :class:`SegmentTable`; :func:`frame_labels` gives each frame's
classes by pts). :func:`epoch_order`, :func:`balanced_order` and :func:`partition` give the order
of items in an epoch and each rank's share of it.
"""

from .._core._change import ChangeScorer, change_score
from . import _duration, _keyframes, _random, _segments, _windows  # noqa: F401  (register samplers)
from ._base import SHORT_POLICIES, Sampler
from ._duration import DurationSampler
from ._keyframes import MIN_CHANGE, MIN_FLOW, KeyframesSampler, pick_changes, salience
from ._meta import PerFrame, Plan, VideoMeta, VideoTable, as_video_table
from ._motion import MotionSampler
from ._order import balanced_order, class_weights, epoch_order, partition
from ._random import CandidatesSampler, RandomSampler, ScatteredSampler, SegmentsSampler
from ._registry import create_sampler, list_samplers, register_sampler
from ._segments import PerSegmentSampler, SegmentTable, frame_labels
from ._windows import SlidingSampler, UniformSampler

__all__ = [
    "MIN_CHANGE",
    "MIN_FLOW",
    "SHORT_POLICIES",
    "CandidatesSampler",
    "ChangeScorer",
    "DurationSampler",
    "KeyframesSampler",
    "MotionSampler",
    "PerFrame",
    "PerSegmentSampler",
    "Plan",
    "RandomSampler",
    "Sampler",
    "ScatteredSampler",
    "SegmentTable",
    "SegmentsSampler",
    "SlidingSampler",
    "UniformSampler",
    "VideoMeta",
    "VideoTable",
    "as_video_table",
    "balanced_order",
    "change_score",
    "class_weights",
    "create_sampler",
    "epoch_order",
    "frame_labels",
    "list_samplers",
    "partition",
    "pick_changes",
    "register_sampler",
    "salience",
]
