"""The config checks that need more than one section: the model, the samplers, the tracks.

:func:`cross_checks` runs after every section validated on its own
(:mod:`~hyperframes._core._config_models`). It asks the model registry for the model (its options are checked
there, once: :meth:`~hyperframes.models.ModelSpec.check_options`), builds the samplers to check
their options, and refuses combinations the training would not honour (a crop on
segmentation masks, mixup on an audio-visual model, a memory budget for a store read from
disk, ...), each a :class:`ConfigError` naming the keys and what is allowed.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..._core._config_models import Config
from ..._core._config_values import check_clips
from ..._core._errors import ConfigError
from ..._core._tasks import task_traits
from ..._core._urls import is_url
from ...checkpoint import model_takes_audio
from ...data import resolve_audio
from ...models import check_model_size, get_spec, list_models
from ...sampling import create_sampler
from .._tasks import get_task, list_tasks
from ._data import train_transform
from ._frame_config import check_frame_config
from ._frames import check_frame_choices, pad_refusal

__all__ = ["cross_checks", "resolve_paths"]


def _check_tracks(cfg: Config, spec) -> None:
    """data.audio / data.flow / data.register against the model."""
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
        try:
            resolve_audio(dict(d.audio_options))
        except ConfigError as e:
            raise ConfigError(f"data.audio_options: {e}") from None


def _check_norm(cfg: Config, spec) -> None:
    if cfg.model.norm is not None and "norm" not in spec.options():
        having = [n for n in list_models() if "norm" in get_spec(n).options()]
        raise ConfigError(
            f"model.norm: model {cfg.model.name!r} has no norm choice; the models with one: "
            f"{', '.join(having)} (allowed for this model: null)"
        )
    if cfg.model.norm is not None and "norm" in cfg.model.options:
        raise ConfigError("model.options.norm: give model.norm, not both")


def cross_checks(cfg: Config) -> None:
    """What the sections cannot check alone (module doc); ConfigError naming the keys."""
    try:
        spec = get_spec(cfg.model.name)
    except ConfigError as e:
        raise ConfigError(f"model.name: {e}") from None
    spec.check_options(cfg.model.options, where="model.options")
    if cfg.data.layout not in ("auto", spec.layout):
        raise ConfigError(
            f"data.layout: {cfg.data.layout!r} does not fit model {cfg.model.name!r}, which "
            f"takes the {spec.layout!r} layout; allowed: auto, {spec.layout}"
        )
    _check_samplers(cfg)
    if cfg.train.task is not None:
        _check_task(cfg, spec)
    _check_tracks(cfg, spec)
    _check_norm(cfg, spec)
    pad_refusal(cfg, spec)
    check_frame_choices(cfg, spec)
    check_frame_config(cfg, spec)  # odd T, whole frames, no label options
    if spec.task in list_tasks():  # the model's task: what its targets follow (masks, boxes)
        get_task(spec.task).check_config(cfg)
    _check_memory(cfg)
    _check_recipe(cfg, spec)
    if cfg.train.min_lr > cfg.train.lr:
        raise ConfigError(
            f"train.min_lr: {cfg.train.min_lr} is above train.lr={cfg.train.lr}; allowed: "
            f"0 <= min_lr <= lr"
        )
    _check_augmentation(cfg)
    if cfg.model.options:  # sizes by value, built on meta (the defaults are known to be sound);
        # last, so that what the data and task sections ask is named first
        check_model_size(
            spec.name,
            num_classes=cfg.model.num_classes or 2,
            frames=cfg.data.frames,
            options=cfg.model.options,
            where="model.options",
        )


def _check_samplers(cfg: Config) -> None:
    """``data.sampler`` / ``data.val_sampler`` build with their options, and the training
    sampler draws ``data.repeats`` / ``data.clips_per_video`` windows of a video."""
    for key, name, opts in (
        ("data.sampler", cfg.data.sampler, cfg.data.sampler_options),
        ("data.val_sampler", cfg.data.val_sampler, cfg.data.val_sampler_options),
    ):
        check_clips(f"{key}_options", opts)
        try:
            sampler = create_sampler(name, frames=cfg.data.frames, **opts)
        except ConfigError as e:
            raise ConfigError(f"{key}: {e}") from None
        except TypeError as e:
            raise ConfigError(f"{key}_options: {e}") from None
        if key != "data.sampler":
            continue
        if cfg.data.repeats > 1:
            _check_repeats(cfg, sampler, name)
        clips = cfg.data.clips_per_video
        if isinstance(clips, int) and clips > 1:
            try:
                sampler.with_clips_per_video(clips)
            except ConfigError as e:
                raise ConfigError(f"data.clips_per_video: {e} (data.sampler: {name})") from None


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


def _check_augmentation(cfg: Config) -> None:
    """The augmentation builds: its ranges are ranges, RandomAffine accepts ``affine``."""

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
    try:
        train_transform(aug)
    except ConfigError as e:
        raise ConfigError(f"data.augmentation: {e}") from None
    except TypeError as e:
        raise ConfigError(
            f"data.augmentation.affine: {e}; allowed keys: degrees, translate, scale, shear, fill"
        ) from None


def _check_task(cfg: Config, spec) -> None:
    """``train.task``: a registered task that the model's outputs fit (a classification
    model's logits serve ``multilabel`` too), with only the options it honours."""
    name = cfg.train.task
    if name not in list_tasks():
        raise ConfigError(
            f"train.task: unknown task {name!r}; allowed: null (the model's task, {spec.task}) "
            f"or one of {', '.join(list_tasks())}"
        )
    served_by = task_traits(name).model_task or name
    if spec.task != served_by:
        fits = [t for t in list_tasks() if (task_traits(t).model_task or t) == spec.task]
        # the models whose outputs serve this task (a classification model's serve multilabel)
        models = list_models(task=served_by)
        given = "" if "name" in cfg.model.model_fields_set else " (model.name not set: the default)"
        raise ConfigError(
            f"train.task: {name!r} does not fit model {cfg.model.name!r}{given}, whose outputs "
            f"are for {spec.task}; allowed: null or {', '.join(fits)}; the "
            f"models for {name}: {', '.join(models) or 'none registered'} (set model.name)"
        )
    supports = get_task(name).supports
    for key in ("label_smoothing", "mixup", "cutmix"):
        value = getattr(cfg.train, key)
        if value and key not in supports:
            raise ConfigError(
                f"train.{key}: {value} but train.task {name} does not use it; allowed: 0"
            )
    traits = task_traits(name)
    if cfg.train.balanced and (traits.multi_label or not traits.classes):
        raise ConfigError(
            "train.balanced: class-balanced sampling draws items by their one class; allowed "
            f"with train.task {name}: false"
        )


def resolve_paths(cfg: Config, base) -> None:
    """``data.store``, ``data.cache_dir`` and ``model.pretrained`` made absolute (from ``base``
    or the current directory); a store at a URL is kept as it is."""
    root = Path(base) if base is not None else Path.cwd()
    if not cfg.data.store:
        raise ConfigError("data.store: a store path is required; allowed: a non-empty path")
    if not is_url(cfg.data.store):
        cfg.data.store = str((root / os.path.expanduser(cfg.data.store)).absolute())
    if cfg.data.cache_dir:
        cfg.data.cache_dir = str((root / os.path.expanduser(cfg.data.cache_dir)).absolute())
    if cfg.model.pretrained:
        cfg.model.pretrained = str((root / os.path.expanduser(cfg.model.pretrained)).absolute())
