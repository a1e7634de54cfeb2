"""Train and evaluate video models on a store, from a YAML config.

::

    from hyperframes.train import load_config, run_training, evaluate

    cfg = load_config("configs/demo.yaml", overrides=["train.epochs=5"])
    summary = run_training(cfg, "runs/demo")          # config.yaml, logs, plots, last/best.pt
    metrics = evaluate("runs/demo/best.pt", clips=10, crops=3)

The command lines (``hyperframes.cli``) call these: ``hyperframes train CONFIG [--set k=v ...]
[--out RUN_DIR] [--resume]`` runs :func:`run_training`, ``hyperframes eval RUN_DIR/best.pt
[--store STORE] [--split val] [--clips 10 --crops 3]`` runs :func:`evaluate`;
``torchrun --nproc_per_node N -m hyperframes train CONFIG`` trains with DDP.

The names load on first use (torch with them), so ``hyperframes.train._config`` is read, and a
config refused, without importing torch: the command line checks a config before training.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..checkpoint import load_checkpoint, rebuild_model, resolve_contract, save_checkpoint
    from ._box_metrics import coco_map, flicker_rate
    from ._config import (
        AugmentConfig,
        Config,
        DataConfig,
        EvalConfig,
        ModelConfig,
        TrainConfig,
        apply_overrides,
        config_from_dict,
        load_config,
        precheck_config,
        save_config,
    )
    from ._data import build_data, config_dataset, loader_workers, make_dataset
    from ._detection import DetectionDataset, DetectionTask
    from ._estimate import estimate, format_estimate
    from ._eval import evaluate, format_metrics
    from ._frame_data import downscale
    from ._frame_tasks import psnr, ssim
    from ._keyframe_recipe import hidden_picture, takes_recipe
    from ._leakage import LeakageReport, check_leakage, content_hash, find_leakage
    from ._masked import (
        MaskedVideoTask,
        masked_patch_errors,
        masked_psnr,
        picture_png,
        reconstruction_rows,
        write_reconstructions,
    )
    from ._metrics import (
        classification_metrics,
        confusion_matrix,
        iou_from_confusion,
        per_class_scores,
        segmentation_metrics,
        topk_accuracy,
        video_level,
    )
    from ._multilabel import MultilabelTask, average_precision, multilabel_metrics
    from ._recalibrate import RecalibrateReport, recalibrate
    from ._schedule import lr_at, scaled_lr
    from ._segmentation import SegmentationDataset
    from ._setup import build_model
    from ._splits import resolve_split, split_videos
    from ._stopping import TrainingInterrupted
    from ._tasks import (
        ClassificationTask,
        SegmentationTask,
        Task,
        create_task,
        get_task,
        list_tasks,
        register_task,
    )
    from ._trainer import run_training

_LAZY = {
    "AugmentConfig": "._config",
    "ClassificationTask": "._tasks",
    "Config": "._config",
    "DataConfig": "._config",
    "EvalConfig": "._config",
    "LeakageReport": "._leakage",
    "MaskedVideoTask": "._masked",
    "ModelConfig": "._config",
    "MultilabelTask": "._multilabel",
    "RecalibrateReport": "._recalibrate",
    "DetectionDataset": "._detection",
    "DetectionTask": "._detection",
    "SegmentationDataset": "._segmentation",
    "SegmentationTask": "._tasks",
    "Task": "._tasks",
    "TrainConfig": "._config",
    "TrainingInterrupted": "._stopping",
    "apply_overrides": "._config",
    "average_precision": "._multilabel",
    "build_model": "._setup",
    "check_leakage": "._leakage",
    "classification_metrics": "._metrics",
    "coco_map": "._box_metrics",
    "flicker_rate": "._box_metrics",
    "config_dataset": "._data",
    "config_from_dict": "._config",
    "confusion_matrix": "._metrics",
    "content_hash": "._leakage",
    "create_task": "._tasks",
    "estimate": "._estimate",
    "evaluate": "._eval",
    "find_leakage": "._leakage",
    "format_estimate": "._estimate",
    "format_metrics": "._eval",
    "get_task": "._tasks",
    "iou_from_confusion": "._metrics",
    "list_tasks": "._tasks",
    "load_checkpoint": "..checkpoint",
    "load_config": "._config",
    "lr_at": "._schedule",
    "multilabel_metrics": "._multilabel",
    "per_class_scores": "._metrics",
    "precheck_config": "._config",
    "rebuild_model": "..checkpoint",
    "recalibrate": "._recalibrate",
    "resolve_contract": "..checkpoint",
    "register_task": "._tasks",
    "run_training": "._trainer",
    "save_checkpoint": "..checkpoint",
    "save_config": "._config",
    "scaled_lr": "._schedule",
    "segmentation_metrics": "._metrics",
    "split_videos": "._splits",
    "topk_accuracy": "._metrics",
    "video_level": "._metrics",
    "write_reconstructions": "._masked",
    "downscale": "._frame_data",
    "psnr": "._frame_tasks",
    "ssim": "._frame_tasks",
    "hidden_picture": "._keyframe_recipe",
    "takes_recipe": "._keyframe_recipe",
    "build_data": "._data",
    "loader_workers": "._data",
    "make_dataset": "._data",
    "resolve_split": "._splits",
    "masked_patch_errors": "._masked",
    "picture_png": "._masked",
    "reconstruction_rows": "._masked",
    "masked_psnr": "._masked",
}

__all__ = [
    "AugmentConfig",
    "ClassificationTask",
    "Config",
    "DataConfig",
    "DetectionDataset",
    "DetectionTask",
    "EvalConfig",
    "LeakageReport",
    "MaskedVideoTask",
    "ModelConfig",
    "MultilabelTask",
    "RecalibrateReport",
    "SegmentationDataset",
    "SegmentationTask",
    "Task",
    "TrainConfig",
    "TrainingInterrupted",
    "apply_overrides",
    "average_precision",
    "build_data",
    "build_model",
    "check_leakage",
    "classification_metrics",
    "coco_map",
    "config_dataset",
    "config_from_dict",
    "confusion_matrix",
    "content_hash",
    "create_task",
    "downscale",
    "estimate",
    "evaluate",
    "find_leakage",
    "flicker_rate",
    "format_estimate",
    "format_metrics",
    "get_task",
    "hidden_picture",
    "iou_from_confusion",
    "list_tasks",
    "load_checkpoint",
    "load_config",
    "loader_workers",
    "lr_at",
    "make_dataset",
    "masked_patch_errors",
    "masked_psnr",
    "multilabel_metrics",
    "per_class_scores",
    "picture_png",
    "precheck_config",
    "psnr",
    "rebuild_model",
    "recalibrate",
    "reconstruction_rows",
    "register_task",
    "resolve_contract",
    "resolve_split",
    "run_training",
    "save_checkpoint",
    "save_config",
    "scaled_lr",
    "segmentation_metrics",
    "split_videos",
    "ssim",
    "takes_recipe",
    "topk_accuracy",
    "video_level",
    "write_reconstructions",
]


def __getattr__(name: str):
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
