"""Multi-label classification: any number of classes per window (Charades actions, the
activities of an untrimmed video), ``train.task: multilabel``.

The model is a classification model (one logit per class); the targets are the samples'
multi-hot ``target`` (C,) (``HyperframeDataset(targets="multi_hot")``: a window's classes
from the store's multi-label videos and labelled segments, by pts); a (T, C) per-frame
target counts as the classes of any of its frames. Loss: binary cross-entropy with logits
(``train.class_weights`` weight each class's term); outputs are per-class probabilities,
the sigmoid of the logits.

Metrics (:func:`multilabel_metrics`): per class, average precision (AP: the area under the
precision-recall curve as scikit-learn's ``average_precision_score`` computes it, tied scores
taken together) and precision, recall and F1 at the threshold 0.5; ``map`` is the mean AP
over the classes with a positive sample, ``macro_f1`` the mean F1 over the same classes (a
class without positives is left out of means, as for single-label metrics), ``sample_f1``
the mean per-sample F1. ``best.pt`` is chosen by validation mAP. Video level
(``hyperframes eval``): the probabilities averaged over each video's views, its classes
the union of its views'.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
import torch.nn.functional as F

from ..._core._errors import DataError
from ...data import HyperframeDataset
from ._base import (
    Task,
    mean_loss,
    register_task,
    store_classes,
    view_groups,
    views_metrics,
    with_num_classes,
)
from ._metrics import nanmean as _nanmean

__all__ = ["MultilabelTask", "average_precision", "multilabel_metrics"]

#: probability at or above which a class counts as predicted (F1, precision, recall)
THRESHOLD = 0.5


def average_precision(scores, target) -> float:
    """AP of one class: ``sum_n (R_n - R_{n-1}) P_n`` over the distinct score thresholds in
    decreasing order (scikit-learn's definition); NaN without a positive sample."""
    scores = np.asarray(scores, np.float64).reshape(-1)
    target = np.asarray(target).reshape(-1).astype(bool)
    positives = int(target.sum())
    if positives == 0:
        return float("nan")
    order = np.argsort(-scores, kind="stable")
    s, t = scores[order], target[order]
    last = np.append(np.flatnonzero(np.diff(s) != 0), len(s) - 1)  # end of each tie group
    tps = np.cumsum(t)[last]
    precision = tps / (last + 1)
    recall = tps / positives
    return float(np.sum(np.diff(np.concatenate([[0.0], recall])) * precision))


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.asarray(x, np.float64)))


def multilabel_metrics(
    probs, targets, class_names: Sequence[str] | None = None, *, threshold: float = THRESHOLD
) -> dict:
    """mAP, per-class AP / precision / recall / F1 at ``threshold`` and the means (module
    doc) of ``probs`` (N, C) in 0..1 against multi-hot ``targets`` (N, C)."""
    probs = np.asarray(probs, np.float64)
    targets = np.asarray(targets).astype(bool)
    n, c = probs.shape if probs.ndim == 2 else (0, len(class_names or ()))
    names = list(class_names) if class_names is not None else [str(i) for i in range(c)]
    probs, targets = probs.reshape(n, c), targets.reshape(n, c)
    pred = probs >= threshold
    tp = (pred & targets).sum(axis=0).astype(np.float64)
    support = targets.sum(axis=0)
    predicted = pred.sum(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        precision = np.where(predicted > 0, tp / predicted, 0.0)
        recall = np.where(support > 0, tp / support, np.nan)
        f1 = np.where(precision + recall > 0, 2 * precision * recall / (precision + recall), 0.0)
    f1 = np.where(support > 0, f1, np.nan)
    ap = np.array([average_precision(probs[:, k], targets[:, k]) for k in range(c)])
    truth = targets.sum(axis=1) + pred.sum(axis=1)
    hits = (pred & targets).sum(axis=1)
    sample_f1 = np.where(truth > 0, 2 * hits / np.maximum(truth, 1), 1.0)
    return {
        "samples": int(n),
        "map": _nanmean(ap),
        "macro_f1": _nanmean(f1),
        "sample_f1": float(sample_f1.mean()) if n else float("nan"),
        "threshold": float(threshold),
        "per_class": {
            name: {
                "ap": float(ap[k]),
                "precision": float(precision[k]),
                "recall": float(recall[k]),
                "f1": float(f1[k]),
                "support": int(support[k]),
            }
            for k, name in enumerate(names)
        },
        "classes": names,
    }


@register_task
class MultilabelTask(Task):
    """Any number of classes per window (module doc): BCE-with-logits, sigmoid outputs, mAP
    and per-class F1 at 0.5; ``best.pt`` by validation mAP."""

    name = "multilabel"
    best_key = "val_map"
    train_metric = "train_f1"
    val_metrics = ("loss", "map", "macro_f1", "sample_f1")
    headline = ("map", "map")
    shown = (("train_f1", "f1"), ("val_map", "val mAP"))
    curves = (("train_f1", "train F1 @0.5"), ("val_map", "val mAP"))
    curves_title = "multi-label"

    @classmethod
    def dataset(cls, data, *, train, transform):
        return HyperframeDataset, {"transform": transform, "targets": "multi_hot"}

    @classmethod
    def resolve_classes(cls, store, *, num_classes, video_ids):
        needs = (
            "a multi-label model needs a store built from an annotation with labels (a label "
            "per video, several, or labelled segments)"
        )
        return with_num_classes(store_classes(store, needs), num_classes)

    def targets(self, batch) -> torch.Tensor:
        needs = (
            "multi-hot targets in batch.target (B, C) but the batch has none; give a dataset "
            "made with HyperframeDataset(..., targets='multi_hot') (training with train.task: "
            "multilabel does)"
        )
        target = self._batch_target(batch, needs).float()
        if target.dim() == 3:  # (B, T, C) per-frame classes: the window's are any frame's
            target = target.amax(dim=1)
        if self.label_map is not None and target.dim() == 2:  # the store's columns -> ours
            lut = torch.as_tensor(self.label_map, dtype=torch.int64)
            mapped = torch.zeros(len(target), self.num_classes, dtype=target.dtype)
            keep = torch.nonzero(lut >= 0).flatten()
            mapped[:, lut[keep]] = target[:, keep]
            target = mapped
        if target.dim() != 2 or target.shape[1] != self.num_classes:
            raise DataError(
                f"multi-hot targets of shape {tuple(target.shape)}; expected (B, "
                f"{self.num_classes}), one column per class"
            )
        return target

    def loss(self, logits, targets, *, mixed=None):
        return F.binary_cross_entropy_with_logits(logits, targets, weight=self.class_weights)

    def correct(self, logits, targets):
        pred = logits > 0  # sigmoid >= 0.5
        truth = targets > 0.5
        hits = (pred & truth).sum(1).float()
        total = (pred.sum(1) + truth.sum(1)).float()
        return torch.where(total > 0, 2 * hits / total.clamp(min=1), torch.ones_like(hits)).sum()

    def predictions(self, logits, targets):
        losses = F.binary_cross_entropy_with_logits(logits, targets, reduction="none").mean(1)
        return {
            "scores": logits.cpu().numpy().astype(np.float32),
            "targets": (targets > 0.5).cpu().numpy().astype(np.uint8),
            "losses": losses.cpu().numpy(),
        }

    def empty_predictions(self):
        c = self.num_classes
        return {
            "scores": np.zeros((0, c), np.float32),
            "targets": np.zeros((0, c), np.uint8),
            "losses": np.zeros(0, np.float32),
        }

    def metrics(self, pred):
        m = multilabel_metrics(_sigmoid(pred["scores"]), pred["targets"], self.classes)
        m["loss"] = mean_loss(pred)
        return m

    def _per_video(self, views):
        scores = np.concatenate([v["scores"] for v in views])
        targets = np.concatenate([v["targets"] for v in views]).astype(bool)
        inverse, group_video, group_segment = view_groups(views)
        probs = _sigmoid(scores)
        uniq = np.arange(len(group_video))
        sums = np.zeros((len(uniq), probs.shape[1]))
        np.add.at(sums, inverse, probs)
        counts = np.bincount(inverse, minlength=len(uniq))[:, None]
        truth = np.zeros((len(uniq), probs.shape[1]), bool)
        np.logical_or.at(truth, inverse, targets)
        return probs, targets, (group_video, group_segment), sums / np.maximum(counts, 1), truth

    def evaluate_views(self, views):
        probs, targets, _, video_probs, video_truth = self._per_video(views)
        per_video = multilabel_metrics(video_probs, video_truth, self.classes)
        clip_level = multilabel_metrics(probs, targets, self.classes)
        return views_metrics(len(probs), clip_level, per_video, map=per_video["map"])

    def video_predictions(self, views):
        """Per video: its classes (``label``), the classes of mean probability >= 0.5
        (``prediction``), both joined by ``;``, and the highest mean probability (``score``)."""
        _, _, (videos, segments), video_probs, video_truth = self._per_video(views)
        names = self.classes
        rows = []
        for i, v in enumerate(videos):
            p = video_probs[i]
            rows.append(
                {
                    "video_id": int(v),
                    "segment": int(segments[i]),
                    "label": ";".join(names[k] for k in np.flatnonzero(video_truth[i])),
                    "prediction": ";".join(names[k] for k in np.flatnonzero(p >= THRESHOLD)),
                    "score": float(p.max()) if p.size else float("nan"),
                }
            )
        return rows
