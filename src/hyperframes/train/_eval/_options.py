""":func:`~hyperframes.train.evaluate`'s options beyond the views, one frozen, strict group.

``evaluate(checkpoint, store, split=..., clips=..., crops=..., device=..., out=...)`` takes
what most calls set by name; how the windows are read and what is said is
:class:`EvalOptions` (``settings=``, an instance or a mapping of its fields), as the
dataset's options are grouped (:mod:`hyperframes.data`). Each option may still be given on its
own as a keyword (``batch_size=4``, as ``evaluate`` always took it): it replaces that field of
the group; an unknown keyword is a :class:`ConfigError` with a "did you mean".
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import Field

from ..._core._validate import Options, resolve_groups

__all__ = ["EvalOptions", "eval_options"]


class EvalOptions(Options):
    """How :func:`~hyperframes.train.evaluate` reads windows and what it reports."""

    batch_size: int | None = Field(
        None, ge=1, description="windows per batch (None: the run's val_batch_size or batch_size)"
    )
    workers: int | None = Field(0, ge=0, description="loader workers (None: the default)")
    frames: int | None = Field(
        None, ge=1, description="windows of that T instead of the model's (models that take any T)"
    )
    classes_by_index: bool = Field(
        False, description="match the store's classes to the model's by number, not by name"
    )
    verbose: bool = Field(True, description="print the table and the notes")


def eval_options(
    settings: EvalOptions | Mapping[str, Any] | None,
    keywords: Mapping[str, Any],
    *,
    others: tuple[str, ...],
) -> EvalOptions:
    """The group from ``settings`` and the options given one by one."""
    got = resolve_groups({"settings": EvalOptions}, {"settings": settings}, keywords, others=others)
    out = got["settings"]
    assert isinstance(out, EvalOptions)
    return out
