"""Detection (``train.task: detection``): the boxes of each window's middle frame.

Data: a store built with ``--boxes`` (``index/boxes.npy``, class names in the manifest's
``box_classes``). :class:`DetectionDataset` gives each window the boxes of its key frame,
position ``T // 2`` (a frame without boxes has none), as the sample's ``target`` (N, 5) float32
rows ``x1, y1, x2, y2, class`` with corners normalised to [0, 1]; collation pads a batch's
lists to its longest with rows of class -1 (``target`` (B, M, 5)). Training windows get one
geometric transform for all T frames and the boxes together: a horizontal flip
(``data.augmentation.hflip``) and, with ``data.augmentation.size``, a random crop of
``scale`` of the area and ``ratio`` aspect resized to size x size (the scale change); boxes are
clipped to the crop and dropped when less than a quarter of them stays inside.

Task: FCOS's loss (focal classification, GIoU regression, centerness) from torchvision's own
code on the model's dense output (:mod:`hyperframes.models._detection`), in normalised
coordinates; detections decoded and NMS-filtered by torchvision's FCOS too. Metrics
(:mod:`~hyperframes.train._tasks._box_metrics`): COCO mAP@[.5:.95] (``map``, picks ``best.pt``) and
mAP@0.5 (``map50``); ``hyperframes eval`` adds the flicker rate over each video's windows.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch

from ..._core._errors import ConfigError, DataError
from ...data import StageBatch
from ...models import MAX_DETECTIONS, anchor_levels, decode_detections, detection_head, split_output
from ._base import Task, cropped_with_targets, mean_loss, register_task, unfollowed_augmentation
from ._box_metrics import box_iou, coco_map, flicker_rate
from ._key_geometry import KeyFrameDataset, KeyFrameGeometry

__all__ = ["DetectionDataset", "DetectionTargets", "DetectionTask", "key_boxes"]

#: the share of a box's area that must stay inside a crop for the box to be kept
KEEP_INSIDE = 0.25


def key_boxes(store, video_id: int, stored_frame: int) -> torch.Tensor:
    """(N, 5) float32 rows ``x1, y1, x2, y2, class`` of a stored frame (N = 0: none)."""
    ann = store.index.annotations
    if ann is None or ann.boxes is None:
        raise DataError(
            f"{store.path}: has no boxes; detection needs a store built with --boxes "
            "boxes.csv (path,time,x1,y1,x2,y2,label)"
        )
    xyxy, ids = ann.boxes_of(video_id, stored_frame)
    return torch.from_numpy(np.concatenate([xyxy, ids[:, None].astype(np.float32)], 1))


def crop_boxes(boxes: torch.Tensor, x0: float, y0: float, w: float, h: float) -> torch.Tensor:
    """Boxes (N, 5) in the frame's [0, 1] coordinates to a crop's (x0, y0, w, h, as fractions
    of the frame): clipped to it, dropped when less than :data:`KEEP_INSIDE` stays inside."""
    if not len(boxes):
        return boxes
    out = boxes.clone()
    out[:, [0, 2]] = (boxes[:, [0, 2]] - x0) / w
    out[:, [1, 3]] = (boxes[:, [1, 3]] - y0) / h
    area = (out[:, 2] - out[:, 0]) * (out[:, 3] - out[:, 1])
    out[:, :4] = out[:, :4].clamp(0, 1)
    inside = (out[:, 2] - out[:, 0]).clamp_min(0) * (out[:, 3] - out[:, 1]).clamp_min(0)
    keep = (inside >= KEEP_INSIDE * area) & (out[:, 2] > out[:, 0]) & (out[:, 3] > out[:, 1])
    return out[keep]


class DetectionTargets(KeyFrameGeometry):
    """The detection task's target stage (:class:`~hyperframes.data.TargetStage`, at the
    read): each window's key frame boxes (N, 5), frames and boxes flipped and cropped together
    with the sample's own generator (module doc); a batch's lists padded with rows of -1."""

    def geometry(self, frames: torch.Tensor, boxes: torch.Tensor, g: torch.Generator):
        """One window's frames (T, C, H, W) and boxes flipped, then cropped and resized."""
        if self.hflip > 0 and float(torch.rand((), generator=g)) < self.hflip:
            frames = frames.flip(-1)
            if len(boxes):
                boxes = boxes.clone()
                boxes[:, [0, 2]] = 1 - boxes[:, [2, 0]]
        if self.size is None:
            return frames, boxes
        h, w = frames.shape[-2:]
        area = float(torch.empty(()).uniform_(*self.scale, generator=g))
        lo, hi = math.log(self.ratio[0]), math.log(self.ratio[1])
        aspect = math.exp(float(torch.empty(()).uniform_(lo, hi, generator=g)))
        cw = min(1.0, math.sqrt(area * aspect))  # as fractions of the frame's width, height
        ch = min(1.0, math.sqrt(area / aspect))
        x0 = float(torch.rand((), generator=g)) * (1 - cw)
        y0 = float(torch.rand((), generator=g)) * (1 - ch)
        c0, r0 = round(x0 * w), round(y0 * h)
        c1, r1 = max(c0 + 1, round((x0 + cw) * w)), max(r0 + 1, round((y0 + ch) * h))
        crop = frames[..., r0:r1, c0:c1].float()
        size = (self.size, self.size)
        out = torch.nn.functional.interpolate(crop, size=size, mode="bilinear", antialias=True)
        frames = out.round().clamp(0, 255).to(frames.dtype)
        # the boxes follow the pixels actually cut
        return frames, crop_boxes(boxes, c0 / w, r0 / h, (c1 - c0) / w, (r1 - r0) / h)

    def targets(self, batch: StageBatch) -> tuple[torch.Tensor, torch.Tensor]:
        """The batch's frames and key frame boxes (B, M, 5), rows of -1 padding each list."""
        key = batch.plan.index.shape[1] // 2
        pairs = zip(batch.plan.videos.tolist(), batch.plan.index[:, key].tolist())
        boxes = [key_boxes(batch.store, v, f) for v, f in pairs]
        frames = batch.frames
        if self.hflip > 0 or self.size is not None:
            moved = [self.geometry(frames[k], boxes[k], g) for k, g in enumerate(batch.generators)]
            frames = torch.stack([f for f, _ in moved])
            boxes = [b for _, b in moved]
        padded = torch.nn.utils.rnn.pad_sequence(boxes, batch_first=True, padding_value=-1.0)
        return frames, padded


class DetectionDataset(KeyFrameDataset):
    """Windows of a store with boxes, each with its key frame's boxes as ``target`` (module
    doc), made by the detection target stage (:class:`DetectionTargets`). ``hflip``: the
    flip's probability; ``size``: the crop's side (None: whole frames), ``scale`` /
    ``ratio``: its area fraction and aspect ranges."""

    stage_type = DetectionTargets

    def __init__(self, store, video_ids, **kwargs) -> None:
        super().__init__(store, video_ids, **kwargs)
        if len(store.videos):
            key_boxes(store, 0, 0)  # a store without boxes is refused here, not at a read


@register_task
class DetectionTask(Task):
    """Boxes of the window's key frame (module doc)."""

    name = "detection"
    eval_crops = (1,)
    best_key = "val_map"
    train_metric = "train_recall"
    val_metrics = ("loss", "map", "map50")
    headline = ("map", "map")
    shown = (("val_map", "val mAP"), ("val_map50", "val mAP@0.5"))
    curves = (("train_recall", "train recall@0.5"), ("val_map", "val mAP"))
    curves_title = "detection"

    @classmethod
    def check_config(cls, cfg) -> None:
        """No label balancing; of the augmentation, the geometry the boxes follow (hflip, the
        crop: size, scale, ratio) only; whole frames at evaluation."""
        name = cfg.model.name
        if cfg.train.balanced:
            raise ConfigError(
                f"train.balanced: draws videos by their class; allowed for the detection model "
                f"{name!r}: false"
            )
        extra = unfollowed_augmentation(cfg)
        if extra:
            raise ConfigError(
                f"data.augmentation.{extra}: not applied to detection windows; allowed for the "
                f"detection model {name!r}: off (hflip and the crop, size/scale/ratio, move "
                "frames and boxes together)"
            )
        if cfg.eval.crops != 1:
            raise ConfigError("eval.crops: detection is evaluated on whole frames; allowed: 1")

    @classmethod
    def dataset(cls, data, *, train, transform):  # frames and boxes transformed together
        return DetectionDataset, cropped_with_targets(data.augmentation, train=train)

    def __init__(self, classes: Sequence[str], **options) -> None:
        super().__init__(classes, **options)
        self.net = detection_head(self.num_classes)

    @classmethod
    def resolve_classes(cls, store, *, num_classes, video_ids):
        names = list(store.manifest.get("box_classes") or ())
        if not names:
            raise DataError(
                f"{store.path}: has no box classes; detection needs a store built with "
                "--boxes boxes.csv (path,time,x1,y1,x2,y2,label)"
            )
        if num_classes is not None and num_classes < len(names):
            raise DataError(
                f"model.num_classes={num_classes} but the store's boxes have {len(names)} "
                f"classes ({', '.join(names[:10])}); allowed: null or >= {len(names)}"
            )
        return names + [f"class_{i}" for i in range(len(names), num_classes or len(names))]

    def targets(self, batch) -> torch.Tensor:
        needs = (
            "boxes in batch.target (B, M, 5): x1, y1, x2, y2, class (-1: padding); give a "
            "hyperframes.train.DetectionDataset"
        )
        target = self._batch_target(batch, needs, lambda t: t.dim() == 3 and t.shape[-1] == 5)
        return target.to(torch.float32)

    @staticmethod
    def _truths(targets: torch.Tensor) -> list[dict[str, torch.Tensor]]:
        return [
            {"boxes": t[t[:, 4] >= 0, :4], "labels": t[t[:, 4] >= 0, 4].to(torch.int64)}
            for t in targets
        ]

    def loss(self, logits, targets, *, mixed=None):
        head, anchors = split_output(logits.float(), self.num_classes)
        self.net.to(logits.device)
        losses = self.net.compute_loss(
            self._truths(targets), head, [anchors] * len(logits), anchor_levels(anchors)
        )
        return sum(losses.values())

    def correct(self, logits, targets):
        """Per window, the share of its boxes found (a detection of its class scoring >= 0.3
        with IoU >= 0.5); a window without boxes counts 1."""
        dets = decode_detections(self.net, logits.detach().float(), self.num_classes)
        total = 0.0
        for det, t in zip(dets, targets.detach().cpu()):
            gt = t[t[:, 4] >= 0].numpy()
            d = det[det[:, 4] >= 0.3].cpu().numpy()
            if not len(gt):
                total += 1.0
                continue
            same = gt[:, 4][:, None] == d[:, 5][None, :]
            hit = (box_iou(gt[:, :4], d[:, :4]) >= 0.5) & same
            total += float(hit.any(1).mean())
        return torch.tensor(total)

    def predictions(self, logits, targets):
        head, anchors = split_output(logits.float(), self.num_classes)
        self.net.to(logits.device)
        truths = self._truths(targets)
        losses = torch.stack(
            [
                sum(
                    self.net.compute_loss(
                        [t],
                        {k: v[i : i + 1] for k, v in head.items()},
                        [anchors],
                        anchor_levels(anchors),
                    ).values()
                )
                for i, t in enumerate(truths)
            ]
        )
        dets = decode_detections(self.net, logits, self.num_classes)
        b = len(logits)
        det = np.full((b, MAX_DETECTIONS, 6), -1.0, np.float32)
        gt = np.full((b, MAX_DETECTIONS, 5), -1.0, np.float32)
        for i, (d, t) in enumerate(zip(dets, targets.cpu())):
            det[i, : len(d)] = d[:MAX_DETECTIONS].cpu().numpy()
            rows = t[t[:, 4] >= 0][:MAX_DETECTIONS].numpy()
            gt[i, : len(rows)] = rows
        return {"detections": det, "truths": gt, "losses": losses.cpu().numpy()}

    def empty_predictions(self):
        return {
            "detections": np.zeros((0, MAX_DETECTIONS, 6), np.float32),
            "truths": np.zeros((0, MAX_DETECTIONS, 5), np.float32),
            "losses": np.zeros(0, np.float32),
        }

    @staticmethod
    def _unpad(pred) -> tuple[list[np.ndarray], list[np.ndarray]]:
        dets = [d[d[:, 5] >= 0] for d in pred["detections"]]
        gts = [g[g[:, 4] >= 0] for g in pred["truths"]]
        return dets, gts

    def metrics(self, pred):
        dets, gts = self._unpad(pred)
        m = coco_map(dets, gts, self.num_classes)
        out = {"map": m["map"], "map50": m["map50"], "windows": len(dets)}
        out["loss"] = mean_loss(pred)
        return out

    def evaluate_views(self, views):
        """mAP over every view's windows, and the flicker rate over each view's windows of
        a video in time order (dense windows, ``sliding`` at stride 1, make it per frame)."""
        keys = self.empty_predictions()
        pred = {k: np.concatenate([np.asarray(v[k]) for v in views]) for k in keys}
        out = self.metrics(pred)
        flickers, seconds = 0.0, 0.0
        for v in views:
            dets, gts = self._unpad(v)
            vids, times = np.asarray(v["video_ids"]), np.asarray(v["key_seconds"])
            for vid in np.unique(vids):
                rows = np.flatnonzero(vids == vid)
                rows = rows[np.argsort(times[rows], kind="stable")]
                f = flicker_rate([dets[r] for r in rows], [gts[r] for r in rows], times=times[rows])
                flickers += f["flickers"]
                seconds += f["object_seconds"]
        out["flicker"] = flickers / seconds if seconds else float("nan")
        out["flicker_object_seconds"] = seconds
        return out
