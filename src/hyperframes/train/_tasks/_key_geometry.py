"""What the dense tasks' target stages (segmentation masks, detection boxes) share: the geometry
options that move a window's frames and its key frame's target together, and the dataset that
makes such a stage from them.

``hflip`` is the flip's probability; ``size`` the side of a random crop (None: whole frames),
``scale`` and ``ratio`` its area fraction and aspect ranges (as
:class:`~hyperframes.data.transforms.RandomResizedCrop` draws them).
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import ClassVar

from ...data import HyperframeDataset

__all__ = ["GEOMETRY_OPTIONS", "KeyFrameDataset", "KeyFrameGeometry"]


class KeyFrameGeometry:
    """The geometry options of a key frame target stage (:class:`~hyperframes.data.TargetStage`
    at the read); a subclass moves its targets with the frames."""

    at = "read"

    def __init__(
        self,
        *,
        hflip: float = 0.0,
        size: int | None = None,
        scale: Sequence[float] = (0.35, 1.0),
        ratio: Sequence[float] = (3 / 4, 4 / 3),
    ) -> None:
        self.hflip, self.size = float(hflip), size
        self.scale, self.ratio = tuple(scale), tuple(ratio)


#: the keywords of :class:`KeyFrameGeometry`, which a :class:`KeyFrameDataset` hands its stage
GEOMETRY_OPTIONS = tuple(inspect.signature(KeyFrameGeometry).parameters)


class KeyFrameDataset(HyperframeDataset):
    """A :class:`~hyperframes.data.HyperframeDataset` of ``video_ids`` whose target stage is a
    ``stage_type`` made from the geometry options (:class:`KeyFrameGeometry`'s keywords, module
    doc); the other keywords are the dataset's."""

    stage_type: ClassVar[type[KeyFrameGeometry]]

    def __init__(self, store, video_ids, **options) -> None:
        geometry = {k: options.pop(k) for k in GEOMETRY_OPTIONS if k in options}
        stage = self.stage_type(**geometry)
        super().__init__(store, video_ids=video_ids, stage=stage, **options)
        self.hflip, self.size = stage.hflip, stage.size
        self.scale, self.ratio = stage.scale, stage.ratio
