"""Detection metrics: COCO's mean average precision and a flicker rate. Numpy only.

**mAP** follows COCO's evaluation (area "all", at most 100 detections per image and class):
per class and IoU threshold, each image's detections in falling score order are matched
greedily to the unmatched ground-truth box of highest IoU at or above the threshold; the
precision of the pooled, score-sorted detections is made monotone (the envelope from the
right) and read at the 101 recall points 0, 0.01, ..., 1 (0 where a recall is not reached);
AP is their mean. ``map50`` is the mean over classes with ground truth at IoU 0.5, ``map``
the mean over those classes and the thresholds 0.50, 0.55, ..., 0.95.

**Flicker**: ground-truth boxes are linked into tracks from frame to frame (same class, IoU >=
0.3 with the track's last box, greedily, no gap); a track's object is *seen* in a frame when a
detection of its class scores >= ``score`` with IoU >= 0.5. A flicker is a run of seen (or
unseen) frames shorter than one second with the opposite state on both sides: there, gone,
there again. The rate is flickers per tracked object-second.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["box_iou", "coco_map", "flicker_rate"]

IOU_THRESHOLDS = np.linspace(0.5, 0.95, 10)
RECALL_POINTS = np.linspace(0.0, 1.0, 101)
MAX_DETECTIONS = 100


def box_iou(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """IoU (N, M) of corner boxes ``a`` (N, 4) and ``b`` (M, 4)."""
    a, b = np.asarray(a, np.float64).reshape(-1, 4), np.asarray(b, np.float64).reshape(-1, 4)
    lt = np.maximum(a[:, None, :2], b[None, :, :2])
    rb = np.minimum(a[:, None, 2:], b[None, :, 2:])
    inter = np.clip(rb - lt, 0, None).prod(-1)
    area = lambda x: np.clip(x[:, 2] - x[:, 0], 0, None) * np.clip(x[:, 3] - x[:, 1], 0, None)  # noqa: E731
    union = area(a)[:, None] + area(b)[None, :] - inter
    return np.where(union > 0, inter / np.where(union > 0, union, 1), 0.0)


def _match(det: np.ndarray, gt: np.ndarray, thresholds: np.ndarray) -> np.ndarray:
    """(len(thresholds), D) bool: detection d (score order) is a true positive."""
    tp = np.zeros((len(thresholds), len(det)), bool)
    if not len(det) or not len(gt):
        return tp
    iou = box_iou(det, gt)
    for t, thr in enumerate(thresholds):
        taken = np.zeros(len(gt), bool)
        for d in range(len(det)):
            cand = np.where(taken, -1.0, iou[d])
            g = int(np.argmax(cand))
            if cand[g] >= thr - 1e-10:
                taken[g] = True
                tp[t, d] = True
    return tp


def _average_precision(scores: np.ndarray, tp: np.ndarray, num_gt: int) -> np.ndarray:
    """AP (len(thresholds),) of pooled detections ``scores`` (D,) and ``tp`` (thr, D)."""
    order = np.argsort(-scores, kind="mergesort")
    tp = tp[:, order]
    ctp = np.cumsum(tp, 1)
    cfp = np.cumsum(~tp, 1)
    recall = ctp / num_gt
    precision = ctp / np.maximum(ctp + cfp, np.finfo(np.float64).eps)
    out = np.zeros(len(tp))
    for t in range(len(tp)):
        p = np.maximum.accumulate(precision[t][::-1])[::-1]  # the envelope from the right
        at = np.searchsorted(recall[t], RECALL_POINTS, side="left")
        out[t] = np.where(at < len(p), p[np.minimum(at, len(p) - 1)], 0.0).mean() if len(p) else 0
    return out


def coco_map(
    detections: Sequence[np.ndarray], truths: Sequence[np.ndarray], num_classes: int
) -> dict[str, Any]:
    """``map`` and ``map50`` (module doc) of per-image ``detections`` ((D, 6): x1, y1, x2, y2,
    score, class) against ``truths`` ((M, 5): x1, y1, x2, y2, class); NaN when no image has
    a ground-truth box. Also ``map_per_class`` (AP@[.5:.95], NaN for a class without any)."""
    per_class = np.full((num_classes, len(IOU_THRESHOLDS)), np.nan)
    for c in range(num_classes):
        scores, tps, num_gt = [], [], 0
        for det, gt in zip(detections, truths):
            g = gt[gt[:, 4] == c, :4]
            d = det[det[:, 5] == c]
            d = d[np.argsort(-d[:, 4], kind="mergesort")][:MAX_DETECTIONS]
            num_gt += len(g)
            scores.append(d[:, 4])
            tps.append(_match(d[:, :4], g, IOU_THRESHOLDS))
        if num_gt:
            per_class[c] = _average_precision(np.concatenate(scores), np.hstack(tps), num_gt)
    valid = ~np.isnan(per_class[:, 0])
    if not valid.any():
        return {"map": float("nan"), "map50": float("nan"), "map_per_class": per_class[:, 0]}
    return {
        "map": float(per_class[valid].mean()),
        "map50": float(per_class[valid, 0].mean()),
        "map_per_class": per_class.mean(1),
    }


def _tracks(truths: Sequence[np.ndarray]) -> list[list[tuple[int, int]]]:
    """Ground-truth boxes linked frame to frame: each track a list of (frame, row)."""
    done: list[list[tuple[int, int]]] = []
    live: list[list[tuple[int, int]]] = []
    for f, gt in enumerate(truths):
        nxt: list[list[tuple[int, int]]] = []
        free = np.ones(len(gt), bool)
        for tr in live:
            last_f, last_r = tr[-1]
            prev = truths[last_f][last_r]
            same = free & (gt[:, 4] == prev[4]) if len(gt) else free
            iou = box_iou(prev[None, :4], gt[:, :4])[0] if len(gt) else np.zeros(0)
            iou = np.where(same, iou, -1.0)
            if len(iou) and iou.max() >= 0.3:
                r = int(iou.argmax())
                free[r] = False
                tr.append((f, r))
                nxt.append(tr)
            else:
                done.append(tr)
        nxt += [[(f, int(r))] for r in np.flatnonzero(free)]
        live = nxt
    return done + live


def flicker_rate(
    detections: Sequence[np.ndarray],
    truths: Sequence[np.ndarray],
    *,
    times: Sequence[float] | np.ndarray,
    score: float = 0.5,
) -> dict[str, float]:
    """Flickers per tracked object-second (module doc) over the frames of one video in time
    order: ``detections[f]`` (D, 6) and ``truths[f]`` (M, 5) of the frame at ``times[f]``
    seconds. A run is short when the next state begins less than a second after it did.
    Returns ``flicker`` (the rate; NaN with no tracked object), ``flickers`` (the count) and
    ``object_seconds`` (track frames times the video's median frame interval)."""
    t = np.asarray(times, np.float64)
    step = float(np.median(np.diff(t))) if len(t) > 1 else 0.0
    flickers, frames = 0, 0
    for tr in _tracks(truths):
        seen = []
        for f, r in tr:
            gt = truths[f][r]
            det = detections[f]
            d = det[(det[:, 5] == gt[4]) & (det[:, 4] >= score)]
            seen.append(bool(len(d)) and bool((box_iou(gt[None, :4], d[:, :4]) >= 0.5).any()))
        frames += len(seen)
        at = t[[f for f, _ in tr]]
        change = np.flatnonzero(np.diff(np.asarray(seen, np.int8))) + 1  # each later run's start
        for a, b in itertools.pairwise(change):  # runs with a neighbour on both sides
            if at[b] - at[a] < 1.0 - 1e-9:
                flickers += 1
    seconds = frames * step
    return {
        "flicker": flickers / seconds if seconds else float("nan"),
        "flickers": float(flickers),
        "object_seconds": seconds,
    }
