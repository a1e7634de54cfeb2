"""Dense tasks complete (issue 38 item 3): masks for every frame of a predicted stream (mirror
padding at its ends), crop and scale for segmentation windows and their masks together, a
channel-layout segmentation model, and the keyframe models' options."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from hyperframes import ConfigError, models
from hyperframes.demo._synthetic import make_segmentation_frames
from hyperframes.infer import InputContract, Predictor
from hyperframes.models._base import Keyframes

T = 4


def _seg_predictor(name: str = "keyframe_unet", frames: int = T, **options) -> Predictor:
    torch.manual_seed(0)
    model = models.create(name, num_classes=2, frames=frames, base_width=4, depth=2)
    contract = InputContract(frames=frames, layout=model.layout, size=None)
    return Predictor(model, contract, ("background", "moving"), **options)


@pytest.fixture(scope="module")
def seg_clip():
    frames, masks = make_segmentation_frames(frames=9, size=16, rng=np.random.default_rng(1))
    return frames, masks


def _run(p: Predictor, frames) -> list:
    out = []
    for i, rgb in enumerate(frames):
        out += p.push(rgb, i / 10)
    return out + p.flush()


@pytest.mark.parametrize("stride", [1, 2])
def test_every_frame_gets_a_mask_by_mirror_padding(seg_clip, stride):
    frames, _ = seg_clip
    preds = _run(_seg_predictor(stride=stride), frames)
    keys = [p.key_source_frame for p in preds]
    # key frames from 0 on, S apart, and the last frame's own
    assert keys[0] == 0 and keys[-1] == len(frames) - 1
    assert sorted(set(keys)) == keys  # in frame order, each once
    if stride == 1:
        assert keys == list(range(len(frames)))
    first, last = preds[0], preds[-1]
    # frame -2 is frame 2, -1 is 1; after the last (8): 9 is 7
    assert first.source_frames == (2, 1, 0, 1) and first.mirrored and not first.padded
    assert last.source_frames == (6, 7, 8, 7) and last.mirrored
    assert first.mask is not None and first.mask.shape == (16, 16)
    assert first.first_source_frame == 0 and first.start_seconds == 0.0
    assert not any(p.mirrored for p in preds if 2 <= p.key_source_frame <= 6)
    assert first.to_dict()["mirrored"] is True


def test_a_mirrored_window_is_the_model_on_the_mirrored_frames(seg_clip):
    frames, _ = seg_clip
    p = _seg_predictor()
    first = _run(p, frames)[0]
    window = torch.from_numpy(frames[[2, 1, 0, 1]]).permute(0, 3, 1, 2)[None]
    with torch.inference_mode():
        want = p.model(p.contract.prepare(window))[0]
    np.testing.assert_allclose(first.logits, want.numpy(), rtol=1e-5, atol=1e-5)


def test_classification_windows_are_not_mirrored(seg_clip):
    frames, _ = seg_clip
    torch.manual_seed(0)
    model = models.create("cnn_lstm", num_classes=2, frames=T)
    p = Predictor(model, InputContract(frames=T, layout=model.layout, size=None), ("a", "b"))
    preds = _run(p, frames)
    assert [pr.first_source_frame for pr in preds] == list(range(len(frames) - T + 1))
    assert not any(pr.mirrored for pr in preds)


# -- the models' options ---------------------------------------------------------------


def _keyframes(frames: int = T, size: int = 16):
    g = torch.Generator().manual_seed(3)
    context = torch.rand(2, frames, 3, size, size, generator=g)
    return Keyframes(context[:, frames // 2], context)


def test_channel_attention_gates_h_t_per_channel():
    torch.manual_seed(0)
    kw = {"num_classes": 2, "frames": T, "base_width": 4, "depth": 2, "hidden_channels": 6}
    model = models.create("keyframe_unet", attention=True, **kw).eval()
    x = _keyframes()
    with torch.no_grad():
        raw = model.aggregator(x.context)
        gated = model.hidden(x)
        weights = model.gate.weights(raw)
    assert weights.shape == (2, 6, 1, 1) and ((weights > 0) & (weights < 1)).all()
    torch.testing.assert_close(gated, raw * weights)  # one weight per clip and channel
    assert model(x).shape == (2, 2, 16, 16)
    assert models.create("keyframe_unet", **kw).gate is None  # off by default


def test_keyframe_norm_option_normalises_each_clip_by_its_own():
    from hyperframes.train import load_config

    torch.manual_seed(0)
    model = models.create("keyframe_unet", num_classes=2, frames=T, norm="group").train()
    kinds = {type(m) for m in model.aggregator.modules()}
    assert torch.nn.GroupNorm in kinds and not kinds & {torch.nn.BatchNorm2d, torch.nn.BatchNorm3d}
    # train mode: a clip's H_t does not depend on the other clips of its batch
    x = _keyframes()
    with torch.no_grad():
        alone = model.hidden(Keyframes(x.key[:1], x.context[:1]))
        torch.testing.assert_close(alone, model.hidden(x)[:1])
    cfg = load_config({"data": {"store": "s"}, "model": {"name": "keyframe_unet", "norm": "layer"}})
    assert cfg.model.norm == "layer"


def test_torchvision_3d_cnn_takes_a_norm():
    with torch.device("meta"):  # shapes only: the full-size network is slow to initialise
        model = models.create("r3d_18", num_classes=2, frames=T, norm="layer")
        assert model(torch.zeros(1, 3, T, 16, 16)).shape == (1, 2)
    assert not any(isinstance(m, torch.nn.BatchNorm3d) for m in model.modules())
    assert sum(isinstance(m, torch.nn.GroupNorm) for m in model.modules()) > 10


def test_channel_dropout_option():
    x = torch.rand(1, 3 * T, 16, 16)
    torch.manual_seed(0)
    model = models.create("channel_resnet18", num_classes=2, frames=T, dropout=0.5).train()
    assert model.dropout.p == 0.5
    with torch.device("meta"):
        plain = models.create("channel_resnet18", num_classes=2, frames=T)
        mobile = models.create("channel_mobilenet_v3_small", num_classes=2, frames=T, dropout=0.1)
    # the same checkpoint keys: dropout has no weights
    assert plain.dropout is None and set(plain.state_dict()) == set(model.state_dict())
    assert mobile.backbone.classifier[2].p == 0.1
    model.eval()
    with torch.no_grad():
        torch.testing.assert_close(model(x), model(x))  # no dropout in eval
    with pytest.raises(ConfigError, match=r"dropout must be a number with 0 <= dropout < 1"):
        models.create("channel_resnet18", num_classes=2, frames=T, dropout=1.5)
