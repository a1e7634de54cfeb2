"""The frame tasks: ``interpolation`` and ``super_resolution`` (``train.task``).

A restoring model (:mod:`hyperframes.models._restore`) outputs a frame (B, 3, H, W) in [0, 1];
the targets are ``batch.target`` (B, 2, 3, H, W) -- the true frame and the task's baseline,
made at load (:class:`~hyperframes.train._tasks._frame_data.FrameTaskDataset`). The loss is the mean
absolute error against the true frame; the metrics are PSNR and SSIM of the model and of the
baseline (the linear blend of the two neighbours for interpolation, bicubic upscaling for
super-resolution), both reported, and the model's gain over the baseline; ``best.pt`` by
validation PSNR; the running training metric is SSIM.

* **PSNR** of one frame: ``10 log10(1 / MSE)`` over its pixels and channels, values clipped to
  [0, 1] first; a metric is the mean over frames (dB), an identical frame counts as 100 dB.
* **SSIM** of one frame: the mean over channels and positions of Wang et al.'s index with an
  11 x 11 Gaussian window (sigma 1.5; smaller frames: a window of their short side), valid
  positions only, ``C1 = 0.01**2``, ``C2 = 0.03**2`` on the [0, 1] scale.
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F

from ..._core._errors import DataError
from ...models import psnr, ssim
from ._base import Task, register_task
from ._frame_data import FrameTaskDataset

__all__ = ["InterpolationTask", "SuperResolutionTask", "psnr", "ssim"]

CHANNELS = ["r", "g", "b"]


class _FrameTask(Task):
    """What both frame tasks share (module doc)."""

    eval_crops = (1,)
    best_key = "val_psnr"
    train_metric = "train_ssim"  # a score in 0..1 per frame, as the running metric wants
    val_metrics = ("loss", "psnr", "ssim", "baseline_psnr", "baseline_ssim", "psnr_gain")
    headline = ("psnr", "psnr")
    shown = (("val_psnr", "val PSNR"), ("val_baseline_psnr", "baseline"))
    curves = (("val_psnr", "val PSNR (dB)"), ("val_baseline_psnr", "baseline PSNR (dB)"))
    curves_title = "PSNR"
    baseline: str

    def __repr__(self) -> str:
        return f"{type(self).__name__}(baseline={self.baseline})"

    @classmethod
    def dataset(cls, data, *, train, transform):  # input, target and baseline made at load
        down = data.downscale
        hflip = data.augmentation.hflip if train else 0.0
        return FrameTaskDataset, {
            "kind": cls.name,
            "hflip": hflip,
            "factor": down.factor,
            "filter": down.filter,
        }

    @classmethod
    def resolve_classes(cls, store, *, num_classes, video_ids):
        if num_classes not in (None, 3):
            raise DataError(
                f"model.num_classes={num_classes} but a {cls.name} model outputs the 3 RGB "
                "channels; allowed: null or 3"
            )
        return list(CHANNELS)

    def targets(self, batch) -> torch.Tensor:
        needs = (
            "batch.target (B, 2, 3, H, W): the true frame and its baseline, which the trainer's "
            "data makes when train.task is a frame task"
        )
        target = self._batch_target(batch, needs, lambda t: t.ndim == 5 and t.shape[1] == 2)
        return target.to(torch.float32)

    def _check(self, out: torch.Tensor, targets: torch.Tensor) -> None:
        if tuple(out.shape) != tuple(targets[:, 0].shape):
            raise DataError(
                f"the {self.name} model gave {tuple(out.shape)} for targets "
                f"{tuple(targets[:, 0].shape)}; it must output the target frame (B, 3, H, W)"
            )

    def loss(self, logits, targets, *, mixed=None):
        self._check(logits, targets)
        return F.l1_loss(logits, targets[:, 0])

    def correct(self, logits, targets):
        return ssim(logits.detach(), targets[:, 0]).clamp(0, 1).sum()

    def predictions(self, logits, targets):
        self._check(logits, targets)
        truth, base = targets[:, 0], targets[:, 1]
        losses = (logits - truth).abs().flatten(1).mean(1)
        return {
            "psnr": psnr(logits, truth).cpu().numpy(),
            "ssim": ssim(logits, truth).cpu().numpy(),
            "baseline_psnr": psnr(base, truth).cpu().numpy(),
            "baseline_ssim": ssim(base, truth).cpu().numpy(),
            "losses": losses.cpu().numpy(),
        }

    def empty_predictions(self):
        keys = ("psnr", "ssim", "baseline_psnr", "baseline_ssim", "losses")
        return {k: np.zeros(0, np.float32) for k in keys}

    def metrics(self, pred):
        n = len(pred["losses"])

        def mean(key: str) -> float:
            return float(np.mean(pred[key], dtype=np.float64)) if n else math.nan

        m = {k: mean(k) for k in ("psnr", "ssim", "baseline_psnr", "baseline_ssim")}
        m["psnr_gain"] = m["psnr"] - m["baseline_psnr"]
        m["loss"] = mean("losses")
        m["windows"] = n
        m["baseline"] = self.baseline
        return m

    def evaluate_views(self, views):
        keys = self.empty_predictions()
        pred = {k: np.concatenate([np.asarray(v[k]) for v in views]) for k in keys}
        return self.metrics(pred)


@register_task
class InterpolationTask(_FrameTask):
    """The middle frame of an odd window from the others; baseline: the neighbours' blend."""

    name = "interpolation"
    baseline = "linear blend of the two neighbouring frames"


@register_task
class SuperResolutionTask(_FrameTask):
    """The key frame at store resolution from the downscaled window; baseline: bicubic."""

    name = "super_resolution"
    baseline = "bicubic upscaling of the low-resolution key frame"
