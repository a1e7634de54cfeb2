"""Learning rate: linear scaling with the global batch, linear warmup, then cosine (or flat).

The rate is a pure function of the optimizer step (and, for a run resumed with another
``train.epochs``, of where its schedule was re-planned: ``resumed_at``), so nothing but these
needs saving to resume it.

**Changing ``train.epochs`` on resume** changes ``total``. Planning the cosine afresh over the
new total would move the rate at once (a run at 1.3e-4 would jump back to 4.1e-4: a warm
restart, not a longer run), so the schedule is continued instead: from the step it resumes
at, ``s0``, where the old schedule gave ``r0``, the cosine decays from ``r0`` to ``min_lr``
over the steps left to the new total. ``resumed_at=(s0, r0)`` is saved with the run, so
later resumes follow the same curve. During warmup nothing needs continuing: the cosine has
not started, and simply spans the new total.
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
    resumed_at: tuple[int, float] | None = None,
) -> float:
    """The rate for optimizer step ``step`` (0-based) of ``total``.

    Warmup: ``peak * (step + 1) / warmup`` for the first ``warmup`` steps. Then ``cosine``
    decays from ``peak`` to ``min_lr`` over the remaining steps (``peak`` at the first one);
    ``constant`` stays at ``peak``. ``resumed_at=(s0, r0)``: from step ``s0`` on, the cosine
    decays from ``r0`` instead (module doc).
    """
    if warmup > 0 and step < warmup:
        return peak * (step + 1) / warmup
    if schedule == "constant":
        return peak
    start, rate = warmup, peak
    if resumed_at is not None and step >= resumed_at[0]:
        start, rate = int(resumed_at[0]), float(resumed_at[1])
    span = max(total - start, 1)
    progress = min(max((step - start) / span, 0.0), 1.0)
    return min_lr + (rate - min_lr) * 0.5 * (1.0 + math.cos(math.pi * progress))
