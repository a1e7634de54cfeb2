"""Mixup and CutMix on a batch in any layout (H and W are the last two axes), with soft targets.

Randomness comes from ``numpy.random.default_rng([seed, rank, step])``: the same run mixes the
same way, resumed or not. With both enabled, each batch uses one of them, chosen at random.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

__all__ = ["mix_batch", "soft_cross_entropy", "soft_targets"]


def soft_targets(labels: torch.Tensor, num_classes: int, smoothing: float = 0.0) -> torch.Tensor:
    """One-hot (B, C) float targets with label smoothing: ``1 - s + s/C`` on the label."""
    y = F.one_hot(labels, num_classes).float()
    return y * (1.0 - smoothing) + smoothing / num_classes


def soft_cross_entropy(
    logits: torch.Tensor, target: torch.Tensor, weight: torch.Tensor | None = None
) -> torch.Tensor:
    """Cross-entropy against soft targets (B, C), optionally weighted per class."""
    if weight is not None:
        target = target * weight
    return -(target * F.log_softmax(logits.float(), dim=1)).sum(dim=1).mean()


def _box(h: int, w: int, lam: float, rng: np.random.Generator) -> tuple[int, int, int, int]:
    cut = np.sqrt(1.0 - lam)
    ch, cw = int(h * cut), int(w * cut)
    cy, cx = int(rng.integers(h)), int(rng.integers(w))
    y0, y1 = np.clip(cy - ch // 2, 0, h), np.clip(cy + ch // 2, 0, h)
    x0, x1 = np.clip(cx - cw // 2, 0, w), np.clip(cx + cw // 2, 0, w)
    return int(y0), int(y1), int(x0), int(x1)


def mix_batch(
    x: torch.Tensor,
    labels: torch.Tensor,
    num_classes: int,
    *,
    mixup: float,
    cutmix: float,
    smoothing: float,
    seed: int,
    rank: int,
    step: int,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(mixed x, soft targets (B, C))``; no mixing when both alphas are 0."""
    target = soft_targets(labels, num_classes, smoothing)
    if mixup <= 0 and cutmix <= 0:
        return x, target
    rng = np.random.default_rng([seed, rank, step])
    use_cutmix = cutmix > 0 and (mixup <= 0 or rng.random() < 0.5)
    alpha = cutmix if use_cutmix else mixup
    lam = float(rng.beta(alpha, alpha))
    perm = torch.from_numpy(rng.permutation(x.shape[0])).to(x.device)
    if use_cutmix:
        h, w = x.shape[-2:]
        y0, y1, x0, x1 = _box(h, w, lam, rng)
        x = x.clone()
        x[..., y0:y1, x0:x1] = x[perm][..., y0:y1, x0:x1]
        lam = 1.0 - (y1 - y0) * (x1 - x0) / float(h * w)
    else:
        x = lam * x + (1.0 - lam) * x[perm]
    return x, lam * target + (1.0 - lam) * target[perm]
