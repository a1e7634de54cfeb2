"""Per-frame feature reuse: split a model into "per-frame features" and "head over a sequence".

With overlapping windows (stride S < T) a naive predictor runs every frame through the model
T/S times. Where the costly part of a model runs on each frame on its own, the split lets
the predictor compute it once per frame and run only the head per window; the result is
the model's own forward (same operations on the same values, up to float rounding).

Splits found by introspection (no change to the models; a subclass that overrides
``forward`` is not split, since its forward may differ):

* **TSN** (late fusion): features = the 2D backbone's pooled vector; head = classifier +
  consensus (average or attention).
* **CNN+LSTM**: features = the per-frame encoder; head = the LSTM over the window (run
  from a zero state per window, as ``forward`` does) + classifier.
* **TSM**: only the *stem* (conv1, bn, relu, maxpool: before the first shift) is reused.
  Every residual block shifts channels one frame back *and* forward within the window,
  zero-padded at the window's ends, so a frame's deeper features depend on where it sits
  in the window; no split past the stem reproduces ``forward``. A causal shift would not
  fix it either: the first frames of each window would still see zeros where the stream
  has real frames (an online TSM with carried shift buffers is a different model).

Other families mix frames from their first layer on (channel fusion's 3T-channel conv,
3D convs, the transformer's joint attention, the keyframe aggregator's 3D conv), so there
is nothing per frame worth reusing. A model may opt in by defining
``frame_features(x (N, C, H, W)) -> (N, ...)`` and ``sequence_head(f (B, T, ...)) -> logits``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from ..models import CNNLSTM, TSM, TSN, consensus

__all__ = ["FrameSplit", "split_model"]


@dataclass(frozen=True)
class FrameSplit:
    """``frames``: (N, C, H, W) -> (N, ...) per-frame features; ``head``: (B, T, ...) -> logits.

    ``part`` names what is reused (``"backbone"``, ``"encoder"``, ``"stem"``, ``"model"``).
    """

    frames: Callable[[Tensor], Tensor]
    head: Callable[[Tensor], Tensor]
    part: str

    def forward(self, x: Tensor) -> Tensor:
        """The whole model on a temporal batch (B, T, C, H, W), through the split."""
        b, t = x.shape[:2]
        feats = self.frames(x.flatten(0, 1))
        return self.head(feats.reshape(b, t, *feats.shape[1:]))


def _tsn(model) -> FrameSplit:
    def head(f: Tensor) -> Tensor:
        scores = model.head(model.dropout(f))
        att = model.attention(f).squeeze(-1) if model.attention is not None else None
        return consensus(scores, None, att)

    return FrameSplit(lambda x: model.backbone(x), head, "backbone")


def _lstm(model) -> FrameSplit:
    def head(f: Tensor) -> Tensor:
        out, _ = model.lstm(f, None)
        return model.head(model.dropout(out[:, -1]))

    return FrameSplit(lambda x: model.encoder(x), head, "encoder")


def _tsm(model) -> FrameSplit:
    net = model.backbone.net

    def stem(x: Tensor) -> Tensor:
        return net.maxpool(net.relu(net.bn1(net.conv1(x))))

    def head(f: Tensor) -> Tensor:
        b, t = f.shape[:2]
        x = f.flatten(0, 1)
        for layer in (net.layer1, net.layer2, net.layer3, net.layer4):
            x = layer(x)
        feats = torch.flatten(net.avgpool(x), 1).reshape(b, t, -1)
        return model.head(model.dropout(feats)).mean(1)

    return FrameSplit(stem, head, "stem")


def _known() -> list[tuple[type[nn.Module], Callable[[nn.Module], FrameSplit]]]:
    return [(TSN, _tsn), (CNNLSTM, _lstm), (TSM, _tsm)]


def split_model(model: nn.Module) -> FrameSplit | None:
    """The :class:`FrameSplit` of ``model``, or None if its frames cannot be processed alone."""
    ff, sh = getattr(model, "frame_features", None), getattr(model, "sequence_head", None)
    if callable(ff) and callable(sh):
        return FrameSplit(ff, sh, "model")
    for cls, make in _known():
        # exact class, or a subclass that keeps the forward the split mirrors
        if isinstance(model, cls) and type(model).forward is cls.forward:
            return make(model)
    return None
