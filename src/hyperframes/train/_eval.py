"""``hyperframes eval``: a trained checkpoint on a store's split, clip- and video-level.

Classification: every video gives ``clips`` evenly spaced windows (the ``uniform`` sampler,
with the stride and short-video policy of the run's samplers; a run trained with the
``segments`` sampler gets ``clips`` segment samplings instead) times ``crops`` spatial crops
(1: centre; 3: left, centre, right along the longer side -- top, centre, bottom for portrait
frames -- of side ``data.augmentation.size``, after resizing the short side to it, or of the
frame's short side); the video's prediction averages the softmax of all its views. Reported:
top-1/top-5, mean class accuracy, per-class precision/recall/F1 and the confusion matrix, at
clip level (each view alone) and video level.

Segmentation: mIoU, pixel accuracy and per-class IoU over all windows' key frames.

The metrics are printed as a table and written to ``metrics.json`` (beside the checkpoint
unless ``out`` is given).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch

from .._errors import ConfigError
from ..data.transforms import Compose, Resize, Transform, Window
from ._checkpoint import load_checkpoint
from ._config import config_from_dict
from ._data import make_dataset
from ._metrics import classification_metrics, segmentation_metrics, video_level
from ._predict import predict
from ._splits import resolve_split

__all__ = ["PositionCrop", "evaluate", "format_metrics"]

POSITIONS = {1: ("centre",), 3: ("start", "centre", "end")}


class PositionCrop(Transform):
    """A ``size`` x ``size`` crop at the start, centre or end of the longer side (centred on
    the other)."""

    def __init__(self, size: int, position: str) -> None:
        self.size = int(size)
        self.position = position

    def apply(self, window: Window, generator) -> Window:
        h, w = window.frames.shape[-2:]
        s = self.size
        if s > h or s > w:
            raise ConfigError(f"eval crop {s}x{s} does not fit frames of {h}x{w}")

        def offset(length: int, along: bool) -> int:
            if not along or self.position == "centre":
                return (length - s) // 2
            return 0 if self.position == "start" else length - s

        top, left = offset(h, h > w), offset(w, w >= h)
        return Window(
            window.frames[..., top : top + s, left : left + s], window.indices, window.mask
        )


def _passes(cfg, clips: int) -> list[tuple[str, dict, int]]:
    """(sampler, options, epoch) of each pass over the videos.

    Window samplers (the usual case): one pass of ``uniform`` with ``clips`` clips, the stride
    and short-video policy of the run's samplers. A run sampled by ``segments`` (TSN/TSM) is
    tested as it was validated: one pass of centre frames, or ``clips`` passes of random
    frames within each segment (epochs 0..clips-1, so the views are reproducible).
    """
    if "segments" in (cfg.data.val_sampler, cfg.data.sampler):
        short = cfg.data.val_sampler_options.get("short", cfg.data.sampler_options.get("short"))
        opts = {"train": clips > 1, **({"short": short} if short else {})}
        return [("segments", opts, k) for k in range(clips)]
    opts = {"clips": clips}
    for source in (cfg.data.val_sampler_options, cfg.data.sampler_options):
        for k in ("stride", "short"):
            if k in source and k not in opts:
                opts[k] = source[k]
    return [("uniform", opts, 0)]


def _device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


def evaluate(
    checkpoint: str | Path,
    store: str | Path | None = None,
    *,
    split: str | None = "val",
    clips: int = 10,
    crops: int = 3,
    batch_size: int | None = None,
    workers: int = 0,
    device: str = "auto",
    out: str | Path | None = None,
    verbose: bool = True,
) -> dict:
    """Evaluate ``checkpoint`` (``RUN_DIR/best.pt``) on ``store`` (default: the run's store),
    split ``split`` (``None`` or ``"all"``: every video). Returns the metrics dict."""
    from ..models import create
    from ..store import open_store

    if clips < 1:
        raise ConfigError(f"--clips must be >= 1, got {clips}")
    if crops not in POSITIONS:
        raise ConfigError(f"--crops must be 1 or 3, got {crops}")
    ck = load_checkpoint(checkpoint)
    raw = ck["config"]
    if store is not None:
        raw = {**raw, "data": {**raw["data"], "store": str(store)}}
    cfg = config_from_dict(raw)
    task = ck["task"]
    if task == "segmentation" and crops != 1:
        raise ConfigError("--crops: segmentation is evaluated on whole frames; allowed: 1")
    st = open_store(cfg.data.store)
    if split in (None, "all"):
        ids, _ = resolve_split(st, None, cfg.data, role="all")
        split = "all"
    else:
        role = "train" if split == cfg.data.train_split else "val"
        ids, _ = resolve_split(st, split, cfg.data, role=role)
    dev = _device(device)
    model = create(
        ck["model_name"],
        num_classes=ck["num_classes"],
        frames=ck["frames"],
        **cfg.model.options,
    )
    model.load_state_dict(ck["model"])
    model.to(dev)
    from ..data._loader import loader

    classes = list(ck["classes"])
    aug = cfg.data.augmentation
    views = []
    for position in POSITIONS[crops]:
        transform = None
        if task == "classification":
            side = aug.size or min(st.videos[int(ids[0])].shape[1:])
            steps = ([Resize(aug.size)] if aug.size else []) + [PositionCrop(side, position)]
            transform = Compose(steps)
        for sampler, options, epoch in _passes(cfg, clips):
            ds = make_dataset(
                cfg,
                st,
                ids,
                train=False,
                sampler=sampler,
                sampler_options=options,
                transform=transform,
            )
            dl = loader(
                ds,
                batch_size=batch_size or cfg.data.val_batch_size or cfg.data.batch_size,
                shuffle=False,
                workers=workers,
            )
            dl.set_epoch(epoch)
            views.append(
                predict(
                    model,
                    dl,
                    task=task,
                    layout=ck["layout"],
                    mean=cfg.data.mean,
                    std=cfg.data.std,
                    device=dev,
                    num_classes=ck["num_classes"],
                )
            )
    result = {
        "checkpoint": str(ck["path"]),
        "store": cfg.data.store,
        "split": split,
        "task": task,
        "model": ck["model_name"],
        "frames": ck["frames"],
        "videos": len(ids),
        "clips": clips,
        "crops": crops,
    }
    if task == "classification":
        scores = np.concatenate([v["scores"] for v in views])
        labels = np.concatenate([v["labels"] for v in views])
        vids = np.concatenate([v["video_ids"] for v in views])
        result["views"] = len(scores)
        result["clip_level"] = classification_metrics(scores, labels, classes)
        prob, vlabels, _ = video_level(scores, labels, vids)
        result["video_level"] = classification_metrics(np.log(prob + 1e-12), vlabels, classes)
        result["accuracy"] = result["video_level"]["top1"]
    else:
        conf = sum(v["confusion"].sum(axis=0) for v in views)
        result["windows"] = sum(len(v["items"]) for v in views)
        result.update(segmentation_metrics(conf, classes))
    path = Path(out) if out is not None else Path(ck["path"]).parent / "metrics.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=1, default=float) + "\n")
    result["metrics_json"] = str(path)
    if verbose:
        print(format_metrics(result), flush=True)
    return result


def format_metrics(r: dict) -> str:
    """The table ``hyperframes eval`` prints."""
    lines = [
        f"{r['model']} T={r['frames']} on {r['store']} split {r['split']}: {r['videos']} videos"
    ]
    if r["task"] == "segmentation":
        lines.append(f"  windows         {r['windows']}")
        lines.append(f"  mIoU            {r['miou']:.4f}")
        lines.append(f"  pixel accuracy  {r['pixel_accuracy']:.4f}")
        for name, v in r["iou"].items():
            lines.append(f"  IoU {name:<12}{v:.4f}")
        return "\n".join(lines)
    c, v = r["clip_level"], r["video_level"]
    lines.append(f"  views: {r['clips']} clips x {r['crops']} crops ({r['views']} in all)")
    lines.append(f"  {'':<22}{'clip':>8}{'video':>8}")
    for key, label in (
        ("top1", "top-1"),
        ("top5", "top-5"),
        ("mean_class_accuracy", "mean class accuracy"),
        ("macro_f1", "macro F1"),
    ):
        lines.append(f"  {label:<22}{c[key]:>8.4f}{v[key]:>8.4f}")
    lines.append(f"  {'class':<22}{'prec.':>8}{'recall':>8}{'F1':>8}{'videos':>8}  (video level)")
    for name, s in v["per_class"].items():
        lines.append(
            f"  {name[:21]:<22}{s['precision']:>8.3f}{s['recall']:>8.3f}{s['f1']:>8.3f}"
            f"{s['support']:>8d}"
        )
    lines.append(f"  metrics: {r.get('metrics_json', '')}")
    return "\n".join(lines)
