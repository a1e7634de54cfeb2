"""Keyframe + aggregator, for dense prediction (segmentation) of the key frame.

Layout ``keyframe``: ``Keyframes(key=K_t (B, 3, H, W), context=(B, T, 3, H, W))``.

* **G**, the aggregator (:class:`Aggregator`): a shallow 3D conv over the context frames,
  a mean over (valid) time, then 2D convs -- turns the clip into a feature map H_t
  (B, hidden_channels, H, W) aligned with K_t, at full resolution. ``hidden_channels`` is
  H_t's width. ``norm`` (``batch``, ``group``, ``layer``): G's normalisation; its 3D conv's
  BatchNorm pools statistics over T, so a model run at another T than it was trained at is
  better served by ``group`` or ``layer``, which normalise each clip by its own.
* ``attention=True``: a squeeze-and-excitation gate over H_t's channels (seed 004 section
  4.2; :class:`ChannelGate`): each channel scaled by a weight in (0, 1) computed from the
  channels' means, so F is handed the channels that matter for this clip.
* The hyperframe: ``concat[K_t, H_t]`` (``fusion="concat"``), or for deployment
  ``K_t + conv1x1(H_t)`` (``fusion="add"``), which keeps F a plain 3-channel network; its
  1x1 conv starts at zero, so an untrained G leaves K_t untouched.
* **F**, a small UNet (:class:`UNet`) giving (B, num_classes, H, W).

Training aid: a 1x1 head on H_t predicts the frame difference K_t - K_{t-1}
(:meth:`KeyframeSegmenter.forward_with_aux`, :meth:`~KeyframeSegmenter.aux_loss`), weighted
by :func:`aux_weight`, which decays to zero by the end of training::

    logits, aux = model.forward_with_aux(x)
    loss = ce(logits, y) + aux_weight(step, total_steps) * model.aux_loss(aux, x)
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from typing_extensions import Unpack

from .._core._errors import ConfigError, DataError
from ._base import (
    Keyframes,
    ModelArgs,
    VideoModel,
    _check_int,
    as_keyframes,
    check_mask,
    masked_mean,
    preset,
)
from ._norm import check_norm, norm_layer
from ._registry import register_model

__all__ = ["Aggregator", "ChannelGate", "KeyframeSegmenter", "UNet", "aux_weight"]

FUSIONS = ("concat", "add")
SCHEDULES = ("linear", "cosine")


def aux_weight(step: int, total: int, initial: float = 1.0, schedule: str = "linear") -> float:
    """Weight of the auxiliary loss at ``step`` of ``total``: ``initial`` at 0, 0 from ``total`` on.

    ``schedule``: ``"linear"`` or ``"cosine"`` (half cosine) decay.
    """
    if isinstance(total, bool) or not isinstance(total, int) or total < 1:
        raise ConfigError(f"total must be a positive number of steps, got {total!r}")
    if schedule not in SCHEDULES:
        raise ConfigError(f"unknown schedule {schedule!r}; expected one of {SCHEDULES}")
    if initial < 0:
        raise ConfigError(f"initial aux weight must be >= 0, got {initial!r}")
    frac = min(max(step / total, 0.0), 1.0)
    if schedule == "linear":
        return initial * (1.0 - frac)
    return initial * 0.5 * (1.0 + math.cos(math.pi * frac))


def _conv_bn_relu(cin: int, cout: int) -> list[nn.Module]:
    return [nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(True)]


class Aggregator(nn.Module):
    """G: context (B, T, C, H, W) -> H_t (B, out_channels, H, W), resolution preserved."""

    def __init__(
        self, in_channels: int = 3, width: int = 16, out_channels: int = 8, norm: str = "batch"
    ) -> None:
        super().__init__()
        norm = check_norm(norm)
        self.temporal = nn.Sequential(
            nn.Conv3d(in_channels, width, 3, padding=1, bias=False),
            norm_layer(norm, width, 3),
            nn.ReLU(True),
        )
        self.spatial = nn.Sequential(
            nn.Conv2d(width, width, 3, padding=1, bias=False),
            norm_layer(norm, width, 2),
            nn.ReLU(True),
            nn.Conv2d(width, out_channels, 3, padding=1),
        )

    def forward(self, context: Tensor, mask: Tensor | None = None) -> Tensor:
        y = self.temporal(context.transpose(1, 2))  # (B, width, T, H, W)
        y = masked_mean(y.transpose(1, 2), mask, dim=1)  # mean over valid frames
        return self.spatial(y)


class ChannelGate(nn.Module):
    """Squeeze-and-excitation over a map's channels: (B, C, H, W) times a (B, C, 1, 1)
    weight in (0, 1) from the channels' spatial means (C -> C // reduction -> C)."""

    def __init__(self, channels: int, reduction: int = 4) -> None:
        super().__init__()
        hidden = max(1, channels // reduction)
        self.squeeze = nn.Conv2d(channels, hidden, 1)
        self.excite = nn.Conv2d(hidden, channels, 1)

    def weights(self, x: Tensor) -> Tensor:
        """The (B, C, 1, 1) gate of ``x``."""
        return torch.sigmoid(self.excite(F.relu(self.squeeze(x.mean((2, 3), keepdim=True)))))

    def forward(self, x: Tensor) -> Tensor:
        return x * self.weights(x)


class _DoubleConv(nn.Sequential):
    def __init__(self, cin: int, cout: int) -> None:
        super().__init__(*_conv_bn_relu(cin, cout), *_conv_bn_relu(cout, cout))


class UNet(nn.Module):
    """F: a UNet of ``depth`` levels, widths w, 2w, 4w, ...; any H, W."""

    def __init__(self, in_channels: int, num_classes: int, base_width: int = 16, depth: int = 3):
        super().__init__()
        _check_int("base_width", base_width)
        _check_int("depth", depth)
        widths = [base_width * 2**i for i in range(depth)]
        self.inc = _DoubleConv(in_channels, widths[0])
        self.downs = nn.ModuleList(_DoubleConv(widths[i - 1], widths[i]) for i in range(1, depth))
        self.ups = nn.ModuleList(
            _DoubleConv(widths[i] + widths[i - 1], widths[i - 1]) for i in range(depth - 1, 0, -1)
        )
        self.out = nn.Conv2d(widths[0], num_classes, 1)

    def forward(self, x: Tensor, ckpt=None) -> Tensor:
        ckpt = ckpt or (lambda fn, *a: fn(*a))
        skips = [ckpt(self.inc, x)]
        for down in self.downs:
            skips.append(ckpt(down, F.max_pool2d(skips[-1], 2)))
        y = skips.pop()
        for up in self.ups:
            skip = skips.pop()
            y = F.interpolate(y, size=skip.shape[-2:], mode="nearest")
            y = ckpt(up, torch.cat([y, skip], dim=1))
        return self.out(y)


class KeyframeSegmenter(VideoModel):
    """G (aggregator) + hyperframe fusion + F (UNet): segmentation of the key frame."""

    layout = "keyframe"
    task = "segmentation"
    uses_mask = True

    def __init__(
        self,
        fusion: str = "concat",
        base_width: int = 16,
        depth: int = 3,
        hidden_channels: int = 8,
        aggregator_width: int = 16,
        attention: bool = False,
        norm: str = "batch",
        **base: Unpack[ModelArgs],
    ) -> None:
        super().__init__(**base)
        if fusion not in FUSIONS:
            raise ConfigError(f"unknown fusion {fusion!r}; expected one of {FUSIONS}")
        _check_int("hidden_channels", hidden_channels)
        _check_int("aggregator_width", aggregator_width)
        self.fusion = fusion
        self.aggregator = Aggregator(3, aggregator_width, hidden_channels, norm)
        #: the squeeze-and-excitation gate over H_t's channels (attention=True), else None
        self.gate = ChannelGate(hidden_channels) if attention else None
        self.to_rgb: nn.Conv2d | None
        if fusion == "add":
            self.to_rgb = nn.Conv2d(hidden_channels, 3, 1)
            assert self.to_rgb.bias is not None  # bias=True, the default
            nn.init.zeros_(self.to_rgb.weight)
            nn.init.zeros_(self.to_rgb.bias)
            f_in = 3
        else:
            self.to_rgb = None
            f_in = 3 + hidden_channels
        self.segmenter = UNet(f_in, self.num_classes, base_width, depth)
        self.aux_head = nn.Conv2d(hidden_channels, 3, 1)
        self.pretrained_optional = ("segmenter.out.", "aux_head.")

    def _inputs(self, x) -> tuple[Keyframes, int, int]:
        kf = as_keyframes(x)
        b, t = kf.context.shape[:2]
        if kf.key.shape[0] != b or kf.key.shape[1:] != kf.context.shape[2:]:
            raise DataError(
                f"{self._who()}: key {tuple(kf.key.shape)} does not match context frames "
                f"{tuple(kf.context.shape)}"
            )
        return kf, b, t

    def hidden(self, x, mask: Tensor | None = None) -> Tensor:
        """H_t, the aggregator's (B, hidden_channels, H, W) map (see hyperframes.viz)."""
        kf, b, t = self._inputs(x)
        h = self._ckpt(self.aggregator, kf.context, check_mask(self, mask, b, t))
        return h if self.gate is None else self.gate(h)

    def _segment(self, key: Tensor, h: Tensor) -> Tensor:
        if self.to_rgb is not None:
            hyper = key + self.to_rgb(h)
        else:
            hyper = torch.cat([key, h.to(key.dtype)], dim=1)
        return self.segmenter(hyper, self._ckpt)

    def forward(self, x, mask: Tensor | None = None) -> Tensor:
        """``x``: Keyframes(key, context); ``mask`` (B, T) bool -> (B, num_classes, H, W)."""
        kf, _, _ = self._inputs(x)
        return self._segment(kf.key, self.hidden(kf, mask))

    def forward_with_aux(self, x, mask: Tensor | None = None) -> tuple[Tensor, Tensor]:
        """(segmentation logits, predicted K_t - K_{t-1} of shape (B, 3, H, W))."""
        kf, _, _ = self._inputs(x)
        h = self.hidden(kf, mask)
        return self._segment(kf.key, h), self.aux_head(h)

    def aux_target(self, x) -> Tensor:
        """K_t - K_{t-1}: the key frame minus the context frame before it."""
        kf, _, t = self._inputs(x)
        if t < 2:
            raise DataError(f"{self._who()}: the auxiliary target needs T >= 2, got T={t}")
        return kf.key - kf.context[:, t // 2 - 1]

    def aux_loss(self, aux_pred: Tensor, x) -> Tensor:
        """Mean squared error between ``aux_pred`` and :meth:`aux_target`."""
        return F.mse_loss(aux_pred.float(), self.aux_target(x).float())


@register_model("keyframe_unet", layout="keyframe", family="keyframe", task="segmentation")
@preset(KeyframeSegmenter, fusion="concat")
def keyframe_unet() -> None:
    """Keyframe + aggregator: UNet on concat[K_t, H_t] (segmentation)."""


@register_model("keyframe_unet_add", layout="keyframe", family="keyframe", task="segmentation")
@preset(KeyframeSegmenter, fusion="add")
def keyframe_unet_add() -> None:
    """Keyframe + aggregator, deployable: 3-channel UNet on K_t + conv1x1(H_t)."""
