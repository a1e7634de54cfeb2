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

from .._core._change import (
    change_score as change_score,
)  # for other hyperframes packages, not public
from .._core._moved import moved_attribute
from . import _duration, _keyframes, _random, _segments, _windows  # noqa: F401  (register samplers)
from ._base import Sampler
from ._keyframes import MIN_CHANGE as MIN_CHANGE  # for other hyperframes packages, not public
from ._keyframes import MIN_FLOW as MIN_FLOW  # for other hyperframes packages, not public
from ._keyframes import pick_changes as pick_changes  # for other hyperframes packages, not public
from ._keyframes import salience as salience  # for other hyperframes packages, not public
from ._meta import PerFrame as PerFrame  # for other hyperframes packages, not public
from ._meta import Plan, VideoMeta
from ._meta import VideoTable as VideoTable  # for other hyperframes packages, not public
from ._order import balanced_order as balanced_order  # for other hyperframes packages, not public
from ._order import epoch_order as epoch_order  # for other hyperframes packages, not public
from ._order import partition as partition  # for other hyperframes packages, not public
from ._registry import create_sampler, list_samplers, register_sampler
from ._segments import SegmentTable as SegmentTable  # for other hyperframes packages, not public
from ._segments import frame_labels as frame_labels  # for other hyperframes packages, not public

__all__ = [
    "Plan",
    "Sampler",
    "VideoMeta",
    "create_sampler",
    "list_samplers",
    "register_sampler",
]

#: names that left __all__, still importable with a DeprecationWarning saying where they live
_MOVED = {
    "CandidatesSampler": "hyperframes.sampling._random",
    "ChangeScorer": "hyperframes._core._change",
    "DurationSampler": "hyperframes.sampling._duration",
    "KeyframesSampler": "hyperframes.sampling._keyframes",
    "MotionSampler": "hyperframes.sampling._motion",
    "PerSegmentSampler": "hyperframes.sampling._segments",
    "RandomSampler": "hyperframes.sampling._random",
    "SHORT_POLICIES": "hyperframes.sampling._base",
    "ScatteredSampler": "hyperframes.sampling._random",
    "SegmentsSampler": "hyperframes.sampling._random",
    "SlidingSampler": "hyperframes.sampling._windows",
    "UniformSampler": "hyperframes.sampling._windows",
    "as_video_table": "hyperframes.sampling._meta",
    "class_weights": "hyperframes.sampling._order",
}


def __getattr__(name: str):
    return moved_attribute(__name__, name, _MOVED)
