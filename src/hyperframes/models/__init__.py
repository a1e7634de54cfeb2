"""Models that consume hyperframes, in every layout, behind one registry.

::

    from hyperframes import models

    models.list()                      # registered names
    models.describe()                  # (name, layout, params, ...) rows
    net = models.create("tsm_resnet18", num_classes=10, frames=8, pretrained="r18.pth")
    net.layout                         # "temporal" | "channel" | "conv3d" | "keyframe"
    logits = net(net.example_input(batch=2, size=64))

Layouts: ``temporal`` (B, T, C, H, W); ``channel`` (B, C*T, H, W), frame-major;
``conv3d`` (B, C, T, H, W); ``keyframe`` a ``Keyframes`` pair ``(key (B, C, H, W),
context (B, T, C, H, W))`` with key = frame T // 2. :func:`to_layout` converts a temporal
batch into any of them. Models take an optional ``mask`` (B, T) bool of valid frames.

Pretrained weights always come from a local file (a torchvision/timm state dict or a
hyperframes checkpoint with a ``"model"`` entry); nothing is downloaded.
"""

from __future__ import annotations

# ``from ._x import name as name``: for the other hyperframes packages, not public
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
from ._base import STAGE_PROBE as STAGE_PROBE
from ._base import VideoModel
from ._base import other_frames_refusal as other_frames_refusal
from ._base import stage_match as stage_match
from ._base import to_layout as to_layout
from ._detection import MAX_DETECTIONS as MAX_DETECTIONS  # for the task and infer, not public
from ._detection import anchor_levels as anchor_levels
from ._detection import decode_detections as decode_detections
from ._detection import detection_head as detection_head
from ._detection import split_output as split_output
from ._keyframe import UNet
from ._keyframe import aux_weight as aux_weight
from ._lstm import CNNLSTM as CNNLSTM
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
from ._registry import check_model_size as check_model_size
from ._restore import bicubic_upscale as bicubic_upscale
from ._restore import neighbour_blend as neighbour_blend
from ._tsm import TSM
from ._tsn import TSN
from ._tsn import consensus as consensus
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


def __getattr__(name: str):
    return moved_attribute(__name__, name)
