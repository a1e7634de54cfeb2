"""Small models that restore a frame: interpolation (``frame_unet``) and super-resolution
(``frame_sr``).

Both take the temporal layout (B, T, 3, H, W) of frames normalised by the run's contract
(``mean``/``std``, passed to the model so it can undo them) and give the restored frame in
[0, 1] RGB, (B, 3, H', W'), as a correction of the task's baseline; their last convolution
starts at zero, so an untrained model *is* the baseline:

* ``frame_unet`` (``task="interpolation"``): the window's middle frame ``T // 2`` is the target
  (a training run requires T odd, so it is centred) and is never read (the model drops it; the dataset zeroes it too); a U-Net
  (:class:`~hyperframes.models.UNet`) on the other T-1 frames corrects the linear blend of the
  two neighbours ``T // 2 - 1`` and ``T // 2 + 1``.
* ``frame_sr`` (``task="super_resolution"``): a sliding-window network on a low-resolution
  window (T frames of h x w), the key frame ``T // 2`` upscaled ``scale`` times: convolutions
  at low resolution over the T frames stacked on channels, then a sub-pixel (pixel-shuffle)
  upsampling of a residual added to the bicubic upscaling of the key frame.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from typing_extensions import Unpack

from .._core._contract import IMAGENET_MEAN, IMAGENET_STD
from .._core._errors import ConfigError, DataError
from ._base import ModelArgs, VideoModel, _check_int, preset
from ._keyframe import UNet
from ._registry import register_model

__all__ = ["FrameInterpolator", "FrameSuperResolver", "bicubic_upscale", "neighbour_blend"]


def neighbour_blend(frames: Tensor) -> Tensor:
    """The linear blend (mean) of the two neighbours of the middle frame of (B, T, C, H, W)."""
    k = frames.shape[1] // 2
    return 0.5 * (frames[:, k - 1] + frames[:, k + 1])


def bicubic_upscale(frame: Tensor, scale: int) -> Tensor:
    """(B, C, h, w) -> (B, C, h*scale, w*scale), bicubic (PyTorch's, a = -0.75)."""
    return F.interpolate(frame, scale_factor=scale, mode="bicubic", align_corners=False)


class _Restorer(VideoModel):
    """Shared by both: undoing the contract's normalisation, the input check."""

    def __init__(
        self, mean: Sequence[float], std: Sequence[float], **base: Unpack[ModelArgs]
    ) -> None:
        # the output is always the 3 RGB channels; a run's task names them r, g, b and
        # refuses another model.num_classes (the registry builds models with any)
        super().__init__(**base)
        self.register_buffer("mean", torch.tensor(mean, dtype=torch.float32).view(1, 1, 3, 1, 1))
        self.register_buffer("std", torch.tensor(std, dtype=torch.float32).view(1, 1, 3, 1, 1))

    def pixels(self, x: Tensor) -> Tensor:
        """The normalised input back in [0, 1] RGB."""
        x = self._temporal(x)
        if x.shape[1] != self.frames:
            raise DataError(f"{self._who()}: takes T={self.frames} frames, got {x.shape[1]}")
        std, mean = self.std, self.mean
        assert isinstance(std, Tensor) and isinstance(mean, Tensor)  # buffers
        return x * std + mean


class FrameInterpolator(_Restorer):
    """The middle frame of an odd window from the others: blend + U-Net correction."""

    task = "interpolation"

    def __init__(
        self,
        base_width: int = 16,
        depth: int = 3,
        mean: Sequence[float] = IMAGENET_MEAN,
        std: Sequence[float] = IMAGENET_STD,
        **base: Unpack[ModelArgs],
    ) -> None:
        frames = base["frames"]
        if frames < 3:  # a run also needs T odd (its config says so): a centred target
            raise ConfigError(
                f"frames: {frames} but interpolation needs a window of 3 frames or more (the "
                "middle frame T // 2 is the target, the others the input); allowed: 3, 5, 7, ..."
            )
        super().__init__(mean, std, **base)
        self.net = UNet(3 * (frames - 1), 3, base_width, depth)
        nn.init.zeros_(self.net.out.weight)
        assert self.net.out.bias is not None
        nn.init.zeros_(self.net.out.bias)

    def forward(self, x: Tensor, mask: Tensor | None = None) -> Tensor:
        """``x`` (B, T, 3, H, W) normalised -> the middle frame (B, 3, H, W) in [0, 1]."""
        p = self.pixels(x)
        k = self.frames // 2
        inputs = torch.cat([p[:, :k], p[:, k + 1 :]], dim=1)  # the middle frame is never read
        b, t, c, h, w = inputs.shape
        return neighbour_blend(p) + self.net(inputs.reshape(b, t * c, h, w) - 0.5, self._ckpt)


class FrameSuperResolver(_Restorer):
    """The key frame of a low-resolution window at ``scale`` times its size: bicubic + a
    sub-pixel residual from convolutions over the T stacked frames."""

    task = "super_resolution"

    def __init__(
        self,
        scale: int = 4,
        width: int = 32,
        blocks: int = 3,
        mean: Sequence[float] = IMAGENET_MEAN,
        std: Sequence[float] = IMAGENET_STD,
        **base: Unpack[ModelArgs],
    ) -> None:
        super().__init__(mean, std, **base)
        for name, value in (("scale", scale), ("width", width), ("blocks", blocks)):
            _check_int(name, value)
        self.scale = scale
        layers: list[nn.Module] = [nn.Conv2d(3 * self.frames, width, 3, padding=1), nn.ReLU(True)]
        for _ in range(blocks):
            layers += [nn.Conv2d(width, width, 3, padding=1), nn.ReLU(True)]
        self.body = nn.Sequential(*layers)
        self.up = nn.Conv2d(width, 3 * scale * scale, 3, padding=1)
        nn.init.zeros_(self.up.weight)
        assert self.up.bias is not None
        nn.init.zeros_(self.up.bias)

    def forward(self, x: Tensor, mask: Tensor | None = None) -> Tensor:
        """``x`` (B, T, 3, h, w) normalised -> the key frame (B, 3, h*scale, w*scale) in [0, 1]."""
        p = self.pixels(x)
        b, t, c, h, w = p.shape
        y = self._ckpt(self.body, p.reshape(b, t * c, h, w) - 0.5)
        residual = F.pixel_shuffle(self.up(y), self.scale)
        return bicubic_upscale(p[:, t // 2], self.scale) + residual


@register_model("frame_unet", layout="temporal", family="restore", task="interpolation")
@preset(FrameInterpolator, defaults={"num_classes": 3, "frames": 3})
def frame_unet() -> None:
    """U-Net frame interpolation: the middle frame of an odd window (blend + correction)."""


@register_model("frame_sr", layout="temporal", family="restore", task="super_resolution")
@preset(FrameSuperResolver, defaults={"num_classes": 3, "frames": 3})
def frame_sr() -> None:
    """Sliding-window super-resolution of the key frame (bicubic + pixel-shuffle residual)."""
