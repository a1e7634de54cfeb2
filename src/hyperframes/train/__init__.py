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

from .._core._moved import moved_attribute

if TYPE_CHECKING:
    from ..checkpoint import load_checkpoint, save_checkpoint
    from ..checkpoint import rebuild_model as rebuild_model
    from ..checkpoint import resolve_contract as resolve_contract
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
        save_config,
    )
    from ._config import (
        precheck_config as precheck_config,
    )
    from ._data import (
        build_data as build_data,
    )
    from ._data import (
        config_dataset as config_dataset,
    )
    from ._data import (
        loader_workers as loader_workers,
    )
    from ._data import (
        make_dataset as make_dataset,
    )
    from ._detection import DetectionDataset
    from ._estimate import estimate
    from ._estimate import format_estimate as format_estimate
    from ._eval import evaluate
    from ._leakage import LeakageReport, check_leakage
    from ._masked import write_reconstructions as write_reconstructions
    from ._recalibrate import RecalibrateReport, recalibrate
    from ._segmentation import SegmentationDataset
    from ._splits import resolve_split as resolve_split
    from ._stopping import TrainingInterrupted
    from ._tasks import Task, create_task, list_tasks, register_task
    from ._trainer import run_training

_LAZY = {
    "DetectionDataset": "._detection",
    "SegmentationDataset": "._segmentation",
    "AugmentConfig": "._config",
    "Config": "._config",
    "DataConfig": "._config",
    "EvalConfig": "._config",
    "LeakageReport": "._leakage",
    "ModelConfig": "._config",
    "RecalibrateReport": "._recalibrate",
    "Task": "._tasks",
    "TrainConfig": "._config",
    "TrainingInterrupted": "._stopping",
    "apply_overrides": "._config",
    "check_leakage": "._leakage",
    "coco_map": "._box_metrics",
    "flicker_rate": "._box_metrics",
    "config_dataset": "._data",
    "config_from_dict": "._config",
    "create_task": "._tasks",
    "estimate": "._estimate",
    "evaluate": "._eval",
    "format_estimate": "._estimate",
    "list_tasks": "._tasks",
    "load_checkpoint": "..checkpoint",
    "load_config": "._config",
    "precheck_config": "._config",
    "rebuild_model": "..checkpoint",
    "recalibrate": "._recalibrate",
    "resolve_contract": "..checkpoint",
    "register_task": "._tasks",
    "run_training": "._trainer",
    "save_checkpoint": "..checkpoint",
    "save_config": "._config",
    "write_reconstructions": "._masked",
    "build_data": "._data",
    "loader_workers": "._data",
    "make_dataset": "._data",
    "resolve_split": "._splits",
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
