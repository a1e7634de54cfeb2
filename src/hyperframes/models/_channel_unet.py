"""Early fusion for segmentation: the T frames stacked on the channel axis, through one UNet.

Layout ``channel`` (B, C*T, H, W), frame-major, as the channel classifiers take it. The
UNet's first conv reads C*T channels, initialised from its 3-channel conv repeated T times and
divided by T (:func:`~hyperframes.models._channel.inflate_conv2d`), so on T identical frames it answers
as the 2D UNet does on one. The output is the key frame's mask logits (B, num_classes, H, W),
the target the segmentation task gives a window (its frame ``T // 2``). The cheapest dense
model: one 2D forward per window, against the keyframe models' 3D aggregator.
"""

from __future__ import annotations

from torch import Tensor
from typing_extensions import Unpack

from .._core._errors import DataError
from ._base import ModelArgs, VideoModel, _shape, preset
from ._channel import inflate_conv2d
from ._keyframe import UNet
from ._registry import register_model

__all__ = ["ChannelSegmenter"]


class ChannelSegmenter(VideoModel):
    """A UNet whose first conv takes ``3 * frames`` stacked channels: per-pixel classes."""

    layout = "channel"
    task = "segmentation"
    fixed_frames = "its first convolution reads the T frames stacked as C*T input channels"

    def __init__(
        self,
        base_width: int = 16,
        depth: int = 3,
        **base: Unpack[ModelArgs],
    ) -> None:
        super().__init__(**base)
        self.segmenter = UNet(3, self.num_classes, base_width, depth)
        first = self.segmenter.inc[0]
        self.segmenter.inc[0] = inflate_conv2d(first, self.frames)  # type: ignore[arg-type]
        self.pretrained_inflate = ("segmenter.inc.0.weight",)
        self.pretrained_optional = ("segmenter.out.",)

    def forward(self, x: Tensor, mask: Tensor | None = None) -> Tensor:
        """``x``: (B, 3*T, H, W) -> (B, num_classes, H, W). ``mask`` is ignored."""
        want = 3 * self.frames
        if not isinstance(x, Tensor) or x.dim() != 4 or x.shape[1] != want:
            raise DataError(
                f"{self._who()} takes the channel layout (B, 3*{self.frames}={want}, H, W); "
                f"got {_shape(x)}"
            )
        return self.segmenter(x, self._ckpt)


@register_model("channel_unet", layout="channel", family="channel", task="segmentation")
@preset(ChannelSegmenter)
def channel_unet() -> None:
    """Early fusion for segmentation: a UNet with a 3T-channel first conv."""
