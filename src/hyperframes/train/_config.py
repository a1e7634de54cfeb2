"""The training configuration: typed dataclasses, validation on load, ``--set`` overrides.

A config is a YAML (or dict) with three sections, ``data``, ``model`` and ``train``, and an
optional ``eval``; every key has a default except ``data.store``. Loading validates every
value: an unknown key, a wrong type or a value out of range is a :class:`ConfigError` that
names the key (``train.lr``), the value and what is allowed::

    cfg = load_config("configs/demo.yaml", overrides=["train.lr=0.1", "data.frames=4"])
    save_config(cfg, run_dir / "config.yaml")        # the resolved config, defaults filled in

Paths (``data.store``, ``model.pretrained``) are taken relative to the current directory and
saved resolved (absolute).

**Splits.** ``data.train_split`` / ``data.val_split`` name splits of the store (from a CSV
annotation ``path,label,split``). When the store has no split at all, a deterministic
per-video split is made instead: within each class, the videos (in store order) are permuted
by ``numpy.random.default_rng([data.split_seed, class_id])`` and the first
``round(n * data.val_fraction)`` (at least one when the class has two videos or more) go to
validation. The same config and store always give the same split.

**Bounds.** A config is small and asks for finite work: the file is at most
:data:`MAX_CONFIG_BYTES`, at most :data:`MAX_CONFIG_DEPTH` levels deep and at most
:data:`MAX_CONFIG_VALUES` values once YAML aliases are expanded (so a few aliases are fine,
an alias bomb is refused before anything is built). Every size that drives an allocation
has an upper bound (``data.frames`` <= :data:`MAX_FRAMES`, sides <= :data:`MAX_SIDE`,
batches <= :data:`MAX_BATCH`, ...) and one batch of uint8 frames, ``batch x frames x 3 x
size x size``, is at most :data:`MAX_BATCH_BYTES`. :func:`check_config_values` applies the
same bounds to the possibly partial config a checkpoint carries.
"""

from __future__ import annotations

import dataclasses
import difflib
import inspect
import math
import os
import types
import typing
from collections.abc import Callable, Iterable, Mapping
from dataclasses import field
from pathlib import Path

import yaml

from .._core._contract import IMAGENET_MEAN, IMAGENET_STD
from .._core._errors import ConfigError
from .._core._limits import MAX_CLASSES, MAX_FRAMES, MAX_SIDE
from .._core._urls import is_url
from ._frames import check_frame_choices, pad_refusal, split_frame_list

__all__ = [
    "AugmentConfig",
    "Config",
    "DataConfig",
    "EvalConfig",
    "ModelConfig",
    "TrainConfig",
    "apply_overrides",
    "check_config_values",
    "config_from_dict",
    "load_config",
    "precheck_config",
    "save_config",
]


MAX_CONFIG_BYTES = 1 << 20  # a config file; real ones are a few hundred bytes
MAX_CONFIG_DEPTH = 32  # nesting levels (real configs: 4)
MAX_CONFIG_VALUES = 10_000  # values after alias expansion (real configs: ~100)
MAX_BATCH = 65_536  # data.batch_size, data.val_batch_size
MAX_BATCH_BYTES = 64 << 30  # one batch of uint8 frames
MAX_WORKERS = 256  # data.workers
MAX_EPOCHS = 100_000  # train.epochs
MAX_CLIPS = 1024  # eval.clips, the samplers' clips
MAX_SEED = 2**63 - 1
#: optimizer steps per epoch that ``data.clips_per_video: auto`` draws enough windows for
AUTO_STEPS = 20


def _m(**meta) -> dict:
    """Validation metadata of a field: choices, min, max, gt, lt, length, help."""
    return meta


@dataclasses.dataclass
class AugmentConfig:
    """Training augmentation (validation frames get the matching resize + centre crop)."""

    size: int | None = field(
        default=None,
        metadata=_m(min=8, max=MAX_SIDE, help="square crop side; null keeps the stored size"),
    )
    scale: list[float] = field(
        default_factory=lambda: [0.35, 1.0], metadata=_m(length=2, min=0.0, max=1.0)
    )
    ratio: list[float] = field(
        default_factory=lambda: [0.75, 1.3333], metadata=_m(length=2, gt=0.0)
    )
    hflip: float = field(
        default=0.0,
        metadata=_m(min=0.0, max=1.0, help="probability; keep 0 when left/right matters"),
    )
    color_jitter: float = field(default=0.0, metadata=_m(min=0.0, max=1.0))
    color_jitter_per_frame: bool = field(
        default=False, metadata=_m(help="a set of colour factors per frame (flicker)")
    )
    affine: dict = field(
        default_factory=dict,
        metadata=_m(
            help="RandomAffine options (degrees, translate, scale, shear), one set per window; "
            "empty: off"
        ),
    )
    noise: float = field(
        default=0.0,
        metadata=_m(min=0.0, max=1.0, help="std of per-pixel Gaussian noise, [0, 1] scale"),
    )
    reverse: float = field(
        default=0.0, metadata=_m(min=0.0, max=1.0, help="probability of playing it backwards")
    )
    drop_frame: float = field(
        default=0.0,
        metadata=_m(min=0.0, max=1.0, help="probability that a frame is lost (previous repeated)"),
    )
    duplicate_frame: float = field(
        default=0.0,
        metadata=_m(min=0.0, max=1.0, help="probability that a frame is shown twice"),
    )


@dataclasses.dataclass
class DownscaleConfig:
    """``train.task: super_resolution``: how the low-resolution window is made at load."""

    factor: int = field(default=4, metadata=_m(min=2, max=16, help="downscale factor"))
    filter: str = field(
        default="bicubic",
        metadata=_m(choices=("bicubic", "area"), help="antialiased bicubic, or box mean"),
    )


@dataclasses.dataclass
class DataConfig:
    store: str = field(
        metadata=_m(help="path (or s3:// URL) of a store built by `hyperframes build`")
    )
    cache_dir: str | None = field(
        default=None, metadata=_m(help="for a store at a URL: a node-local cache folder")
    )
    cache_limit: int | None = field(
        default=None, metadata=_m(min=1, help="the cache's size limit in bytes")
    )
    train_split: str = "train"
    val_split: str = "val"
    val_fraction: float = field(
        default=0.25, metadata=_m(gt=0.0, lt=1.0, help="used only when the store has no splits")
    )
    split_seed: int = field(default=0, metadata=_m(min=0, max=MAX_SEED))
    sampler: str = "random"
    sampler_options: dict = field(default_factory=dict)
    val_sampler: str = "uniform"
    val_sampler_options: dict = field(default_factory=lambda: {"clips": 1})
    frames: int = field(default=8, metadata=_m(min=1, max=MAX_FRAMES))
    frame_choices: list[int] | None = field(
        default=None,
        metadata=_m(
            min=1,
            max=MAX_FRAMES,
            help="set by data.frames: [8, 16]: the T each training batch draws from",
        ),
    )
    layout: str = field(
        default="auto", metadata=_m(choices=("auto", "temporal", "channel", "conv3d", "keyframe"))
    )
    batch_size: int = field(default=16, metadata=_m(min=1, max=MAX_BATCH))
    val_batch_size: int | None = field(default=None, metadata=_m(min=1, max=MAX_BATCH))
    clips_per_video: int | str = field(
        default=1,
        metadata=_m(
            min=1,
            max=MAX_CLIPS,
            auto=True,
            help="windows the training sampler draws from each video per epoch, each its own "
            f"seeded item (a random sampler only); auto: enough for {AUTO_STEPS} optimizer "
            "steps per epoch (1 on a large store)",
        ),
    )
    repeats: int = field(
        default=1,
        metadata=_m(
            min=1,
            max=MAX_CLIPS,
            help="windows of the same video per training item, each independently seeded "
            "(window and augmentation), read in one batch (repeated sampling); "
            "data.batch_size counts windows and must be a multiple (a random sampler only)",
        ),
    )
    workers: int | str = field(
        default="auto",
        metadata=_m(
            min=0,
            max=MAX_WORKERS,
            auto=True,
            help="threads reading batches ahead; auto: the loader's default, the CPU count "
            "(at most 8); 0 reads in the training loop",
        ),
    )
    memory: str = field(
        default="disk",
        metadata=_m(
            choices=("disk", "ram", "cuda"),
            help="where windows are read from: the store on disk, the store held in RAM, or "
            "held on the GPU (train.device's)",
        ),
    )
    memory_budget: int | None = field(
        default=None,
        metadata=_m(
            min=0,
            help="bytes the memory cache may take (null: the whole split); the videos read "
            "most per byte go in first, the rest are read from disk",
        ),
    )
    decode_device: str | None = field(
        default=None,
        metadata=_m(
            choices=("cuda", "cpu"),
            help="decode a jpeg store's frames on the GPU (nvJPEG, batched); cpu: the same "
            "path on the CPU",
        ),
    )
    check: str | None = field(
        default=None,
        metadata=_m(
            choices=("video",),
            help="video: verify each video's checksum the first time it is read",
        ),
    )
    drop_last: bool = True
    mean: list[float] = field(default_factory=lambda: list(IMAGENET_MEAN), metadata=_m(length=3))
    std: list[float] = field(
        default_factory=lambda: list(IMAGENET_STD), metadata=_m(length=3, gt=0.0)
    )
    augmentation: AugmentConfig = field(default_factory=AugmentConfig)
    downscale: DownscaleConfig = field(default_factory=DownscaleConfig)
    audio: str | None = field(
        default=None,
        metadata=_m(
            choices=("logmel",),
            help="logmel: each window's log-mel spectrogram (the store needs --audio)",
        ),
    )
    audio_options: dict = field(
        default_factory=dict,
        metadata=_m(help="n_mels (64), window_ms (25), columns_per_frame (4)"),
    )
    audio_missing: str = field(default="zeros", metadata=_m(choices=("zeros", "error")))
    flow: bool = field(
        default=False,
        metadata=_m(help="optical flow planes after the frames (the store needs --flow)"),
    )
    register: str | None = field(
        default=None,
        metadata=_m(
            choices=("homography", "flow"),
            help="warp each window onto its first frame (the store needs --flow)",
        ),
    )
    check_leakage: bool = True
    allow_leakage: bool = False


@dataclasses.dataclass
class ModelConfig:
    name: str = "channel_resnet18"
    num_classes: int | None = field(
        default=None,
        metadata=_m(min=1, max=MAX_CLASSES, help="null: the store's classes (2 for masks)"),
    )
    pretrained: str | None = None
    options: dict = field(default_factory=dict)
    norm: str | None = field(
        default=None,
        metadata=_m(
            choices=("batch", "group", "layer"),
            help="the CNN's normalisation (models with a norm option); null: the model's",
        ),
    )


@dataclasses.dataclass
class TrainConfig:
    task: str | None = field(
        default=None,
        metadata=_m(
            help="null: the model's task; multilabel: any number of classes per window on a "
            "classification model (BCE-with-logits, sigmoid, mAP)"
        ),
    )
    optimizer: str = field(default="sgd", metadata=_m(choices=("sgd", "adamw")))
    lr: float = field(default=0.01, metadata=_m(gt=0.0))
    base_batch_size: int | None = field(
        default=None,
        metadata=_m(
            min=1,
            max=MAX_BATCH * 1024,
            help="lr is for this global batch; scaled linearly (null: no scaling)",
        ),
    )
    momentum: float = field(default=0.9, metadata=_m(min=0.0, lt=1.0))
    nesterov: bool = False
    weight_decay: float = field(default=1e-4, metadata=_m(min=0.0))
    epochs: int = field(default=10, metadata=_m(min=1, max=MAX_EPOCHS))
    warmup_epochs: float = field(default=0.0, metadata=_m(min=0.0, max=MAX_EPOCHS))
    schedule: str = field(default="cosine", metadata=_m(choices=("cosine", "constant")))
    min_lr: float = field(default=0.0, metadata=_m(min=0.0))
    label_smoothing: float = field(default=0.0, metadata=_m(min=0.0, lt=1.0))
    class_weights: list[float] | None = field(
        default=None,
        metadata=_m(gt=0.0, help="one loss weight per class (e.g. for a rare foreground)"),
    )
    mixup: float = field(
        default=0.0, metadata=_m(min=0.0, help="Beta(alpha, alpha) of mixup; 0 disables")
    )
    cutmix: float = field(
        default=0.0, metadata=_m(min=0.0, help="Beta(alpha, alpha) of cutmix; 0 disables")
    )
    balanced: bool = False
    amp: bool = False
    amp_dtype: str = field(default="auto", metadata=_m(choices=("auto", "bfloat16", "float16")))
    amp_float32: list[str] = field(
        default_factory=lambda: ["batchnorm"],
        metadata=_m(
            choices=("batchnorm", "groupnorm", "layernorm"),
            help="normalisation layers run in float32 under AMP (their statistics are what "
            "low precision makes unstable)",
        ),
    )
    accumulate: int = field(default=1, metadata=_m(min=1, max=MAX_BATCH))
    checkpointing: bool | list[str] = field(
        default=False,
        metadata=_m(
            help="true: every stage; a list of stage names (e.g. [layer3, layer4]) to "
            "recompute only those in backward; `hyperframes estimate` lists them"
        ),
    )
    clip_grad: float | None = field(default=None, metadata=_m(gt=0.0))
    aux_weight: float = field(
        default=0.0, metadata=_m(min=0.0, help="initial weight of a model's auxiliary loss")
    )
    f_first_epochs: int = field(
        default=0,
        metadata=_m(
            min=0,
            max=MAX_EPOCHS,
            help="keyframe models: epochs in which F alone learns on a frozen G, before G "
            "and F train together",
        ),
    )
    flow_pretrain_epochs: int = field(
        default=0,
        metadata=_m(
            min=0,
            max=MAX_EPOCHS,
            help="keyframe models: epochs pre-training G to predict the store's optical flow "
            "at the key frame before training (the store needs --flow)",
        ),
    )
    seed: int = field(default=0, metadata=_m(min=0, max=MAX_SEED))
    device: str = field(default="auto", metadata=_m(choices=("auto", "cpu", "cuda")))
    eval_every: int = field(default=1, metadata=_m(min=1))
    save_every: int = field(
        default=0, metadata=_m(min=0, help="also save last.pt every N steps (0: epoch ends)")
    )
    log_every: int = field(default=10, metadata=_m(min=1))
    loggers: list[str] = field(
        default_factory=lambda: ["tensorboard"],
        metadata=_m(
            choices=("tensorboard", "mlflow"),
            help="where scalars go besides log.jsonl; mlflow also gets the config, the plots "
            "and best.pt (pip install 'hyperframes[mlflow]')",
        ),
    )
    mlflow_uri: str | None = field(
        default=None,
        metadata=_m(help="MLflow tracking URI; null: sqlite:///<out>/mlflow.db"),
    )
    mlflow_experiment: str = "hyperframes"


@dataclasses.dataclass
class EvalConfig:
    clips: int = field(
        default=1,
        metadata=_m(
            min=1, max=MAX_CLIPS, help="uniform clips per video for the final video-level eval"
        ),
    )
    crops: int = field(default=1, metadata=_m(choices=(1, 3)))


@dataclasses.dataclass
class Config:
    data: DataConfig
    model: ModelConfig = field(default_factory=ModelConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


# --------------------------------------------------------------------------- validation


def _type_name(hint) -> str:
    names = {int: "an integer", float: "a number", str: "a string", bool: "true or false"}
    names[dict] = "a mapping"
    if hint in names:
        return names[hint]
    origin = typing.get_origin(hint)
    if origin is list:
        (item,) = typing.get_args(hint)
        return f"a list of {_type_name(item).split(' ', 1)[1]}s"
    if origin in (typing.Union, types.UnionType):
        parts = [a for a in typing.get_args(hint) if a is not type(None)]
        return " or ".join(_type_name(a) for a in parts) + " or null"
    return getattr(hint, "__name__", str(hint))


def _allowed(hint, meta: dict) -> str:
    if meta.get("auto"):  # a number, or the word auto (the field's default)
        plain = {k: v for k, v in meta.items() if k != "auto"}
        base = typing.get_args(hint)[0] if typing.get_args(hint) else hint
        return _allowed(base, plain) + ", or auto"
    if "choices" in meta:
        return "one of " + ", ".join(str(c) for c in meta["choices"])
    bounds = []
    if "min" in meta:
        bounds.append(f">= {meta['min']}")
    if "gt" in meta:
        bounds.append(f"> {meta['gt']}")
    if "max" in meta:
        bounds.append(f"<= {meta['max']}")
    if "lt" in meta:
        bounds.append(f"< {meta['lt']}")
    text = _type_name(hint)
    if "length" in meta:
        text += f" of length {meta['length']}"
    if bounds:
        text += (" with values " if typing.get_origin(hint) is list else " ") + " and ".join(bounds)
    if meta.get("nullable") and "or null" not in text:
        text += ", or null"
    return text


def _show(value, limit: int = 200) -> str:
    """``repr(value)``, cut to ``limit`` characters (an error message quotes, it does not dump)."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _bad(key: str, value, hint, meta: dict, why: str) -> ConfigError:
    hint_text = f" ({meta['help']})" if "help" in meta else ""
    return ConfigError(f"{key}: {why} {_show(value)}; allowed: {_allowed(hint, meta)}{hint_text}")


def _scalar(key: str, value, hint, meta: dict):
    if hint is bool:
        if not isinstance(value, bool):
            raise _bad(key, value, hint, meta, "expected true or false, got")
        return value
    if hint is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise _bad(key, value, hint, meta, "expected an integer, got")
    elif hint is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise _bad(key, value, hint, meta, "expected a number, got")
        value = float(value)
        if not math.isfinite(value):
            raise _bad(key, value, hint, meta, "expected a finite number, got")
    elif hint is str:
        if not isinstance(value, str):
            raise _bad(key, value, hint, meta, "expected a string, got")
    elif hint is dict:
        if not isinstance(value, dict):
            raise _bad(key, value, hint, meta, "expected a mapping, got")
        return dict(value)
    if "choices" in meta and value not in meta["choices"]:
        raise _bad(key, value, hint, meta, "not an allowed value:")
    if hint in (int, float):
        lo, gt, hi, lt = (meta.get(k) for k in ("min", "gt", "max", "lt"))
        if (
            (lo is not None and value < lo)
            or (gt is not None and value <= gt)
            or (hi is not None and value > hi)
            or (lt is not None and value >= lt)
        ):
            raise _bad(key, value, hint, meta, "out of range:")
    return value


def _value(key: str, value, hint, meta: dict):
    if meta.get("auto") and value == "auto":
        return value
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        args = typing.get_args(hint)
        inner = [a for a in args if a is not type(None)]
        nullable = type(None) in args
        if value is None and nullable:
            return None
        if value is None or (isinstance(value, str) and meta.get("auto")):
            raise _bad(key, value, hint, meta, "not an allowed value:")
        lists = [a for a in inner if typing.get_origin(a) is list]
        if lists and isinstance(value, list | tuple) and len(inner) > 1:  # e.g. bool | list[str]
            return _value(key, value, lists[0], {**meta, "nullable": nullable})
        return _value(key, value, inner[0], {**meta, "nullable": nullable})
    if origin is list:
        (item,) = typing.get_args(hint)
        if not isinstance(value, list | tuple):
            raise _bad(key, value, hint, meta, "expected a list, got")
        if "length" in meta and len(value) != meta["length"]:
            raise _bad(key, value, hint, meta, f"expected {meta['length']} values, got")
        item_meta = {k: v for k, v in meta.items() if k != "length"}
        return [_scalar(f"{key}[{i}]", v, item, item_meta) for i, v in enumerate(value)]
    if dataclasses.is_dataclass(hint):
        return _section(key, value, hint)
    if value is None:
        raise _bad(key, value, hint, meta, "a value is required, got")
    return _scalar(key, value, hint, meta)


def _section(key: str, raw, cls):
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{key}: expected a mapping of keys to values, got {_show(raw)}")
    fields = {f.name: f for f in dataclasses.fields(cls)}
    hints = typing.get_type_hints(cls)
    for name in raw:
        if name not in fields:
            close = difflib.get_close_matches(str(name), list(fields), n=1)
            hint = f"; did you mean {key}.{close[0]}?" if close else ""
            raise ConfigError(
                f"unknown key {key}.{name}{hint} (allowed keys in {key}: {', '.join(fields)})"
            )
    kwargs = {}
    for name, f in fields.items():
        sub = f"{key}.{name}"
        if name in raw:
            kwargs[name] = _value(sub, raw[name], hints[name], dict(f.metadata))
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise ConfigError(
                f"{sub} is required: {_allowed(hints[name], dict(f.metadata))}"
                + (f" ({f.metadata['help']})" if "help" in f.metadata else "")
            )
    return cls(**kwargs)


def config_from_dict(raw: dict, *, base: str | os.PathLike | None = None) -> Config:
    """Validate a raw mapping into a :class:`Config` (see the module docstring)."""
    cfg = _checked_sections(raw)
    _cross_checks(cfg)
    _resolve_paths(cfg, base)
    return cfg


def _checked_sections(raw: dict) -> Config:
    """The checks of :func:`config_from_dict` that need neither the model registry nor
    torch: bounds, sections, keys, types, ranges, the size of a batch."""
    if not isinstance(raw, dict):
        raise ConfigError(
            "a config is a mapping with sections data, model, train (and eval), got " + _show(raw)
        )
    _check_values(raw)
    raw = split_frame_list(raw)  # data.frames: [8, 16]
    top = {f.name for f in dataclasses.fields(Config)}
    for name in raw:
        if name not in top:
            close = difflib.get_close_matches(str(name), sorted(top), n=1)
            hint = f"; did you mean {close[0]}?" if close else ""
            raise ConfigError(
                f"unknown config section {name!r}{hint} (allowed sections: data, model, train, eval)"
            )
    if "data" not in raw:
        raise ConfigError("the config needs a data section with at least data.store")
    cfg = Config(
        data=_section("data", raw.get("data"), DataConfig),
        model=_section("model", raw.get("model"), ModelConfig),
        train=_section("train", raw.get("train"), TrainConfig),
        eval=_section("eval", raw.get("eval"), EvalConfig),
    )
    size = cfg.data.augmentation.size
    _check_batch_bytes(
        cfg.data.frames,
        _batch_sizes(cfg.data),
        (size, size, "data.augmentation.size") if size else None,
    )
    return cfg


def _batch_sizes(data, prefix: str = "") -> dict[str, int]:
    get = data.get if isinstance(data, Mapping) else lambda k: getattr(data, k, None)
    out = {f"{prefix}data.batch_size": get("batch_size") or 16}
    if get("val_batch_size"):
        out[f"{prefix}data.val_batch_size"] = get("val_batch_size")
    return out


def _check_batch_bytes(
    frames: int, batches: dict[str, int], frame_size: tuple[int, int, str] | None, prefix=""
) -> None:
    """One batch of uint8 frames, ``batch x frames x 3 x H x W``, must stay within
    :data:`MAX_BATCH_BYTES`; ``frame_size``: (H, W, the key that sets them), or None when the
    store decides (nothing to check here)."""
    if not frame_size:
        return
    height, width, size_key = frame_size
    for key, batch in batches.items():
        size = batch * frames * 3 * height * width
        if size > MAX_BATCH_BYTES:
            raise ConfigError(
                f"{key} x {prefix}data.frames x 3 x H x W ({size_key}) = {batch} x {frames} x "
                f"3 x {height} x {width} = {size / 2**30:.1f} GiB of uint8 frames per batch; "
                f"allowed: at most {MAX_BATCH_BYTES >> 30} GiB (lower {key}, "
                f"{prefix}data.frames or {size_key})"
            )


def check_config_values(
    raw: Mapping, *, prefix: str = "", frame_size: tuple[int, int, str] | None = None
) -> None:
    """Check the values a possibly partial config mapping holds (a checkpoint's ``config``)
    with the types and bounds of :func:`config_from_dict`, before anything is allocated.

    Keys that are absent are not required and unknown keys are let through (an older or
    newer checkpoint), but every known value present must be valid, and one batch must fit
    :data:`MAX_BATCH_BYTES`. ``prefix`` goes before the keys in messages (``"config."``);
    ``frame_size`` is (H, W, where from) when the config does not fix the frame size.
    """
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{prefix or 'config'}: expected a mapping of sections, got {_show(raw)}")
    _check_values(raw)
    raw = split_frame_list(raw)
    sections = {f.name: typing.get_type_hints(Config)[f.name] for f in dataclasses.fields(Config)}
    for name, cls in sections.items():
        if raw.get(name) is not None:
            _partial_section(f"{prefix}{name}", raw[name], cls)
    data = raw.get("data") or {}
    size = (data.get("augmentation") or {}).get("size")
    if size:
        frame_size = (size, size, f"{prefix}data.augmentation.size")
    _check_batch_bytes(data.get("frames") or 8, _batch_sizes(data, prefix), frame_size, prefix)


def check_field(key: str, value, owner: type, name: str):
    """``value`` checked as field ``name`` of the config dataclass ``owner`` (its type and
    bounds) and reported as ``key``; returns the value as :func:`config_from_dict` keeps it."""
    f = next(f for f in dataclasses.fields(owner) if f.name == name)
    return _value(key, value, typing.get_type_hints(owner)[name], dict(f.metadata))


def _partial_section(key: str, raw, cls) -> None:
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{key}: expected a mapping of keys to values, got {_show(raw)}")
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        if f.name not in raw:
            continue
        sub = f"{key}.{f.name}"
        if dataclasses.is_dataclass(hints[f.name]):
            if raw[f.name] is not None:
                _partial_section(sub, raw[f.name], hints[f.name])
        else:
            _value(sub, raw[f.name], hints[f.name], dict(f.metadata))
    for opts in ("sampler_options", "val_sampler_options"):
        if isinstance(raw.get(opts), Mapping):
            _check_clips(f"{key}.{opts}", raw[opts])


def _check_clips(key: str, options: Mapping) -> None:
    clips = options.get("clips")
    if isinstance(clips, int) and not isinstance(clips, bool) and clips > MAX_CLIPS:
        raise ConfigError(
            f"{key}.clips: out of range: {clips}; allowed: an integer >= 1 and <= {MAX_CLIPS}"
        )


def _check_tracks(cfg: Config, spec) -> None:
    """data.audio / data.flow / data.register against the model."""
    from ._contract import model_takes_audio

    d, name = cfg.data, cfg.model.name
    options = spec.options()
    if d.flow and "extra_channels" not in options:
        raise ConfigError(
            f"data.flow: model {name!r} cannot take flow planes; the channel models can "
            "(channel_resnet18, channel_resnet50, channel_mobilenet_v3_small, channel_timm); "
            "allowed for this model: false"
        )
    if d.flow and "extra_channels" in cfg.model.options:
        raise ConfigError(
            "model.options.extra_channels: set by data.flow (2*(frames-1) flow planes); leave "
            "it out"
        )
    if d.audio is None and d.audio_options:
        raise ConfigError("data.audio_options: given without data.audio; set data.audio: logmel")
    if model_takes_audio(spec):
        if d.audio is None:
            raise ConfigError(
                f"data.audio: model {name!r} takes a log-mel spectrogram beside the frames; "
                "set data.audio: logmel (the store needs `hyperframes build --audio`)"
            )
        if cfg.train.mixup or cfg.train.cutmix:
            raise ConfigError(
                f"train.mixup / train.cutmix: not supported for the audio-visual model {name!r}; "
                "allowed: 0"
            )
        for key, default in (("n_mels", 64), ("columns_per_frame", 4)):
            want = d.audio_options.get(key, default)
            if key in cfg.model.options and cfg.model.options[key] != want:
                raise ConfigError(
                    f"model.options.{key}: {cfg.model.options[key]!r} differs from the audio the "
                    f"data gives (data.audio_options.{key}: {want!r}); leave it out (the data's "
                    "is used)"
                )
    if d.audio is not None:
        from ..data import resolve_audio

        try:
            resolve_audio(dict(d.audio_options))
        except ConfigError as e:
            raise ConfigError(f"data.audio_options: {e}") from None


def _check_norm(cfg: Config, spec) -> None:
    if cfg.model.norm is not None and "norm" not in spec.options():
        raise ConfigError(
            f"model.norm: model {cfg.model.name!r} has no norm choice; the models with one: "
            "r2plus1d_tiny, cnn_lstm (allowed for this model: null)"
        )
    if cfg.model.norm is not None and "norm" in cfg.model.options:
        raise ConfigError("model.options.norm: give model.norm, not both")


def _cross_checks(cfg: Config) -> None:
    from ..models import get_spec
    from ..sampling import create_sampler

    try:
        spec = get_spec(cfg.model.name)
    except ConfigError as e:
        raise ConfigError(f"model.name: {e}") from None
    allowed = spec.options()
    params = inspect.signature(spec.builder).parameters.values()
    takes_any = any(p.kind is p.VAR_KEYWORD for p in params)
    unknown = [k for k in cfg.model.options if k not in allowed and k != "checkpointing"]
    if unknown and not takes_any:
        raise ConfigError(
            f"model.options: {cfg.model.name} has no option(s) {', '.join(map(repr, unknown))}; "
            f"allowed: {', '.join(o for o in allowed if o != 'checkpointing') or 'none'}"
        )
    if cfg.data.layout not in ("auto", spec.layout):
        raise ConfigError(
            f"data.layout: {cfg.data.layout!r} does not fit model {cfg.model.name!r}, which "
            f"takes the {spec.layout!r} layout; allowed: auto, {spec.layout}"
        )
    for key, name, opts in (
        ("data.sampler", cfg.data.sampler, cfg.data.sampler_options),
        ("data.val_sampler", cfg.data.val_sampler, cfg.data.val_sampler_options),
    ):
        _check_clips(f"{key}_options", opts)
        try:
            sampler = create_sampler(name, frames=cfg.data.frames, **opts)
        except ConfigError as e:
            raise ConfigError(f"{key}: {e}") from None
        except TypeError as e:
            raise ConfigError(f"{key}_options: {e}") from None
        if key == "data.sampler" and cfg.data.repeats > 1:
            _check_repeats(cfg, sampler, name)
        clips = cfg.data.clips_per_video
        if key == "data.sampler" and isinstance(clips, int) and clips > 1:
            try:
                sampler.with_clips_per_video(clips)
            except ConfigError as e:
                raise ConfigError(f"data.clips_per_video: {e} (data.sampler: {name})") from None
    if cfg.train.task is not None:
        _check_task(cfg, spec)
    _check_tracks(cfg, spec)
    _check_norm(cfg, spec)
    pad_refusal(cfg, spec)
    check_frame_choices(cfg, spec)
    from ._frame_config import check_frame_config  # odd T, whole frames, no label options

    check_frame_config(cfg, spec)
    seg = spec.task == "segmentation"
    if seg and (cfg.train.mixup or cfg.train.cutmix):
        raise ConfigError(
            "train.mixup / train.cutmix apply to classification only; allowed for the "
            f"segmentation model {cfg.model.name!r}: 0"
        )
    if seg and (cfg.train.balanced or cfg.train.label_smoothing):
        raise ConfigError(
            "train.balanced / train.label_smoothing apply to classification only; allowed for "
            f"the segmentation model {cfg.model.name!r}: false / 0"
        )
    if seg and cfg.data.augmentation.size is not None:
        raise ConfigError(
            "data.augmentation.size: crops are not applied to segmentation masks; allowed for "
            f"the segmentation model {cfg.model.name!r}: null (hflip is applied to both)"
        )
    if seg:
        _check_seg_augmentation(cfg)
    _check_memory(cfg)
    _check_recipe(cfg, spec)
    if seg and cfg.eval.crops != 1:
        raise ConfigError("eval.crops: segmentation is evaluated on whole frames; allowed: 1")
    if cfg.train.min_lr > cfg.train.lr:
        raise ConfigError(
            f"train.min_lr: {cfg.train.min_lr} is above train.lr={cfg.train.lr}; allowed: "
            f"0 <= min_lr <= lr"
        )
    _check_augmentation(cfg)
    aug = cfg.data.augmentation
    if aug.scale[0] > aug.scale[1] or aug.scale[1] <= 0:
        raise ConfigError(
            f"data.augmentation.scale: {aug.scale} is not a range; allowed: [low, high] with "
            "0 <= low <= high <= 1 and high > 0"
        )
    if aug.ratio[0] > aug.ratio[1]:
        raise ConfigError(
            f"data.augmentation.ratio: {aug.ratio} is not a range; allowed: [low, high], "
            "0 < low <= high"
        )


def _check_repeats(cfg: Config, sampler, name: str) -> None:
    """``data.repeats``: a random sampler, and batches of whole items (K windows each)."""
    k = cfg.data.repeats
    try:
        sampler.with_clips_per_video(k)
    except ConfigError as e:
        raise ConfigError(f"data.repeats: {e} (data.sampler: {name})") from None
    if cfg.data.batch_size % k:
        raise ConfigError(
            f"data.batch_size: {cfg.data.batch_size} windows is not a multiple of data.repeats "
            f"({k} windows of each video per batch); allowed: a multiple of {k}"
        )


def _check_recipe(cfg: Config, spec) -> None:
    t = cfg.train
    for key in ("f_first_epochs", "flow_pretrain_epochs"):
        if getattr(t, key) and spec.family != "keyframe":
            raise ConfigError(
                f"train.{key}: the keyframe models' recipe (an aggregator G and a segmenter F); "
                f"model {cfg.model.name!r} has no G; allowed: 0"
            )
    if t.f_first_epochs >= t.epochs and t.f_first_epochs:
        raise ConfigError(
            f"train.f_first_epochs: {t.f_first_epochs} leaves no epoch for G and F together "
            f"(train.epochs: {t.epochs}); allowed: fewer than train.epochs"
        )
    if t.flow_pretrain_epochs and cfg.data.frames < 2:
        raise ConfigError(
            "train.flow_pretrain_epochs: the key frame's flow needs data.frames >= 2; allowed "
            "with one frame: 0"
        )


def _check_memory(cfg: Config) -> None:
    d = cfg.data
    if d.memory_budget is not None and d.memory == "disk":
        raise ConfigError(
            "data.memory_budget: sizes a memory cache, but data.memory is disk; allowed with "
            "it: null (or set data.memory: ram or cuda)"
        )
    if d.decode_device is not None and d.memory != "disk":
        raise ConfigError(
            f"data.decode_device: {d.decode_device} decodes a jpeg store read from disk, but "
            f"data.memory: {d.memory} holds decoded frames already; allowed: one or the other"
        )
    if "cuda" in (d.memory, d.decode_device) and cfg.train.device == "cpu":
        raise ConfigError(
            "data.memory / data.decode_device: cuda puts windows on the GPU but train.device "
            "is cpu; allowed with train.device cpu: memory disk or ram, decode_device null or cpu"
        )


def _check_seg_augmentation(cfg: Config) -> None:
    """The segmentation dataset moves masks with hflip only: refuse what it would not apply."""
    aug = cfg.data.augmentation
    extra = [
        k
        for k in ("affine", "noise", "reverse", "drop_frame", "duplicate_frame", "color_jitter")
        if getattr(aug, k)
    ]
    if extra:
        raise ConfigError(
            f"data.augmentation.{extra[0]}: not applied to segmentation windows (their masks "
            f"move with hflip only); allowed for the segmentation model {cfg.model.name!r}: "
            "off (hflip is applied to frames and masks)"
        )


def _check_augmentation(cfg: Config) -> None:
    """The augmentation builds: RandomAffine accepts ``data.augmentation.affine``."""
    from ._data import train_transform

    try:
        train_transform(cfg.data.augmentation)
    except ConfigError as e:
        raise ConfigError(f"data.augmentation: {e}") from None
    except TypeError as e:
        raise ConfigError(
            f"data.augmentation.affine: {e}; allowed keys: degrees, translate, scale, shear, fill"
        ) from None


def _check_task(cfg: Config, spec) -> None:
    """``train.task``: a registered task that the model's outputs fit (a classification
    model's logits serve ``multilabel`` too), with only the options it honours."""
    from ._tasks import get_task, list_tasks

    name = cfg.train.task
    if name not in list_tasks():
        raise ConfigError(
            f"train.task: unknown task {name!r}; allowed: null (the model's task, {spec.task}) "
            f"or one of {', '.join(list_tasks())}"
        )
    fits = {"classification": ("classification", "multilabel")}.get(spec.task, (spec.task,))
    if name not in fits:
        raise ConfigError(
            f"train.task: {name!r} does not fit model {cfg.model.name!r}, whose outputs are "
            f"for {spec.task}; allowed: null or {', '.join(fits)}"
            + ("; masked pretraining needs model.name: video_mae" if name == "masked_video" else "")
        )
    supports = get_task(name).supports
    for key in ("label_smoothing", "mixup", "cutmix"):
        value = getattr(cfg.train, key)
        if value and key not in supports:
            raise ConfigError(
                f"train.{key}: {value} but train.task {name} does not use it; allowed: 0"
            )
    if cfg.train.balanced and name in ("multilabel", "masked_video"):
        raise ConfigError(
            "train.balanced: class-balanced sampling draws items by their one class; allowed "
            f"with train.task {name}: false"
        )


def _resolve_paths(cfg: Config, base) -> None:
    root = Path(base) if base is not None else Path.cwd()
    if not cfg.data.store:
        raise ConfigError("data.store: a store path is required; allowed: a non-empty path")
    if not is_url(cfg.data.store):
        cfg.data.store = str((root / os.path.expanduser(cfg.data.store)).absolute())
    if cfg.data.cache_dir:
        cfg.data.cache_dir = str((root / os.path.expanduser(cfg.data.cache_dir)).absolute())
    if cfg.model.pretrained:
        cfg.model.pretrained = str((root / os.path.expanduser(cfg.model.pretrained)).absolute())


# --------------------------------------------------------------------------- overrides, files


def apply_overrides(raw: dict, overrides: list[str] | None) -> dict:
    """Apply ``key.path=value`` strings to a raw config mapping (values parsed as YAML).

    ``train.lr=0.1``, ``data.sampler_options.stride=2``, ``model.options={width: 8}``. The
    result is validated by :func:`config_from_dict`, so a misspelt key is reported there.
    """
    _check_values(raw)
    out = _deep_copy(raw)
    for item in overrides or []:
        if not isinstance(item, str) or "=" not in item:
            raise ConfigError(
                f"override {item!r}: expected KEY=VALUE such as train.lr=0.1 or data.frames=8"
            )
        key, text = item.split("=", 1)
        parts = [p for p in key.strip().split(".") if p]
        if len(parts) < 2:
            raise ConfigError(
                f"override {item!r}: the key needs a section, e.g. train.{key.strip() or 'lr'}; "
                "allowed sections: data, model, train, eval"
            )
        try:
            value = _load_yaml(text) if text.strip() else None
        except _Refused as e:
            raise ConfigError(f"override {item!r}: the value is refused: {e}") from None
        except yaml.YAMLError as e:
            raise ConfigError(f"override {item!r}: the value is not valid YAML ({e})") from None
        node = out
        for i, p in enumerate(parts[:-1]):
            child = node.get(p)
            if child is None:
                child = node[p] = {}
            if not isinstance(child, dict):
                raise ConfigError(
                    f"override {item!r}: {'.'.join(parts[: i + 1])} is a value, not a section"
                )
            node = child
        node[parts[-1]] = value
    return out


def _deep_copy(raw):
    if isinstance(raw, dict):
        return {k: _deep_copy(v) for k, v in raw.items()}
    if isinstance(raw, list):
        return [_deep_copy(v) for v in raw]
    return raw


# --------------------------------------------------------------------------- bounded YAML


class _Refused(yaml.YAMLError):
    """A document beyond the bounds (size, depth, alias expansion); the text says which."""


def _value_children(value) -> Iterable:
    if isinstance(value, Mapping):
        return [x for kv in value.items() for x in kv]
    if isinstance(value, list | tuple):
        return value
    return ()


def _node_children(node: yaml.Node) -> Iterable:
    if isinstance(node, yaml.MappingNode):
        return [x for kv in node.value for x in kv]
    if isinstance(node, yaml.SequenceNode):
        return node.value
    return ()


def _check_tree(root, children: Callable[[object], Iterable], what: str) -> None:
    """Refuse a tree (YAML nodes or Python values, shared by aliases or references) that
    expands to more than :data:`MAX_CONFIG_VALUES` values, is deeper than
    :data:`MAX_CONFIG_DEPTH` or contains itself. Each shared part is visited once, so the
    work is bounded by the distinct parts, not by the expansion."""
    done: dict[int, tuple[int, int]] = {}  # id -> (expanded values, height)
    open_: set[int] = set()

    def visit(node, depth: int) -> tuple[int, int]:
        key = id(node)
        if key in open_:
            raise _Refused(f"{what} contains itself (a cycle)")
        if key not in done:
            if depth > MAX_CONFIG_DEPTH:
                raise _Refused(f"{what} is nested deeper than {MAX_CONFIG_DEPTH} levels")
            open_.add(key)
            count, height = 1, 1
            for child in children(node):
                n, h = visit(child, depth + 1)
                count, height = count + n, max(height, h + 1)
                if count > MAX_CONFIG_VALUES:
                    raise _Refused(
                        f"{what} expands to more than {MAX_CONFIG_VALUES} values (aliases or "
                        "shared parts repeated)"
                    )
            open_.discard(key)
            done[key] = (count, height)
        count, height = done[key]
        if depth + height - 1 > MAX_CONFIG_DEPTH:
            raise _Refused(f"{what} is nested deeper than {MAX_CONFIG_DEPTH} levels")
        return count, height

    visit(root, 1)


def _check_values(raw) -> None:
    """:func:`_check_tree` over Python values (a mapping given directly, a checkpoint's)."""
    try:
        _check_tree(raw, _value_children, "the config")
    except _Refused as e:
        raise ConfigError(
            f"{e}; allowed: at most {MAX_CONFIG_VALUES} values, {MAX_CONFIG_DEPTH} levels "
            "deep, no cycles"
        ) from None


class _BoundedLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that refuses, while composing and before constructing anything, a
    document nested deeper than :data:`MAX_CONFIG_DEPTH` or whose aliases expand beyond
    :data:`MAX_CONFIG_VALUES` values (a "billion laughs")."""

    def __init__(self, stream) -> None:
        super().__init__(stream)
        self._depth = self._nodes = 0

    def compose_node(self, parent, index):
        # Checked before recursing (no RecursionError) and as nodes come (the pure-Python
        # parser takes ~30 us a node: a 1 MiB flat list would take seconds to compose).
        self._nodes += 1
        if self._depth >= MAX_CONFIG_DEPTH or self._nodes > MAX_CONFIG_VALUES:
            line = self.peek_event().start_mark.line + 1
            if self._depth >= MAX_CONFIG_DEPTH:
                why = f"is nested deeper than {MAX_CONFIG_DEPTH} levels"
            else:
                why = f"has more than {MAX_CONFIG_VALUES} values"
            raise _Refused(f"the document {why} (line {line})")
        self._depth += 1
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def compose_document(self):
        node = super().compose_document()
        _check_tree(node, _node_children, "the document")
        return node


def _load_yaml(text: str):
    return yaml.load(text, Loader=_BoundedLoader)  # a SafeLoader: builds plain values only


def read_yaml(path: str | os.PathLike) -> dict:
    """The mapping in the YAML file ``path``, refused beyond the bounds (module doc)."""
    p = Path(path)
    allowed = (
        f"allowed: a config of at most {MAX_CONFIG_BYTES >> 20} MiB, {MAX_CONFIG_DEPTH} levels "
        f"deep and {MAX_CONFIG_VALUES} values after alias expansion"
    )
    try:
        with open(p, "rb") as f:
            data = f.read(MAX_CONFIG_BYTES + 1)
    except OSError as e:
        raise ConfigError(f"{p}: cannot read the config ({e.strerror or e})") from None
    if len(data) > MAX_CONFIG_BYTES:
        raise ConfigError(
            f"{p}: refused: the file is larger than {MAX_CONFIG_BYTES} bytes; {allowed}"
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ConfigError(
            f"{p}: not UTF-8 text (byte {e.start}); allowed: a YAML config in UTF-8"
        ) from None
    try:
        raw = _load_yaml(text)
    except _Refused as e:
        raise ConfigError(f"{p}: refused: {e}; {allowed}") from None
    except yaml.YAMLError as e:
        raise ConfigError(f"{p}: not valid YAML ({e})") from None
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{p}: a config is a mapping with sections data, model, train")
    return raw


def load_config(
    source: str | os.PathLike | dict | Config,
    overrides: list[str] | None = None,
) -> Config:
    """A validated :class:`Config` from a YAML file, a mapping or a Config, plus ``overrides``."""
    if isinstance(source, Config):
        raw = source.to_dict()
    elif isinstance(source, dict):
        raw = source
    else:
        raw = read_yaml(source)
    return config_from_dict(apply_overrides(raw, overrides))


def precheck_config(source: str | os.PathLike | dict, overrides: list[str] | None = None) -> None:
    """Refuse what :func:`load_config` would refuse of ``source`` and ``overrides`` before
    it asks the model registry: the file's bounds (an alias bomb), unknown sections and keys,
    types, ranges, the size of a batch. It imports neither torch nor the models, so the
    command line calls it first and a config refused here costs milliseconds, not a torch
    import; :func:`load_config` then checks the rest (model name and options, samplers)."""
    raw = source if isinstance(source, dict) else read_yaml(source)
    _checked_sections(apply_overrides(raw, overrides))


def save_config(cfg: Config, path: str | os.PathLike) -> Path:
    """Write the resolved config (every key, defaults included) as YAML, atomically."""
    from .._core._atomic import write_text_atomic

    text = yaml.safe_dump(cfg.to_dict(), sort_keys=False, default_flow_style=None)
    return write_text_atomic(Path(path), text)
