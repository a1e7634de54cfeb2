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

# ``from ._x import name as name``: for the other hyperframes packages, not public
from .._core._moved import moved_attribute
from . import _duration, _keyframes, _motion, _random, _segments, _windows  # noqa: F401  (register samplers)
from ._base import Sampler
from ._keyframes import MIN_CHANGE as MIN_CHANGE
from ._keyframes import MIN_FLOW as MIN_FLOW
from ._keyframes import pick_changes as pick_changes
from ._keyframes import salience as salience
from ._meta import PerFrame as PerFrame
from ._meta import Plan, VideoMeta
from ._meta import VideoTable as VideoTable
from ._order import balanced_order as balanced_order
from ._order import epoch_order as epoch_order
from ._order import partition as partition
from ._registry import create_sampler, list_samplers, register_sampler
from ._segments import SegmentTable as SegmentTable
from ._segments import frame_labels as frame_labels

__all__ = [
    "Plan",
    "Sampler",
    "VideoMeta",
    "create_sampler",
    "list_samplers",
    "register_sampler",
]


def __getattr__(name: str):
    return moved_attribute(__name__, name)
