"""From a config to datasets: split, sampler, layout, augmentation; and batch normalisation.

Frames travel as uint8 from the store to the model's device; :func:`prepare_input` turns a
batch into float, normalised by ``data.mean`` / ``data.std`` in the model's layout, there.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import torch

from .._errors import DataError
from .._layouts import KeyframeWindow
from ..data import HyperframeDataset
from ..data.transforms import (
    CenterCrop,
    ColorJitter,
    Compose,
    RandomHorizontalFlip,
    RandomResizedCrop,
    Resize,
    Transform,
    normalize,
)
from ._splits import resolve_split

__all__ = ["DataBundle", "build_data", "make_dataset", "prepare_input"]


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


def train_transform(aug) -> Transform | None:
    steps: list[Transform] = []
    if aug.size is not None:
        steps.append(RandomResizedCrop(aug.size, scale=tuple(aug.scale), ratio=tuple(aug.ratio)))
    if aug.hflip > 0:
        steps.append(RandomHorizontalFlip(aug.hflip))
    if aug.color_jitter > 0:
        j = aug.color_jitter
        steps.append(ColorJitter(j, j, j))
    return Compose(steps) if steps else None


def eval_transform(aug) -> Transform | None:
    if aug.size is None:
        return None
    return Compose([Resize(aug.size), CenterCrop(aug.size)])


def model_layout(cfg) -> str:
    from ..models import get_spec

    return get_spec(cfg.model.name).layout if cfg.data.layout == "auto" else cfg.data.layout


def model_task(cfg) -> str:
    from ..models import get_spec

    return get_spec(cfg.model.name).task


def make_dataset(
    cfg,
    store,
    video_ids,
    *,
    train: bool,
    sampler: str | None = None,
    sampler_options: dict | None = None,
    transform: Transform | str | None = "auto",
):
    """The dataset of ``video_ids`` for training (``train=True``) or evaluation."""
    d = cfg.data
    if sampler is None:
        sampler = d.sampler if train else d.val_sampler
        sampler_options = d.sampler_options if train else d.val_sampler_options
    task = model_task(cfg)
    kwargs = {
        "sampler": sampler,
        "frames": d.frames,
        "seed": cfg.train.seed,
        "layout": model_layout(cfg),
        "memory": d.memory,
        "sampler_options": dict(sampler_options or {}),
    }
    if task == "segmentation":
        from ._segmentation import SegmentationDataset

        hflip = d.augmentation.hflip if train else 0.0
        return SegmentationDataset(store, video_ids, hflip=hflip, **kwargs)
    if transform == "auto":
        transform = train_transform(d.augmentation) if train else eval_transform(d.augmentation)
    return HyperframeDataset(store, video_ids=video_ids, transform=transform, **kwargs)


def build_data(cfg, store) -> DataBundle:
    """Split the store, check the classes, and make the train and validation datasets."""
    task = model_task(cfg)
    train_ids, how = resolve_split(store, cfg.data.train_split, cfg.data, role="train")
    val_ids, _ = resolve_split(store, cfg.data.val_split, cfg.data, role="val")
    if task == "classification":
        classes = list(store.classes)
        if not classes:
            raise DataError(
                f"{store.path} has no class labels; a classification model needs a store built "
                "from root/<label>/<video> or an annotation with labels"
            )
        labels = np.asarray(store.videos.label_ids)
        for role, ids in (("training", train_ids), ("validation", val_ids)):
            unlabelled = [int(i) for i in ids if labels[i] < 0]
            if unlabelled:
                raise DataError(
                    f"{len(unlabelled)} {role} videos have no label (e.g. "
                    f"{store.videos[unlabelled[0]].path}); label them or leave them out of "
                    "the split"
                )
        num_classes = cfg.model.num_classes or len(classes)
        if num_classes < len(classes):
            raise DataError(
                f"model.num_classes={num_classes} but the store has {len(classes)} classes "
                f"({', '.join(classes[:10])}...); allowed: null or >= {len(classes)}"
            )
        classes = classes + [f"class_{i}" for i in range(len(classes), num_classes)]
    else:
        num_classes = cfg.model.num_classes or 2
        classes = (
            ["background", "foreground"]
            if num_classes == 2
            else [str(i) for i in range(num_classes)]
        )
    return DataBundle(
        store=store,
        task=task,
        layout=model_layout(cfg),
        classes=classes,
        num_classes=num_classes,
        train=make_dataset(cfg, store, train_ids, train=True),
        val=make_dataset(cfg, store, val_ids, train=False),
        train_ids=train_ids,
        val_ids=val_ids,
        split_source=how,
    )


def prepare_input(frames, layout: str, mean, std, device, *, frames_count: int | None = None):
    """Move a batch to ``device`` and normalise it (uint8 → float32, ``(x/255 - mean) / std``).

    A keyframe batch (key, context) comes back as a ``(key, context)`` tuple.
    """
    if isinstance(frames, KeyframeWindow | tuple):
        key, context = frames
        key = normalize(key.to(device, non_blocking=True), mean, std, layout="temporal")
        context = normalize(context.to(device, non_blocking=True), mean, std, layout="temporal")
        return KeyframeWindow(key, context)
    x = frames.to(device, non_blocking=True)
    return normalize(x, mean, std, layout=layout)


def batch_target(batch, task: str) -> torch.Tensor:
    """Class labels (B,) or segmentation masks (B, H, W) as int64."""
    if task == "segmentation":
        return torch.stack([m["target"] for m in batch.meta]).to(torch.int64)
    return batch.labels
