"""Names that left a public ``__all__``: still importable, with a warning saying where they live.

A public package lists what a user calls; helpers that only the package itself (or its tests)
uses live in its private modules. A name that was public once keeps working for a while: the
package's ``__getattr__`` asks :func:`moved_attribute`, which finds the name in :data:`MOVED`
(public module -> private module -> the names that moved there), imports it from where it
lives now and warns (``DeprecationWarning``) with that place, so ``hyperframes.train.psnr``
still returns the function. The table holds module names as text: ``_core`` imports nothing
above it until a moved name is asked for.
"""

from __future__ import annotations

import importlib
import warnings
from typing import Any

#: public module -> {private module: the names (space-separated) that left its ``__all__``}
MOVED: dict[str, dict[str, str]] = {
    "hyperframes.bench": {
        "hyperframes.bench._onthefly": "available_window_decoders cannot_decode window_decoder",
        "hyperframes.bench._plan": "PlanRow StorePlan pick_sample",
        "hyperframes.bench._run": "time_memcpy window_bytes",
    },
    "hyperframes.build": {
        "hyperframes.build._build": "HeaderSize",
    },
    "hyperframes.data": {
        "hyperframes._core._layouts": "KeyframeWindow expand_channel_stats from_layout",
        "hyperframes.data._audio": "column_times logmel_columns mel_filterbank",
        "hyperframes.data._collate": "collate_windows",
        "hyperframes.data._record": "BatchMeta",
        "hyperframes.data._warp": "compose_flow compose_flows compose_homography resize_flow warp_by_flow warp_by_homography",
    },
    "hyperframes.data.transforms": {
        "hyperframes._core._normalize": "normalize to_float",
        "hyperframes.data.transforms._base": "apply_batch as_window",
    },
    "hyperframes.decode": {
        "hyperframes.decode._audio": "AUDIO_LAYOUTS AUDIO_MARGIN_SECONDS AudioStream",
    },
    "hyperframes.demo": {
        "hyperframes.demo._detection": "DETECTION_CLASSES make_detection_frames",
        "hyperframes.demo._run": "measure_reads",
        "hyperframes.demo._synthetic": "MOTION_CLASSES make_motion_frames make_segmentation_frames write_h264",
    },
    "hyperframes.infer": {
        "hyperframes.infer._annotate": "VideoAnnotator",
        "hyperframes.infer._export": "onnx_models",
        "hyperframes.infer._load": "Preprocess read_checkpoint",
        "hyperframes.infer._reuse": "FrameSplit split_model",
        "hyperframes.infer._timeline": "TimelineWriter plot_timeline",
    },
    "hyperframes.models": {
        "hyperframes.models._audiovisual": "AudioVisualFusion as_audiovisual",
        "hyperframes.models._base": "Keyframes LAYOUTS as_keyframes",
        "hyperframes.models._channel": "ChannelFusion inflate_conv2d",
        "hyperframes.models._cnn3d": "R2Plus1DTiny TorchvisionVideo",
        "hyperframes.models._detection": "ChannelDetector",
        "hyperframes.models._keyframe": "Aggregator KeyframeSegmenter",
        "hyperframes.models._mae": "MaskedVideoAutoencoder patchify tube_mask unpatchify",
        "hyperframes.models._transformer": "VideoTransformer",
        "hyperframes.models._tsm": "TemporalShiftConv2d temporal_shift",
        "hyperframes.models._weights": "LoadReport inflate_weight read_state_dict",
    },
    "hyperframes.remote": {
        "hyperframes.remote._ahead": "ReadAhead plan_key",
        "hyperframes.remote._bytes": "coalesce",
        "hyperframes.remote._cache": "PIECE_BYTES entry_bytes",
    },
    "hyperframes.sampling": {
        "hyperframes.store._change": "ChangeScorer change_score",
        "hyperframes.sampling._base": "SHORT_POLICIES",
        "hyperframes.sampling._duration": "DurationSampler",
        "hyperframes.sampling._keyframes": "KeyframesSampler",
        "hyperframes.sampling._meta": "as_video_table",
        "hyperframes.sampling._motion": "MotionSampler",
        "hyperframes.sampling._order": "class_weights",
        "hyperframes.sampling._random": "CandidatesSampler RandomSampler ScatteredSampler SegmentsSampler",
        "hyperframes.sampling._segments": "PerSegmentSampler",
        "hyperframes.sampling._windows": "SlidingSampler UniformSampler",
    },
    "hyperframes.store": {
        "hyperframes.store._tracks": "dequantise",
    },
    "hyperframes.train": {
        "hyperframes.models._outputs": "downscale hidden_picture masked_patch_errors masked_psnr picture_png psnr reconstruction_rows ssim takes_recipe",
        "hyperframes.train._tasks._detection": "DetectionTask",
        "hyperframes.train._eval._eval_table": "format_metrics",
        "hyperframes.train._config._leakage": "content_hash find_leakage",
        "hyperframes.train._tasks._masked": "MaskedVideoTask",
        "hyperframes.train._tasks._metrics": "classification_metrics confusion_matrix iou_from_confusion per_class_scores segmentation_metrics topk_accuracy video_level",
        "hyperframes.train._tasks._multilabel": "MultilabelTask average_precision multilabel_metrics",
        "hyperframes.train._loop._schedule": "lr_at scaled_lr",
        "hyperframes.train._loop._setup": "build_model",
        "hyperframes.train._config._splits": "split_videos",
        "hyperframes.train._tasks._base": "ClassificationTask SegmentationTask get_task",
    },
}


def moved_attribute(module: str, name: str) -> Any:
    """``module.name`` from the private module that holds it now, with a
    ``DeprecationWarning`` naming that module; the ``AttributeError`` a module without the name
    raises when ``name`` never moved."""
    for where, names in MOVED.get(module, {}).items():
        if name in names.split():
            warnings.warn(
                f"{module}.{name} is no longer public: it lives in {where} (a private module "
                f"that may change without notice); import it from there, or use what "
                f"{module}.__all__ lists",
                DeprecationWarning,
                stacklevel=3,
            )
            return getattr(importlib.import_module(where), name)
    raise AttributeError(f"module {module!r} has no attribute {name!r}")
