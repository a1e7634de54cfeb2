"""Tasks: what a model learns to predict, apart from how the training loop runs.

A :class:`Task` owns everything that differs between, say, classifying windows and segmenting
their key frame: where the targets of a batch come from, the loss (with mixing, smoothing and
class weights), the running training metric, per-item predictions and the metrics computed
from them (validation and ``hyperframes eval``, clip- and video-level), the metric that picks
``best.pt`` and which way is better, and what is logged, printed and plotted. The trainer asks
its task and never branches on the task's name.

Tasks are registered by name (the ``task`` of a registered model)::

    @register_task
    class MyTask(Task):
        name = "my_task"
        ...

    task = create_task("classification", classes=["left", "right"], label_smoothing=0.1)

Each class also resolves its class names from a store (:meth:`Task.resolve_classes`), so adding
a task is one class plus the dataset that gives its samples a ``target``: ``multilabel``
(BCE-with-logits, sigmoid, mAP; :mod:`hyperframes.train._tasks._multilabel`, registered at the end
of this module) is one.
"""

from __future__ import annotations

import abc
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

import numpy as np
import torch
import torch.nn.functional as F

from ..._core._errors import ConfigError, DataError
from ..._core._registry import Registry
from ..._core._tasks import TASK_TRAITS, TaskTraits, task_traits
from ...data import HyperframeDataset
from ._metrics import (
    classification_metrics,
    confusion_matrix,
    reported_top_k,
    segmentation_metrics,
    video_level,
)
from ._mixing import mix_batch, soft_cross_entropy
from ._segmentation import SegmentationDataset

__all__ = [
    "ClassificationTask",
    "SegmentationTask",
    "Task",
    "create_task",
    "get_task",
    "list_tasks",
    "register_task",
]


def unfollowed_augmentation(cfg) -> str | None:
    """The first augmentation of ``cfg`` a dense target (masks, boxes) does not follow that
    is on, or None."""
    aug = cfg.data.augmentation
    names = ("affine", "noise", "reverse", "drop_frame", "duplicate_frame", "color_jitter")
    return next((k for k in names if getattr(aug, k)), None)


_TASKS: Registry[type[Task]] = Registry(
    "task", hint="register one with hyperframes.train.register_task", sort=True
)


class Task(abc.ABC):
    """What a run learns: targets, loss, metrics, the best-model key, what is logged.

    ``classes`` names the model's outputs (their count is the model's ``num_classes``);
    ``class_weights`` (one per class) weight the training loss; ``label_smoothing``,
    ``mixup`` and ``cutmix`` are honoured by the tasks that list them in :attr:`supports`
    (the others refuse a non-zero value); ``seed`` seeds mixing; ``device`` is where the
    loss's tensors live.
    """

    #: the registered name (a model's ``task``)
    name: ClassVar[str]
    #: what the task is, for config checks, the input contract, eval and predict (none of
    #: which branch on its name); default: class scores per window, as ``TaskTraits(name)``
    traits: ClassVar[TaskTraits]
    #: training options this task honours; the others must be 0
    supports: ClassVar[tuple[str, ...]] = ()
    #: crops per view ``hyperframes eval`` may take (whole frames only: ``(1,)``)
    eval_crops: ClassVar[tuple[int, ...]] = (1, 3)
    #: the epoch record's key that picks ``best.pt``, and which way is better
    best_key: ClassVar[str]
    higher_is_better: ClassVar[bool] = True
    #: the epoch record's key of the running training metric (the mean of :meth:`correct`)
    train_metric: ClassVar[str]
    #: validation metrics copied into each epoch record, as ``val_<name>`` (a task may narrow
    #: them per instance: classification reports ``top5`` only with more than 5 classes)
    val_metrics: tuple[str, ...]
    #: ``(summary key, metric)``: the summary's headline, from the best epoch's metrics
    headline: ClassVar[tuple[str, str]]
    #: ``(record key, label)`` printed after the loss in each epoch's line
    shown: ClassVar[tuple[tuple[str, str], ...]]
    #: ``(record key, label)`` drawn in the right panel of ``curves.png``, and its title
    curves: ClassVar[tuple[tuple[str, str], ...]]
    curves_title: ClassVar[str]
    #: the model's class of each store class (-1: none), applied by :meth:`targets` when set:
    #: ``hyperframes eval`` sets it to score a store whose class ids differ from the model's
    #: (classes matched by name); None: the store's ids are the model's (training)
    label_map: np.ndarray | None = None

    def __init__(
        self,
        classes: Sequence[str],
        *,
        class_weights: Sequence[float] | None = None,
        label_smoothing: float = 0.0,
        mixup: float = 0.0,
        cutmix: float = 0.0,
        seed: int = 0,
        device: torch.device | str = "cpu",
    ) -> None:
        given = {"label_smoothing": label_smoothing, "mixup": mixup, "cutmix": cutmix}
        for key, value in given.items():
            if value and key not in self.supports:
                raise ConfigError(
                    f"train.{key}: {value} but the {self.name} task does not use it; allowed: 0"
                )
        self.classes = list(classes)
        if class_weights is not None and len(class_weights) != len(self.classes):
            raise ConfigError(
                f"train.class_weights: {len(class_weights)} weights for {len(self.classes)} "
                f"classes ({', '.join(self.classes[:8])}); allowed: one weight per class, or null"
            )
        self.class_weights = (
            None if class_weights is None else torch.tensor(class_weights, device=device)
        )
        self.label_smoothing, self.mixup, self.cutmix = label_smoothing, mixup, cutmix
        self.seed = int(seed)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({len(self.classes)} classes)"

    @property
    def num_classes(self) -> int:
        return len(self.classes)

    # -- data -------------------------------------------------------------------------------
    @classmethod
    @abc.abstractmethod
    def resolve_classes(
        cls, store, *, num_classes: int | None, video_ids: Mapping[str, np.ndarray]
    ) -> list[str]:
        """The class names of a run on ``store`` (``num_classes``: the config's, or None),
        after checking that the videos of each role (``{"training": ids, ...}``) fit."""

    @classmethod
    def check_config(cls, cfg) -> None:
        """Refuse what a config asks that a model of this task would not honour (the config
        checks call it through the registry for the model's task); ConfigError naming the
        key. The default refuses nothing."""
        return None

    @classmethod
    def dataset(cls, data, *, train: bool, transform) -> tuple[Callable[..., Any], dict]:
        """The dataset class of this task's samples and its options from ``data`` (the
        config's ``data`` section) beside the ones every dataset takes (store, videos,
        sampler, ...), for training (``train``) or evaluation. The default: windows through
        ``transform`` (the augmentation, or the evaluation crop)."""
        return HyperframeDataset, {"transform": transform}

    # -- training ---------------------------------------------------------------------------
    @abc.abstractmethod
    def targets(self, batch) -> torch.Tensor:
        """The targets of a :class:`~hyperframes.data.HyperframeBatch`, on the CPU."""

    def _batch_target(
        self, batch, needs: str, fits: Callable[[torch.Tensor], bool] = lambda t: True
    ) -> torch.Tensor:
        """``batch.target``; a :class:`DataError` saying what this task ``needs`` when the batch
        has none, or one that does not ``fits``."""
        target = getattr(batch, "target", None)
        if target is None or not fits(target):
            raise DataError(f"the {self.name} task needs {needs}")
        return target

    def mix(self, x, targets: torch.Tensor, *, rank: int, step: int):
        """``(x, mixed)``: the input after batch mixing, and the mixed targets for
        :meth:`loss` (``None``: not mixed). The default mixes nothing."""
        return x, None

    @abc.abstractmethod
    def loss(
        self, logits: torch.Tensor, targets: torch.Tensor, *, mixed: torch.Tensor | None = None
    ) -> torch.Tensor:
        """The training loss of float ``logits`` (``mixed``: from :meth:`mix`)."""

    @abc.abstractmethod
    def correct(self, logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """The batch's sum of per-sample scores of :attr:`train_metric` (0..1 each)."""

    # -- evaluation -------------------------------------------------------------------------
    @abc.abstractmethod
    def predictions(self, logits: torch.Tensor, targets: torch.Tensor) -> dict[str, np.ndarray]:
        """Per-item numpy arrays of one batch (first axis: the batch), ``losses`` among them;
        gathered over ranks and sorted by item by
        :func:`~hyperframes.train._eval._predict.predict`."""

    @abc.abstractmethod
    def empty_predictions(self) -> dict[str, np.ndarray]:
        """What :meth:`predictions` gives for no item (the shapes of an empty share)."""

    @abc.abstractmethod
    def metrics(self, pred: Mapping[str, np.ndarray]) -> dict:
        """The metrics of one pass (validation), ``loss`` among them."""

    @abc.abstractmethod
    def evaluate_views(self, views: Sequence[Mapping[str, np.ndarray]]) -> dict:
        """The metrics of ``hyperframes eval`` from its passes over the videos (several clips,
        several crops), at the level this task reports (e.g. per view and per video)."""

    def video_predictions(self, views: Sequence[Mapping[str, np.ndarray]]) -> list[dict] | None:
        """One row per video for error analysis (``hyperframes eval`` writes them as CSV):
        ``video_id`` (the store's) and ``label``, ``prediction``, ``score``; None when the
        task has no per-video prediction (the default)."""
        return None

    # -- records ----------------------------------------------------------------------------
    @property
    def worst(self) -> float:
        """The best-model value before any validation."""
        return -math.inf if self.higher_is_better else math.inf

    def improved(self, value: float, best: float) -> bool:
        return value > best if self.higher_is_better else value < best

    def epoch_record(self, metrics: Mapping) -> dict[str, float]:
        """The validation entries of an epoch's record."""
        return {f"val_{k}": float(metrics[k]) for k in self.val_metrics}

    def summary(self, best_metrics: Mapping) -> dict[str, float]:
        """The summary's headline from the best epoch's metrics (NaN before any)."""
        key, metric = self.headline
        return {key: float(best_metrics.get(metric, float("nan")))}


def with_num_classes(classes: list[str], num_classes: int | None) -> list[str]:
    """The store's class names, padded with ``class_K`` up to ``model.num_classes`` (a model may
    have more outputs than the store has classes, never fewer)."""
    num_classes = num_classes or len(classes)
    if num_classes < len(classes):
        raise DataError(
            f"model.num_classes={num_classes} but the store has {len(classes)} classes "
            f"({', '.join(classes[:10])}...); allowed: null or >= {len(classes)}"
        )
    return classes + [f"class_{i}" for i in range(len(classes), num_classes)]


def cropped_with_targets(aug, *, train: bool) -> dict:
    """The options of a dataset whose targets move with the frames (masks, boxes): the flip
    and, for training, the random crop of ``aug`` (``data.augmentation``); evaluation sees
    whole frames, not flipped."""
    out: dict[str, Any] = {"hflip": aug.hflip if train else 0.0}
    if train:
        out.update(size=aug.size, scale=tuple(aug.scale), ratio=tuple(aug.ratio))
    return out


def register_task(cls: type[Task]) -> type[Task]:
    """Class decorator: make ``cls`` available to :func:`create_task` as ``cls.name``, and its
    :attr:`Task.traits` (default: class scores, ``TaskTraits(cls.name)``) to every part
    that asks what a task is."""
    if not (isinstance(cls, type) and issubclass(cls, Task)):
        raise TypeError(f"register_task takes a Task subclass, got {cls!r}")
    traits = cls.__dict__.get("traits") or task_traits(cls.name)
    if traits.name != cls.name:
        raise ConfigError(
            f"register_task: {cls.__name__}.traits names task {traits.name!r}, the class "
            f"{cls.name!r}; allowed: traits of the class's own name"
        )
    _TASKS.register(cls.name, cls)
    cls.traits = traits
    TASK_TRAITS.register(cls.name, traits)
    return cls


def list_tasks() -> list[str]:
    """The registered task names."""
    return _TASKS.names()


def get_task(name: str) -> type[Task]:
    """The task class registered as ``name``."""
    return _TASKS.get(name)


def create_task(name: str, classes: Sequence[str], **options) -> Task:
    """The task ``name`` for ``classes`` (``options``: see :class:`Task`)."""
    return get_task(name)(classes, **options)


@register_task
class ClassificationTask(Task):
    """One class per window: softmax cross-entropy (label smoothing, class weights; mixup and
    CutMix on soft targets); top-1, top-5 (more than 5 classes), mean class accuracy, macro F1
    and the confusion matrix; ``best.pt`` by validation top-1. Video level: the softmax averaged over each
    video's views."""

    name = "classification"
    supports = ("label_smoothing", "mixup", "cutmix")
    best_key = "val_top1"
    train_metric = "train_accuracy"
    val_metrics: tuple[str, ...] = ("loss", "top1", "top5", "mean_class_accuracy", "macro_f1")
    headline = ("accuracy", "top1")
    shown = (("train_accuracy", "acc"), ("val_top1", "val top1"))
    curves = (("train_accuracy", "train top-1"), ("val_top1", "val top-1"))
    curves_title = "accuracy"

    def __init__(self, classes: Sequence[str], **options) -> None:
        super().__init__(classes, **options)
        # top-k only for k < classes, as classification_metrics reports them
        ks = {f"top{k}" for k in reported_top_k(self.num_classes)}
        self.val_metrics = tuple(
            m for m in type(self).val_metrics if not m.startswith("top") or m in ks
        )

    @classmethod
    def resolve_classes(cls, store, *, num_classes, video_ids):
        classes = store_classes(
            store,
            "a classification model needs a store built from root/<label>/<video> or an "
            "annotation with labels",
        )
        labels = np.asarray(store.videos.label_ids)
        for role, ids in video_ids.items():
            unlabelled = [int(i) for i in ids if labels[i] < 0]
            if unlabelled:
                raise DataError(
                    f"{len(unlabelled)} {role} videos have no label (e.g. "
                    f"{store.videos[unlabelled[0]].path}); label them or leave them out of "
                    "the split"
                )
        return with_num_classes(classes, num_classes)

    def targets(self, batch) -> torch.Tensor:
        labels = batch.labels
        if self.label_map is None:
            return labels
        # one more entry, -1, for an unlabelled item (-1): predictions only, no loss
        lut = torch.as_tensor(np.append(self.label_map, -1), dtype=torch.int64)
        known = (labels >= 0) & (labels < len(lut) - 1)
        return lut[torch.where(known, labels, len(lut) - 1)]

    def mix(self, x, targets, *, rank, step):
        if self.mixup <= 0 and self.cutmix <= 0:
            return x, None
        return mix_batch(
            x,
            targets,
            self.num_classes,
            mixup=self.mixup,
            cutmix=self.cutmix,
            smoothing=self.label_smoothing,
            seed=self.seed,
            rank=rank,
            step=step,
        )

    def loss(self, logits, targets, *, mixed=None):
        if mixed is not None:
            return soft_cross_entropy(logits, mixed, self.class_weights)
        return F.cross_entropy(
            logits, targets, weight=self.class_weights, label_smoothing=self.label_smoothing
        )

    def correct(self, logits, targets):
        return (logits.argmax(1) == targets).float().sum()

    def predictions(self, logits, targets):
        # an unlabelled item (target -1, eval on a store without labels) has no loss: 0
        losses = F.cross_entropy(logits, targets, reduction="none", ignore_index=-1)
        return {
            "scores": logits.cpu().numpy(),
            "labels": targets.cpu().numpy(),
            "losses": losses.cpu().numpy(),
        }

    def empty_predictions(self):
        return {
            "scores": np.zeros((0, self.num_classes), np.float32),
            "labels": np.zeros(0, np.int64),
            "losses": np.zeros(0, np.float32),
        }

    def metrics(self, pred):
        m = classification_metrics(pred["scores"], pred["labels"], self.classes)
        m["loss"] = mean_loss(pred)
        return m

    def evaluate_views(self, views):
        scores = np.concatenate([v["scores"] for v in views])
        labels = np.concatenate([v["labels"] for v in views])
        groups, _, _ = view_groups(views)
        prob, video_labels, _ = video_level(scores, labels, groups)
        per_video = classification_metrics(np.log(prob + 1e-12), video_labels, self.classes)
        clip_level = classification_metrics(scores, labels, self.classes)
        return views_metrics(len(scores), clip_level, per_video, accuracy=per_video["top1"])

    def video_predictions(self, views):
        """Per video (per segment, for ``per_segment`` views): its class (``label``), the
        class of the highest mean softmax over its views (``prediction``) and that
        probability (``score``); ``segment`` is the store's segment row (-1: the video)."""
        scores = np.concatenate([v["scores"] for v in views])
        labels = np.concatenate([v["labels"] for v in views])
        groups, group_video, group_segment = view_groups(views)
        prob, video_labels, uniq = video_level(scores, labels, groups)
        best = prob.argmax(axis=1) if len(prob) else np.zeros(0, np.int64)
        names = self.classes
        return [
            {
                "video_id": int(group_video[g]),
                "segment": int(group_segment[g]),
                "label": names[int(t)] if 0 <= t < len(names) else "",
                "prediction": names[int(b)],
                "score": float(prob[i, b]),
            }
            for i, (g, t, b) in enumerate(zip(uniq, video_labels, best))
        ]


def store_classes(store, needs: str) -> list[str]:
    """The class names of ``store``; a :class:`DataError` saying what the task ``needs`` when
    it has none."""
    classes = list(store.classes)
    if not classes:
        raise DataError(f"{store.path} has no class labels; {needs}")
    return classes


def mean_loss(pred: Mapping[str, np.ndarray]) -> float:
    """The mean of a prediction's per-window ``losses`` (NaN when it has none)."""
    return float(pred["losses"].mean()) if len(pred["losses"]) else float("nan")


def views_metrics(views: int, clip_level: dict, video_level: dict, **headline: float) -> dict:
    """What ``evaluate_views`` returns: the number of ``views``, the metrics over clips and over
    videos, and the ``headline`` numbers (e.g. ``accuracy``) taken from them."""
    return {"views": views, "clip_level": clip_level, "video_level": video_level, **headline}


def view_groups(views: Sequence[Mapping[str, np.ndarray]]):
    """``(group of each view, video of each group, segment of each group)``: the views of one
    video form a group, those of one segment (``per_segment`` items: ``segments`` >= 0) one
    of their own; groups are numbered 0..G-1."""
    vids = np.concatenate([np.asarray(v["video_ids"], np.int64) for v in views])
    segs = np.concatenate(
        [np.asarray(v.get("segments", np.full(len(v["video_ids"]), -1)), np.int64) for v in views]
    )
    keys = np.stack([vids, segs], axis=1)
    uniq, groups = np.unique(keys, axis=0, return_inverse=True)
    return groups.reshape(-1), uniq[:, 0], uniq[:, 1]


@register_task
class SegmentationTask(Task):
    """A class per pixel of each window's key frame: per-pixel cross-entropy (class weights);
    pixel accuracy, per-class IoU and mIoU from a pixel confusion matrix; ``best.pt`` by
    validation mIoU. Targets are ``batch.target`` masks (B, H, W), the ``target`` of each
    sample (see :class:`~hyperframes.train.SegmentationDataset`)."""

    name = "segmentation"
    eval_crops = (1,)
    best_key = "val_miou"
    train_metric = "train_pixel_accuracy"
    val_metrics = ("loss", "miou", "pixel_accuracy")
    headline = ("miou", "miou")
    shown = (("val_miou", "val mIoU"),)
    curves = (("train_pixel_accuracy", "train pixel acc."), ("val_miou", "val mIoU"))
    curves_title = "segmentation"

    @classmethod
    def check_config(cls, cfg) -> None:
        """No label mixing or balancing; crop, scale and hflip only (each applied to frames
        and masks together); whole frames in evaluation."""
        name = cfg.model.name
        if cfg.train.mixup or cfg.train.cutmix:
            raise ConfigError(
                "train.mixup / train.cutmix apply to classification only; allowed for the "
                f"segmentation model {name!r}: 0"
            )
        if cfg.train.balanced or cfg.train.label_smoothing:
            raise ConfigError(
                "train.balanced / train.label_smoothing apply to classification only; allowed "
                f"for the segmentation model {name!r}: false / 0"
            )
        extra = unfollowed_augmentation(cfg)
        if extra:
            raise ConfigError(
                f"data.augmentation.{extra}: not applied to segmentation windows (their masks "
                "move with size/scale/ratio and hflip only); allowed for the segmentation "
                f"model {name!r}: off (crop, scale and hflip are applied to frames and masks)"
            )
        if cfg.eval.crops != 1:
            raise ConfigError("eval.crops: segmentation is evaluated on whole frames; allowed: 1")

    @classmethod
    def dataset(cls, data, *, train, transform):
        # frames and masks cropped together; evaluation sees whole frames
        return SegmentationDataset, cropped_with_targets(data.augmentation, train=train)

    @classmethod
    def resolve_classes(cls, store, *, num_classes, video_ids):
        num_classes = num_classes or 2
        if num_classes == 2:
            return ["background", "foreground"]
        return [str(i) for i in range(num_classes)]

    def targets(self, batch) -> torch.Tensor:
        needs = (
            "masks in batch.target (B, H, W) but the batch has none; give a dataset whose "
            "samples carry Hyperframe.target, such as hyperframes.train.SegmentationDataset"
        )
        return self._batch_target(batch, needs).to(torch.int64)

    def loss(self, logits, targets, *, mixed=None):
        return F.cross_entropy(logits, targets, weight=self.class_weights)

    def correct(self, logits, targets):
        return (logits.argmax(1) == targets).float().mean(dim=(1, 2)).sum()

    def predictions(self, logits, targets):
        losses = F.cross_entropy(logits, targets, reduction="none").flatten(1).mean(1)
        pred, tgt = logits.argmax(1).cpu().numpy(), targets.cpu().numpy()
        c = self.num_classes
        conf = [confusion_matrix(pred[b], tgt[b], c) for b in range(len(pred))]
        return {
            "confusion": np.stack(conf).astype(np.int64) if conf else np.zeros((0, c, c), np.int64),
            "losses": losses.cpu().numpy(),
        }

    def empty_predictions(self):
        c = self.num_classes
        return {"confusion": np.zeros((0, c, c), np.int64), "losses": np.zeros(0, np.float32)}

    def metrics(self, pred):
        m = segmentation_metrics(pred["confusion"].sum(axis=0), self.classes)
        m["loss"] = mean_loss(pred)
        return m

    def evaluate_views(self, views):
        conf = sum(v["confusion"].sum(axis=0) for v in views)
        return {
            "windows": sum(len(v["items"]) for v in views),
            **segmentation_metrics(conf, self.classes),
        }
