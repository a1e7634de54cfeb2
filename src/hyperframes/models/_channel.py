"""Early fusion: the T frames stacked on the channel axis, through one 2D network.

Layout ``channel`` (B, C*T, H, W), frame-major. The backbone's first conv reads C*T
channels; it is initialised from the 3-channel conv repeated T times and divided by T
(:func:`inflate_conv2d`), so on a clip of T identical frames the network answers as the
2D network does on one frame. Cheapest family: one 2D forward per clip; temporal order is
only seen by the first layer.

``extra_channels`` E: planes appended after the T*C frame channels (the dataset's optical
flow, 2*(T-1) planes with ``flow=True``; ``HyperframeDataset.in_channels`` is T*C + E). The
first conv then reads T*C + E channels; each extra plane starts with the mean of the colour
kernels divided by T (:func:`widen_conv2d`), as a grey frame would.

``dropout``: the probability of dropping a feature before the classifier (None: the
backbone's own: none for the ResNets, 0.2 for MobileNetV3, timm's default); 0 <= p < 1.
"""

from __future__ import annotations

from typing import Any

import torch
import torchvision
from torch import Tensor, nn

from .._core._errors import ConfigError, DataError
from ._base import VideoModel, _shape, mobilenet_features, preset, resnet_features
from ._registry import register_model
from ._weights import inflate_weight

__all__ = ["ChannelFusion", "inflate_conv2d", "widen_conv2d"]

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
    return conv_like(conv, conv.in_channels * frames, inflate_weight(conv.weight, frames))


def conv_like(conv: nn.Conv2d, in_channels: int, weight: Tensor) -> nn.Conv2d:
    """A Conv2d as ``conv`` (kernel, stride, padding, bias, device, dtype) reading
    ``in_channels`` planes, with ``weight`` and ``conv``'s bias."""
    # torch types a Conv2d's kernel_size/stride/padding/dilation as tuple[int, ...]: they are pairs
    new = nn.Conv2d(
        in_channels,
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
        new.weight.copy_(weight)
        if conv.bias is not None:
            assert new.bias is not None  # made with bias=True above
            new.bias.copy_(conv.bias)
    return new


def extra_weight(weight: Tensor, frames: int, extra: int) -> Tensor:
    """(O, extra, k, k): each extra plane's kernel, the mean of the 2D ``weight``'s input
    kernels divided by T."""
    return weight.mean(1, keepdim=True).repeat(1, extra, 1, 1) / frames


def widen_conv2d(conv: nn.Conv2d, source: Tensor, frames: int, extra: int) -> nn.Conv2d:
    """``conv`` (reading T*C channels) with ``extra`` more input planes after them, their
    kernels from the 2D weight ``source`` (:func:`extra_weight`)."""
    if extra == 0:
        return conv
    with torch.no_grad():
        weight = torch.cat([conv.weight, extra_weight(source, frames, extra)], 1)
    return conv_like(conv, conv.in_channels + extra, weight)


class ChannelFusion(VideoModel):
    """A 2D classifier whose first conv takes ``in_channels * frames + extra_channels``."""

    layout = "channel"
    fixed_frames = "its first convolution reads the T frames stacked as C*T input channels"

    def __init__(
        self,
        backbone: str,
        num_classes: int,
        frames: int,
        in_channels: int = 3,
        checkpointing: bool = False,
        timm: bool = False,
        extra_channels: int = 0,
        dropout: float | None = None,
        **timm_kwargs: Any,
    ) -> None:
        super().__init__(num_classes, frames, in_channels, checkpointing)
        if dropout is not None and (
            isinstance(dropout, bool)
            or not isinstance(dropout, (int, float))
            or not 0 <= dropout < 1
        ):
            raise ConfigError(
                f"dropout must be a number with 0 <= dropout < 1 (or null: the backbone's own), "
                f"got {dropout!r}"
            )
        if timm and dropout is not None:
            timm_kwargs = {**timm_kwargs, "drop_rate": float(dropout)}
        if isinstance(extra_channels, bool) or not isinstance(extra_channels, int):
            raise ConfigError(f"extra_channels must be an integer >= 0, got {extra_channels!r}")
        if extra_channels < 0:
            raise ConfigError(f"extra_channels must be an integer >= 0, got {extra_channels}")
        self.extra_channels = extra_channels
        self.backbone_name = backbone
        self.is_timm = timm
        if timm:
            import timm as timm_lib  # deferred: optional/heavy dependency

            try:
                net = timm_lib.create_model(
                    backbone,
                    pretrained=False,
                    num_classes=num_classes,
                    in_chans=in_channels * frames + extra_channels,
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
                two_d = conv.weight[:, :in_channels]
                start = inflate_weight(two_d, frames)
                if extra_channels:
                    start = torch.cat([start, extra_weight(two_d, frames, extra_channels)], 1)
                conv.weight.copy_(start)
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
            wide = widen_conv2d(inflate_conv2d(conv, frames), conv.weight, frames, extra_channels)
            setattr(net.get_submodule(parent) if parent else net, leaf, wide)
            if dropout is not None and not backbone.startswith("resnet"):
                head_drop = net.get_submodule("classifier.2")  # Linear, Hardswish, Dropout, Linear
                assert isinstance(head_drop, nn.Dropout)
                head_drop.p = float(dropout)
        #: the ResNets' dropout before ``fc`` (None: none); others keep theirs in place
        self.dropout = (
            nn.Dropout(float(dropout))
            if dropout and not timm and backbone.startswith("resnet")
            else None
        )
        self.backbone = net
        self.checkpointing = checkpointing  # reaches timm's own switch now
        self.first_conv = first
        self.pretrained_prefix = "backbone."
        self.pretrained_inflate = (f"backbone.{first}.weight",)
        self.pretrained_optional = (f"backbone.{head_prefix}",)

    @property
    def input_channels(self) -> int:
        """Channels of the input: ``in_channels * frames + extra_channels``."""
        return self.in_channels * self.frames + self.extra_channels

    def example_input(
        self, batch: int = 2, size: int = 64, *, generator: torch.Generator | None = None
    ) -> Tensor:
        x = super().example_input(batch, size, generator=generator)
        assert isinstance(x, Tensor)  # the channel layout
        if not self.extra_channels:
            return x
        extra = torch.randn(batch, self.extra_channels, size, size, generator=generator)
        return torch.cat([x, extra.to(x.device)], 1)

    def map_pretrained(self, state_dict):
        """As the base's; the first conv's 2D weight is inflated over the frames and widened
        by the extra planes."""
        out = super().map_pretrained(state_dict)
        key = f"backbone.{self.first_conv}.weight"
        w = out.get(key)
        if (
            self.extra_channels
            and w is not None
            and w.dim() == 4
            and w.shape[1] == self.in_channels
        ):
            out[key] = torch.cat(
                [inflate_weight(w, self.frames), extra_weight(w, self.frames, self.extra_channels)],
                1,
            )
        return out

    def _set_checkpointing(self, enabled: bool) -> None:
        net = getattr(self, "backbone", None)
        if (
            getattr(self, "is_timm", False)
            and net is not None
            and hasattr(net, "set_grad_checkpointing")
        ):
            net.set_grad_checkpointing(enabled)

    def forward(self, x: Tensor, mask: Tensor | None = None) -> Tensor:
        """``x``: (B, C*T [+ E], H, W). ``mask`` is ignored (pad clips by repeating frames)."""
        want = self.input_channels
        if not isinstance(x, Tensor) or x.dim() != 4 or x.shape[1] != want:
            extra = f" + {self.extra_channels} extra" if self.extra_channels else ""
            raise DataError(
                f"{self._who()} takes the channel layout (B, {self.in_channels}*{self.frames}"
                f"{extra}={want}, H, W); got {_shape(x)}"
            )
        net: Any = self.backbone  # heads are reached by name (fc / classifier)
        if self.is_timm:
            return net(x)
        if self.backbone_name.startswith("resnet"):
            feats = resnet_features(net, x, self._ckpt)
            return net.fc(feats if self.dropout is None else self.dropout(feats))
        return net.classifier(mobilenet_features(net, x, self._ckpt))


@register_model("channel_resnet18", layout="channel", family="channel")
@preset(ChannelFusion, backbone="resnet18", omit=("in_channels", "timm", "timm_kwargs"))
def channel_resnet18() -> None:
    """Early fusion: torchvision ResNet-18 with a 3T-channel first conv."""


@register_model("channel_resnet50", layout="channel", family="channel")
@preset(ChannelFusion, backbone="resnet50", omit=("in_channels", "timm", "timm_kwargs"))
def channel_resnet50() -> None:
    """Early fusion: torchvision ResNet-50 with a 3T-channel first conv."""


@register_model("channel_mobilenet_v3_small", layout="channel", family="channel")
@preset(ChannelFusion, backbone="mobilenet_v3_small", omit=("in_channels", "timm", "timm_kwargs"))
def channel_mobilenet_v3_small() -> None:
    """Early fusion: torchvision MobileNetV3-Small with a 3T-channel first conv."""


@register_model("channel_timm", layout="channel", family="channel", requires=("timm",))
@preset(ChannelFusion, timm=True, omit=("in_channels",), defaults={"backbone": "resnet18"})
def channel_timm() -> None:
    """Early fusion: any timm 2D backbone built with in_chans=3*T (needs timm)."""
