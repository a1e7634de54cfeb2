"""What each model family promises beyond the registry-wide checks."""

from __future__ import annotations

import itertools
import math
import warnings

import pytest
import torch
import torchvision
from torch import nn

from hyperframes import ConfigError, DataError
from hyperframes import models as M
from hyperframes.models._base import Keyframes
from hyperframes.models._channel import inflate_conv2d
from hyperframes.models._tsm import TemporalShiftConv2d, temporal_shift


def _make(name: str, seed: int = 0, frames: int = 4, num_classes: int = 3, **kw):
    torch.manual_seed(seed)
    return M.create(name, num_classes=num_classes, frames=frames, **kw).eval()


def _clip(b=2, t=4, size=32, seed=1):
    return torch.randn(b, t, 3, size, size, generator=torch.Generator().manual_seed(seed))


# -- channel (early fusion) -------------------------------------------------------------


def test_inflated_conv_on_identical_frames_equals_original_conv():
    torch.manual_seed(0)
    conv = nn.Conv2d(3, 8, 7, stride=2, padding=3, bias=True)
    for frames in (1, 4, 7):
        inflated = inflate_conv2d(conv, frames)
        assert inflated.in_channels == 3 * frames
        frame = torch.randn(2, 3, 20, 20)
        same = frame.repeat(1, frames, 1, 1)  # T identical frames, frame-major
        torch.testing.assert_close(inflated(same), conv(frame), rtol=1e-5, atol=1e-5)


def test_channel_model_starts_inflated_and_answers_like_2d_on_static_clip():
    model = _make("channel_resnet18")
    w = model.backbone.conv1.weight
    assert w.shape == (64, 12, 7, 7)
    for t in range(1, 4):  # every frame slice is the same 3-channel kernel
        torch.testing.assert_close(w[:, 3 * t : 3 * t + 3], w[:, :3])
    # On a static clip the network answers as the 2D network with the summed kernel.
    net2d = torchvision.models.resnet18(weights=None, num_classes=3).eval()
    sd = {k[len("backbone.") :]: v for k, v in model.state_dict().items()}
    sd["conv1.weight"] = w[:, :3] * 4
    net2d.load_state_dict(sd)
    frame = torch.randn(2, 3, 32, 32)
    with torch.no_grad():
        torch.testing.assert_close(
            model(frame.repeat(1, 4, 1, 1)), net2d(frame), rtol=1e-4, atol=1e-5
        )


def test_channel_mobilenet_first_conv_inflated():
    model = _make("channel_mobilenet_v3_small", frames=3)
    assert model.backbone.features[0][0].in_channels == 9


def test_channel_rejects_wrong_layout():
    model = _make("channel_resnet18")
    with pytest.raises(DataError, match="channel layout"):
        model(_clip())  # temporal input
    with pytest.raises(DataError, match="channel layout"):
        model(torch.randn(2, 9, 32, 32))  # 3 frames, model built for 4


def test_channel_timm_backbone():
    pytest.importorskip("timm")
    model = _make("channel_timm", backbone="resnet18")
    x = model.example_input(batch=2, size=32)
    assert x.shape == (2, 12, 32, 32)
    assert model(x).shape == (2, 3)


def test_channel_timm_missing_is_a_clear_error(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda n, *a: None if n == "timm" else real(n, *a)
    )
    assert not M.get_spec("channel_timm").available
    with pytest.raises(ConfigError, match=r"pip install 'hyperframes-video\[timm\]'"):
        M.create("channel_timm")


# -- TSN (late fusion) ------------------------------------------------------------------


@pytest.mark.parametrize("consensus", ["avg", "attention"])
def test_tsn_mask_equals_dropping_padded_frames(consensus):
    model = _make("tsn_mobilenet_v3_small", consensus=consensus)
    x = _clip()
    mask = torch.tensor([[True, True, True, False], [True, True, False, False]])
    with torch.no_grad():
        out = model(x, mask=mask)
        for i, n in enumerate((3, 2)):  # per-frame model: padded frames simply vanish
            alone = model(x[i : i + 1, :n])
            torch.testing.assert_close(out[i : i + 1], alone, rtol=1e-5, atol=1e-6)


def test_tsn_consensus_weights():
    scores = torch.tensor([[[1.0], [3.0], [100.0]]])
    mask = torch.tensor([[True, True, False]])
    assert M._tsn.consensus(scores, mask).item() == 2.0
    att = torch.tensor([[0.0, math.log(3.0), 50.0]])  # weights 1/4, 3/4 after masking
    assert M._tsn.consensus(scores, mask, att).item() == pytest.approx(2.5)
    empty = torch.zeros(1, 3, dtype=torch.bool)  # no valid frame: zeros, not NaN
    assert M._tsn.consensus(scores, empty, att).item() == 0.0
    assert M._tsn.consensus(scores, empty).item() == 0.0


def test_tsn_attention_has_its_own_parameters():
    avg = _make("tsn_resnet18")
    att = _make("tsn_resnet18", consensus="attention")
    n = sum(p.numel() for p in att.parameters()) - sum(p.numel() for p in avg.parameters())
    assert n == 512 + 1


# -- TSM --------------------------------------------------------------------------------


def test_temporal_shift_moves_one_eighth_each_way_with_zero_padding():
    b, t, c = 2, 4, 16
    x = torch.arange(b * t * c, dtype=torch.float32).reshape(b, t, c, 1, 1) + 1
    y = temporal_shift(x.reshape(b * t, c, 1, 1), t).reshape(b, t, c, 1, 1)
    fold = c // 8
    assert torch.equal(y[:, :-1, :fold], x[:, 1:, :fold])  # from the next frame
    assert (y[:, -1, :fold] == 0).all()
    assert torch.equal(y[:, 1:, fold : 2 * fold], x[:, :-1, fold : 2 * fold])  # previous
    assert (y[:, 0, fold : 2 * fold] == 0).all()
    assert torch.equal(y[:, :, 2 * fold :], x[:, :, 2 * fold :])  # the rest stays


@pytest.mark.parametrize(
    ("name", "arch"), [("tsm_resnet18", "resnet18"), ("tsm_resnet50", "resnet50")]
)
def test_tsm_has_exactly_the_plain_resnet_parameters(name, arch):
    with torch.device("meta"):
        tsm = M.create(name, num_classes=7, frames=8)
        plain = getattr(torchvision.models, arch)(weights=None, num_classes=7)
    count = lambda m: sum(p.numel() for p in m.parameters())  # noqa: E731
    assert count(tsm) == count(plain)
    shifted = [m for m in tsm.modules() if isinstance(m, TemporalShiftConv2d)]
    assert len(shifted) == (8 if arch == "resnet18" else 16)  # one per residual block


def test_tsm_mixes_time_and_tsn_does_not():
    x = _clip(b=1)
    y = x.clone()
    y[:, 3] = torch.randn_like(y[:, 3])  # change the last frame only
    tsm = _make("tsm_resnet18")
    with torch.no_grad():
        frame_scores = lambda m, v: m.head(m.backbone(v.flatten(0, 1))).reshape(1, 4, -1)  # noqa: E731
        a, b = frame_scores(tsm, x), frame_scores(tsm, y)
    assert not torch.allclose(a[:, 2], b[:, 2])  # frame 2 sees frame 3 through the shift
    with pytest.raises(DataError, match="built for T=4"):
        tsm(_clip(t=6))


def test_tsm_onnx_with_dynamo_exporter(tmp_path):
    ort = pytest.importorskip("onnxruntime")
    pytest.importorskip("onnxscript")
    model = _make("tsm_resnet18", frames=2)
    x = model.example_input(batch=1, size=32)
    path = tmp_path / "tsm.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # exporter progress chatter
        torch.onnx.export(model, (x,), str(path), dynamo=True, verbose=False)
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    (got,) = sess.run(None, {sess.get_inputs()[0].name: x.numpy()})
    with torch.no_grad():
        assert abs(got - model(x).numpy()).max() < 1e-4


# -- 3D CNNs ----------------------------------------------------------------------------


def test_r2plus1d_tiny_base_width():
    small = _make("r2plus1d_tiny", base_width=4)
    big = _make("r2plus1d_tiny", base_width=8)
    count = lambda m: sum(p.numel() for p in m.parameters())  # noqa: E731
    assert count(small) < count(big)
    x = small.example_input(batch=2, size=32)
    assert x.shape == (2, 3, 4, 32, 32)
    assert small(x).shape == (2, 3)
    with pytest.raises(DataError, match="conv3d layout"):
        small(_clip())


def test_3d_cnn_is_order_sensitive():
    model = _make("r2plus1d_tiny")
    x = model.example_input(batch=1, size=32)
    with torch.no_grad():
        assert not torch.allclose(model(x), model(x.flip(2)))


# -- video transformer ------------------------------------------------------------------


@pytest.mark.parametrize("name", ["video_vit_tiny", "timesformer_tiny"])
def test_transformer_padded_frames_do_not_matter(name):
    model = _make(name)
    x = _clip()
    mask = torch.tensor([[True, True, True, False], [True, True, False, False]])
    y = x.clone()
    y[0, 3] = torch.randn_like(y[0, 3]) * 10
    y[1, 2:] = 0.0
    with torch.no_grad():
        torch.testing.assert_close(model(x, mask=mask), model(y, mask=mask), rtol=0, atol=1e-5)
        assert not torch.allclose(model(x), model(y), atol=1e-4)  # unmasked: they do


def test_transformer_embeddings_and_divided_attention():
    joint, divided = _make("video_vit_tiny"), _make("timesformer_tiny")
    for m in (joint, divided):
        assert m.pos_space.shape == (1, 1, 64, 64)  # 8x8 patches of a 64-pixel frame
        assert m.pos_time.shape == (1, 4, 1, 64)
    assert not joint.divided and divided.divided
    assert hasattr(divided.blocks[0], "attn_t") and not hasattr(joint.blocks[0], "attn_t")


def test_transformer_other_sizes_and_shorter_clips():
    model = _make("video_vit_tiny", frames=8)
    with torch.no_grad():
        assert model(_clip(t=3, size=40)).shape == (2, 3)  # resized spatial embedding
        assert model(_clip(t=9)).shape == (2, 3)  # the temporal embedding interpolated
    with pytest.raises(DataError, match="multiple of patch"):
        model(_clip(size=30))
    with pytest.raises(ConfigError, match="multiple of heads"):
        M.create("video_vit_tiny", dim=30, heads=4)


def test_transformer_is_order_sensitive():
    model = _make("timesformer_tiny")
    x = _clip()
    with torch.no_grad():
        assert not torch.allclose(model(x), model(x.flip(1)))


# -- CNN + LSTM -------------------------------------------------------------------------


def test_lstm_other_clip_length_at_inference():
    model = _make("cnn_lstm", frames=4).train()
    loss = model(_clip(t=4)).square().mean()
    loss.backward()
    model.eval()
    with torch.no_grad():
        assert model(_clip(t=9)).shape == (2, 3)
        assert model(_clip(t=1)).shape == (2, 3)


def test_lstm_mask_reads_last_valid_frame_and_stream_matches():
    model = _make("cnn_lstm")
    x = _clip(t=6)
    mask = torch.tensor([[True] * 4 + [False] * 2, [True] * 6])
    with torch.no_grad():
        out = model(x, mask=mask)
        torch.testing.assert_close(out[:1], model(x[:1, :4]), rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(out[1:], model(x[1:]), rtol=1e-5, atol=1e-6)
        logits, state = model.stream(x[:, :2])
        for i in range(2, 6, 2):
            logits, state = model.stream(x[:, i : i + 2], state)
        torch.testing.assert_close(logits, model(x), rtol=1e-5, atol=1e-6)


def test_lstm_resnet_encoder():
    model = _make("lstm_resnet18", hidden_size=32)
    assert isinstance(model.encoder, M._backbones.Backbone2D)
    with torch.no_grad():
        assert model(_clip(t=5)).shape == (2, 3)


# -- keyframe + aggregator --------------------------------------------------------------


def test_keyframe_shapes_resolution_and_input_forms():
    model = _make("keyframe_unet", num_classes=5, hidden_channels=6)
    x = M.to_layout(_clip(size=34), "keyframe")  # odd-ish size: 34 -> 17 -> 8
    with torch.no_grad():
        out = model(x)
        assert out.shape == (2, 5, 34, 34)
        h = model.hidden(x)
        assert h.shape == (2, 6, 34, 34)  # H_t aligned with K_t
        torch.testing.assert_close(model((x.key, x.context)), out)
        torch.testing.assert_close(model({"key": x.key, "context": x.context}), out)
    assert model.segmenter.inc[0].in_channels == 3 + 6  # concat[K_t, H_t]
    with pytest.raises(DataError, match="Keyframes"):
        model(x.context)
    with pytest.raises(DataError, match="does not match"):
        model((x.key[:, :, :10], x.context))


def test_keyframe_add_variant_is_three_channel_and_starts_as_identity():
    model = _make("keyframe_unet_add")
    assert model.segmenter.inc[0].in_channels == 3
    x = M.to_layout(_clip(), "keyframe")
    other = Keyframes(x.key, torch.randn_like(x.context))
    with torch.no_grad():  # zero-initialised 1x1 conv: the context cannot matter yet
        torch.testing.assert_close(model(x), model(other))
    concat = _make("keyframe_unet")
    with torch.no_grad():
        assert not torch.allclose(concat(x), concat(other))


def test_keyframe_aux_head_and_loss():
    model = _make("keyframe_unet").train()
    x = M.to_layout(_clip(), "keyframe")
    target = model.aux_target(x)
    assert torch.equal(target, x.key - x.context[:, 1])  # K_t - K_{t-1}, t = T // 2 = 2
    _, aux = model.forward_with_aux(x)
    assert aux.shape == (2, 3, 32, 32)
    loss = model.aux_loss(aux, x)
    loss.backward()
    assert model.aux_head.weight.grad is not None
    assert model.aggregator.temporal[0].weight.grad.abs().sum() > 0  # G learns from it
    assert model.segmenter.out.weight.grad is None  # F does not
    with pytest.raises(DataError, match="T >= 2"):
        model.aux_target(M.to_layout(_clip(t=1), "keyframe"))


def test_keyframe_mask_ignores_padded_context():
    model = _make("keyframe_unet")
    x = M.to_layout(_clip(t=5), "keyframe")
    mask = torch.tensor([[True] * 5, [True] * 5])
    with torch.no_grad():
        torch.testing.assert_close(model(x, mask=mask), model(x))
        h_masked = model.hidden(x, mask=torch.tensor([[True, True, True, False, False]] * 2))
        assert not torch.allclose(h_masked, model.hidden(x))


@pytest.mark.parametrize("schedule", ["linear", "cosine"])
def test_aux_weight_decays_to_zero(schedule):
    total = 100
    ws = [M.aux_weight(s, total, initial=0.5, schedule=schedule) for s in range(0, 121)]
    assert ws[0] == 0.5
    assert ws[total] == pytest.approx(0.0, abs=1e-12)
    assert all(a >= b for a, b in itertools.pairwise(ws))  # never increases
    assert all(w == pytest.approx(0.0, abs=1e-12) for w in ws[total:])
    assert 0.0 < ws[total // 2] < 0.5


def test_aux_weight_bad_arguments():
    with pytest.raises(ConfigError, match="total"):
        M.aux_weight(0, 0)
    with pytest.raises(ConfigError, match="schedule"):
        M.aux_weight(0, 10, schedule="step")
    with pytest.raises(ConfigError, match="initial"):
        M.aux_weight(0, 10, initial=-1.0)
