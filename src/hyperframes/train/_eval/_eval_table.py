"""The table ``hyperframes eval`` prints (:func:`format_metrics`) from the metrics
:func:`~hyperframes.train._eval._eval.evaluate` returns, per task: classification's clip and video
levels with the per-class table, segmentation's IoU, the frame tasks' PSNR and SSIM beside
their baseline, masked video's reconstruction."""

from __future__ import annotations

from ..._core._tasks import task_traits
from .._tasks._masked import format_masked

__all__ = ["decoder_text", "format_metrics"]


def decoder_text(d: dict | None) -> str:
    return f"{d['name']} {d['version']}" if d else "an unrecorded decoder"


def format_metrics(r: dict) -> str:
    """The table ``hyperframes eval`` prints."""
    lines = [
        f"{r['model']} T={r['frames']} on {r['store']} split {r['split']}: {r['videos']} videos"
    ]
    if "decoder" in r:
        lines.append(
            f"  decoder: model's store {decoder_text(r['decoder'])}, this store "
            f"{decoder_text(r.get('store_decoder'))}"
        )
    notes = [f"  note: {n}" for n in r.get("notes", ())]
    if r.get("predictions_only"):
        return "\n".join(
            [
                *lines,
                "  no labels: predictions only, no metrics",
                f"  per-video predictions: {r.get('predictions_csv', '')}",
                *notes,
            ]
        )
    traits = task_traits(r.get("task") or "classification")
    if traits.reconstructs:
        return "\n".join(lines + format_masked(r) + [f"  metrics: {r.get('metrics_json', '')}"])
    if "psnr" in r:  # the frame tasks: the model and the baseline
        lines.append(f"  windows         {r['windows']}")
        lines.append(f"  {'':<16}{'PSNR (dB)':>10}{'SSIM':>8}")
        lines.append(f"  {'model':<16}{r['psnr']:>10.2f}{r['ssim']:>8.4f}")
        lines.append(f"  {'baseline':<16}{r['baseline_psnr']:>10.2f}{r['baseline_ssim']:>8.4f}")
        lines.append(f"  baseline: {r['baseline']}")
        lines.append(f"  metrics: {r.get('metrics_json', '')}")
        return "\n".join(lines + notes)
    if traits.boxes:
        lines.append(f"  windows         {r['windows']}")
        lines.append(f"  mAP@[.5:.95]    {r['map']:.4f}")
        lines.append(f"  mAP@0.5         {r['map50']:.4f}")
        lines.append(
            f"  flicker         {r['flicker']:.4f} per object-second "
            f"(over {r['flicker_object_seconds']:.1f} object-seconds)"
        )
        lines.append(f"  metrics: {r.get('metrics_json', '')}")
        return "\n".join(lines + notes)
    if "clip_level" not in r:  # tasks without clip/video levels (segmentation)
        lines.append(f"  windows         {r['windows']}")
        lines.append(f"  mIoU            {r['miou']:.4f}")
        lines.append(f"  pixel accuracy  {r['pixel_accuracy']:.4f}")
        for name, v in r["iou"].items():
            lines.append(f"  IoU {name:<12}{v:.4f}")
        return "\n".join(lines + notes)
    c, v = r["clip_level"], r["video_level"]
    lines.append(f"  views: {r['clips']} clips x {r['crops']} crops ({r['views']} in all)")
    lines.append(f"  {'':<22}{'clip':>8}{'video':>8}")
    for key, label in (
        ("top1", "top-1"),
        ("top5", "top-5"),  # with more than 5 classes only
        ("mean_class_accuracy", "mean class accuracy"),
        ("map", "mAP"),  # multilabel
        ("macro_f1", "macro F1"),
        ("sample_f1", "sample F1"),  # multilabel
    ):
        if key in c and key in v:
            lines.append(f"  {label:<22}{c[key]:>8.4f}{v[key]:>8.4f}")
    lines.append(f"  {'class':<22}{'prec.':>8}{'recall':>8}{'F1':>8}{'videos':>8}  (video level)")
    for name, s in v["per_class"].items():
        lines.append(
            f"  {name[:21]:<22}{s['precision']:>8.3f}{s['recall']:>8.3f}{s['f1']:>8.3f}"
            f"{s['support']:>8d}"
        )
    lines.append(f"  metrics: {r.get('metrics_json', '')}")
    if r.get("predictions_csv"):
        lines.append(f"  per-video predictions: {r['predictions_csv']}")
    return "\n".join(lines + notes)
