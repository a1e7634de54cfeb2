"""The tasks room: what a model learns to predict, apart from how the loop runs.

The :class:`~._base.Task` base, its registry and the classification and segmentation tasks
live in :mod:`._base`; each other built-in task in a module of its own (detection,
interpolation and super-resolution, masked video, multilabel), with the dataset that gives
its samples a target and its metrics. Importing this room registers them all, so the rooms
above (config, eval, loop) ask :func:`get_task` and never branch on a task's name. The room
imports nothing from the other rooms of :mod:`hyperframes.train`.
"""

from __future__ import annotations

from . import _detection, _frame_tasks, _masked, _multilabel  # noqa: F401  (they register)
from ._base import Task, create_task, get_task, list_tasks, register_task

__all__ = ["Task", "create_task", "get_task", "list_tasks", "register_task"]
