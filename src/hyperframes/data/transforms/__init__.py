"""Window augmentation: spatial, photometric and temporal transforms with explicit randomness.

Transforms take and return a :class:`Window` (frames (T, C, H, W), indices (T,), mask (T,)) and
draw every random parameter from the ``generator`` given (one set per window by default)::

    aug = Compose([RandomResizedCrop(224), RandomHorizontalFlip(), ColorJitter(0.4, 0.4, 0.4)])
    out = aug(frames, plan.frame_indices, plan.mask, generator=transform_generator(seed, epoch, i))
    batch_out = aug.batch(batch_frames, generators=[...])   # (B, T, C, H, W), per-sample params

Each transform also has a batch form (``draw`` per sample, ``batch_apply`` over a batch; see
:mod:`._base`), which the dataset's batch pipeline runs; a plain callable is wrapped once in
:class:`PerSample`.
"""

# ``from ._x import name as name``: for the other hyperframes packages, not public
from ..._core._moved import moved_attribute
from ._base import Compose, PerSample, Transform, Window
from ._base import batch_steps as batch_steps  # the batch pipeline's (data._pipeline)
from ._base import transform_generator as transform_generator
from ._color import ColorJitter, GaussianNoise
from ._contract import ContractCrop as ContractCrop
from ._contract import contract_transform as contract_transform
from ._normalize import Normalize, ToFloat
from ._registry import create_transform, list_transforms, register_transform
from ._seeds import transform_generators as transform_generators  # the batch pipeline's
from ._spatial import (
    CenterCrop,
    RandomAffine,
    RandomCrop,
    RandomHorizontalFlip,
    RandomResizedCrop,
    Resize,
)
from ._spatial import flip_batch as flip_batch
from ._temporal import DropFrame, DuplicateFrame, Reverse, Shuffle

__all__ = [
    "CenterCrop",
    "ColorJitter",
    "Compose",
    "DropFrame",
    "DuplicateFrame",
    "GaussianNoise",
    "Normalize",
    "PerSample",
    "RandomAffine",
    "RandomCrop",
    "RandomHorizontalFlip",
    "RandomResizedCrop",
    "Resize",
    "Reverse",
    "Shuffle",
    "ToFloat",
    "Transform",
    "Window",
    "create_transform",
    "list_transforms",
    "register_transform",
]


def __getattr__(name: str):
    return moved_attribute(__name__, name)
