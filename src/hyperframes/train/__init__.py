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
"""

from ._checkpoint import load_checkpoint, rebuild_model, save_checkpoint
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
from ._eval import evaluate, format_metrics
from ._leakage import LeakageReport, check_leakage, content_hash, find_leakage
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
from ._schedule import lr_at, scaled_lr
from ._segmentation import SegmentationDataset
from ._setup import build_model
from ._splits import split_videos
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

__all__ = [
    "AugmentConfig",
    "ClassificationTask",
    "Config",
    "DataConfig",
    "EvalConfig",
    "LeakageReport",
    "ModelConfig",
    "MultilabelTask",
    "SegmentationDataset",
    "SegmentationTask",
    "Task",
    "TrainConfig",
    "TrainingInterrupted",
    "apply_overrides",
    "average_precision",
    "build_model",
    "check_leakage",
    "classification_metrics",
    "config_from_dict",
    "confusion_matrix",
    "content_hash",
    "create_task",
    "evaluate",
    "find_leakage",
    "format_metrics",
    "get_task",
    "iou_from_confusion",
    "list_tasks",
    "load_checkpoint",
    "load_config",
    "lr_at",
    "multilabel_metrics",
    "per_class_scores",
    "rebuild_model",
    "register_task",
    "run_training",
    "save_checkpoint",
    "save_config",
    "scaled_lr",
    "segmentation_metrics",
    "split_videos",
    "topk_accuracy",
    "video_level",
]
