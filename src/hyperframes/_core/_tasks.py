"""What each task is, below training and inference: the traits that config checks, the input
contract, evaluation and ``predict`` ask of a task, by name and without torch.

A task's behaviour in training (targets, loss, metrics) is its
:class:`~hyperframes.train.Task` class; that class carries these traits as ``Task.traits``,
and :func:`~hyperframes.train.register_task` registers them here for a task of a user's.
Inference reads the task's name from the checkpoint and asks :func:`task_traits`; no code
compares a task's name.
"""

from __future__ import annotations

import dataclasses

from ._registry import Registry

__all__ = ["TASK_TRAITS", "TaskTraits", "task_traits"]


@dataclasses.dataclass(frozen=True)
class TaskTraits:
    """What a task's model outputs and what that asks of its input. The defaults are a task
    whose model scores classes per window (softmax), as any task registered without traits."""

    name: str
    #: the model's outputs are classes (False: pictures, as masked_video and the frame tasks)
    classes: bool = True
    #: one class per item, the store's label of its video or segment (softmax); an item
    #: without a label is predicted and not scored (classification)
    single_label: bool = False
    #: independent classes, each scored by its own sigmoid (multilabel)
    multi_label: bool = False
    #: a class per pixel of the window's key frame: whole frames in, class coverage out
    #: (segmentation)
    per_pixel: bool = False
    #: boxes per window, with class scores (detection)
    boxes: bool = False
    #: reconstructs masked windows (masked_video)
    reconstructs: bool = False
    #: restores frames: input, target and baseline made at load (interpolation,
    #: super_resolution)
    restores_frames: bool = False
    #: the window's middle frame is the target: an odd T of 3 or more (interpolation)
    middle_frame: bool = False
    #: the input is the frames downscaled (super_resolution)
    downscaled: bool = False
    #: the task of the models whose outputs serve this one (None: this one; multilabel:
    #: a classification model's logits, each class its own sigmoid)
    model_task: str | None = None

    @property
    def pictures(self) -> bool:
        """``predict`` writes pictures (reconstructions, restored frames), not class scores."""
        return self.reconstructs or self.restores_frames

    @property
    def spatial(self) -> bool:
        """The outputs have positions in the frame (masks, boxes): mirrored with the input."""
        return self.per_pixel or self.boxes

    @property
    def matches_classes(self) -> bool:
        """Evaluation maps a store's classes onto the model's by name (not for pixel classes
        or outputs that are not classes)."""
        return self.classes and not self.per_pixel


#: the traits of every task known here; a name not here is a task of a user's not imported in
#: this process, taken as :class:`TaskTraits`' defaults (:func:`task_traits`)
TASK_TRAITS: Registry[TaskTraits] = Registry("task", replace=True)

for _traits in (
    TaskTraits("classification", single_label=True),
    TaskTraits("multilabel", multi_label=True, model_task="classification"),
    TaskTraits("segmentation", per_pixel=True),
    TaskTraits("detection", boxes=True),
    TaskTraits("masked_video", classes=False, reconstructs=True),
    TaskTraits("interpolation", classes=False, restores_frames=True, middle_frame=True),
    TaskTraits("super_resolution", classes=False, restores_frames=True, downscaled=True),
):
    TASK_TRAITS.register(_traits.name, _traits)


def task_traits(name: str) -> TaskTraits:
    """The traits of task ``name``; a name registered nowhere in this process (a user's task
    whose module is not imported, read from a checkpoint) gets the defaults: class scores."""
    return TASK_TRAITS.get(name, None) or TaskTraits(name)
