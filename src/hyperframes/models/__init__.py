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
from ._audiovisual import AudioVisual, AudioVisualFusion, as_audiovisual  # registers av_*
from ._base import (
    LAYOUTS,
    STAGE_PROBE,
    Keyframes,
    VideoModel,
    as_keyframes,
    other_frames_refusal,
    stage_match,
    to_layout,
)
from ._channel import ChannelFusion, inflate_conv2d
from ._cnn3d import R2Plus1DTiny, TorchvisionVideo
from ._detection import MAX_DETECTIONS as MAX_DETECTIONS  # for the task and infer, not public
from ._detection import ChannelDetector  # registers fcos_channel
from ._detection import anchor_levels as anchor_levels
from ._detection import decode_detections as decode_detections
from ._detection import detection_head as detection_head
from ._detection import split_output as split_output
from ._keyframe import Aggregator, KeyframeSegmenter, UNet, aux_weight
from ._lstm import CNNLSTM
from ._mae import MaskedVideoAutoencoder, patchify, tube_mask, unpatchify  # video_mae
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
from ._registry import (
    ModelInfo,
    ModelSpec,
    check_model_size,
    create,
    describe,
    get_spec,
    list_models,
    register_model,
)
from ._restore import bicubic_upscale, neighbour_blend  # registers frame_unet, frame_sr
from ._transformer import VideoTransformer
from ._tsm import TSM, TemporalShiftConv2d, temporal_shift
from ._tsn import TSN, consensus
from ._weights import LoadReport, inflate_weight, load_pretrained, read_state_dict

#: ``hyperframes.models.list()`` -- the registered names. Kept out of ``__all__`` so that
#: ``from hyperframes.models import *`` does not shadow the builtin ``list``.
list = list_models

__all__ = [
    "CNNLSTM",
    "LAYOUTS",
    "STAGE_PROBE",
    "TSM",
    "TSN",
    "Aggregator",
    "AudioVisual",
    "AudioVisualFusion",
    "ChannelDetector",
    "ChannelFusion",
    "KeyframeSegmenter",
    "Keyframes",
    "LoadReport",
    "MaskedVideoAutoencoder",
    "ModelInfo",
    "ModelSpec",
    "R2Plus1DTiny",
    "TemporalShiftConv2d",
    "TorchvisionVideo",
    "UNet",
    "VideoModel",
    "VideoTransformer",
    "as_audiovisual",
    "as_keyframes",
    "aux_weight",
    "bicubic_upscale",
    "check_model_size",
    "consensus",
    "create",
    "describe",
    "get_spec",
    "inflate_conv2d",
    "inflate_weight",
    "list_models",
    "load_pretrained",
    "neighbour_blend",
    "other_frames_refusal",
    "patchify",
    "read_state_dict",
    "register_model",
    "stage_match",
    "temporal_shift",
    "to_layout",
    "tube_mask",
    "unpatchify",
]
