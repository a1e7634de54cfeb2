"""Checkpoints and what they rebuild: the model, its weights and its input contract.

Below both :mod:`hyperframes.train`, which writes checkpoints, and :mod:`hyperframes.infer`,
which serves them (the role of timm's ``PretrainedCfg``): a checkpoint is read and checked
(its config with the bounds of a config file) and turned into a model and an
:class:`~hyperframes._core._contract.InputContract` here, by one reader for both.
"""

from __future__ import annotations

from ._checkpoint import PREVIOUS as PREVIOUS  # (train's, beside the bundle)
from ._checkpoint import get_rng_state as get_rng_state
from ._checkpoint import load_checkpoint, rebuild_model, save_checkpoint
from ._checkpoint import load_for_resume as load_for_resume
from ._checkpoint import load_weights as load_weights
from ._checkpoint import set_rng_state as set_rng_state
from ._contract import model_takes_audio as model_takes_audio
from ._contract import resolve_contract

__all__ = ["load_checkpoint", "rebuild_model", "resolve_contract", "save_checkpoint"]
