"""Audio-visual early fusion: a log-mel plane beside each frame, on the channel axis.

Input: :class:`AudioVisual` ``(video, audio)``:

* ``video`` (B, C*T, H, W): the ``channel`` layout (frame-major), which is the model's
  ``layout``: the data pipeline prepares the video part as for any channel-fusion model;
* ``audio`` (B, n_mels, T*k): a log-mel spectrogram aligned with the window, ``k`` columns
  per frame: columns ``f*k .. f*k + k - 1`` are heard while frame ``f`` is shown.

The fusion is the seed's (section 6.2): audio "hyperframes" made with the same window as the
video ones, one-to-one in time, concatenated on the channel axis. For each frame ``f`` its
(n_mels, k) patch of the spectrogram is resized (bilinear) to one (H, W) plane -- mel band 0
on the top row, time left to right -- and becomes that frame's extra channel: per frame
``[C video channels, 1 audio plane]``, T frames, so (B, T*(C+1), H, W) enters a ResNet-18
whose first conv reads T*(C+1) channels. One 2D forward per clip, as ``channel_resnet18``.

The spectrogram first goes through a BatchNorm over its one channel, so log-mel in dB or in
natural log both arrive at a sane scale. The first conv starts as ``channel_resnet18``'s on
the video channels (the 3-channel kernel repeated T times, divided by T) and gives each audio
plane the mean of the colour kernels, divided by T (it reads the plane like a grey frame);
2D pretrained weights map the same way (:meth:`AudioVisualFusion.map_pretrained`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
import torchvision
from torch import Tensor, nn
from torch.nn import functional as F
from typing_extensions import Unpack

from .._core._errors import ConfigError, DataError
from .._core._layouts import AudioVisual
from ._base import (
    ModelArgs,
    VideoModel,
    _check_int,
    _shape,
    mobilenet_features,
    preset,
    resnet_features,
)
from ._channel import _TORCHVISION, conv_like
from ._registry import register_model

__all__ = ["AudioVisual", "AudioVisualFusion", "as_audiovisual", "fuse_conv_weight"]


def as_audiovisual(x: Any) -> AudioVisual:
    """Accept an :class:`AudioVisual`, a ``(video, audio)`` pair or a dict with those keys."""
    if isinstance(x, AudioVisual):
        return x
    if isinstance(x, Mapping):
        if "video" not in x or "audio" not in x:
            raise DataError(
                f"audio-visual input dict has keys {sorted(x)}; expected 'video' and 'audio'"
            )
        return AudioVisual(x["video"], x["audio"])
    if isinstance(x, (tuple, list)) and len(x) == 2:
        return AudioVisual(x[0], x[1])
    raise DataError(
        f"audio-visual models take AudioVisual(video, audio), a (video, audio) tuple or a dict; "
        f"got {_shape(x)}. Video alone is not enough: these models also need the window's "
        f"log-mel spectrogram"
    )


def fuse_conv_weight(weight: Tensor, frames: int) -> Tensor:
    """A 2D first-conv weight (O, C, k, k) made to read T frames of ``[C channels, 1 audio
    plane]``: per frame the C kernels and their mean, all divided by T -> (O, T*(C+1), k, k)."""
    per_frame = torch.cat([weight, weight.mean(1, keepdim=True)], 1)
    return per_frame.repeat(1, frames, 1, 1) / frames


class AudioVisualFusion(VideoModel):
    """A torchvision 2D classifier over T frames of ``[C video channels, 1 log-mel plane]``."""

    layout = "channel"
    fixed_frames = "its first convolution reads T frames of video and log-mel planes"

    def __init__(
        self,
        backbone: str,
        *,
        n_mels: int = 64,
        columns_per_frame: int = 4,
        **base: Unpack[ModelArgs],
    ) -> None:
        super().__init__(**base)
        _check_int("n_mels", n_mels)
        _check_int("columns_per_frame", columns_per_frame)
        if backbone not in _TORCHVISION:
            raise ConfigError(
                f"unknown audio-visual backbone {backbone!r}; expected one of "
                f"{', '.join(_TORCHVISION)}"
            )
        self.backbone_name = backbone
        self.n_mels = n_mels
        self.columns_per_frame = columns_per_frame
        first, head_prefix = _TORCHVISION[backbone]
        net = getattr(torchvision.models, backbone)(weights=None, num_classes=self.num_classes)
        conv = net.get_submodule(first)
        with torch.no_grad():
            weight = fuse_conv_weight(conv.weight, self.frames)
        fused = conv_like(conv, (self.in_channels + 1) * self.frames, weight)
        parent, _, leaf = first.rpartition(".")
        setattr(net.get_submodule(parent) if parent else net, leaf, fused)
        self.backbone = net
        self.audio_norm = nn.BatchNorm2d(1)
        self.first_conv = first
        self.pretrained_prefix = "backbone."
        self.pretrained_optional = (f"backbone.{head_prefix}", "audio_norm.")

    @property
    def audio_shape(self) -> tuple[int, int]:
        """(n_mels, T*k): one clip's spectrogram."""
        return (self.n_mels, self.frames * self.columns_per_frame)

    def example_input(  # type: ignore[override]  # the base's input is one tensor or Keyframes
        self, batch: int = 2, size: int = 64, *, generator: torch.Generator | None = None
    ) -> AudioVisual:
        """Random float video (channel layout) and log-mel of ``batch`` clips."""
        device = next((p.device for p in self.parameters()), torch.device("cpu"))
        x = torch.randn(batch, self.frames, self.in_channels, size, size, generator=generator)
        audio = torch.randn(batch, *self.audio_shape, generator=generator)
        return AudioVisual(x.flatten(1, 2).to(device), audio.to(device))  # channel layout

    def map_pretrained(self, state_dict: Mapping[str, Tensor]) -> dict[str, Tensor]:
        """As the channel family's, the 2D first conv fused (:func:`fuse_conv_weight`)."""
        out = super().map_pretrained(state_dict)
        key = f"backbone.{self.first_conv}.weight"
        weight = out.get(key)
        if weight is not None and weight.dim() == 4 and weight.shape[1] == self.in_channels:
            out[key] = fuse_conv_weight(weight, self.frames)
        return out

    def fuse(self, x: AudioVisual) -> Tensor:
        """(B, T*(C+1), H, W): each frame's channels followed by its resized log-mel plane."""
        video, audio = self._check(x)
        b, _, h, w = video.shape
        t, c, k = self.frames, self.in_channels, self.columns_per_frame
        spec = self.audio_norm(audio.unsqueeze(1))  # (B, 1, n_mels, T*k)
        patches = spec.reshape(b, self.n_mels, t, k).permute(0, 2, 1, 3)  # (B, T, n_mels, k)
        planes = F.interpolate(
            patches.reshape(b * t, 1, self.n_mels, k),
            size=(h, w),
            mode="bilinear",
            align_corners=False,
        )
        frames = video.reshape(b, t, c, h, w)
        fused = torch.cat([frames, planes.reshape(b, t, 1, h, w).to(frames.dtype)], 2)
        return fused.reshape(b, t * (c + 1), h, w)

    def forward(self, x: Any, mask: Tensor | None = None) -> Tensor:
        """``x``: :class:`AudioVisual` (see the module doc). ``mask`` is ignored (pad clips by
        repeating frames, as for the channel family)."""
        fused = self.fuse(x)
        net: Any = self.backbone
        if self.backbone_name.startswith("resnet"):
            return net.fc(resnet_features(net, fused, self._ckpt))
        return net.classifier(mobilenet_features(net, fused, self._ckpt))

    def _check(self, x: Any) -> AudioVisual:
        av = as_audiovisual(x)
        want = self.in_channels * self.frames
        video, audio = av
        if not isinstance(video, Tensor) or video.dim() != 4 or video.shape[1] != want:
            raise DataError(
                f"{self._who()}: video must be the channel layout (B, {self.in_channels}*"
                f"{self.frames}={want}, H, W); got {_shape(video)}"
            )
        n_mels, cols = self.audio_shape
        if (
            not isinstance(audio, Tensor)
            or audio.dim() != 3
            or tuple(audio.shape[1:]) != (n_mels, cols)
            or audio.shape[0] != video.shape[0]
        ):
            raise DataError(
                f"{self._who()}: audio must be a ({video.shape[0]}, n_mels={n_mels}, "
                f"T*k={self.frames}*{self.columns_per_frame}={cols}) log-mel tensor aligned with "
                f"the video window; got {_shape(audio)} (set n_mels= and columns_per_frame= "
                f"when creating the model to match your spectrograms)"
            )
        return av


@register_model("av_channel_resnet18", layout="channel", family="channel")
@preset(AudioVisualFusion, backbone="resnet18")
def av_channel_resnet18() -> None:
    """Audio-visual early fusion: a log-mel plane beside each frame, ResNet-18 over T*4 channels."""
