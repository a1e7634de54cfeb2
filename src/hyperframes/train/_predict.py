"""One pass of a model over a loader, gathered over ranks: scores or pixel counts per item.

Used by validation during training and by ``hyperframes eval``. Under DDP every rank predicts
its share of the items (the shares are padded to equal length by repeating items); the
results are gathered and de-duplicated by item number, so metrics count each item once.
"""

from __future__ import annotations

import contextlib

import numpy as np
import torch
import torch.nn.functional as F

from ._data import batch_target, prepare_input
from ._ddp import Dist, all_gather_objects
from ._metrics import confusion_matrix

__all__ = ["autocast", "forward", "predict"]


def autocast(device: torch.device, enabled: bool, dtype: torch.dtype | None):
    if not enabled:
        return contextlib.nullcontext()
    return torch.autocast(device_type=device.type, dtype=dtype)


def forward(model, x, mask):
    """``model(x, mask=mask)``: registered models take the (B, T) valid-frame mask."""
    return model(x, mask=mask)


@torch.no_grad()
def predict(
    model,
    loader,
    *,
    task: str,
    layout: str,
    mean,
    std,
    device: torch.device,
    num_classes: int,
    amp: tuple[bool, torch.dtype | None] = (False, None),
    dist: Dist | None = None,
    progress=None,
) -> dict:
    """Classification: ``items, video_ids, scores (N, C), labels, losses``; segmentation:
    ``items, video_ids, confusion (N, C, C), losses``. Numpy arrays, sorted by item."""
    was_training = model.training
    model.eval()
    parts: dict[str, list] = {"items": [], "video_ids": [], "losses": []}
    if task == "classification":
        parts.update(scores=[], labels=[])
    else:
        parts.update(confusion=[])
    try:
        for batch in loader:
            x = prepare_input(batch.frames, layout, mean, std, device)
            target = batch_target(batch, task).to(device)
            with autocast(device, *amp):
                out = forward(model, x, batch.mask.to(device))
            out = out.float()
            loss = F.cross_entropy(out, target, reduction="none")
            if task == "segmentation":
                loss = loss.flatten(1).mean(1)
                pred = out.argmax(1).cpu().numpy()
                tgt = target.cpu().numpy()
                parts["confusion"].extend(
                    confusion_matrix(pred[b], tgt[b], num_classes) for b in range(len(pred))
                )
            else:
                parts["scores"].append(out.cpu().numpy())
                parts["labels"].append(target.cpu().numpy())
            parts["losses"].append(loss.cpu().numpy())
            parts["items"].extend(int(m["item"]) for m in batch.meta)
            parts["video_ids"].extend(int(m["video_id"]) for m in batch.meta)
            if progress is not None:
                progress(len(batch))
    finally:
        model.train(was_training)
    local = {k: _stack(k, v, num_classes) for k, v in parts.items()}
    gathered = all_gather_objects(local, dist or Dist())
    merged = {k: np.concatenate([g[k] for g in gathered]) for k in local}
    _, first = np.unique(merged["items"], return_index=True)
    return {k: v[first] for k, v in merged.items()}


def _stack(key: str, values: list, num_classes: int) -> np.ndarray:
    if key in ("items", "video_ids"):
        return np.asarray(values, dtype=np.int64)
    if key == "confusion":
        if not values:
            return np.zeros((0, num_classes, num_classes), np.int64)
        return np.stack(values).astype(np.int64)
    if not values:
        shape = {"scores": (0, num_classes)}.get(key, (0,))
        return np.zeros(shape, np.float32 if key != "labels" else np.int64)
    return np.concatenate(values)
