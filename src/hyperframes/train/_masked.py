"""The ``masked_video`` task: masked video pretraining, its loss, metrics and reconstructions.

The model (``video_mae``, :mod:`hyperframes.models._mae`) masks tubes of each window and
predicts every patch; its output is (B, T*N, P + 1), the predicted patches and a mask column.
The targets are the window's own frames (``batch.frames``, uint8, as the model saw them).
The loss is the mean squared error, over the **masked** patches only, between the prediction
and each true patch normalised by its own mean and standard deviation (over its pixels and
channels). Reported: that loss, and the PSNR (dB) of the masked patches in pixel space (the
prediction de-normalised with the true patch's mean and std, clipped to [0, 1]) -- computed
from the mean squared error over all masked pixels of the pass. ``best.pt`` is the lowest
validation loss. :func:`write_reconstructions` writes PNG pictures of windows: the frames,
what the encoder saw, the reconstruction.
"""

from __future__ import annotations

import io
import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import torch

from .._core._atomic import write_bytes_atomic
from .._core._device import resolve_device
from .._core._errors import ConfigError, DataError
from ..data import loader
from ..data.transforms import contract_transform
from ..models import patchify, unpatchify
from ..store import open_store
from ._data import make_dataset
from ._splits import resolve_split
from ._tasks import Task, register_task

__all__ = ["MaskedVideoTask", "masked_patch_errors", "write_reconstructions"]

EPS = 1e-6


def _split(out: torch.Tensor, frames: torch.Tensor):
    """``(pred, target patches in [0, 1], masked)`` of a model output and its uint8 frames."""
    if out.dim() != 3 or frames.dim() != 5:
        raise DataError(
            f"the masked_video task takes the output (B, T*N, P+1) of a video_mae model and "
            f"frames (B, T, C, H, W); got {tuple(out.shape)} and {tuple(frames.shape)}"
        )
    c = frames.shape[2]
    patch = math.isqrt((out.shape[-1] - 1) // c)
    target = patchify(frames.to(out.device, torch.float32) / 255.0, patch)
    if target.shape != out[..., :-1].shape:
        raise DataError(
            f"masked_video: the model predicts patches {tuple(out[..., :-1].shape)} but the "
            f"frames give {tuple(target.shape)}; the frames must be the window the model saw"
        )
    return out[..., :-1], target, out[..., -1] > 0.5


def _patch_errors(out: torch.Tensor, frames: torch.Tensor):
    """``(loss, pixel error, masked)`` per token (B, L): the squared error of the prediction
    against the per-patch normalised true patch, that of the de-normalised prediction
    (clipped to [0, 1]) against the true pixels (means over the patch's values), the mask."""
    pred, target, masked = _split(out, frames)
    mean = target.mean(-1, keepdim=True)
    std = (target.var(-1, keepdim=True, unbiased=False) + EPS).sqrt()
    per_patch = ((pred - (target - mean) / std) ** 2).mean(-1)
    pixels = (pred * std + mean).clamp(0, 1)
    return per_patch, ((pixels - target) ** 2).mean(-1), masked


def masked_patch_errors(out: torch.Tensor, frames: torch.Tensor):
    """Per window: ``(loss, pixel MSE, masked patches)``: the normalised-pixel loss and the
    pixel-space squared error (both means over the masked patches' values) and their count."""
    per_patch, pixel_err, masked = _patch_errors(out, frames)
    w = masked.to(per_patch.dtype)
    count = w.sum(1)
    return (per_patch * w).sum(1) / count, (pixel_err * w).sum(1) / count, count


def window_frames(batch) -> torch.Tensor:
    """The batch's uint8 frames (B, T, C, H, W): the targets of masked pretraining."""
    frames = batch.frames
    if not isinstance(frames, torch.Tensor) or frames.dim() != 5:
        raise DataError(
            "the masked_video task needs the batch's frames in the temporal layout "
            f"(B, T, C, H, W); got {type(frames).__name__}"
        )
    return frames


def psnr(mse: float) -> float:
    """PSNR in dB of a mean squared error of [0, 1] pixels."""
    return 10.0 * math.log10(1.0 / max(mse, 1e-12))


#: the public name (``hyperframes.train.masked_psnr``; the frame tasks' ``psnr`` compares images)
masked_psnr = psnr


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
    #: the model's outputs are not classes: eval matches no class names
    labelled = False

    @classmethod
    def resolve_classes(cls, store, *, num_classes, video_ids):
        return ["pixels"]  # no classes: the model's one nominal output

    def targets(self, batch) -> torch.Tensor:
        return window_frames(batch)

    def loss(self, logits, targets, *, mixed=None):
        per_patch, _, masked = _patch_errors(logits, targets)
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
            "psnr": psnr(float((mse * n).sum() / n.sum())),
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


def _picture(frames: np.ndarray, shown: np.ndarray, recon: np.ndarray) -> np.ndarray:
    """One window as rows: the frames, what the encoder saw (masked patches grey), the
    reconstruction (visible patches as they were); (3*H + 4, T*W + T-1, 3) uint8."""
    t, h, w, _ = frames.shape
    canvas = np.full((3 * h + 4, t * w + (t - 1), 3), 255, np.uint8)
    for row, img in enumerate((frames, shown, recon)):
        for k in range(t):
            y, x = row * (h + 2), k * (w + 1)
            canvas[y : y + h, x : x + w] = img[k]
    return canvas


def _reconstructed(model, contract, batch, device) -> list[np.ndarray]:
    """The batch's frames, visible patches (masked ones grey) and reconstruction (the
    prediction de-normalised with each true patch's statistics; visible patches as they
    were): three (B, T, H, W, 3) uint8 arrays."""
    frames = window_frames(batch)
    out = model(contract.prepare(frames, device=device), mask=batch.mask.to(device)).float()
    return reconstruction_rows(out, frames)


def reconstruction_rows(out: torch.Tensor, frames: torch.Tensor) -> list[np.ndarray]:
    """The rows of :func:`_picture` of a model output and its uint8 frames (B, T, C, H, W),
    the window the model saw: the frames, the visible patches, the reconstruction."""
    pred, target, masked = _split(out, frames)
    mean = target.mean(-1, keepdim=True)
    std = (target.var(-1, keepdim=True, unbiased=False) + EPS).sqrt()
    m = masked[..., None]
    recon = torch.where(m, (pred * std + mean).clamp(0, 1), target)
    shown = torch.where(m, torch.full_like(target, 0.5), target)
    size, t = (int(frames.shape[-2]), int(frames.shape[-1])), int(frames.shape[1])
    rows = [unpatchify(v, t, size) for v in (target, shown, recon)]
    return [(r.permute(0, 1, 3, 4, 2).cpu().numpy() * 255).round().astype(np.uint8) for r in rows]


def write_reconstructions(
    checkpoint: str | Path,
    out: str | Path,
    *,
    store: str | Path | None = None,
    split: str | None = "val",
    windows: int = 4,
    device: str = "auto",
) -> list[Path]:
    """PNG reconstructions of a ``masked_video`` checkpoint: the first ``windows`` windows of
    ``split`` of ``store`` (default: the run's; ``None``/``"all"``: every video), one centred
    window per video, ``recon_<k>.png`` in ``out``: rows of the window's frames, the visible
    patches, the reconstruction. Returns the paths."""
    from ._checkpoint import load_checkpoint, rebuild_model  # deferred: pulls yaml
    from ._config import config_from_dict  # deferred: pulls yaml

    ck = load_checkpoint(checkpoint)
    if ck.get("task") != "masked_video":
        raise ConfigError(
            f"{ck['path']}: a {ck.get('task') or 'classification'} checkpoint; reconstructions "
            "are written for masked_video checkpoints only"
        )
    raw = ck["config"]
    if store is not None:
        raw = {**raw, "data": {**raw["data"], "store": str(store)}}
    cfg = config_from_dict(raw)
    dev = resolve_device(device)
    model, contract = rebuild_model(ck, device=dev)
    st = open_store(cfg.data.store, cache_dir=cfg.data.cache_dir, cache_limit=cfg.data.cache_limit)
    every = split in (None, "all")
    role = "all" if every else ("train" if split == cfg.data.train_split else "val")
    ids, _ = resolve_split(st, None if every else split, cfg.data, role=role)
    ds = make_dataset(cfg, st, ids, train=False, transform=contract_transform(contract, "centre"))
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    paths: list[Path] = []
    with torch.no_grad():
        for batch in loader(ds, batch_size=max(1, min(windows, 8)), shuffle=False, workers=0):
            rows = _reconstructed(model, contract, batch, dev)
            for b in range(len(batch)):
                if len(paths) >= windows:
                    return paths
                png = picture_png(rows, b)
                paths.append(write_bytes_atomic(folder / f"recon_{len(paths)}.png", png))
    return paths


def picture_png(rows: Sequence[np.ndarray], b: int) -> bytes:
    """Window ``b`` of :func:`reconstruction_rows`'s rows as the PNG bytes of :func:`_picture`."""

    from PIL import Image  # matplotlib's dependency, installed with hyperframes

    buf = io.BytesIO()
    Image.fromarray(_picture(*(r[b] for r in rows))).save(buf, format="PNG")
    return buf.getvalue()


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
