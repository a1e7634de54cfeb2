"""A config loaded whole: its sections (:mod:`._config`, no torch), then what needs the model,
sampler and task registries (:mod:`._checks`), then its paths made absolute.

The command line calls :func:`~._config.precheck_config` first (a refused config costs no torch
import) and :func:`load_config` after it; a library user calls :func:`load_config` alone.
"""

from __future__ import annotations

import os

from ...store import open_store
from ._checks import cross_checks, resolve_paths
from ._config import Config, apply_overrides, checked_sections, read_yaml
from ._data import make_dataset
from ._splits import resolve_split

__all__ = ["config_dataset", "config_from_dict", "load_config"]


def config_from_dict(raw: dict, *, base: str | os.PathLike | None = None) -> Config:
    """Validate a raw mapping into a :class:`Config` (see the module docstring)."""
    cfg = checked_sections(raw)
    cross_checks(cfg)
    resolve_paths(cfg, base)
    return cfg


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


def config_dataset(config, store) -> tuple:
    """``(dataset, what)``: the training dataset of ``config`` (a YAML path, a mapping or a
    :class:`Config`) over ``store`` (epoch 0: its sampler and training augmentation), and a
    line saying what it is (the store report's sampler preview shows its windows)."""

    cfg = config if isinstance(config, Config) else load_config(config)
    if isinstance(store, (str, os.PathLike)):
        store = open_store(store)
    ids, _ = resolve_split(store, cfg.data.train_split, cfg.data, role="train")
    name = config if isinstance(config, (str, os.PathLike)) else "(given)"
    what = (
        f"config {name}: the training dataset ({cfg.data.sampler} sampler, "
        f"{cfg.data.frames} frames, the training augmentation), epoch 0"
    )
    return make_dataset(cfg, store, ids, train=True), what
