"""Serving hyperframes: dataset, loader, layouts, collation and augmentation."""

# ``from ._x import name as name``: for the other hyperframes packages, not public
from .._core._layouts import list_layouts, to_layout
from .._core._moved import moved_attribute
from . import transforms
from ._audio import LogMelOptions
from ._audio import resolve_audio as resolve_audio
from ._collate import collate_hyperframes
from ._dataset import HyperframeDataset
from ._loader import HyperframeLoader, loader
from ._loader_state import read_state as read_state
from ._memory import InMemoryStore
from ._options import (
    DatasetOptions,
    DeliveryOptions,
    OrderOptions,
    OutputOptions,
    ReadOptions,
    SamplingOptions,
    TrackOptions,
)
from ._pipeline import StageBatch as StageBatch  # (what a stage is given)
from ._pipeline import TargetStage
from ._prefetch import PrefetchLoader
from ._record import Hyperframe, HyperframeBatch
from ._repeats import RepeatedWindows as RepeatedWindows
from ._torch_samplers import BalancedSampler, EpochSampler
from ._torch_samplers import item_sampler as item_sampler

__all__ = [
    "BalancedSampler",
    "DatasetOptions",
    "DeliveryOptions",
    "EpochSampler",
    "Hyperframe",
    "HyperframeBatch",
    "HyperframeDataset",
    "HyperframeLoader",
    "InMemoryStore",
    "LogMelOptions",
    "OrderOptions",
    "OutputOptions",
    "PrefetchLoader",
    "ReadOptions",
    "SamplingOptions",
    "TargetStage",
    "TrackOptions",
    "collate_hyperframes",
    "list_layouts",
    "loader",
    "to_layout",
    "transforms",
]


def __getattr__(name: str):
    return moved_attribute(__name__, name)
