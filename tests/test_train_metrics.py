"""Metrics against values computed by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from hyperframes.train._tasks._metrics import (
    classification_metrics,
    confusion_matrix,
    iou_from_confusion,
    per_class_scores,
    segmentation_metrics,
    topk_accuracy,
    video_level,
)
from hyperframes.train._tasks._mixing import mix_batch, soft_targets

# 6 samples, 3 classes. Predictions (argmax): 0, 1, 1, 2, 2, 0; targets: 0, 0, 1, 1, 2, 2
SCORES = np.array(
    [
        [0.9, 0.05, 0.05],  # t0 p0, 2nd best 1
        [0.2, 0.7, 0.1],  # t0 p1, 2nd best 0
        [0.1, 0.8, 0.1],  # t1 p1
        [0.1, 0.3, 0.6],  # t1 p2, 2nd best 1
        [0.3, 0.1, 0.6],  # t2 p2
        [0.5, 0.1, 0.4],  # t2 p0, 2nd best 2
    ]
)
TARGET = np.array([0, 0, 1, 1, 2, 2])


def test_confusion_matrix_rows_are_truth():
    conf = confusion_matrix(SCORES.argmax(1), TARGET, 3)
    assert conf.tolist() == [[1, 1, 0], [0, 1, 1], [1, 0, 1]]
    # targets outside 0..C-1 (e.g. an ignore index) are not counted
    assert confusion_matrix([0, 1], [0, 255], 2).tolist() == [[1, 0], [0, 0]]


def test_topk_by_hand():
    top = topk_accuracy(SCORES, TARGET, (1, 2, 5))
    assert top[1] == pytest.approx(3 / 6)
    assert top[2] == pytest.approx(6 / 6)  # every target is in the two best scores
    assert top[5] == 1.0  # with 3 classes, top-5 is top-3
    assert topk_accuracy(torch.tensor(SCORES), torch.tensor(TARGET), (1,))[1] == 0.5


def test_precision_recall_f1_by_hand():
    s = per_class_scores(confusion_matrix(SCORES.argmax(1), TARGET, 3))
    # class 0: TP 1, predicted 2 (samples 0, 5), support 2 -> P 1/2, R 1/2, F1 1/2
    # class 1: TP 1, predicted 2 (1, 2), support 2 -> P 1/2, R 1/2
    # class 2: TP 1, predicted 2 (3, 4), support 2 -> P 1/2, R 1/2
    assert s["precision"] == pytest.approx([0.5, 0.5, 0.5])
    assert s["recall"] == pytest.approx([0.5, 0.5, 0.5])
    assert s["f1"] == pytest.approx([0.5, 0.5, 0.5])
    assert s["support"] == [2, 2, 2]
    # unbalanced: truth 0,0,0,1 ; predicted 0,0,1,1
    s = per_class_scores(confusion_matrix([0, 0, 1, 1], [0, 0, 0, 1], 3))
    assert s["precision"][:2] == pytest.approx([1.0, 0.5])
    assert s["recall"][:2] == pytest.approx([2 / 3, 1.0])
    assert math.isnan(s["recall"][2])  # no sample of class 2: undefined, left out of means
    assert s["f1"][:2] == pytest.approx([0.8, 2 / 3])


def test_an_absent_class_has_no_precision_as_it_has_no_recall():
    """A class with no sample and never predicted: precision, recall and F1 are all nan (not
    precision 0.000 beside recall nan); a class with samples never predicted keeps 0."""
    s = per_class_scores(confusion_matrix([0, 0, 0, 0], [0, 0, 1, 0], 3))
    assert s["precision"][:2] == pytest.approx([0.75, 0.0])  # class 1: 1 sample, never predicted
    assert all(math.isnan(s[k][2]) for k in ("precision", "recall", "f1"))
    m = classification_metrics(np.eye(3)[[0, 0]], [0, 0], ["a", "b", "c"])
    assert math.isnan(m["per_class"]["c"]["precision"]) and math.isnan(
        m["per_class"]["c"]["recall"]
    )


def test_classification_metrics_bundle():
    m = classification_metrics(SCORES, TARGET, ["a", "b", "c"])
    assert m["top1"] == pytest.approx(0.5)
    assert m["mean_class_accuracy"] == pytest.approx(0.5)
    assert m["macro_f1"] == pytest.approx(0.5)
    assert m["per_class"]["b"] == {"precision": 0.5, "recall": 0.5, "f1": 0.5, "support": 2}
    assert m["confusion"] == [[1, 1, 0], [0, 1, 1], [1, 0, 1]]
    # mean class accuracy differs from top-1 when classes are unbalanced
    m = classification_metrics(np.eye(2)[[0, 0, 0, 0, 1]], [0, 0, 0, 1, 1])
    assert m["top1"] == pytest.approx(4 / 5)
    assert m["mean_class_accuracy"] == pytest.approx((3 / 3 + 1 / 2) / 2)


def test_video_level_averages_softmax_over_clips():
    # video 7: two clips, one confidently wrong, one mildly right -> average decides
    logits = np.log(np.array([[0.6, 0.4], [0.1, 0.9], [0.8, 0.2]]))
    prob, labels, vids = video_level(logits, [1, 1, 0], [7, 7, 3])
    assert vids.tolist() == [3, 7]
    assert labels.tolist() == [0, 1]
    assert prob[1] == pytest.approx([0.35, 0.65])
    assert prob[0] == pytest.approx([0.8, 0.2])


def test_iou_and_miou_by_hand():
    pred = np.array([[0, 1], [1, 1]])
    target = np.array([[0, 1], [0, 255]])  # 255 ignored
    conf = confusion_matrix(pred, target, 2)
    assert conf.tolist() == [[1, 1], [0, 1]]
    # class 0: TP 1, FP 0, FN 1 -> 1/2 ; class 1: TP 1, FP 1, FN 0 -> 1/2
    assert iou_from_confusion(conf) == pytest.approx([0.5, 0.5])
    m = segmentation_metrics(conf, ["bg", "fg"])
    assert m["miou"] == pytest.approx(0.5)
    assert m["pixel_accuracy"] == pytest.approx(2 / 3)
    assert m["iou"] == {"bg": 0.5, "fg": 0.5}
    # a class in neither target nor prediction does not count in the mean
    m = segmentation_metrics(np.array([[3, 1, 0], [1, 3, 0], [0, 0, 0]]))
    assert m["miou"] == pytest.approx(0.6)  # (3/5 + 3/5) / 2


def test_soft_targets_and_mixing():
    y = soft_targets(torch.tensor([0, 2]), 3, smoothing=0.3)
    assert y[0].tolist() == pytest.approx([0.8, 0.1, 0.1])
    x = torch.arange(2 * 3 * 4 * 4, dtype=torch.float32).reshape(2, 3, 4, 4)
    labels = torch.tensor([0, 1])
    kw = {"smoothing": 0.0, "seed": 0, "rank": 0, "step": 5}
    out, t = mix_batch(x, labels, 2, mixup=0.4, cutmix=0.0, **kw)
    assert t.sum(1).tolist() == pytest.approx([1.0, 1.0])
    lam = float(t[0, 0]) if not torch.equal(out[0], x[0]) else 1.0
    # mixup: each sample is lam * itself + (1 - lam) * a partner, targets likewise
    partner = x[1] if float(t[0, 1]) > 0 else x[0]
    assert torch.allclose(out[0], lam * x[0] + (1 - lam) * partner, atol=1e-4)
    again, t2 = mix_batch(x, labels, 2, mixup=0.4, cutmix=0.0, **kw)
    assert torch.equal(out, again) and torch.equal(t, t2)  # seeded by (seed, rank, step)
    out, t = mix_batch(x, labels, 2, mixup=0.0, cutmix=1.0, **kw)
    # cutmix: the target weight of the partner is the share of pixels pasted from it
    pasted = (out[0] != x[0]).any(dim=0).float().mean().item()
    assert t.sum(1).tolist() == pytest.approx([1.0, 1.0])
    if float(t[0, 1]) > 0:
        assert float(t[0, 1]) == pytest.approx(pasted)
    same, t = mix_batch(x, labels, 2, mixup=0.0, cutmix=0.0, **kw)
    assert same is x and t.tolist() == [[1.0, 0.0], [0.0, 1.0]]
