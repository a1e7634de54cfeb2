"""Serving hyperframes: dataset, loader, layouts, collation and augmentation."""

from .._core._layouts import list_layouts, to_layout
from .._core._moved import moved_attribute
from . import transforms
from ._audio import LogMelOptions
from ._audio import resolve_audio as resolve_audio  # for other hyperframes packages, not public
from ._dataset import HyperframeDataset
from ._loader import HyperframeLoader, collate_hyperframes, loader
from ._loader_state import read_state as read_state  # for other hyperframes packages, not public
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
from ._prefetch import PrefetchLoader
from ._record import Hyperframe, HyperframeBatch
from ._repeats import (
    RepeatedWindows as RepeatedWindows,
)  # for other hyperframes packages, not public
from ._torch_samplers import BalancedSampler, EpochSampler
from ._torch_samplers import (
    item_sampler as item_sampler,
)  # for other hyperframes packages, not public

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
    "TrackOptions",
    "collate_hyperframes",
    "list_layouts",
    "loader",
    "to_layout",
    "transforms",
]

#: names that left __all__, still importable with a DeprecationWarning saying where they live
_MOVED = {
    "BatchMeta": "hyperframes.data._record",
    "KeyframeWindow": "hyperframes._core._layouts",
    "collate_windows": "hyperframes.data._collate",
    "column_times": "hyperframes.data._audio",
    "compose_flow": "hyperframes.data._warp",
    "compose_flows": "hyperframes.data._warp",
    "compose_homography": "hyperframes.data._warp",
    "expand_channel_stats": "hyperframes._core._layouts",
    "from_layout": "hyperframes._core._layouts",
    "logmel_columns": "hyperframes.data._audio",
    "mel_filterbank": "hyperframes.data._audio",
    "resize_flow": "hyperframes.data._warp",
    "warp_by_flow": "hyperframes.data._warp",
    "warp_by_homography": "hyperframes.data._warp",
}


def __getattr__(name: str):
    return moved_attribute(__name__, name, _MOVED)
