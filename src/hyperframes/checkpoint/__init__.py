"""Checkpoints and what they rebuild: the model, its weights and its input contract.

Below both :mod:`hyperframes.train`, which writes checkpoints, and :mod:`hyperframes.infer`,
which serves them (the role of timm's ``PretrainedCfg``): a checkpoint is read and checked
(its config with the bounds of a config file) and turned into a model and an
:class:`~hyperframes._core._contract.InputContract` here, by one reader for both.
"""

from __future__ import annotations

from ._checkpoint import (
    PREVIOUS,
    get_rng_state,
    load_checkpoint,
    load_for_resume,
    load_weights,
    rebuild_model,
    save_checkpoint,
    set_rng_state,
)
from ._contract import model_takes_audio, resolve_contract

__all__ = [
    "PREVIOUS",
    "get_rng_state",
    "load_checkpoint",
    "load_for_resume",
    "load_weights",
    "model_takes_audio",
    "rebuild_model",
    "resolve_contract",
    "save_checkpoint",
    "set_rng_state",
]
