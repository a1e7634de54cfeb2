"""2D torchvision backbones shared by the per-frame families (TSN, TSM, CNN+LSTM).

Every torchvision model is built with ``weights=None``: nothing is ever downloaded;
pretrained weights come from a local file through ``create(..., pretrained=path)``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torchvision
from torch import Tensor, nn

from .._core._errors import ConfigError
from ._base import mobilenet_features, resnet_features

__all__ = ["BACKBONES_2D", "Backbone2D", "build_backbone_2d"]

BACKBONES_2D = ("resnet18", "resnet50", "mobilenet_v3_small")


class Backbone2D(nn.Module):
    """A torchvision 2D network without its classifier: (N, 3, H, W) -> (N, features)."""

    def __init__(self, name: str) -> None:
        super().__init__()
        if name not in BACKBONES_2D:
            raise ConfigError(
                f"unknown 2D backbone {name!r}; expected one of {', '.join(BACKBONES_2D)}"
            )
        self.name = name
        net = getattr(torchvision.models, name)(weights=None)
        if name.startswith("resnet"):
            self.out_features = net.fc.in_features
            net.fc = nn.Identity()
        else:
            self.out_features = net.classifier[0].in_features
            net.classifier = nn.Identity()
        self.net = net

    @property
    def is_resnet(self) -> bool:
        return self.name.startswith("resnet")

    def forward(self, x: Tensor, ckpt: Callable[..., Any] | None = None) -> Tensor:
        ckpt = ckpt or _call
        if self.is_resnet:
            return resnet_features(self.net, x, ckpt)
        return mobilenet_features(self.net, x, ckpt)


def _call(fn: Callable[..., Any], *args: Any) -> Any:
    return fn(*args)


def build_backbone_2d(name: str) -> Backbone2D:
    return Backbone2D(name)


def backbone_pretrained_map(name: str, prefix: str, head: str | None) -> dict[str, Any]:
    """Attributes mapping a torchvision 2D state dict into ``prefix + "net."`` keys.

    A ResNet's ``fc`` goes to ``head`` (kept when its shape fits, else left initialised);
    a MobileNet's two-layer classifier has no counterpart and is dropped.
    """
    if name.startswith("resnet") and head is not None:
        return {"pretrained_prefix": prefix + "net.", "pretrained_rename": (("fc.", head),)}
    drop = ("fc.",) if name.startswith("resnet") else ("classifier.",)
    return {"pretrained_prefix": prefix + "net.", "pretrained_drop": drop}
