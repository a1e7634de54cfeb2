"""Models that consume hyperframes, in every layout, behind one registry.

::

    from hyperframes import models

    models.list()                      # registered names
    models.describe()                  # (name, layout, params, ...) rows
    net = models.create("tsm_resnet18", num_classes=10, frames=8, pretrained="r18.pth")
    net.layout                         # "temporal" | "channel" | "conv3d" | "keyframe"
    logits = net(net.example_input(batch=2, size=64))

Layouts: ``temporal`` (B, T, C, H, W); ``channel`` (B, C*T, H, W), frame-major;
``conv3d`` (B, C, T, H, W); ``keyframe`` :class:`Keyframes` ``(key (B, C, H, W),
context (B, T, C, H, W))`` with key = frame T // 2. :func:`to_layout` converts a temporal
batch into any of them. Models take an optional ``mask`` (B, T) bool of valid frames.

Pretrained weights always come from a local file (a torchvision/timm state dict or a
hyperframes checkpoint with a ``"model"`` entry); nothing is downloaded.
"""

from __future__ import annotations

from .._core._moved import moved_attribute
from . import (  # noqa: F401 (register)
    _channel,
    _channel_unet,
    _cnn3d,
    _keyframe,
    _lstm,
    _transformer,
    _tsm,
    _tsn,
)
from ._audiovisual import AudioVisual  # registers av_*
from ._base import STAGE_PROBE as STAGE_PROBE  # for other hyperframes packages, not public
from ._base import VideoModel
from ._base import (
    other_frames_refusal as other_frames_refusal,
)  # for other hyperframes packages, not public
from ._base import stage_match as stage_match  # for other hyperframes packages, not public
from ._base import to_layout as to_layout  # for other hyperframes packages, not public
from ._detection import MAX_DETECTIONS as MAX_DETECTIONS  # for the task and infer, not public
from ._detection import anchor_levels as anchor_levels
from ._detection import decode_detections as decode_detections
from ._detection import detection_head as detection_head
from ._detection import split_output as split_output
from ._keyframe import UNet
from ._keyframe import aux_weight as aux_weight  # for other hyperframes packages, not public
from ._lstm import CNNLSTM as CNNLSTM  # for other hyperframes packages, not public
from ._outputs import downscale as downscale  # for train and infer (their public names)
from ._outputs import hidden_picture as hidden_picture
from ._outputs import masked_patch_errors as masked_patch_errors
from ._outputs import masked_psnr as masked_psnr
from ._outputs import patch_errors as patch_errors
from ._outputs import picture_png as picture_png
from ._outputs import psnr as psnr
from ._outputs import reconstruction_rows as reconstruction_rows
from ._outputs import ssim as ssim
from ._outputs import takes_recipe as takes_recipe
from ._registry import ModelInfo, ModelSpec, create, describe, get_spec, list_models, register_model
from ._registry import (
    check_model_size as check_model_size,
)  # for other hyperframes packages, not public
from ._restore import (
    bicubic_upscale as bicubic_upscale,
)  # for other hyperframes packages, not public
from ._restore import (
    neighbour_blend as neighbour_blend,
)  # for other hyperframes packages, not public
from ._tsm import TSM
from ._tsn import TSN
from ._tsn import consensus as consensus  # for other hyperframes packages, not public
from ._weights import load_pretrained

#: ``hyperframes.models.list()`` -- the registered names. Kept out of ``__all__`` so that
#: ``from hyperframes.models import *`` does not shadow the builtin ``list``.
list = list_models

__all__ = [
    "TSM",
    "TSN",
    "AudioVisual",
    "ModelInfo",
    "ModelSpec",
    "UNet",
    "VideoModel",
    "create",
    "describe",
    "get_spec",
    "list_models",
    "load_pretrained",
    "register_model",
]

#: names that left __all__, still importable with a DeprecationWarning saying where they live
_MOVED = {
    "Aggregator": "hyperframes.models._keyframe",
    "AudioVisualFusion": "hyperframes.models._audiovisual",
    "ChannelDetector": "hyperframes.models._detection",
    "ChannelFusion": "hyperframes.models._channel",
    "KeyframeSegmenter": "hyperframes.models._keyframe",
    "Keyframes": "hyperframes.models._base",
    "LAYOUTS": "hyperframes.models._base",
    "LoadReport": "hyperframes.models._weights",
    "MaskedVideoAutoencoder": "hyperframes.models._mae",
    "R2Plus1DTiny": "hyperframes.models._cnn3d",
    "TemporalShiftConv2d": "hyperframes.models._tsm",
    "TorchvisionVideo": "hyperframes.models._cnn3d",
    "VideoTransformer": "hyperframes.models._transformer",
    "as_audiovisual": "hyperframes.models._audiovisual",
    "as_keyframes": "hyperframes.models._base",
    "inflate_conv2d": "hyperframes.models._channel",
    "inflate_weight": "hyperframes.models._weights",
    "patchify": "hyperframes.models._mae",
    "read_state_dict": "hyperframes.models._weights",
    "temporal_shift": "hyperframes.models._tsm",
    "tube_mask": "hyperframes.models._mae",
    "unpatchify": "hyperframes.models._mae",
}


def __getattr__(name: str):
    return moved_attribute(__name__, name, _MOVED)
