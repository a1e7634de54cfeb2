"""TSM: a 2D ResNet whose residual branches shift channels along time (Lin et al., 2019).

Inside every residual block, before its first conv, 1/``fold_div`` of the channels move one
frame back in time and another 1/``fold_div`` one frame forward, zero-padded at the clip
ends. The shift has no parameters: a TSM ResNet has exactly the parameters (and state dict
keys) of the plain ResNet, so 2D ImageNet weights load unchanged. 2D cost, temporal
modelling; a fine pick for long clips and (with a causal variant) streaming.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from typing_extensions import Unpack

from .._core._errors import ConfigError, DataError
from ._backbones import Backbone2D, backbone_pretrained_map
from ._base import ModelArgs, VideoModel, check_mask, masked_mean, old_order, preset
from ._registry import register_model

__all__ = ["TSM", "TemporalShiftConv2d", "temporal_shift"]


def temporal_shift(x: Tensor, frames: int, fold_div: int = 8) -> Tensor:
    """Shift channels of ``x`` (N*T, C, H, W) along time; zeros enter at the clip ends.

    Channels ``[0, C/fold_div)`` take the next frame's values, ``[C/fold_div, 2C/fold_div)``
    the previous frame's, the rest stay.
    """
    _, c, h, w = x.shape
    fold = c // fold_div
    x = x.reshape(-1, frames, c, h, w)
    back = F.pad(x[:, 1:, :fold], (0, 0, 0, 0, 0, 0, 0, 1))  # frame t <- t+1
    fwd = F.pad(x[:, :-1, fold : 2 * fold], (0, 0, 0, 0, 0, 0, 1, 0))  # frame t <- t-1
    out = torch.cat([back, fwd, x[:, :, 2 * fold :]], dim=2)
    return out.reshape(-1, c, h, w)


class TemporalShiftConv2d(nn.Conv2d):
    """A Conv2d that temporally shifts its input first; same parameters and keys."""

    def __init__(self, conv: nn.Conv2d, frames: int, fold_div: int = 8) -> None:
        # torch types a Conv2d's kernel_size/stride/padding/dilation as tuple[int, ...]: pairs
        super().__init__(
            conv.in_channels,
            conv.out_channels,
            conv.kernel_size,  # type: ignore[arg-type]
            stride=conv.stride,  # type: ignore[arg-type]
            padding=conv.padding,  # type: ignore[arg-type]
            dilation=conv.dilation,  # type: ignore[arg-type]
            groups=conv.groups,
            bias=conv.bias is not None,
            padding_mode=conv.padding_mode,
            device="meta",
        )
        self.weight = conv.weight  # share the original parameters, no copy
        self.bias = conv.bias
        self.frames = frames
        self.fold_div = fold_div

    def forward(self, x: Tensor) -> Tensor:
        return super().forward(temporal_shift(x, self.frames, self.fold_div))

    def extra_repr(self) -> str:
        return super().extra_repr() + f", frames={self.frames}, fold_div={self.fold_div}"


class TSM(VideoModel):
    """Temporal Shift Module ResNet, per-frame scores averaged over valid frames."""

    layout = "temporal"
    uses_mask = True
    fixed_frames = "its temporal shift is built for the T frames it was trained on"

    @old_order("num_classes", "frames", "fold_div", "dropout", "checkpointing")
    def __init__(
        self,
        backbone: str,
        *,
        fold_div: int = 8,
        dropout: float = 0.0,
        **base: Unpack[ModelArgs],
    ) -> None:
        super().__init__(**base)
        if not backbone.startswith("resnet"):
            raise ConfigError(f"TSM shifts inside ResNet blocks; got backbone {backbone!r}")
        if isinstance(fold_div, bool) or not isinstance(fold_div, int) or fold_div < 2:
            raise ConfigError(f"fold_div must be an integer >= 2, got {fold_div!r}")
        self.fold_div = fold_div
        self.backbone = Backbone2D(backbone)
        net = self.backbone.net
        for layer in (net.layer1, net.layer2, net.layer3, net.layer4):
            for block in layer:
                block.conv1 = TemporalShiftConv2d(block.conv1, self.frames, fold_div)
        self.dropout = nn.Dropout(dropout)
        self.head = nn.Linear(self.backbone.out_features, self.num_classes)
        for k, v in backbone_pretrained_map(backbone, "backbone.", head="head.").items():
            setattr(self, k, v)
        self.pretrained_optional = ("head.",)

    def forward(self, x: Tensor, mask: Tensor | None = None) -> Tensor:
        """``x``: (B, T, C, H, W) with T = ``frames`` (the shift is built for it).

        ``mask`` restricts the final average to valid frames; the shift itself still mixes
        neighbouring padded frames in, so pad with zeros or repeated frames.
        """
        x = self._temporal(x)
        b, t = x.shape[:2]
        if t != self.frames:
            raise DataError(f"{self._who()} was built for T={self.frames} frames, got T={t}")
        mask = check_mask(self, mask, b, t)
        feats = self.backbone(x.flatten(0, 1), self._ckpt).reshape(b, t, -1)
        return masked_mean(self.head(self.dropout(feats)), mask, dim=1)


@register_model("tsm_resnet18", layout="temporal", family="tsm")
@preset(TSM, backbone="resnet18")
def tsm_resnet18() -> None:
    """TSM: ResNet-18 with residual temporal shift (1/8 channels each way)."""


@register_model("tsm_resnet50", layout="temporal", family="tsm")
@preset(TSM, backbone="resnet50")
def tsm_resnet50() -> None:
    """TSM: ResNet-50 with residual temporal shift (1/8 channels each way)."""
