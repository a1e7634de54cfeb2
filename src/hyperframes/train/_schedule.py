"""Learning rate: linear scaling with the global batch, linear warmup, then cosine (or flat).

The rate is a pure function of the optimizer step, so nothing but the step needs saving to
resume it.
"""

from __future__ import annotations

import math

__all__ = ["lr_at", "scaled_lr"]


def scaled_lr(lr: float, global_batch: int, base_batch_size: int | None) -> float:
    """``lr * global_batch / base_batch_size`` (the linear scaling rule); ``lr`` when
    ``base_batch_size`` is None."""
    if base_batch_size is None:
        return float(lr)
    return float(lr) * global_batch / base_batch_size


def lr_at(
    step: int,
    total: int,
    *,
    peak: float,
    warmup: int = 0,
    schedule: str = "cosine",
    min_lr: float = 0.0,
) -> float:
    """The rate for optimizer step ``step`` (0-based) of ``total``.

    Warmup: ``peak * (step + 1) / warmup`` for the first ``warmup`` steps. Then ``cosine``
    decays from ``peak`` to ``min_lr`` over the remaining steps (``peak`` at the first one);
    ``constant`` stays at ``peak``.
    """
    if warmup > 0 and step < warmup:
        return peak * (step + 1) / warmup
    if schedule == "constant":
        return peak
    span = max(total - warmup, 1)
    progress = min(max((step - warmup) / span, 0.0), 1.0)
    return min_lr + (peak - min_lr) * 0.5 * (1.0 + math.cos(math.pi * progress))
