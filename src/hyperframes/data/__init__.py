"""Serving hyperframes: dataset, loader, layouts, collation and augmentation."""

from .._core._layouts import (
    KeyframeWindow,
    expand_channel_stats,
    from_layout,
    list_layouts,
    to_layout,
)
from . import transforms
from ._audio import LogMelOptions, column_times, logmel_columns, mel_filterbank, resolve_audio
from ._collate import collate_hyperframes, collate_windows
from ._dataset import HyperframeDataset
from ._loader import HyperframeLoader, loader
from ._loader_state import read_state
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
from ._record import BatchMeta, Hyperframe, HyperframeBatch
from ._repeats import RepeatedWindows
from ._stages import StageBatch, TargetStage
from ._torch_samplers import BalancedSampler, EpochSampler, item_sampler
from ._warp import (
    compose_flow,
    compose_flows,
    compose_homography,
    resize_flow,
    warp_by_flow,
    warp_by_homography,
)

__all__ = [
    "BalancedSampler",
    "BatchMeta",
    "DatasetOptions",
    "DeliveryOptions",
    "EpochSampler",
    "Hyperframe",
    "HyperframeBatch",
    "HyperframeDataset",
    "HyperframeLoader",
    "InMemoryStore",
    "KeyframeWindow",
    "LogMelOptions",
    "OrderOptions",
    "OutputOptions",
    "PrefetchLoader",
    "ReadOptions",
    "RepeatedWindows",
    "SamplingOptions",
    "StageBatch",
    "TargetStage",
    "TrackOptions",
    "collate_hyperframes",
    "collate_windows",
    "column_times",
    "compose_flow",
    "compose_flows",
    "compose_homography",
    "expand_channel_stats",
    "from_layout",
    "item_sampler",
    "list_layouts",
    "loader",
    "logmel_columns",
    "mel_filterbank",
    "read_state",
    "resize_flow",
    "resolve_audio",
    "to_layout",
    "transforms",
    "warp_by_flow",
    "warp_by_homography",
]
