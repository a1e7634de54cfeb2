"""Serving hyperframes: dataset, loader, layouts, collation and augmentation."""

from .._core._layouts import (
    KeyframeWindow,
    expand_channel_stats,
    from_layout,
    list_layouts,
    to_layout,
)
from . import transforms
from ._collate import collate_windows
from ._dataset import HyperframeDataset
from ._loader import HyperframeLoader, collate_hyperframes, loader
from ._memory import InMemoryStore
from ._record import Hyperframe, HyperframeBatch
from ._torch_samplers import BalancedSampler, EpochSampler

__all__ = [
    "BalancedSampler",
    "EpochSampler",
    "Hyperframe",
    "HyperframeBatch",
    "HyperframeDataset",
    "HyperframeLoader",
    "InMemoryStore",
    "KeyframeWindow",
    "collate_hyperframes",
    "collate_windows",
    "expand_channel_stats",
    "from_layout",
    "list_layouts",
    "loader",
    "to_layout",
    "transforms",
]
