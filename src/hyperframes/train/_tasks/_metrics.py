"""Metrics from predictions: top-k, mean class accuracy, precision/recall/F1, confusion, mIoU.

All functions take numpy arrays (or tensors) and return plain Python numbers and lists, ready
for JSON. Conventions:

* ``confusion[i, j]`` counts samples of true class ``i`` predicted as class ``j``;
* a class with no sample (no true and no predicted) is left out of means (recall of a class
  without samples is undefined); precision of a class never predicted is 0, and undefined
  (nan, as its recall and F1) for a class absent from both;
* ``top5`` is reported only with more than 5 classes (:data:`TOP_K`: a top-k is reported
  only for k < C; with C <= k every target is among the k best and the value is always 1.0);
  :func:`topk_accuracy` itself takes top-min(k, C);
* segmentation: IoU of class c = TP / (TP + FP + FN) over all pixels; ``miou`` averages the
  classes that occur (in the target or the prediction); pixels whose target equals
  ``ignore_index`` are not counted.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "classification_metrics",
    "confusion_matrix",
    "iou_from_confusion",
    "per_class_scores",
    "reported_top_k",
    "segmentation_metrics",
    "topk_accuracy",
    "video_level",
]

#: the top-k accuracies reported by :func:`classification_metrics`, each only for k < classes
#: (top-1 always: it is the headline); see :func:`reported_top_k`
TOP_K = (1, 5)


def reported_top_k(num_classes: int) -> tuple[int, ...]:
    """The k of the top-k accuracies reported for ``num_classes`` classes: 1, and each other k
    of :data:`TOP_K` below ``num_classes`` (with k >= C every target is among the k best)."""
    return tuple(k for k in TOP_K if k == 1 or k < num_classes)


def _np(x) -> np.ndarray:
    if hasattr(x, "detach"):
        x = x.detach().float().cpu().numpy() if x.is_floating_point() else x.detach().cpu().numpy()
    return np.asarray(x)


def confusion_matrix(pred, target, num_classes: int) -> np.ndarray:
    """(C, C) int64 counts; entries outside ``0..C-1`` in ``target`` are ignored."""
    pred = _np(pred).reshape(-1).astype(np.int64)
    target = _np(target).reshape(-1).astype(np.int64)
    keep = (target >= 0) & (target < num_classes)
    idx = target[keep] * num_classes + np.clip(pred[keep], 0, num_classes - 1)
    return np.bincount(idx, minlength=num_classes * num_classes).reshape(num_classes, -1)


def topk_accuracy(scores, target, ks=(1, 5)) -> dict[int, float]:
    """Share of samples whose target is among the ``k`` highest scores, for each k."""
    scores, target = _np(scores), _np(target).reshape(-1)
    if scores.shape[0] == 0:
        return {k: float("nan") for k in ks}
    order = np.argsort(-scores, axis=1, kind="stable")
    out = {}
    for k in ks:
        kk = min(k, scores.shape[1])
        hit = (order[:, :kk] == target[:, None]).any(axis=1)
        out[k] = float(hit.mean())
    return out


def per_class_scores(conf: np.ndarray) -> dict[str, list[float]]:
    """precision, recall, f1 and support per class from a confusion matrix."""
    conf = np.asarray(conf, dtype=np.float64)
    tp = np.diag(conf)
    support = conf.sum(axis=1)
    predicted = conf.sum(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        # never predicted: 0 when the class has samples, nan when it is absent altogether
        precision = np.where(predicted > 0, tp / predicted, np.where(support > 0, 0.0, np.nan))
        recall = np.where(support > 0, tp / support, np.nan)
        denom = precision + recall
        f1 = np.where(denom > 0, 2 * precision * recall / denom, 0.0)
    f1 = np.where(np.isnan(recall), np.nan, f1)
    return {
        "precision": precision.tolist(),
        "recall": recall.tolist(),
        "f1": f1.tolist(),
        "support": support.astype(np.int64).tolist(),
    }


def nanmean(values) -> float:
    """The mean of the values that are not NaN (NaN when none are)."""
    v = np.asarray(values, dtype=np.float64)
    v = v[~np.isnan(v)]
    return float(v.mean()) if v.size else float("nan")


def classification_metrics(scores, target, class_names: list[str] | None = None) -> dict:
    """top1, top5 (more than 5 classes only), mean class accuracy, macro F1, per-class scores
    and the confusion matrix of ``scores`` (N, C) (logits or probabilities) against ``target``
    (N,)."""
    scores, target = _np(scores), _np(target).reshape(-1).astype(np.int64)
    n, c = scores.shape
    names = list(class_names) if class_names is not None else [str(i) for i in range(c)]
    conf = confusion_matrix(scores.argmax(axis=1) if n else np.zeros(0), target, c)
    ks = reported_top_k(c)
    top = topk_accuracy(scores, target, ks)
    scores_pc = per_class_scores(conf)
    return {
        "samples": int(n),
        **{f"top{k}": top[k] for k in ks},
        "mean_class_accuracy": nanmean(scores_pc["recall"]),
        "macro_f1": nanmean(scores_pc["f1"]),
        "per_class": {
            name: {k: scores_pc[k][i] for k in ("precision", "recall", "f1", "support")}
            for i, name in enumerate(names)
        },
        "classes": names,
        "confusion": conf.tolist(),
    }


def video_level(scores, target, video_ids) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Average softmax probabilities of all clips (and crops) of each video.

    Returns ``(probabilities (V, C), target (V,), video_ids (V,))`` sorted by video id.
    """
    scores, target = _np(scores).astype(np.float64), _np(target).reshape(-1)
    vids = _np(video_ids).reshape(-1).astype(np.int64)
    z = scores - scores.max(axis=1, keepdims=True)
    prob = np.exp(z)
    prob /= prob.sum(axis=1, keepdims=True)
    uniq, inverse = np.unique(vids, return_inverse=True)
    sums = np.zeros((len(uniq), scores.shape[1]))
    np.add.at(sums, inverse, prob)
    counts = np.bincount(inverse, minlength=len(uniq))[:, None]
    labels = np.zeros(len(uniq), dtype=np.int64)
    labels[inverse] = target
    return sums / counts, labels, uniq


def iou_from_confusion(conf: np.ndarray) -> list[float]:
    """IoU per class (NaN for a class absent from both target and prediction)."""
    conf = np.asarray(conf, dtype=np.float64)
    tp = np.diag(conf)
    union = conf.sum(axis=0) + conf.sum(axis=1) - tp
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(union > 0, tp / union, np.nan).tolist()


def segmentation_metrics(conf: np.ndarray, class_names: list[str] | None = None) -> dict:
    """miou, pixel accuracy and per-class IoU from a pixel confusion matrix (C, C)."""
    conf = np.asarray(conf, dtype=np.int64)
    c = conf.shape[0]
    names = list(class_names) if class_names is not None else [str(i) for i in range(c)]
    iou = iou_from_confusion(conf)
    total = conf.sum()
    return {
        "pixels": int(total),
        "miou": nanmean(iou),
        "pixel_accuracy": float(np.trace(conf) / total) if total else float("nan"),
        "iou": {name: iou[i] for i, name in enumerate(names)},
        "classes": names,
        "confusion": conf.tolist(),
    }
