"""From a config to datasets: split, sampler, augmentation, and the run's input contract.

Frames travel as uint8, in the temporal layout (B, T, C, H, W), from the store to the model's
device; there the run's :class:`~hyperframes._core._contract.InputContract` (``DataBundle.contract``)
turns a batch into the model's input (:meth:`~hyperframes._core._contract.InputContract.prepare`:
float, normalised, in the model's layout), as eval, predict and export do.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any, Literal, TypeVar

import numpy as np
from pydantic import BaseModel

from ..._core._contract import InputContract
from ..._core._errors import ConfigError
from ...checkpoint import resolve_contract
from ...data import (
    DatasetOptions,
    HyperframeDataset,
    OutputOptions,
    ReadOptions,
    RepeatedWindows,
    SamplingOptions,
    TrackOptions,
    resolve_audio,
)
from ...data.transforms import (
    ColorJitter,
    Compose,
    ContractCrop,
    DropFrame,
    DuplicateFrame,
    GaussianNoise,
    RandomAffine,
    RandomHorizontalFlip,
    RandomResizedCrop,
    Reverse,
    Transform,
    contract_transform,
)
from ...models import get_spec
from .._tasks._base import get_task
from ._config import AUTO_STEPS, MAX_CLIPS
from ._splits import resolve_split

__all__ = [
    "DataBundle",
    "build_data",
    "dataset_options",
    "loader_workers",
    "make_dataset",
]

M = TypeVar("M", bound=BaseModel)


@dataclasses.dataclass
class DataBundle:
    store: object
    task: str
    layout: str
    classes: list[str]
    num_classes: int
    train: HyperframeDataset
    val: HyperframeDataset
    train_ids: np.ndarray
    val_ids: np.ndarray
    split_source: str  # "store" | "generated"
    contract: InputContract


def train_transform(aug) -> Transform | None:
    """``data.augmentation`` as transforms, in this order: crop, flip, affine (one set of
    parameters per window), colour jitter (per window, or per frame), Gaussian noise (per
    pixel), then the temporal ones (reverse, drop a frame, duplicate a frame), which move the
    frames' indices and mask with them."""
    steps: list[Transform] = []
    if aug.size is not None:
        steps.append(RandomResizedCrop(aug.size, scale=tuple(aug.scale), ratio=tuple(aug.ratio)))
    if aug.hflip > 0:
        steps.append(RandomHorizontalFlip(aug.hflip))
    if aug.affine:
        steps.append(RandomAffine(**{k: _pair(v) for k, v in aug.affine.items()}))
    if aug.color_jitter > 0:
        j = aug.color_jitter
        steps.append(ColorJitter(j, j, j, per_frame=aug.color_jitter_per_frame))
    if aug.noise > 0:
        steps.append(GaussianNoise(aug.noise))
    for p, step in ((aug.reverse, Reverse), (aug.drop_frame, DropFrame)):
        if p > 0:
            steps.append(step(p))
    if aug.duplicate_frame > 0:
        steps.append(DuplicateFrame(aug.duplicate_frame))
    return Compose(steps) if steps else None


def _pair(value):
    """A YAML list of two numbers as the (low, high) tuple the transforms take."""
    return tuple(value) if isinstance(value, list) else value


def eval_transform(aug) -> ContractCrop | None:
    """The evaluation transform for crops of ``aug.size``: the input contract's geometry
    (:meth:`~hyperframes._core._contract.InputContract.resize_crop`, the one implementation)."""
    if aug.size is None:
        return None
    return contract_transform(InputContract(frames=1, layout="temporal", size=None, crop=aug.size))


def model_layout(cfg) -> str:
    return get_spec(cfg.model.name).layout if cfg.data.layout == "auto" else cfg.data.layout


def model_task(cfg) -> str:
    """The run's task: ``train.task``, else the model's."""
    return cfg.train.task or get_spec(cfg.model.name).task


def _from_section(model: type[M], section, **values) -> M:
    """``model`` made of the fields that the config ``section`` has by the same name (the
    config's ``data`` and the dataset's option groups share their names), then ``values``."""
    fields = type(section).model_fields
    shared = {name: getattr(section, name) for name in model.model_fields if name in fields}
    return model(**{**shared, **values})


def dataset_options(
    cfg,
    *,
    train: bool,
    sampler_options: dict | None = None,
    budget: int | None = None,
) -> DatasetOptions:
    """The dataset's option groups from ``cfg.data`` (:func:`_from_section`), with what the
    run decides: windows in the temporal layout (the contract applies the model's), the
    seed of ``train.seed``, the sampler's options (``sampler_options``: the training or
    validation sampler's), multi-hot targets for ``multilabel``, the audio's options, and the
    memory cache's budget and priority (:func:`memory_options`). The store is opened with
    ``data.cache_dir`` before the dataset is made, so the dataset gets no cache options."""
    d = cfg.data
    audio = None
    if d.audio is not None:
        try:
            audio = resolve_audio(dict(d.audio_options))
        except ConfigError as e:
            raise ConfigError(f"data.audio_options: {e}") from None
    targets = "multi_hot" if model_task(cfg) == "multilabel" else None
    # the windows stay temporal here, so registration is told the model's key frame
    register_onto = None
    if d.register is not None:
        register_onto = "middle" if model_layout(cfg) == "keyframe" else "first"
    return DatasetOptions(
        tracks=_from_section(TrackOptions, d, audio=audio, register_onto=register_onto),
        sampling=_from_section(
            SamplingOptions,
            d,
            sampler_options=dict(sampler_options or {}),
            clips_per_video=1,  # data.clips_per_video: the training dataset's (make_dataset)
            seed=cfg.train.seed,
        ),
        output=_from_section(OutputOptions, d, layout="temporal", targets=targets),
        reading=_from_section(
            ReadOptions,
            d,
            cache_dir=None,
            cache_limit=None,
            **memory_options(cfg, train=train, budget=budget),
        ),
    )


def make_dataset(
    cfg,
    store,
    video_ids,
    *,
    train: bool,
    sampler: str | None = None,
    sampler_options: dict | None = None,
    transform: Callable[..., Any] | Literal["auto"] | None = "auto",
    memory_budget: int | None = None,
):
    """The dataset of ``video_ids`` for training (``train=True``) or evaluation; windows come
    in the temporal layout (the contract applies the model's at the model boundary), and the
    evaluation transform is the contract's geometry. A training dataset draws
    ``data.clips_per_video`` windows per item of its sampler (auto:
    :func:`auto_clips_per_video`)."""
    d = cfg.data
    if sampler is None:
        sampler = d.sampler if train else d.val_sampler
        sampler_options = d.sampler_options if train else d.val_sampler_options
    task = model_task(cfg)
    groups = dataset_options(
        cfg, train=train, sampler_options=sampler_options, budget=memory_budget
    )
    kwargs: dict[str, Any] = {
        "store": store,
        "sampler": sampler,
        "frames": d.frames,
        "video_ids": video_ids,
        **dict(groups),
    }
    if transform == "auto":  # what a task of windows through a transform takes
        transform = train_transform(d.augmentation) if train else eval_transform(d.augmentation)
    make, options = get_task(task).dataset(d, train=train, transform=transform)
    kwargs.update(options)
    k = d.repeats if train else 1
    if not train or (d.clips_per_video == 1 and k == 1):
        return make(**kwargs)
    if d.clips_per_video != "auto":
        return _repeated(make, kwargs, d.clips_per_video, k)
    once = make(**kwargs)  # one window per item of the sampler: how many items that gives
    clips = auto_clips_per_video(cfg, len(once) * k) if once.sampler.random else 1
    return once if clips * k == 1 else _repeated(make, kwargs, clips, k)


def _repeated(make, kwargs: dict, clips: int, repeats: int):
    """The dataset of ``clips`` items per item of the sampler, each of ``repeats`` windows of
    its video (``data.repeats``: :class:`~hyperframes.data._repeats.RepeatedWindows`)."""
    sampling = kwargs["sampling"].replace(clips_per_video=clips * repeats)
    ds = make(**{**kwargs, "sampling": sampling})
    if repeats == 1:
        return ds

    return RepeatedWindows(ds, repeats)


def memory_options(cfg, *, train: bool, budget: int | None = None) -> dict:
    """What the run decides of the dataset's :class:`~hyperframes.data.ReadOptions`: the
    cache's budget and priority (class-balanced draws make a rare class's videos the hot
    ones; ``budget``: another than ``data.memory_budget``); ``memory: cuda`` is refused
    without a CUDA GPU."""
    d = cfg.data
    out: dict[str, Any] = {}
    if d.memory == "cuda":
        import torch  # deferred: optional/heavy dependency

        if not torch.cuda.is_available():
            raise ConfigError(
                "data.memory: cuda holds the store on the GPU, and no CUDA GPU is available "
                "here; allowed: disk or ram"
            )
    if d.memory_budget is not None:
        out["memory_budget"] = int(d.memory_budget if budget is None else budget)
        out["memory_priority"] = "balanced" if (train and cfg.train.balanced) else "reads"
    return out


def auto_clips_per_video(cfg, items: int) -> int:
    """``data.clips_per_video: auto``: the windows per video (per item of the sampler) that
    give at least :data:`~hyperframes.train._config._config.AUTO_STEPS` optimizer steps an epoch of
    one process with ``items`` items drawn once, batches of ``data.batch_size``,
    ``train.accumulate`` batches a step; 1 when one window already does, at most
    :data:`~hyperframes.train._config._config.MAX_CLIPS`. It depends on the config and the store
    only, not on the number of processes, so a run resumed on another number keeps its epochs
    (N processes share those steps: AUTO_STEPS / N each)."""

    need = AUTO_STEPS * cfg.data.batch_size * cfg.train.accumulate
    return max(1, min(MAX_CLIPS, math.ceil(need / max(items, 1))))


def loader_workers(cfg) -> int | None:
    """``data.workers`` as :func:`hyperframes.loader` takes it (auto: None, its default)."""
    return None if cfg.data.workers == "auto" else int(cfg.data.workers)


def build_data(cfg, store) -> DataBundle:
    """Split the store, check the classes, and make the train and validation datasets."""
    task = model_task(cfg)
    train_ids, how = resolve_split(store, cfg.data.train_split, cfg.data, role="train")
    val_ids, _ = resolve_split(store, cfg.data.val_split, cfg.data, role="val")
    # a per_segment item takes its segment's class, not its video's: no video label needed
    labelled = {
        "training": train_ids if cfg.data.sampler != "per_segment" else train_ids[:0],
        "validation": val_ids if cfg.data.val_sampler != "per_segment" else val_ids[:0],
    }
    classes = get_task(task).resolve_classes(
        store, num_classes=cfg.model.num_classes, video_ids=labelled
    )
    num_classes = len(classes)
    train = make_dataset(cfg, store, train_ids, train=True)
    left = None  # the validation split's cache takes what the training split's leaves
    if train.cache_plan is not None and cfg.data.memory_budget is not None:
        left = max(0, int(cfg.data.memory_budget) - train.cache_plan.bytes)
    return DataBundle(
        store=store,
        task=task,
        layout=model_layout(cfg),
        classes=classes,
        num_classes=num_classes,
        train=train,
        val=make_dataset(cfg, store, val_ids, train=False, memory_budget=left),
        train_ids=train_ids,
        val_ids=val_ids,
        split_source=how,
        contract=resolve_contract(cfg, store=store, classes=tuple(classes)),
    )
