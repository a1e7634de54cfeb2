"""The normalisation layer of the small CNN families (``model.norm``).

``batch`` (the default) is BatchNorm: its running statistics are those of the clips it was
trained on, so a model evaluated at another T sees features normalised for the old one (seed
001 section 6.4; ``hyperframes recalibrate`` re-estimates them at the new T). ``group`` (32
groups, fewer when the width does not divide) and ``layer`` (one group: every channel and
place of a sample together) normalise each clip by its own statistics, whatever T is.
"""

from __future__ import annotations

import math

from torch import nn

from .._core._errors import ConfigError

__all__ = ["NORMS", "check_norm", "norm_layer", "replace_batch_norm"]

NORMS = ("batch", "group", "layer")


def check_norm(norm: object) -> str:
    """``norm`` if it is one of :data:`NORMS`; :class:`ConfigError` otherwise."""
    if norm not in NORMS:
        raise ConfigError(f"norm {norm!r:.40}: allowed: {', '.join(NORMS)}")
    return str(norm)


def norm_layer(norm: str, channels: int, dims: int) -> nn.Module:
    """A ``norm`` layer over ``channels`` for 2D (``dims=2``) or 3D (``dims=3``) feature maps."""
    if norm == "batch":
        return nn.BatchNorm2d(channels) if dims == 2 else nn.BatchNorm3d(channels)
    if norm == "group":
        return nn.GroupNorm(math.gcd(32, channels), channels)
    if norm == "layer":
        return nn.GroupNorm(1, channels)
    raise ConfigError(f"norm {norm!r:.40}: allowed: {', '.join(NORMS)}")


def replace_batch_norm(module: nn.Module, norm: str) -> nn.Module:
    """``module`` with every BatchNorm layer in it replaced by a ``norm`` layer over the same
    channels (in place; ``batch`` leaves it as it is): for a network built with BatchNorm
    (torchvision's 3D CNNs) that should normalise each clip by its own statistics."""
    norm = check_norm(norm)
    if norm == "batch":
        return module
    for name, child in list(module.named_children()):
        if isinstance(child, nn.modules.batchnorm._BatchNorm):
            setattr(module, name, norm_layer(norm, child.num_features, 2))
        else:
            replace_batch_norm(child, norm)
    return module
