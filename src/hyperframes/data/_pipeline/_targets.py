"""The batch pipeline's targets stage: a task's targets made inside the batch pipeline, a whole batch at a time.

A task whose target is not one of the store's annotations (a key frame's segmentation mask, a
frame task's true frame and baseline, a key frame's boxes) contributes a :class:`TargetStage`
to the dataset (``HyperframeDataset(..., stage=...)``, given by keyword): the batch pipeline
calls it once per batch with a :class:`StageBatch` (the frames, the batch's plan and each
sample's own generator) and takes the frames and targets it returns. Where it runs is its
``at``:

* ``"read"``: on the frames as read (stored size and dtype, before the tracks and the
  transform's other steps), so a stage that moves pixels (a crop, a flip) moves them before
  anything else sees them;
* ``"output"``: on the frames as the dataset gives them (its layout and dtype).

Each sample's generator is seeded by (seed, epoch, item) as the transform's is
(:func:`~hyperframes.data.transforms.transform_generator`), a fresh one for the stage: the same
draws for any number of workers, and ``ds[i]`` (a batch of one) draws what the batch's sample ``i`` draws.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np
import torch

from ..transforms import transform_generators
from ._plan import BatchPlan

__all__ = ["StageBatch", "TargetStage", "stage_batch"]


@dataclasses.dataclass(frozen=True)
class StageBatch:
    """What a :class:`TargetStage` gets: ``frames`` (B, T, C, H, W) (at ``"output"`` in the
    dataset's layout: a :class:`~hyperframes.data.KeyframeWindow` in the keyframe one); ``plan`` (the batch's
    :class:`~._plan.BatchPlan`: store video ids, stored indices (B, T), mask, items);
    ``source_index`` (B, T), each frame's index in its source video; ``generators``, each
    sample's own generator; ``store``, the store the frames come from."""

    frames: Any
    plan: BatchPlan
    source_index: np.ndarray
    generators: tuple[torch.Generator, ...]
    store: object

    def __len__(self) -> int:
        return len(self.plan)


@runtime_checkable
class TargetStage(Protocol):
    """A task's target stage (module doc): ``at`` says where it runs; :meth:`targets` returns
    the batch's frames (B, ...) and targets (B, ...) (None: the dataset's own targets)."""

    at: Literal["read", "output"]

    def targets(self, batch: StageBatch) -> tuple[torch.Tensor, torch.Tensor | None]: ...


def stage_batch(frames, plan: BatchPlan, store, seed: int) -> StageBatch:
    """The :class:`StageBatch` of ``frames`` read for ``plan`` from ``store``, each sample's
    generator seeded by (``seed``, epoch, item)."""
    videos = store.videos
    rows = np.asarray(videos.frame_start)[plan.videos][:, None] + plan.index
    gens = transform_generators(seed, plan.epochs, plan.items)
    return StageBatch(frames, plan, np.asarray(videos.source_index_all)[rows], gens, store)
