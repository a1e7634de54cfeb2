"""The training configuration: validation on load, ``--set`` overrides, the saved form.

A config is a YAML (or dict) with three sections, ``data``, ``model`` and ``train``, and an
optional ``eval``; every key has a default except ``data.store``. Loading validates every
value: an unknown key, a wrong type or a value out of range is a :class:`ConfigError` that
names the key (``train.lr``), the value and what is allowed::

    cfg = load_config("configs/demo.yaml", overrides=["train.lr=0.1", "data.frames=4"])
    save_config(cfg, run_dir / "config.yaml")        # the resolved config, defaults filled in

The sections are declared once, as strict pydantic models (:mod:`~hyperframes._core._config_models`); what
needs the model registry or several sections is checked in :mod:`._checks` (and
:func:`~._load.load_config` runs them all) (the
model's options by the registry itself); the file is read by the bounded loader of
:mod:`~hyperframes._core._yaml`. Paths (``data.store``, ``model.pretrained``) are taken relative to the current
directory and saved resolved (absolute).

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

import os
from collections.abc import Mapping
from pathlib import Path

import yaml
from pydantic import BaseModel

from ..._core._atomic import write_text_atomic
from ..._core._config_models import AUTO_STEPS, MAX_CLIPS, Config
from ..._core._config_values import (
    MAX_BATCH_BYTES,
    SECTIONS,
    _batch_sizes,
    _check_batch_bytes,
    _section_model,
    check_config_values,
    split_frame_list,
)
from ..._core._errors import ConfigError
from ..._core._validate import did_you_mean, show, validate
from ..._core._yaml import (
    MAX_CONFIG_BYTES,
    MAX_CONFIG_DEPTH,
    MAX_CONFIG_VALUES,
    Refused,
    check_value_tree,
    load_yaml_text,
    read_yaml,
)

__all__ = [
    "AUTO_STEPS",
    "MAX_BATCH_BYTES",
    "MAX_CLIPS",
    "MAX_CONFIG_BYTES",
    "MAX_CONFIG_DEPTH",
    "MAX_CONFIG_VALUES",
    "Config",
    "apply_overrides",
    "check_config_values",
    "checked_sections",
    "config_defaults",
    "precheck_config",
    "read_yaml",
    "save_config",
]


def checked_sections(raw: dict) -> Config:
    """The checks of :func:`config_from_dict` that need neither the model registry nor
    torch: bounds, sections, keys, types, ranges, the size of a batch."""
    if not isinstance(raw, Mapping):
        raise ConfigError(
            "a config is a mapping with sections data, model, train (and eval), got " + show(raw)
        )
    check_value_tree(raw)
    raw = split_frame_list(raw)  # data.frames: [8, 16]
    for name in raw:
        if name not in SECTIONS:
            raise ConfigError(
                f"unknown config section {name!r}{did_you_mean(name, SECTIONS)} (allowed "
                f"sections: {', '.join(SECTIONS)})"
            )
    if "data" not in raw:
        raise ConfigError("the config needs a data section with at least data.store")
    cfg = validate(Config, _as_lists(raw, Config))
    size = cfg.data.augmentation.size
    _check_batch_bytes(
        cfg.data.frames,
        _batch_sizes(cfg.data),
        (size, size, "data.augmentation.size") if size else None,
    )
    return cfg


def _as_lists(raw, model: type[BaseModel]):
    """``raw`` as the models read it: a null section is an empty one (its defaults) and a
    tuple given in a mapping is the list it stands for."""
    if not isinstance(raw, Mapping):
        return raw
    out = dict(raw)
    for name in model.model_fields:
        if name not in out:
            continue
        sub = _section_model(model, name)
        if sub is not None:
            out[name] = {} if out[name] is None else _as_lists(out[name], sub)
        elif isinstance(out[name], tuple):
            out[name] = list(out[name])
    return out


def config_defaults() -> dict[str, object]:
    """``section.key``: the default of every plain key that has one (not the sub-sections
    nor the option mappings), as a config written before the key existed reads it."""
    out: dict[str, object] = {}
    for section in SECTIONS:
        model = _section_model(Config, section)
        assert model is not None
        for name, f in model.model_fields.items():
            if f.is_required() or _section_model(model, name) is not None:
                continue
            value = f.get_default(call_default_factory=True)
            if f.default_factory is None or isinstance(value, list):
                out[f"{section}.{name}"] = value
    return out


# --------------------------------------------------------------------------- overrides, files


def apply_overrides(raw: dict, overrides: list[str] | None) -> dict:
    """Apply ``key.path=value`` strings to a raw config mapping (values parsed as YAML).

    ``train.lr=0.1``, ``data.sampler_options.stride=2``, ``model.options={width: 8}``. The
    result is validated by :func:`config_from_dict`, so a misspelt key is reported there.
    """
    check_value_tree(raw)
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
            value = load_yaml_text(text) if text.strip() else None
        except Refused as e:
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


def precheck_config(source: str | os.PathLike | dict, overrides: list[str] | None = None) -> None:
    """Refuse what :func:`load_config` would refuse of ``source`` and ``overrides`` before
    it asks the model registry: the file's bounds (an alias bomb), unknown sections and keys,
    types, ranges, the size of a batch. It imports neither torch nor the models, so the
    command line calls it first and a config refused here costs milliseconds, not a torch
    import; :func:`load_config` then checks the rest (model name and options, samplers)."""
    raw = source if isinstance(source, dict) else read_yaml(source)
    checked_sections(apply_overrides(raw, overrides))


def save_config(cfg: Config, path: str | os.PathLike) -> Path:
    """Write the resolved config (every key, defaults included) as YAML, atomically."""
    text = yaml.safe_dump(cfg.to_dict(), sort_keys=False, default_flow_style=None)
    return write_text_atomic(Path(path), text)
