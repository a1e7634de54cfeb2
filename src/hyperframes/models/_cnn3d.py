"""3D CNNs: torchvision's video networks and a small (2+1)D network for CPU demos.

Layout ``conv3d`` (B, C, T, H, W). Convolutions span time, so temporal order matters to
these models; they cost the most per clip. The networks pool globally, so any T and H, W
that survive their downsampling work (T=4 at 32x32 does).
"""

from __future__ import annotations

import torch
import torchvision.models.video as tvv
from torch import Tensor, nn
from typing_extensions import Unpack

from .._core._errors import ConfigError
from ._base import ModelArgs, VideoModel, _check_int, preset
from ._norm import check_norm, norm_layer, replace_batch_norm
from ._registry import register_model

__all__ = ["R2Plus1DTiny", "TorchvisionVideo"]

_TORCHVISION = {
    # name: head prefix inside the torchvision network
    "r3d_18": "fc.",
    "r2plus1d_18": "fc.",
    "mc3_18": "fc.",
    "s3d": "classifier.",
}


class _Conv3dModel(VideoModel):
    layout = "conv3d"

    def _check(self, x: Tensor) -> Tensor:
        return self._five_dims(x, "conv3d")


class TorchvisionVideo(_Conv3dModel):
    """A torchvision video classifier (``weights=None``; load Kinetics weights from a file)."""

    def __init__(
        self,
        arch: str,
        dropout: float = 0.2,
        norm: str = "batch",
        **base: Unpack[ModelArgs],
    ) -> None:
        super().__init__(**base)
        norm = check_norm(norm)
        if arch not in _TORCHVISION:
            raise ConfigError(
                f"unknown torchvision video network {arch!r}; expected one of "
                f"{', '.join(_TORCHVISION)}"
            )
        self.arch = arch
        if arch == "s3d":
            net = tvv.s3d(weights=None, num_classes=self.num_classes, dropout=dropout)
            # S3D's fixed (2, 7, 7) pool needs 224-pixel, 16-frame clips: pool adaptively.
            # Its last 2x2x2 max-pool rounds up, so T=4 clips survive; for the even sizes
            # of the standard clips (16 frames, 224 px) that changes nothing.
            net.avgpool = nn.AdaptiveAvgPool3d(1)
            net.features[13].ceil_mode = True
        else:
            net = getattr(tvv, arch)(weights=None, num_classes=self.num_classes)
        # BatchNorm3d pools statistics over T: group/layer normalise each clip by its own
        replace_batch_norm(net, norm)
        self.backbone = net
        self.pretrained_prefix = "backbone."
        self.pretrained_optional = (f"backbone.{_TORCHVISION[arch]}",)

    def forward(self, x: Tensor, mask: Tensor | None = None) -> Tensor:
        """``x``: (B, C, T, H, W). ``mask`` is ignored (pad clips by repeating frames)."""
        x = self._check(x)
        net = self.backbone
        if self.arch == "s3d":
            for block in net.features:
                x = self._ckpt(block, x)
            x = net.classifier(net.avgpool(x))
            return torch.mean(x, dim=(2, 3, 4))
        x = net.stem(x)
        for layer in (net.layer1, net.layer2, net.layer3, net.layer4):
            x = self._ckpt(layer, x)
        return net.fc(torch.flatten(net.avgpool(x), 1))


class _Conv2Plus1D(nn.Sequential):
    """A 3x3x3 conv factorised into a 1x3x3 spatial and a 3x1x1 temporal conv."""

    def __init__(self, cin: int, cout: int, stride: tuple[int, int], norm: str = "batch") -> None:
        st, ss = stride
        super().__init__(
            nn.Conv3d(cin, cout, (1, 3, 3), (1, ss, ss), (0, 1, 1), bias=False),
            norm_layer(norm, cout, 3),
            nn.ReLU(inplace=True),
            nn.Conv3d(cout, cout, (3, 1, 1), (st, 1, 1), (1, 0, 0), bias=False),
        )


class _Block(nn.Module):
    def __init__(self, cin: int, cout: int, stride: tuple[int, int], norm: str = "batch") -> None:
        super().__init__()
        self.conv1 = _Conv2Plus1D(cin, cout, stride, norm)
        self.bn1 = norm_layer(norm, cout, 3)
        self.conv2 = _Conv2Plus1D(cout, cout, (1, 1), norm)
        self.bn2 = norm_layer(norm, cout, 3)
        self.relu = nn.ReLU(inplace=True)
        self.down = None
        if cin != cout or stride != (1, 1):
            st, ss = stride
            self.down = nn.Sequential(
                nn.Conv3d(cin, cout, 1, (st, ss, ss), bias=False), norm_layer(norm, cout, 3)
            )

    def forward(self, x: Tensor) -> Tensor:
        skip = x if self.down is None else self.down(x)
        y = self.relu(self.bn1(self.conv1(x)))
        return self.relu(self.bn2(self.conv2(y)) + skip)


class R2Plus1DTiny(_Conv3dModel):
    """A four-stage (2+1)D ResNet of widths w, 2w, 4w, 8w (w = ``base_width``)."""

    def __init__(
        self,
        base_width: int = 8,
        dropout: float = 0.0,
        norm: str = "batch",
        **base: Unpack[ModelArgs],
    ) -> None:
        super().__init__(**base)
        _check_int("base_width", base_width)
        norm = check_norm(norm)
        w = base_width
        self.stem = nn.Sequential(
            _Conv2Plus1D(3, w, (1, 2), norm), norm_layer(norm, w, 3), nn.ReLU(inplace=True)
        )
        widths = (w, 2 * w, 4 * w, 8 * w)
        strides = ((1, 1), (1, 2), (2, 2), (2, 2))  # (temporal, spatial)
        cin = w
        stages = []
        for cout, stride in zip(widths, strides):
            stages.append(_Block(cin, cout, stride, norm))
            cin = cout
        self.stages = nn.ModuleList(stages)
        self.pool = nn.AdaptiveAvgPool3d(1)
        self.dropout = nn.Dropout(dropout)
        self.fc = nn.Linear(cin, self.num_classes)
        self.pretrained_optional = ("fc.",)

    def forward(self, x: Tensor, mask: Tensor | None = None) -> Tensor:
        """``x``: (B, C, T, H, W). ``mask`` is ignored."""
        x = self.stem(self._check(x))
        for stage in self.stages:
            x = self._ckpt(stage, x)
        return self.fc(self.dropout(torch.flatten(self.pool(x), 1)))


def _tv(arch: str):
    def build(
        num_classes: int, frames: int, checkpointing: bool = False, norm: str = "batch"
    ) -> TorchvisionVideo:
        return TorchvisionVideo(
            arch, num_classes=num_classes, frames=frames, checkpointing=checkpointing, norm=norm
        )

    build.__doc__ = f"3D CNN: torchvision {arch} (Kinetics weights from a local file)."
    build.__name__ = arch
    return build


for _arch in _TORCHVISION:
    register_model(_arch, layout="conv3d", family="cnn3d")(_tv(_arch))


@register_model("r2plus1d_tiny", layout="conv3d", family="cnn3d")
@preset(R2Plus1DTiny)
def r2plus1d_tiny() -> None:
    """3D CNN: a small (2+1)D ResNet sized for CPU demos (options base_width, norm)."""
