"""The dataset's and the loader's options, grouped by what they are about: one frozen,
strict model each.

:class:`~hyperframes.data.HyperframeDataset` takes the store, the sampler, ``frames``, the
transform and these groups::

    HyperframeDataset(store, sampler="random", frames=16, transform=aug,
                      tracks=TrackOptions(flow=True),
                      sampling=SamplingOptions(seed=1, split="train"),
                      output=OutputOptions(layout="channel"),
                      reading=ReadOptions(memory="ram"))

Each group is made by keyword, validates itself (a bad value is a :class:`ConfigError` naming
the option, the value and what is allowed) and is changed with ``replace``. A group may also be
given as a mapping. An option may be given on its own as a keyword of the dataset as well
(``seed=1``, ``layout="channel"``, the way the dataset always took them): it goes to its group,
replacing that field of a group given beside it. :data:`OPTION_GROUP` says which group holds
which option; the training config's ``data`` section fills the same fields by the same names.

:func:`~hyperframes.data.loader` takes its options the same way: ``order=``
:class:`OrderOptions` and ``delivery=`` :class:`DeliveryOptions` (:data:`LOADER_GROUPS`).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping
from numbers import Integral
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import AfterValidator, BeforeValidator, Field, model_validator
from pydantic.config import JsonDict
from pydantic_core import PydanticCustomError

from .._core._errors import ConfigError
from .._core._validate import Options, resolve_groups, show
from ._audio import LogMelOptions, resolve_audio

__all__ = [
    "LOADER_GROUPS",
    "OPTION_GROUP",
    "READ_AHEAD_BYTES",
    "DatasetOptions",
    "DeliveryOptions",
    "OrderOptions",
    "OutputOptions",
    "ReadOptions",
    "SamplingOptions",
    "TrackOptions",
    "dataset_options",
    "resolve_groups",
]


#: bytes of future batches a thread loader has fetched ahead at most (a store at a URL)
READ_AHEAD_BYTES = 256 << 20


def _integer(value: Any) -> Any:
    """A numpy integer taken as the int it is (``seed=np.int64(3)``); True and False refused."""
    if isinstance(value, Integral) and not isinstance(value, bool):
        return int(value)
    if isinstance(value, bool):
        raise PydanticCustomError("int_type", "Input should be a valid integer")
    return value


def _video_ids(value: Any) -> Any:
    """Store video ids given as any sequence or array of integers, kept as a tuple of ints."""
    if value is None:
        return None
    try:
        ids = np.asarray(value)
    except (TypeError, ValueError):
        ids = np.asarray([], dtype=object)
    if ids.ndim != 1 or (ids.size and not np.issubdtype(ids.dtype, np.integer)):
        raise ConfigError(f"video_ids must be a sequence of integers, got {show(value, 80)}")
    return tuple(ids.tolist())


def _path(value: Any) -> Any:
    return os.fspath(value) if isinstance(value, os.PathLike) else value


def _memory(value: str) -> str:
    if value not in ("disk", "ram") and not value.startswith("cuda"):
        raise ConfigError(f"unknown memory={value!r}; choose disk, ram or cuda[:N]")
    return value


Int = Annotated[int, BeforeValidator(_integer)]


def _choice(text: str) -> JsonDict:
    """A field's own message for a value it does not allow (``error_text`` fills the value)."""
    return {"error": text}


class SamplingOptions(Options):
    """Which videos the items come from and how windows are drawn from them."""

    split: str | None = Field(
        None, description="the videos of this split (a split name recorded at build time)"
    )
    video_ids: Annotated[tuple[int, ...] | None, BeforeValidator(_video_ids)] = Field(
        None, description="exactly these store video ids (not with split)"
    )
    exclude_damaged: bool = Field(
        False, description="leave out videos the decoder reported errors for at build time"
    )
    sampler_options: dict[str, Any] = Field(
        default_factory=dict,
        description="the named sampler's options (stride, jitter, clips, short...)",
    )
    clips_per_video: Int = Field(
        1, ge=1, description="windows drawn from each item of a random sampler per epoch"
    )
    seed: Int = Field(0, ge=0, description="seeds the windows and the augmentation")
    epoch: Int = Field(0, ge=0, description="the epoch items are drawn for until set_epoch")

    @model_validator(mode="after")
    def _one_choice(self) -> SamplingOptions:
        if self.split is not None and self.video_ids is not None:
            raise ConfigError("give split= or video_ids=, not both")
        return self


class OutputOptions(Options):
    """What a sample holds: its frames' layout and dtype, and a target beside the label."""

    layout: Literal["temporal", "channel", "conv3d", "keyframe"] = Field(
        "temporal",
        json_schema_extra=_choice(
            "unknown {key} {value}; choose one of temporal, channel, conv3d, keyframe"
        ),
        description="how a window's frames are arranged: (T,C,H,W), (C*T,H,W), (C,T,H,W), keyframe",
    )
    dtype: Literal["uint8", "float32", "float16"] = Field(
        "uint8",
        json_schema_extra=_choice("unknown {key} {value}; choose one of uint8, float32, float16"),
        description="the frames' dtype (float: scaled to [0, 1])",
    )
    targets: Literal["multi_hot", "frames"] | None = Field(
        None,
        json_schema_extra=_choice(
            "unknown {key}={value}; choose None (labels only), 'multi_hot' or 'frames'"
        ),
        description="a target from the store's annotations: the window's classes (C,) or "
        "each frame's (T, C); None: labels only",
    )


class ReadOptions(Options):
    """Where windows are read from: the store on disk, in RAM or on a GPU, and caches."""

    memory: Annotated[str, AfterValidator(_memory)] = Field(
        "disk", description="disk, ram (the store held in RAM) or cuda[:N] (held on a GPU)"
    )
    memory_budget: Int | None = Field(
        None, ge=0, description="bytes a memory cache may take (None: every video)"
    )
    memory_priority: Literal["reads", "balanced"] = Field(
        "reads", description="which videos a budgeted cache holds first"
    )
    decode_device: str | None = Field(
        None, description="decode a jpeg store's frames on this device (nvJPEG, batched)"
    )
    cache_dir: Annotated[str | None, BeforeValidator(_path)] = Field(
        None, description="a node-local cache folder for a store at a URL"
    )
    cache_limit: Int | None = Field(None, ge=1, description="the cache's size limit in bytes")

    @model_validator(mode="after")
    def _together(self) -> ReadOptions:
        if self.memory_budget is not None and self.memory == "disk":
            raise ConfigError(
                "memory_budget sizes a memory cache: give memory='ram' or 'cuda' with it"
            )
        if self.decode_device is not None and self.memory != "disk":
            raise ConfigError(
                f"decode_device={self.decode_device!r} decodes a jpeg store read from disk; "
                f"memory={self.memory!r} holds decoded frames already: give one or the other"
            )
        return self


# ``register`` is a field of the same name as ABCMeta.register, which the model's class (not
# its instances) has; pydantic warns at the class's creation, and an instance reads its field.
with warnings.catch_warnings():
    warnings.filterwarnings("ignore", 'Field name "register"', UserWarning)

    class TrackOptions(Options):
        """Tracks served beside the frames, aligned with each window (the store must hold
        them): audio, optical flow, registration."""

        audio: Annotated[LogMelOptions | None, BeforeValidator(resolve_audio)] = Field(
            None,
            description="'logmel' or a mapping of n_mels, window_ms, columns_per_frame: each "
            "window's log-mel columns, k per frame",
        )
        audio_missing: Literal["zeros", "error"] = Field(
            "zeros",
            json_schema_extra=_choice("{key}={value}: allowed: zeros, error"),
            description="a video without audio: zeros (mask False) or a DataError",
        )
        flow: bool = Field(
            False,
            json_schema_extra=_choice("{key}={value}: allowed: True or False"),
            description="the window's optical flow, (T-1, 2, H, W)",
        )
        register: Literal["homography", "flow"] | None = Field(
            None,
            json_schema_extra=_choice("{key}={value}: allowed: None, 'homography', 'flow'"),
            description="warp the frames onto the window's key frame",
        )
        register_onto: Literal["first", "middle"] | None = Field(
            None,
            json_schema_extra=_choice("{key}={value}: allowed: None, 'first', 'middle'"),
            description="the key frame of register: the first, the middle (T//2), or None: by "
            "layout (the middle in the keyframe layout, else the first)",
        )


#: the dataset's option groups: its keyword, and the model of that keyword's value
GROUPS: dict[str, type[Options]] = {
    "tracks": TrackOptions,
    "sampling": SamplingOptions,
    "output": OutputOptions,
    "reading": ReadOptions,
}
#: each option the dataset takes as a keyword of its own, and the group that holds it
OPTION_GROUP: dict[str, str] = {
    name: group for group, model in GROUPS.items() for name in model.model_fields
}


class DatasetOptions(Options):
    """Every option of a dataset, by group (``dataset.options``)."""

    tracks: TrackOptions = Field(default_factory=TrackOptions)
    sampling: SamplingOptions = Field(default_factory=SamplingOptions)
    output: OutputOptions = Field(default_factory=OutputOptions)
    reading: ReadOptions = Field(default_factory=ReadOptions)


def dataset_options(groups: Mapping[str, Any], keywords: Mapping[str, Any]) -> DatasetOptions:
    """The dataset's options from its group keywords (``tracks=``, ``sampling=``...) and the
    options given one by one (``seed=1``): :func:`resolve_groups`."""
    return DatasetOptions.model_validate(resolve_groups(GROUPS, groups, keywords))


# -- the loader's options ------------------------------------------------------------------------


class OrderOptions(Options):
    """Which items a loader's batches take, in which order, for which process."""

    drop_last: bool = Field(False, description="leave out the last, smaller batch of an epoch")
    balanced: bool = Field(
        False, description="draw items with weights inversely proportional to class frequency"
    )
    seed: Int | None = Field(None, ge=0, description="the order's seed (None: the dataset's)")
    rank: Int = Field(0, ge=0, description="this process's share of every epoch's order")
    world_size: Int = Field(1, ge=1, description="how many processes share the order")


class DeliveryOptions(Options):
    """How a loader reads batches ahead and hands them over."""

    mode: Literal["threads", "processes"] = Field(
        "threads",
        json_schema_extra=_choice("unknown loader {key} {value}; choose threads or processes"),
        description="worker threads in this process, or DataLoader worker processes",
    )
    prefetch_factor: Int = Field(4, ge=1, description="batches each worker reads ahead")
    persistent_workers: bool = Field(
        True, description="processes mode: keep the worker processes between epochs"
    )
    pin_memory: bool | None = Field(
        None, description="pin batches for the copy to a GPU (None: when a GPU is present)"
    )
    read_ahead: Int = Field(
        READ_AHEAD_BYTES,
        ge=0,
        json_schema_extra=_choice("{key}={value}: allowed: bytes, an integer >= 0 (0: none)"),
        description="a store at a URL: bytes of the next batches' ranges fetched ahead",
    )


#: the loader's option groups: its keyword, and the model of that keyword's value
LOADER_GROUPS: dict[str, type[Options]] = {"order": OrderOptions, "delivery": DeliveryOptions}
