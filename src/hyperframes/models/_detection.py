"""Detection on the channel layout: torchvision's FCOS reading T frames stacked as 3T channels.

The network is a :class:`torchvision.models.detection.FCOS`: a small backbone with a two-level
feature pyramid (strides 4 and 8: small inputs, small objects) and FCOS's own head. Its first
conv reads C*T channels, initialised from the 3-channel conv repeated T times and divided by T
(:func:`~hyperframes.models._channel.inflate_conv2d`), so on T identical frames it starts as
the single-frame detector does. The target is the window's middle frame (T // 2).

``forward`` returns one dense tensor (B, A, K + 9) over the A locations of the pyramid (level
by level, row-major): K class logits, the 4 box regressions, the centerness logit, then the
location's anchor box (x1, y1, x2, y2) normalised to [0, 1] of the input's width and height.
The task (:mod:`hyperframes.train._tasks._detection`) computes FCOS's loss and decodes boxes from it
with torchvision's own code, in normalised coordinates; a dense tensor trains, evaluates and
exports to ONNX like every other model's output.

Backbones: ``tiny`` (three conv stages, ``width`` channels: CPU tests, the demo) or
``resnet18`` (torchvision's ResNet-18 up to layer2; ``pretrained`` ImageNet weights map onto
it, its first conv inflated).
"""

from __future__ import annotations

from collections import OrderedDict

import torch
import torchvision
from torch import Tensor, nn
from torchvision.models.detection import FCOS
from torchvision.models.detection.anchor_utils import AnchorGenerator
from torchvision.models.detection.fcos import FCOSHead
from typing_extensions import Unpack

from .._core._errors import ConfigError, DataError
from ._base import ModelArgs, VideoModel, _shape, preset
from ._channel import inflate_conv2d
from ._registry import register_model

__all__ = [
    "BOX_COLUMNS",
    "DETECTION_STRIDES",
    "MAX_DETECTIONS",
    "ChannelDetector",
    "anchor_levels",
    "decode_detections",
    "detection_head",
    "split_output",
]

#: columns after the class logits: 4 regressions, centerness, the normalised anchor box
BOX_COLUMNS = 9
#: the pyramid's strides, in input pixels
DETECTION_STRIDES = (4, 8)
BACKBONES = ("tiny", "resnet18")
#: detections kept per window (COCO's maxDets)
MAX_DETECTIONS = 100
#: the least score a decoded detection keeps
SCORE_THRESHOLD = 0.05


def _conv(cin: int, cout: int, stride: int = 1) -> nn.Sequential:
    return nn.Sequential(
        nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False),
        nn.BatchNorm2d(cout),
        nn.ReLU(inplace=True),
    )


class _Pyramid(nn.Module):
    """Features at strides 4 and 8, ``width`` channels each (the coarser one added, upsampled,
    to the finer: a two-level FPN)."""

    def __init__(self, backbone: str, width: int, in_channels: int, frames: int) -> None:
        super().__init__()
        self.out_channels = width  # what FCOS asks of a backbone
        self.kind = backbone
        if backbone == "tiny":
            first = nn.Conv2d(in_channels, width, 3, stride=2, padding=1, bias=False)
            with torch.random.fork_rng(devices=[]):  # every T draws the same weights after
                wide = inflate_conv2d(first, frames)
            self.stem = nn.Sequential(wide, nn.BatchNorm2d(width), nn.ReLU(inplace=True))
            self.layer1 = nn.Sequential(_conv(width, width, 2), _conv(width, width))
            self.layer2 = nn.Sequential(_conv(width, 2 * width, 2), _conv(2 * width, 2 * width))
            c1, c2 = width, 2 * width
        else:
            net = torchvision.models.resnet18(weights=None)
            if in_channels != net.conv1.in_channels:
                raise ConfigError(f"resnet18 takes 3-channel frames, not {in_channels}")
            with torch.random.fork_rng(devices=[]):
                net.conv1 = inflate_conv2d(net.conv1, frames)
            self.stem = nn.Sequential(net.conv1, net.bn1, net.relu, net.maxpool)
            self.layer1, self.layer2 = net.layer1, net.layer2
            c1, c2 = 64, 128
        self.lateral1 = nn.Conv2d(c1, width, 1)
        self.lateral2 = nn.Conv2d(c2, width, 1)

    def forward(self, x: Tensor) -> OrderedDict[str, Tensor]:
        f1 = self.layer1(self.stem(x))
        p2 = self.lateral2(self.layer2(f1))
        p1 = self.lateral1(f1) + nn.functional.interpolate(p2, size=f1.shape[-2:], mode="nearest")
        return OrderedDict([("p1", p1), ("p2", p2)])


class ChannelDetector(VideoModel):
    """FCOS on T stacked frames (module doc)."""

    layout = "channel"
    task = "detection"
    fixed_frames = "its first convolution reads the T frames stacked as C*T input channels"

    def __init__(
        self,
        backbone: str = "tiny",
        width: int = 32,
        head_convs: int = 1,
        in_channels: int = 3,
        **base: Unpack[ModelArgs],
    ) -> None:
        super().__init__(in_channels=in_channels, **base)
        if backbone not in BACKBONES:
            raise ConfigError(
                f"backbone: {backbone!r} is not a detection backbone; allowed: "
                f"{', '.join(BACKBONES)}"
            )
        if isinstance(width, bool) or not isinstance(width, int) or width < 32 or width % 32:
            raise ConfigError(
                f"width: {width!r}; allowed: a multiple of 32 (FCOS's head groups its "
                "channels in 32 groups), at least 32"
            )
        if isinstance(head_convs, bool) or not isinstance(head_convs, int) or head_convs < 0:
            raise ConfigError(f"head_convs: {head_convs!r}; allowed: an integer >= 0")
        body = _Pyramid(backbone, width, in_channels, self.frames)
        anchors = AnchorGenerator(tuple((s,) for s in DETECTION_STRIDES), ((1.0,),) * 2)
        head = FCOSHead(width, 1, self.num_classes, num_convs=head_convs)
        self.detector = FCOS(body, self.num_classes, anchor_generator=anchors, head=head)
        if backbone == "resnet18":
            self.pretrained_prefix = "detector.backbone."
            self.pretrained_rename = (
                ("conv1.", "detector.backbone.stem.0."),
                ("bn1.", "detector.backbone.stem.1."),
            )
            self.pretrained_drop = ("fc.", "layer3.", "layer4.")
            self.pretrained_inflate = ("detector.backbone.stem.0.weight",)
            self.pretrained_optional = ("detector.head.", "detector.backbone.lateral")

    def example_input(self, batch=2, size=64, *, generator=None):
        return super().example_input(batch, size, generator=generator)

    def anchors(self, height: int, width: int, sizes, *, device, dtype) -> Tensor:
        """(A, 4) anchor boxes of the pyramid levels of ``sizes`` ((h, w) each), a stride
        wide and centred on their cells, normalised to [0, 1] of ``height`` x ``width``."""
        out = []
        for stride, (h, w) in zip(DETECTION_STRIDES, sizes):
            ys = (torch.arange(h, device=device, dtype=dtype) + 0.5) * stride
            xs = (torch.arange(w, device=device, dtype=dtype) + 0.5) * stride
            cy, cx = torch.meshgrid(ys, xs, indexing="ij")
            cx, cy = cx.reshape(-1), cy.reshape(-1)
            half = stride / 2
            out.append(
                torch.stack(
                    [
                        (cx - half) / width,
                        (cy - half) / height,
                        (cx + half) / width,
                        (cy + half) / height,
                    ],
                    1,
                )
            )
        return torch.cat(out)

    def forward(self, x: Tensor, mask: Tensor | None = None) -> Tensor:
        """``x``: (B, C*T, H, W) -> (B, A, K + 9) (module doc). ``mask`` is ignored."""
        want = self.in_channels * self.frames
        if not isinstance(x, Tensor) or x.dim() != 4 or x.shape[1] != want:
            raise DataError(
                f"{self._who()} takes the channel layout (B, {self.in_channels}*{self.frames}="
                f"{want}, H, W); got {_shape(x)}"
            )
        body = self.detector.backbone
        features = list(self._ckpt(body, x).values())
        out = self.detector.head(features)
        sizes = [tuple(f.shape[-2:]) for f in features]
        cls = out["cls_logits"]
        anchors = self.anchors(
            x.shape[-2], x.shape[-1], sizes, device=cls.device, dtype=torch.float32
        )
        parts = [cls, out["bbox_regression"], out["bbox_ctrness"]]
        dense = torch.cat([p.float() for p in parts], -1)
        return torch.cat([dense, anchors[None].expand(x.shape[0], -1, -1)], -1)


@register_model("fcos_channel", layout="channel", family="detection", task="detection")
@preset(ChannelDetector, omit=("in_channels",))
def fcos_channel() -> None:
    """Detection: torchvision FCOS with a 3T-channel first conv (repeat / T), middle frame."""


def detection_head(num_classes: int) -> FCOS:
    """A torchvision FCOS for its loss (``compute_loss``) and decoding
    (``postprocess_detections``) on :class:`ChannelDetector`'s dense output: its own
    weights are never used."""
    body = torch.nn.Identity()
    body.out_channels = 32  # type: ignore[assignment]
    net = FCOS(
        body,
        num_classes,
        score_thresh=SCORE_THRESHOLD,
        detections_per_img=MAX_DETECTIONS,
        topk_candidates=1000,
    )
    return net


def split_output(
    out: torch.Tensor, num_classes: int
) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
    if out.dim() != 3 or out.shape[-1] != num_classes + BOX_COLUMNS:
        raise DataError(
            f"the detection task takes the model's dense output (B, A, {num_classes} + "
            f"{BOX_COLUMNS}); got {tuple(out.shape)}: give a detection model (fcos_channel)"
        )
    k = num_classes
    head = {
        "cls_logits": out[..., :k],
        "bbox_regression": out[..., k : k + 4],
        "bbox_ctrness": out[..., k + 4 : k + 5],
    }
    return head, out[0, :, k + 5 :]


def anchor_levels(anchors: torch.Tensor) -> list[int]:
    """The anchors of each pyramid level (levels are runs of one anchor width)."""
    width = (anchors[:, 2] - anchors[:, 0]).round(decimals=6)
    _, counts = torch.unique_consecutive(width, return_counts=True)
    return counts.tolist()


def decode_detections(net: FCOS, out: torch.Tensor, num_classes: int) -> list[torch.Tensor]:
    """Per window, (D, 6) rows ``x1, y1, x2, y2, score, class`` (normalised corners), at most
    :data:`MAX_DETECTIONS`, after FCOS's score threshold, top-k and NMS."""
    head, anchors = split_output(out.float(), num_classes)
    counts = anchor_levels(anchors)
    per_level = {k: list(v.split(counts, dim=1)) for k, v in head.items()}
    levels = list(anchors.split(counts))
    dets = net.postprocess_detections(per_level, [levels] * len(out), [(1, 1)] * len(out))
    return [
        torch.cat([d["boxes"], d["scores"][:, None], d["labels"][:, None].float()], 1) for d in dets
    ]
