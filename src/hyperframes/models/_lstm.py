"""CNN + LSTM: a per-frame 2D encoder, an LSTM over time, a classifier on its last state.

Layout ``temporal`` (B, T, C, H, W). Nothing depends on T, so a model trained on 8-frame
clips runs on 32-frame ones; :meth:`CNNLSTM.stream` carries the LSTM state from one chunk
to the next for unbounded (streaming) video. With ``mask`` the prediction is read at each
clip's last valid frame -- exact when padding sits at the end, since the LSTM is causal.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn
from typing_extensions import Unpack

from .._core._errors import ConfigError
from ._backbones import BACKBONES_2D, Backbone2D, backbone_pretrained_map
from ._base import ModelArgs, VideoModel, _check_int, check_mask, preset
from ._norm import check_norm, norm_layer
from ._registry import register_model

__all__ = ["CNNLSTM", "SmallEncoder"]

LSTMState = tuple[Tensor, Tensor]


class SmallEncoder(nn.Module):
    """Four stride-2 conv-BN-ReLU stages of widths w, 2w, 4w, 8w, then a global pool."""

    def __init__(self, base_width: int = 16, in_channels: int = 3, norm: str = "batch") -> None:
        super().__init__()
        _check_int("base_width", base_width)
        norm = check_norm(norm)
        layers: list[nn.Module] = []
        cin = in_channels
        for i in range(4):
            cout = base_width * 2**i
            layers += [
                nn.Conv2d(cin, cout, 3, stride=2, padding=1, bias=False),
                norm_layer(norm, cout, 2),
                nn.ReLU(inplace=True),
            ]
            cin = cout
        self.net = nn.Sequential(*layers)
        self.out_features = cin

    def forward(self, x: Tensor) -> Tensor:
        return self.net(x).mean((2, 3))


class CNNLSTM(VideoModel):
    """Per-frame encoder (``"small"`` or a torchvision 2D backbone), LSTM, linear head."""

    layout = "temporal"
    uses_mask = True

    def __init__(
        self,
        encoder: str = "small",
        base_width: int = 16,
        hidden_size: int = 128,
        num_layers: int = 1,
        dropout: float = 0.0,
        norm: str = "batch",
        **base: Unpack[ModelArgs],
    ) -> None:
        super().__init__(**base)
        _check_int("hidden_size", hidden_size)
        _check_int("num_layers", num_layers)
        if encoder != "small" and norm != "batch":
            raise ConfigError(
                f"norm {norm!r}: the {encoder} encoder keeps its BatchNorm (its pretrained "
                "weights); allowed: batch (norm group/layer: the small encoder, cnn_lstm)"
            )
        if encoder == "small":
            self.encoder: nn.Module = SmallEncoder(base_width, norm=norm)
        elif encoder in BACKBONES_2D:
            self.encoder = Backbone2D(encoder)
            for k, v in backbone_pretrained_map(encoder, "encoder.", head=None).items():
                setattr(self, k, v)
        else:
            raise ConfigError(
                f"unknown encoder {encoder!r}; expected 'small' or one of {BACKBONES_2D}"
            )
        self.lstm = nn.LSTM(
            self.encoder.out_features, hidden_size, num_layers=num_layers, batch_first=True
        )
        self.dropout = nn.Dropout(dropout)
        self.head = nn.Linear(hidden_size, self.num_classes)
        self.pretrained_optional = ("lstm.", "head.")

    def _encode(self, x: Tensor) -> Tensor:
        b, t = x.shape[:2]
        if isinstance(self.encoder, Backbone2D):
            feats = self.encoder(x.flatten(0, 1), self._ckpt)  # checkpoints its stages
        else:
            feats = self._ckpt(self.encoder, x.flatten(0, 1))
        return feats.reshape(b, t, -1)

    def forward(self, x: Tensor, mask: Tensor | None = None) -> Tensor:
        """``x``: (B, T, C, H, W), any T; ``mask`` (B, T) bool, True = real frame."""
        x = self._temporal(x)
        b, t = x.shape[:2]
        mask = check_mask(self, mask, b, t)
        out, _ = self.lstm(self._encode(x), None)
        if mask is None:
            last = out[:, -1]
        else:  # the output at each clip's last valid frame
            steps = torch.arange(t, device=x.device).expand(b, t)
            idx = torch.where(mask, steps, torch.zeros_like(steps)).amax(1)
            last = out[torch.arange(b, device=x.device), idx]
        return self.head(self.dropout(last))

    def stream(self, x: Tensor, state: LSTMState | None = None) -> tuple[Tensor, LSTMState]:
        """Feed a chunk (B, T, C, H, W); get (logits after its last frame, new state).

        Feeding a video chunk by chunk gives the same logits as one forward on all of it.
        """
        x = self._temporal(x)
        out, state = self.lstm(self._encode(x), state)
        return self.head(self.dropout(out[:, -1])), state


@register_model("cnn_lstm", layout="temporal", family="lstm")
@preset(CNNLSTM, encoder="small")
def cnn_lstm() -> None:
    """CNN + LSTM: a small 4-stage conv encoder per frame, LSTM over time (any T)."""


@register_model("lstm_resnet18", layout="temporal", family="lstm")
@preset(CNNLSTM, encoder="resnet18", omit=("base_width", "norm"), defaults={"hidden_size": 256})
def lstm_resnet18() -> None:
    """CNN + LSTM: ResNet-18 per frame (2D weights load), LSTM over time (any T)."""
