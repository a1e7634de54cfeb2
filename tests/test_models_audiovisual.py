"""The audio-visual model: a log-mel plane beside each frame on the channel axis (the generic
forward/backward/determinism/bf16/checkpointing/ONNX tests run it from the registry)."""

from __future__ import annotations

import pytest
import torch
import torchvision
from torch.nn import functional as F

from hyperframes import DataError
from hyperframes import models as M
from hyperframes.models._audiovisual import AudioVisualFusion, fuse_conv_weight

NAME = "av_channel_resnet18"
T, K, MELS, SIZE = 4, 3, 20, 32


def _model(**kw) -> AudioVisualFusion:
    torch.manual_seed(0)
    return M.create(NAME, num_classes=5, frames=T, n_mels=MELS, columns_per_frame=K, **kw).eval()


def _input(seed: int = 0, batch: int = 2) -> M.AudioVisual:
    g = torch.Generator().manual_seed(seed)
    video = M.to_layout(torch.randn(batch, T, 3, SIZE, SIZE, generator=g), "channel")
    return M.AudioVisual(video, torch.randn(batch, MELS, T * K, generator=g))


def test_registered_as_channel_fusion_with_its_audio_shape():
    spec = M.get_spec(NAME)
    assert spec.layout == "channel" and spec.family == "channel" and spec.onnx
    assert spec.options() == ["n_mels", "columns_per_frame", "checkpointing"]
    model = _model()
    assert model.audio_shape == (MELS, T * K)
    x = model.example_input(batch=3, size=16)
    assert x.video.shape == (3, 3 * T, 16, 16) and x.audio.shape == (3, MELS, T * K)


def test_each_frame_gets_its_own_columns_as_one_more_channel():
    model = _model()
    x = _input()
    fused = model.fuse(x)
    assert fused.shape == (2, T * 4, SIZE, SIZE)
    bn = model.audio_norm  # fresh, in eval: x / sqrt(1 + eps)
    scale = 1 / (1 + bn.eps) ** 0.5
    for f in range(T):
        torch.testing.assert_close(fused[:, 4 * f : 4 * f + 3], x.video[:, 3 * f : 3 * f + 3])
        patch = x.audio[:, None, :, f * K : (f + 1) * K] * scale
        plane = F.interpolate(patch, size=(SIZE, SIZE), mode="bilinear", align_corners=False)
        torch.testing.assert_close(fused[:, 4 * f + 3], plane[:, 0])


def test_audio_and_its_timing_change_the_answer():
    model = _model()
    x = _input()
    with torch.no_grad():
        # at the start every frame's kernels are equal (as in channel_resnet18), so the order of
        # frames cannot matter yet; trained kernels differ per frame
        model.backbone.conv1.weight.add_(0.05 * torch.randn(model.backbone.conv1.weight.shape))
        base = model(x)
        other = model(M.AudioVisual(x.video, torch.randn(x.audio.shape)))
        order = torch.arange(T * K).reshape(T, K).flip(0).reshape(-1)  # frames' columns reversed
        moved = model(M.AudioVisual(x.video, x.audio[:, :, order]))
    assert not torch.allclose(base, other) and not torch.allclose(base, moved)


def test_starts_as_the_2d_network_on_identical_frames_and_silence():
    model = _model()
    frame = torch.randn(2, 3, SIZE, SIZE, generator=torch.Generator().manual_seed(3))
    clip = M.AudioVisual(frame.repeat(1, T, 1, 1), torch.zeros(2, MELS, T * K))
    net = torchvision.models.resnet18(weights=None, num_classes=5).eval()
    state = {k: v for k, v in model.backbone.state_dict().items() if k != "conv1.weight"}
    state["conv1.weight"] = model.backbone.conv1.weight[:, :3] * T
    net.load_state_dict(state)
    with torch.no_grad():
        torch.testing.assert_close(model(clip), net(frame), rtol=1e-4, atol=1e-5)


def test_2d_pretrained_weights_are_fused(tmp_path):
    torch.manual_seed(1)
    src = torchvision.models.resnet18(weights=None).state_dict()  # 1000 classes
    path = tmp_path / "r18.pth"
    torch.save(src, path)
    torch.manual_seed(0)
    model = M.create(NAME, num_classes=5, frames=T, pretrained=path)
    report = model.pretrained_report
    assert set(report.skipped) == {"backbone.fc.weight", "backbone.fc.bias"}
    assert {k for k in report.initialised if not k.startswith("backbone.fc.")} == {
        "audio_norm.weight",
        "audio_norm.bias",
        "audio_norm.running_mean",
        "audio_norm.running_var",
        "audio_norm.num_batches_tracked",
    }
    want = fuse_conv_weight(src["conv1.weight"], T)
    assert torch.equal(model.backbone.conv1.weight, want)
    assert torch.equal(model.backbone.layer1[0].conv1.weight, src["layer1.0.conv1.weight"])


def test_input_forms_and_errors():
    model = _model()
    x = _input()
    with torch.no_grad():
        want = model(x)
        assert torch.equal(model((x.video, x.audio)), want)
        assert torch.equal(model({"video": x.video, "audio": x.audio}), want)
    with pytest.raises(DataError, match=r"Video alone is not enough"):
        model(x.video)
    with pytest.raises(DataError, match=r"keys \['frames'\]; expected 'video' and 'audio'"):
        model({"frames": x.video})
    with pytest.raises(DataError, match=r"audio must be a \(2, n_mels=20, T\*k=4\*3=12\)"):
        model(M.AudioVisual(x.video, x.audio[:, :, :-1]))
    with pytest.raises(DataError, match=r"video must be the channel layout \(B, 3\*4=12, H, W\)"):
        model(M.AudioVisual(x.video[:, :-3], x.audio))
