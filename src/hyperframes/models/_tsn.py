"""Late fusion (TSN): one shared 2D backbone per frame, per-frame scores, then a consensus.

Layout ``temporal`` (B, T, C, H, W). ``consensus="avg"`` averages the frame scores over the
valid frames of ``mask``; ``consensus="attention"`` weights them by a learned softmax over
time (padded frames get weight 0). Temporal order is not modelled: pick it for
appearance-driven tasks and as a strong cheap baseline.
"""

from __future__ import annotations

from typing import Literal, get_args

import torch
from torch import Tensor, nn
from typing_extensions import Unpack

from .._core._errors import ConfigError
from ._backbones import Backbone2D, backbone_pretrained_map
from ._base import ModelArgs, VideoModel, check_mask, masked_mean, old_order, preset
from ._registry import register_model

__all__ = ["TSN", "consensus"]

#: how the frame scores combine: their (masked) mean, or a learned softmax weighting
Consensus = Literal["avg", "attention"]
CONSENSUS: tuple[Consensus, ...] = get_args(Consensus)


def consensus(
    scores: Tensor, mask: Tensor | None, attention_logits: Tensor | None = None
) -> Tensor:
    """Fuse per-frame ``scores`` (B, T, K) over valid frames into (B, K).

    Without ``attention_logits`` (B, T): the mean; with them: a masked softmax over time.
    """
    if attention_logits is None:
        return masked_mean(scores, mask, dim=1)
    logits = attention_logits.float()
    if mask is not None:
        logits = logits.masked_fill(~mask, torch.finfo(logits.dtype).min)
    w = torch.softmax(logits, dim=1)
    if mask is not None:  # a clip with no valid frame fuses to zeros, not NaN
        w = w * mask.to(w.dtype)
        w = w / w.sum(1, keepdim=True).clamp_min(1e-12)
    return (scores * w.unsqueeze(-1).to(scores.dtype)).sum(1)


class TSN(VideoModel):
    """Temporal Segment Network over a torchvision 2D backbone."""

    layout = "temporal"
    uses_mask = True

    @old_order("num_classes", "frames", "consensus", "dropout", "checkpointing")
    def __init__(
        self,
        backbone: str,
        *,
        consensus: Consensus = "avg",
        dropout: float = 0.0,
        **base: Unpack[ModelArgs],
    ) -> None:
        super().__init__(**base)
        if consensus not in CONSENSUS:
            raise ConfigError(f"unknown consensus {consensus!r}; expected one of {CONSENSUS}")
        self.consensus = consensus
        self.backbone = Backbone2D(backbone)
        feat = self.backbone.out_features
        self.dropout = nn.Dropout(dropout)
        self.head = nn.Linear(feat, self.num_classes)
        self.attention = nn.Linear(feat, 1) if consensus == "attention" else None
        for k, v in backbone_pretrained_map(backbone, "backbone.", head="head.").items():
            setattr(self, k, v)
        self.pretrained_optional = ("head.", "attention.")

    def forward(self, x: Tensor, mask: Tensor | None = None) -> Tensor:
        """``x``: (B, T, C, H, W); ``mask``: (B, T) bool, True for real frames."""
        x = self._temporal(x)
        b, t = x.shape[:2]
        mask = check_mask(self, mask, b, t)
        feats = self.backbone(x.flatten(0, 1), self._ckpt).reshape(b, t, -1)
        scores = self.head(self.dropout(feats))
        att = self.attention(feats).squeeze(-1) if self.attention is not None else None
        return consensus(scores, mask, att)


@register_model("tsn_resnet18", layout="temporal", family="tsn")
@preset(TSN, backbone="resnet18")
def tsn_resnet18() -> None:
    """Late fusion: shared ResNet-18 per frame, average or attention consensus."""


@register_model("tsn_mobilenet_v3_small", layout="temporal", family="tsn")
@preset(TSN, backbone="mobilenet_v3_small")
def tsn_mobilenet_v3_small() -> None:
    """Late fusion: shared MobileNetV3-Small per frame, average or attention consensus."""
