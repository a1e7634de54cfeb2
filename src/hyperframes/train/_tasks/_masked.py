"""The ``masked_video`` task: masked video pretraining, its loss, metrics and reconstructions.

The model (``video_mae``, :mod:`hyperframes.models._mae`) masks tubes of each window and
predicts every patch; its output is (B, T*N, P + 1), the predicted patches and a mask column.
The targets are the window's own frames (``batch.frames``, uint8, as the model saw them).
The loss is the mean squared error, over the **masked** patches only, between the prediction
and each true patch normalised by its own mean and standard deviation (over its pixels and
channels). Reported: that loss, and the PSNR (dB) of the masked patches in pixel space (the
prediction de-normalised with the true patch's mean and std, clipped to [0, 1]) -- computed
from the mean squared error over all masked pixels of the pass. ``best.pt`` is the lowest
validation loss. :func:`~hyperframes.train._eval._reconstructions.write_reconstructions` writes
PNG pictures of windows: the frames, what the encoder saw, the reconstruction.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import torch

from ..._core._errors import DataError
from ...models import (
    masked_patch_errors,
    masked_psnr,
    patch_errors,
)
from ._base import Task, register_task

__all__ = ["MaskedVideoTask", "masked_patch_errors", "window_frames"]


def window_frames(batch) -> torch.Tensor:
    """The batch's uint8 frames (B, T, C, H, W): the targets of masked pretraining."""
    frames = batch.frames
    if not isinstance(frames, torch.Tensor) or frames.dim() != 5:
        raise DataError(
            "the masked_video task needs the batch's frames in the temporal layout "
            f"(B, T, C, H, W); got {type(frames).__name__}"
        )
    return frames


@register_task
class MaskedVideoTask(Task):
    """Masked video pretraining (module doc): loss on the masked patches' normalised pixels,
    PSNR of their reconstruction; ``best.pt`` by the lowest validation loss."""

    name = "masked_video"
    eval_crops = (1,)
    best_key = "val_loss"
    higher_is_better = False
    train_metric = "train_psnr"
    val_metrics = ("loss", "psnr")
    headline = ("masked_loss", "loss")
    shown = (("train_psnr", "psnr"), ("val_loss", "val loss"), ("val_psnr", "val psnr"))
    curves = (("train_psnr", "train PSNR (dB)"), ("val_psnr", "val PSNR (dB)"))
    curves_title = "masked patches"

    @classmethod
    def resolve_classes(cls, store, *, num_classes, video_ids):
        return ["pixels"]  # no classes: the model's one nominal output

    def targets(self, batch) -> torch.Tensor:
        return window_frames(batch)

    def loss(self, logits, targets, *, mixed=None):
        per_patch, _, masked = patch_errors(logits, targets)
        return per_patch[masked].mean()  # the masked patches only

    def correct(self, logits, targets):
        _, mse, _ = masked_patch_errors(logits.detach(), targets)
        return (10.0 * torch.log10(1.0 / mse.clamp_min(1e-12))).sum()

    def predictions(self, logits, targets):
        loss, mse, count = masked_patch_errors(logits, targets)
        return {
            "losses": loss.cpu().numpy(),
            "mse": mse.cpu().numpy(),
            "patches": count.cpu().numpy(),
        }

    def empty_predictions(self):
        z = np.zeros(0, np.float32)
        return {"losses": z, "mse": z.copy(), "patches": z.copy()}

    def metrics(self, pred):
        losses, mse, n = (np.asarray(pred[k], np.float64) for k in ("losses", "mse", "patches"))
        if not len(losses):
            return {"loss": float("nan"), "psnr": float("nan"), "windows": 0}
        return {
            "loss": float((losses * n).sum() / n.sum()),
            "psnr": masked_psnr(float((mse * n).sum() / n.sum())),
            "windows": len(losses),
        }

    def evaluate_views(self, views: Sequence[Mapping[str, np.ndarray]]) -> dict:
        keys = ("losses", "mse", "patches")
        merged = {k: np.concatenate([np.asarray(v[k]) for v in views]) for k in keys}
        m = self.metrics(merged)
        return {"windows": m["windows"], "masked_loss": m["loss"], "psnr": m["psnr"]}


def format_masked(r: dict) -> list[str]:
    """The lines ``hyperframes eval`` prints for a masked_video checkpoint."""
    return [
        f"  windows              {r['windows']}",
        f"  masked-patch loss    {r['masked_loss']:.4f}  (per-patch normalised pixels)",
        f"  masked-patch PSNR    {r['psnr']:.2f} dB",
    ]


def pretrained_record(model) -> dict | None:
    """The log record of ``model.pretrained`` (None without): the file, the tensors loaded,
    those left freshly initialised (new: e.g. the classifier head) or skipped, and the
    mapping's notes (a ``video_mae`` encoder: the decoder left out, embeddings interpolated)."""
    report = getattr(model, "pretrained_report", None)
    if report is None:
        return None
    notes = list(getattr(model, "pretrained_notes", ()))
    new = list(report.initialised)
    message = (
        f"model.pretrained {report.path}: {report.loaded} tensors loaded, {len(new)} new"
        + (f" ({', '.join(new[:6])}{', ...' if len(new) > 6 else ''})" if new else "")
        + (f", {len(report.skipped)} skipped (shape differs)" if report.skipped else "")
        + "".join(f"; {n}" for n in notes)
    )
    return {
        "kind": "pretrained",
        "step": 0,
        "path": str(report.path),
        "loaded": report.loaded,
        "new": new,
        "skipped": list(report.skipped),
        "notes": notes,
        "message": message,
    }
