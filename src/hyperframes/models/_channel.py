"""Early fusion: the T frames stacked on the channel axis, through one 2D network.

Layout ``channel`` (B, C*T, H, W), frame-major. The backbone's first conv reads C*T
channels; it is initialised from the 3-channel conv repeated T times and divided by T
(:func:`inflate_conv2d`), so on a clip of T identical frames the network answers as the
2D network does on one frame. Cheapest family: one 2D forward per clip; temporal order is
only seen by the first layer.
"""

from __future__ import annotations

from typing import Any

import torch
import torchvision
from torch import Tensor, nn

from .._core._errors import ConfigError, DataError
from ._base import VideoModel, _shape, mobilenet_features, resnet_features
from ._registry import register_model
from ._weights import inflate_weight

__all__ = ["ChannelFusion", "inflate_conv2d"]

_TORCHVISION = {
    # name: (first conv path, classifier head prefix)
    "resnet18": ("conv1", "fc."),
    "resnet50": ("conv1", "fc."),
    "mobilenet_v3_small": ("features.0.0", "classifier.3."),
}


def inflate_conv2d(conv: nn.Conv2d, frames: int) -> nn.Conv2d:
    """A copy of ``conv`` reading ``frames`` stacked inputs: weight repeated T times / T."""
    if conv.groups != 1:
        raise ConfigError("only an ungrouped first conv can be inflated over frames")
    # torch types a Conv2d's kernel_size/stride/padding/dilation as tuple[int, ...]: they are pairs
    new = nn.Conv2d(
        conv.in_channels * frames,
        conv.out_channels,
        conv.kernel_size,  # type: ignore[arg-type]
        stride=conv.stride,  # type: ignore[arg-type]
        padding=conv.padding,  # type: ignore[arg-type]
        dilation=conv.dilation,  # type: ignore[arg-type]
        bias=conv.bias is not None,
        padding_mode=conv.padding_mode,
        device=conv.weight.device,
        dtype=conv.weight.dtype,
    )
    with torch.no_grad():
        new.weight.copy_(inflate_weight(conv.weight, frames))
        if conv.bias is not None:
            assert new.bias is not None  # made with bias=True above
            new.bias.copy_(conv.bias)
    return new


class ChannelFusion(VideoModel):
    """A 2D classifier whose first conv takes ``in_channels * frames`` channels."""

    layout = "channel"

    def __init__(
        self,
        backbone: str,
        num_classes: int,
        frames: int,
        in_channels: int = 3,
        checkpointing: bool = False,
        timm: bool = False,
        **timm_kwargs: Any,
    ) -> None:
        super().__init__(num_classes, frames, in_channels, checkpointing)
        self.backbone_name = backbone
        self.is_timm = timm
        if timm:
            import timm as timm_lib

            try:
                net = timm_lib.create_model(
                    backbone,
                    pretrained=False,
                    num_classes=num_classes,
                    in_chans=in_channels * frames,
                    **timm_kwargs,
                )
            except (RuntimeError, TypeError, ValueError) as e:
                raise ConfigError(f"timm cannot build backbone {backbone!r}: {e}") from e
            cfg = getattr(net, "pretrained_cfg", None) or getattr(net, "default_cfg", {})
            first = cfg.get("first_conv", "conv1")
            first = first[0] if isinstance(first, (list, tuple)) else first
            head = cfg.get("classifier", "fc")
            head = head[0] if isinstance(head, (list, tuple)) else head
            conv = net.get_submodule(first)
            assert isinstance(conv.weight, Tensor)  # a conv's weight (nn.Module types it loosely)
            with torch.no_grad():  # same start as an inflated 3-channel conv
                conv.weight.copy_(inflate_weight(conv.weight[:, :in_channels], frames))
            head_prefix = head + "."
        else:
            if backbone not in _TORCHVISION:
                raise ConfigError(
                    f"unknown channel-fusion backbone {backbone!r}; expected one of "
                    f"{', '.join(_TORCHVISION)} (or a timm name with channel_timm)"
                )
            first, head_prefix = _TORCHVISION[backbone]
            net = getattr(torchvision.models, backbone)(weights=None, num_classes=num_classes)
            conv = net.get_submodule(first)
            if in_channels != conv.in_channels:
                raise ConfigError(f"{backbone} takes 3-channel frames, not {in_channels}")
            parent, _, leaf = first.rpartition(".")
            setattr(
                net.get_submodule(parent) if parent else net, leaf, inflate_conv2d(conv, frames)
            )
        self.backbone = net
        self.checkpointing = checkpointing  # reaches timm's own switch now
        self.first_conv = first
        self.pretrained_prefix = "backbone."
        self.pretrained_inflate = (f"backbone.{first}.weight",)
        self.pretrained_optional = (f"backbone.{head_prefix}",)

    def _set_checkpointing(self, enabled: bool) -> None:
        net = getattr(self, "backbone", None)
        if (
            getattr(self, "is_timm", False)
            and net is not None
            and hasattr(net, "set_grad_checkpointing")
        ):
            net.set_grad_checkpointing(enabled)

    def forward(self, x: Tensor, mask: Tensor | None = None) -> Tensor:
        """``x``: (B, C*T, H, W). ``mask`` is ignored (pad clips by repeating frames)."""
        want = self.in_channels * self.frames
        if not isinstance(x, Tensor) or x.dim() != 4 or x.shape[1] != want:
            raise DataError(
                f"{self._who()} takes the channel layout (B, {self.in_channels}*{self.frames}="
                f"{want}, H, W); got {_shape(x)}"
            )
        net: Any = self.backbone  # heads are reached by name (fc / classifier)
        if self.is_timm:
            return net(x)
        if self.backbone_name.startswith("resnet"):
            return net.fc(resnet_features(net, x, self._ckpt))
        return net.classifier(mobilenet_features(net, x, self._ckpt))


@register_model("channel_resnet18", layout="channel", family="channel")
def channel_resnet18(num_classes: int, frames: int, checkpointing: bool = False) -> ChannelFusion:
    """Early fusion: torchvision ResNet-18 with a 3T-channel first conv."""
    return ChannelFusion("resnet18", num_classes, frames, checkpointing=checkpointing)


@register_model("channel_resnet50", layout="channel", family="channel")
def channel_resnet50(num_classes: int, frames: int, checkpointing: bool = False) -> ChannelFusion:
    """Early fusion: torchvision ResNet-50 with a 3T-channel first conv."""
    return ChannelFusion("resnet50", num_classes, frames, checkpointing=checkpointing)


@register_model("channel_mobilenet_v3_small", layout="channel", family="channel")
def channel_mobilenet_v3_small(
    num_classes: int, frames: int, checkpointing: bool = False
) -> ChannelFusion:
    """Early fusion: torchvision MobileNetV3-Small with a 3T-channel first conv."""
    return ChannelFusion("mobilenet_v3_small", num_classes, frames, checkpointing=checkpointing)


@register_model("channel_timm", layout="channel", family="channel", requires=("timm",))
def channel_timm(
    num_classes: int,
    frames: int,
    backbone: str = "resnet18",
    checkpointing: bool = False,
    **timm_kwargs: Any,
) -> ChannelFusion:
    """Early fusion: any timm 2D backbone built with in_chans=3*T (needs timm)."""
    return ChannelFusion(
        backbone, num_classes, frames, checkpointing=checkpointing, timm=True, **timm_kwargs
    )
