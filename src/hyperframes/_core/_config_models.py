"""The training configuration's sections, declared once as strict pydantic models.

Each field's type, bounds (``Field(ge=, le=, gt=, lt=)``), choices (``Literal``) and help
(``description``) are here and nowhere else: :func:`~hyperframes.train._config._config.config_from_dict`
validates a mapping with them and :mod:`hyperframes._core._validate` words the errors
(``train.lr: out of range: -1.0; allowed: a number > 0.0``). What one section cannot know alone
(the model, the samplers, two keys together) is checked in
:mod:`hyperframes.train._config._checks`.
"""

from __future__ import annotations

import warnings
from typing import Annotated, Literal

from pydantic import BeforeValidator, ConfigDict, Field
from pydantic_core import PydanticCustomError

from ._contract import IMAGENET_MEAN, IMAGENET_STD
from ._limits import MAX_CLASSES, MAX_FRAMES, MAX_SIDE
from ._validate import Auto, Strict

__all__ = [
    "AUTO_STEPS",
    "MAX_BATCH",
    "MAX_CLIPS",
    "MAX_EPOCHS",
    "MAX_SEED",
    "MAX_WORKERS",
    "AugmentConfig",
    "Config",
    "DataConfig",
    "DownscaleConfig",
    "EvalConfig",
    "ModelConfig",
    "TrainConfig",
]

MAX_BATCH = 65_536  # data.batch_size, data.val_batch_size
MAX_WORKERS = 256  # data.workers
MAX_EPOCHS = 100_000  # train.epochs
MAX_CLIPS = 1024  # eval.clips, the samplers' clips
MAX_SEED = 2**63 - 1
#: optimizer steps per epoch that ``data.clips_per_video: auto`` draws enough windows for
AUTO_STEPS = 20


class _Section(Strict):
    """A config section: strict types, no unknown keys, finite numbers only."""

    model_config = ConfigDict(allow_inf_nan=False)


def _an_integer(value):
    """An integer choice (``eval.crops: 3``) is an integer: not ``true``, not ``3.0``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise PydanticCustomError("int_type", "Input should be a valid integer")
    return value


_Unit = Annotated[float, Field(ge=0.0, le=1.0)]  # a probability, a fraction
_Positive = Annotated[float, Field(gt=0.0)]


def _unit(default: float = 0.0, about: str | None = None):
    return Field(default, ge=0.0, le=1.0, description=about)


class AugmentConfig(_Section):
    """Training augmentation (validation frames get the matching resize + centre crop)."""

    size: int | None = Field(
        None, ge=8, le=MAX_SIDE, description="square crop side; null keeps the stored size"
    )
    scale: list[_Unit] = Field(default_factory=lambda: [0.35, 1.0], min_length=2, max_length=2)
    ratio: list[_Positive] = Field(
        default_factory=lambda: [0.75, 1.3333], min_length=2, max_length=2
    )
    hflip: float = _unit(about="probability; keep 0 when left/right matters")
    color_jitter: float = _unit()
    color_jitter_per_frame: bool = Field(
        False, description="a set of colour factors per frame (flicker)"
    )
    affine: dict = Field(
        default_factory=dict,
        description="RandomAffine options (degrees, translate, scale, shear), one set per "
        "window; empty: off",
    )
    noise: float = _unit(about="std of per-pixel Gaussian noise, [0, 1] scale")
    reverse: float = _unit(about="probability of playing it backwards")
    drop_frame: float = _unit(about="probability that a frame is lost (previous repeated)")
    duplicate_frame: float = _unit(about="probability that a frame is shown twice")


class DownscaleConfig(_Section):
    """``train.task: super_resolution``: how the low-resolution window is made at load."""

    factor: int = Field(4, ge=2, le=16, description="downscale factor")
    filter: Literal["bicubic", "area"] = Field(
        "bicubic", description="antialiased bicubic, or box mean"
    )


# ``data.register`` is a field of the same name as ABCMeta.register, which the models' class
# (not their instances) has; pydantic warns, and an instance reads its field all the same.
warnings.filterwarnings("ignore", 'Field name "register" in "DataConfig" shadows', UserWarning)


class DataConfig(_Section):
    """``data``: the store, the splits, the samplers, the batches and the tracks."""

    store: str = Field(description="path (or s3:// URL) of a store built by `hyperframes build`")
    cache_dir: str | None = Field(
        None, description="for a store at a URL: a node-local cache folder"
    )
    cache_limit: int | None = Field(None, ge=1, description="the cache's size limit in bytes")
    train_split: str = "train"
    val_split: str = "val"
    val_fraction: float = Field(
        0.25, gt=0.0, lt=1.0, description="used only when the store has no splits"
    )
    split_seed: int = Field(0, ge=0, le=MAX_SEED)
    sampler: str = "random"
    sampler_options: dict = Field(default_factory=dict)
    val_sampler: str = "uniform"
    val_sampler_options: dict = Field(default_factory=lambda: {"clips": 1})
    frames: int = Field(8, ge=1, le=MAX_FRAMES)
    frame_choices: list[Annotated[int, Field(ge=1, le=MAX_FRAMES)]] | None = Field(
        None, description="set by data.frames: [8, 16]: the T each training batch draws from"
    )
    layout: Literal["auto", "temporal", "channel", "conv3d", "keyframe"] = "auto"
    batch_size: int = Field(16, ge=1, le=MAX_BATCH)
    val_batch_size: int | None = Field(None, ge=1, le=MAX_BATCH)
    clips_per_video: Annotated[int, Field(ge=1, le=MAX_CLIPS)] | Auto = Field(
        1,
        description="windows the training sampler draws from each video per epoch, each its "
        f"own seeded item (a random sampler only); auto: enough for {AUTO_STEPS} optimizer "
        "steps per epoch (1 on a large store)",
    )
    repeats: int = Field(
        1,
        ge=1,
        le=MAX_CLIPS,
        description="windows of the same video per training item, each independently seeded "
        "(window and augmentation), read in one batch (repeated sampling); "
        "data.batch_size counts windows and must be a multiple (a random sampler only)",
    )
    workers: Annotated[int, Field(ge=0, le=MAX_WORKERS)] | Auto = Field(
        "auto",
        description="threads reading batches ahead; auto: the loader's default, the CPU count "
        "(at most 8); 0 reads in the training loop",
    )
    memory: Literal["disk", "ram", "cuda"] = Field(
        "disk",
        description="where windows are read from: the store on disk, the store held in RAM, "
        "or held on the GPU (train.device's)",
    )
    memory_budget: int | None = Field(
        None,
        ge=0,
        description="bytes the memory cache may take (null: the whole split); the videos read "
        "most per byte go in first, the rest are read from disk",
    )
    decode_device: Literal["cuda", "cpu"] | None = Field(
        None,
        description="decode a jpeg store's frames on the GPU (nvJPEG, batched); cpu: the same "
        "path on the CPU",
    )
    check: Literal["video"] | None = Field(
        None, description="video: verify each video's checksum the first time it is read"
    )
    drop_last: bool = True
    mean: list[float] = Field(
        default_factory=lambda: list(IMAGENET_MEAN), min_length=3, max_length=3
    )
    std: list[_Positive] = Field(
        default_factory=lambda: list(IMAGENET_STD), min_length=3, max_length=3
    )
    augmentation: AugmentConfig = Field(default_factory=AugmentConfig)
    downscale: DownscaleConfig = Field(default_factory=DownscaleConfig)
    audio: Literal["logmel"] | None = Field(
        None, description="logmel: each window's log-mel spectrogram (the store needs --audio)"
    )
    audio_options: dict = Field(
        default_factory=dict, description="n_mels (64), window_ms (25), columns_per_frame (4)"
    )
    audio_missing: Literal["zeros", "error"] = "zeros"
    flow: bool = Field(
        False, description="optical flow planes after the frames (the store needs --flow)"
    )
    register: Literal["homography", "flow"] | None = Field(
        None, description="warp each window onto its first frame (the store needs --flow)"
    )
    check_leakage: bool = True
    allow_leakage: bool = False


class ModelConfig(_Section):
    """``model``: a registered model, its options (checked by the registry), its weights."""

    name: str = "channel_resnet18"
    num_classes: int | None = Field(
        None, ge=1, le=MAX_CLASSES, description="null: the store's classes (2 for masks)"
    )
    pretrained: str | None = None
    options: dict = Field(default_factory=dict)
    norm: Literal["batch", "group", "layer"] | None = Field(
        None,
        description="the CNN's normalisation (models with a norm option); null: the model's",
    )


_Norm = Literal["batchnorm", "groupnorm", "layernorm"]
_Logger = Literal["tensorboard", "mlflow"]


def _epochs(default: int, about: str):
    return Field(default, ge=0, le=MAX_EPOCHS, description=about)


class TrainConfig(_Section):
    """``train``: the task, the optimizer and its schedule, the loss, precision, logging."""

    task: str | None = Field(
        None,
        description="null: the model's task; multilabel: any number of classes per window on "
        "a classification model (BCE-with-logits, sigmoid, mAP)",
    )
    optimizer: Literal["sgd", "adamw"] = "sgd"
    lr: float = Field(0.01, gt=0.0)
    base_batch_size: int | None = Field(
        None,
        ge=1,
        le=MAX_BATCH * 1024,
        description="lr is for this global batch; scaled linearly (null: no scaling)",
    )
    momentum: float = Field(0.9, ge=0.0, lt=1.0)
    nesterov: bool = False
    weight_decay: float = Field(1e-4, ge=0.0)
    epochs: int = Field(10, ge=1, le=MAX_EPOCHS)
    warmup_epochs: float = Field(0.0, ge=0.0, le=MAX_EPOCHS)
    schedule: Literal["cosine", "constant"] = "cosine"
    min_lr: float = Field(0.0, ge=0.0)
    label_smoothing: float = Field(0.0, ge=0.0, lt=1.0)
    class_weights: list[_Positive] | None = Field(
        None, description="one loss weight per class (e.g. for a rare foreground)"
    )
    mixup: float = Field(0.0, ge=0.0, description="Beta(alpha, alpha) of mixup; 0 disables")
    cutmix: float = Field(0.0, ge=0.0, description="Beta(alpha, alpha) of cutmix; 0 disables")
    balanced: bool = False
    amp: bool = False
    amp_dtype: Literal["auto", "bfloat16", "float16"] = "auto"
    amp_float32: list[_Norm] = Field(
        default_factory=lambda: list[_Norm](["batchnorm"]),
        description="normalisation layers run in float32 under AMP (their statistics are what "
        "low precision makes unstable)",
    )
    accumulate: int = Field(1, ge=1, le=MAX_BATCH)
    checkpointing: bool | list[str] = Field(
        False,
        description="true: every stage; a list of stage names (e.g. [layer3, layer4]) to "
        "recompute only those in backward; `hyperframes estimate` lists them",
    )
    clip_grad: float | None = Field(None, gt=0.0)
    aux_weight: float = Field(0.0, ge=0.0, description="initial weight of a model's auxiliary loss")
    f_first_epochs: int = _epochs(
        0,
        "keyframe models: epochs in which F alone learns on a frozen G, before G and F train "
        "together",
    )
    flow_pretrain_epochs: int = _epochs(
        0,
        "keyframe models: epochs pre-training G to predict the store's optical flow at the key "
        "frame before training (the store needs --flow)",
    )
    seed: int = Field(0, ge=0, le=MAX_SEED)
    device: Literal["auto", "cpu", "cuda"] = "auto"
    eval_every: int = Field(1, ge=1)
    save_every: int = Field(0, ge=0, description="also save last.pt every N steps (0: epoch ends)")
    log_every: int = Field(10, ge=1)
    loggers: list[_Logger] = Field(
        default_factory=lambda: list[_Logger](["tensorboard"]),
        description="where scalars go besides log.jsonl; mlflow also gets the config, the "
        "plots and best.pt (pip install 'hyperframes-video[mlflow]')",
    )
    mlflow_uri: str | None = Field(
        None, description="MLflow tracking URI; null: sqlite:///<out>/mlflow.db"
    )
    mlflow_experiment: str = "hyperframes"


class EvalConfig(_Section):
    """``eval``: the final video-level evaluation."""

    clips: int = Field(
        1, ge=1, le=MAX_CLIPS, description="uniform clips per video for the final video-level eval"
    )
    crops: Annotated[Literal[1, 3], BeforeValidator(_an_integer)] = 1


class Config(_Section):
    """A whole training config: ``data`` (required), ``model``, ``train``, ``eval``."""

    data: DataConfig
    model: ModelConfig = Field(default_factory=ModelConfig)
    train: TrainConfig = Field(default_factory=TrainConfig)
    eval: EvalConfig = Field(default_factory=EvalConfig)

    def to_dict(self) -> dict:
        """Every key, defaults filled in, as plain values (what :func:`save_config` writes)."""
        return self.model_dump(warnings=False)
