"""One pass of a model over a loader, gathered over ranks: scores or pixel counts per item.

Used by validation during training and by ``hyperframes eval``. Batches arrive as uint8 in
the temporal layout; the model's :class:`~hyperframes._core._contract.InputContract` prepares them
(:meth:`~hyperframes._core._contract.InputContract.prepare`), as predict and export do. Under DDP
every rank predicts its share of the items (the shares are padded to equal length by
repeating items); the results are gathered and de-duplicated by item number, so metrics count
each item once. On a CUDA device batches come through a
:class:`~hyperframes.data.PrefetchLoader`: batch k+1 is moved and prepared on a side stream
while the model runs on batch k.
"""

from __future__ import annotations

import contextlib

import numpy as np
import torch

from ..._core._contract import InputContract
from ...data import PrefetchLoader
from .._dist import Dist, all_gather_objects
from .._tasks._base import Task, create_task

__all__ = ["autocast", "forward", "predict"]


def autocast(device: torch.device, enabled: bool, dtype: torch.dtype | None):
    if not enabled:
        return contextlib.nullcontext()
    return torch.autocast(device_type=device.type, dtype=dtype)


def _prepared(loader, contract: InputContract, task: Task, device: torch.device):
    """``(batch, x, target)`` of each of ``loader``'s batches: the CPU batch, the model's input
    and the task's targets (computed on the CPU batch) on ``device`` (module doc)."""

    def prepare(batch):
        x = contract.prepare(
            batch.frames,
            device=device,
            flow=getattr(batch, "flow", None),
            audio=getattr(batch, "audio", None),
        )
        return x, task.targets(batch).to(device, non_blocking=True)

    if device.type != "cuda":
        for batch in loader:
            yield (batch, *prepare(batch))
        return
    for batch, (x, target) in PrefetchLoader(loader, device, prepare=prepare, move=False):
        yield batch, x, target


def forward(model, x, mask):
    """``model(x, mask=mask)``: registered models take the (B, T) valid-frame mask."""
    return model(x, mask=mask)


def _key_seconds(meta, n: int) -> list[float]:
    """The time of each window's key frame (position T // 2; NaN where unknown)."""
    pts = meta.get("pts_seconds") if hasattr(meta, "get") else None
    if pts is None:
        return [float("nan")] * n
    pts = np.asarray(pts, np.float64)
    if pts.ndim != 2 or len(pts) != n:
        return [float("nan")] * n
    return pts[:, pts.shape[1] // 2].tolist()


@torch.no_grad()
def predict(
    model,
    loader,
    *,
    task: str | Task,
    contract: InputContract,
    device: torch.device,
    num_classes: int,
    amp: tuple[bool, torch.dtype | None] = (False, None),
    dist: Dist | None = None,
    progress=None,
) -> dict:
    """``items``, ``video_ids``, ``segments`` (the store's segment row of a ``per_segment``
    item, else -1), ``key_seconds`` (the time of each window's key frame, T // 2) and the
    task's per-item predictions
    (:meth:`~hyperframes.train.Task.predictions`; classification: ``scores (N, C), labels,
    losses``; segmentation: ``confusion (N, C, C), losses``). Numpy arrays, sorted by item.
    ``task``: a :class:`~hyperframes.train.Task`, or a task name (``num_classes`` classes)."""
    if isinstance(task, str):
        task = create_task(task, [str(i) for i in range(num_classes)])
    was_training = model.training
    model.eval()
    items: list[int] = []
    video_ids: list[int] = []
    segments: list[int] = []
    key_seconds: list[float] = []
    parts: list[dict[str, np.ndarray]] = []
    try:
        for batch, x, target in _prepared(loader, contract, task, device):
            with autocast(device, *amp):
                out = forward(model, x, batch.mask.to(device))
            parts.append(task.predictions(out.float(), target))
            meta = batch.meta.columns  # the batch's meta as columns
            items.extend(np.asarray(meta["item"]).tolist())
            video_ids.extend(np.asarray(meta["video_id"]).tolist())
            segments.extend(np.asarray(meta.get("segment", [-1] * len(batch))).tolist())
            key_seconds.extend(_key_seconds(meta, len(batch)))
            if progress is not None:
                progress(len(batch))
    finally:
        model.train(was_training)
    local = {
        "items": np.asarray(items, dtype=np.int64),
        "video_ids": np.asarray(video_ids, dtype=np.int64),
        "segments": np.asarray(segments, dtype=np.int64),
        "key_seconds": np.asarray(key_seconds, dtype=np.float64),
        **(
            {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
            if parts
            else task.empty_predictions()
        ),
    }
    gathered = all_gather_objects(local, dist or Dist())
    merged = {k: np.concatenate([g[k] for g in gathered]) for k in local}
    _, first = np.unique(merged["items"], return_index=True)
    return {k: v[first] for k, v in merged.items()}
