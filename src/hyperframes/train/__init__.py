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

The names load on first use (torch with them), so ``hyperframes.train._config._config`` is read, and a
config refused, without importing torch (:func:`precheck_config`): the command line checks a config before training.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from .._core._moved import moved_attribute

if TYPE_CHECKING:
    from .._core._config_models import (
        AugmentConfig,
        Config,
        DataConfig,
        EvalConfig,
        ModelConfig,
        TrainConfig,
    )
    from ..checkpoint import load_checkpoint, save_checkpoint
    from ..checkpoint import rebuild_model as rebuild_model
    from ..checkpoint import resolve_contract as resolve_contract
    from ._config._config import apply_overrides, save_config
    from ._config._config import (
        precheck_config as precheck_config,
    )
    from ._config._data import (
        build_data as build_data,
    )
    from ._config._data import (
        loader_workers as loader_workers,
    )
    from ._config._data import (
        make_dataset as make_dataset,
    )
    from ._config._leakage import LeakageReport, check_leakage
    from ._config._load import config_dataset as config_dataset
    from ._config._load import config_from_dict, load_config
    from ._config._splits import resolve_split as resolve_split
    from ._eval._eval import evaluate
    from ._eval._recalibrate import RecalibrateReport, recalibrate
    from ._eval._reconstructions import write_reconstructions as write_reconstructions
    from ._loop._estimate import estimate
    from ._loop._estimate import format_estimate as format_estimate
    from ._loop._stopping import TrainingInterrupted
    from ._loop._trainer import run_training
    from ._tasks import Task, create_task, list_tasks, register_task
    from ._tasks._box_metrics import coco_map, flicker_rate
    from ._tasks._detection import DetectionDataset
    from ._tasks._segmentation import SegmentationDataset

_LAZY = {
    "DetectionDataset": "._tasks._detection",
    "SegmentationDataset": "._tasks._segmentation",
    "AugmentConfig": ".._core._config_models",
    "Config": ".._core._config_models",
    "DataConfig": ".._core._config_models",
    "EvalConfig": ".._core._config_models",
    "LeakageReport": "._config._leakage",
    "ModelConfig": ".._core._config_models",
    "RecalibrateReport": "._eval._recalibrate",
    "Task": "._tasks",
    "TrainConfig": ".._core._config_models",
    "TrainingInterrupted": "._loop._stopping",
    "apply_overrides": "._config._config",
    "check_leakage": "._config._leakage",
    "coco_map": "._tasks._box_metrics",
    "flicker_rate": "._tasks._box_metrics",
    "config_dataset": "._config._load",
    "config_from_dict": "._config._load",
    "create_task": "._tasks",
    "estimate": "._loop._estimate",
    "evaluate": "._eval._eval",
    "format_estimate": "._loop._estimate",
    "list_tasks": "._tasks",
    "load_checkpoint": "..checkpoint",
    "load_config": "._config._load",
    "precheck_config": "._config._config",
    "rebuild_model": "..checkpoint",
    "recalibrate": "._eval._recalibrate",
    "resolve_contract": "..checkpoint",
    "register_task": "._tasks",
    "run_training": "._loop._trainer",
    "save_checkpoint": "..checkpoint",
    "save_config": "._config._config",
    "write_reconstructions": "._eval._reconstructions",
    "build_data": "._config._data",
    "loader_workers": "._config._data",
    "make_dataset": "._config._data",
    "resolve_split": "._config._splits",
}

__all__ = [
    "AugmentConfig",
    "Config",
    "DataConfig",
    "DetectionDataset",
    "EvalConfig",
    "LeakageReport",
    "ModelConfig",
    "RecalibrateReport",
    "SegmentationDataset",
    "Task",
    "TrainConfig",
    "TrainingInterrupted",
    "apply_overrides",
    "check_leakage",
    "coco_map",
    "config_from_dict",
    "create_task",
    "estimate",
    "evaluate",
    "flicker_rate",
    "list_tasks",
    "load_checkpoint",
    "load_config",
    "recalibrate",
    "register_task",
    "run_training",
    "save_checkpoint",
    "save_config",
]


def __getattr__(name: str):
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name], __name__), name)
        globals()[name] = value
        return value
    return moved_attribute(__name__, name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
