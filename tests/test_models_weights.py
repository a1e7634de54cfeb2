"""Pretrained weights from local files: mapping into every family, and clear refusals."""

from __future__ import annotations

import pytest
import torch
import torchvision

from hyperframes import ConfigError
from hyperframes import models as M
from hyperframes.models._tsm import TemporalShiftConv2d
from hyperframes.models._weights import inflate_weight, read_state_dict


@pytest.fixture(scope="module")
def resnet18_file(tmp_path_factory):
    """A torchvision ResNet-18 state dict (1000 classes) saved by the test itself."""
    torch.manual_seed(42)
    net = torchvision.models.resnet18(weights=None)
    path = tmp_path_factory.mktemp("weights") / "resnet18.pth"
    torch.save(net.state_dict(), path)
    return path, net.state_dict()


def _create(name, **kw):
    torch.manual_seed(0)
    kw.setdefault("num_classes", 3)
    kw.setdefault("frames", 4)
    return M.create(name, **kw)


def test_channel_model_inflates_saved_resnet18(resnet18_file):
    path, sd = resnet18_file
    model = _create("channel_resnet18", pretrained=path)
    conv = model.backbone.conv1.weight
    assert conv.shape == (64, 12, 7, 7)
    torch.testing.assert_close(conv, sd["conv1.weight"].repeat(1, 4, 1, 1) / 4)
    torch.testing.assert_close(model.backbone.layer3[1].conv2.weight, sd["layer3.1.conv2.weight"])
    torch.testing.assert_close(model.backbone.bn1.running_var, sd["bn1.running_var"])
    report = model.pretrained_report
    assert report.skipped == ["backbone.fc.weight", "backbone.fc.bias"]  # 1000 vs 3 classes
    assert report.initialised == ["backbone.fc.weight", "backbone.fc.bias"]


def test_same_class_count_loads_the_head_too(resnet18_file):
    path, sd = resnet18_file
    model = _create("channel_resnet18", num_classes=1000, pretrained=path)
    torch.testing.assert_close(model.backbone.fc.weight, sd["fc.weight"])
    assert model.pretrained_report.initialised == []


@pytest.mark.parametrize(
    ("name", "prefix"),
    [
        ("tsm_resnet18", "backbone.net."),
        ("tsn_resnet18", "backbone.net."),
        ("lstm_resnet18", "encoder.net."),
    ],
)
def test_per_frame_and_shifted_models_take_2d_weights(resnet18_file, name, prefix):
    path, sd = resnet18_file
    model = _create(name, pretrained=path)
    own = model.state_dict()
    for key in ("conv1.weight", "layer1.0.conv1.weight", "layer4.1.bn2.bias"):
        torch.testing.assert_close(own[prefix + key], sd[key])
    if name == "tsm_resnet18":  # the shifted convs hold the plain weights
        conv = model.backbone.net.layer2[0].conv1
        assert isinstance(conv, TemporalShiftConv2d)
        torch.testing.assert_close(conv.weight, sd["layer2.0.conv1.weight"])


def test_mobilenet_weights_into_channel_and_tsn(tmp_path):
    torch.manual_seed(3)
    net = torchvision.models.mobilenet_v3_small(weights=None)
    path = tmp_path / "mnv3.pt"
    torch.save(net.state_dict(), path)
    sd = net.state_dict()
    ch = _create("channel_mobilenet_v3_small", frames=2, pretrained=path)
    torch.testing.assert_close(
        ch.backbone.features[0][0].weight, sd["features.0.0.weight"].repeat(1, 2, 1, 1) / 2
    )
    torch.testing.assert_close(ch.backbone.classifier[0].weight, sd["classifier.0.weight"])
    tsn = _create("tsn_mobilenet_v3_small", pretrained=path)
    torch.testing.assert_close(
        tsn.backbone.net.features[3].block[0][0].weight, sd["features.3.block.0.0.weight"]
    )


def test_video_weights_into_3d_model(tmp_path):
    torch.manual_seed(4)
    net = torchvision.models.video.mc3_18(weights=None, num_classes=400)
    path = tmp_path / "mc3.pth"
    torch.save(net.state_dict(), path)
    model = _create("mc3_18", pretrained=path)
    torch.testing.assert_close(model.backbone.stem[0].weight, net.stem[0].weight)
    assert model.pretrained_report.skipped == ["backbone.fc.weight", "backbone.fc.bias"]


def test_hyperframes_checkpoint_round_trip(tmp_path):
    for name in ("channel_resnet18", "keyframe_unet", "video_vit_tiny"):
        torch.manual_seed(5)
        trained = M.create(name, num_classes=3, frames=4).eval()
        path = tmp_path / f"{name}.ckpt"
        torch.save({"model": trained.state_dict(), "step": 10, "name": name}, path)
        torch.manual_seed(6)
        loaded = M.create(name, num_classes=3, frames=4, pretrained=path).eval()
        x = trained.example_input(batch=2, size=32)
        with torch.no_grad():
            torch.testing.assert_close(loaded(x), trained(x), rtol=0, atol=0)


def test_wrapper_prefixes_are_stripped(tmp_path, resnet18_file):
    _, sd = resnet18_file
    path = tmp_path / "ddp.pth"
    torch.save({"state_dict": {f"module.{k}": v for k, v in sd.items()}}, path)
    model = _create("tsn_resnet18", pretrained=path)
    torch.testing.assert_close(model.backbone.net.conv1.weight, sd["conv1.weight"])


def test_missing_file_names_the_path(tmp_path):
    path = tmp_path / "nowhere" / "r18.pth"
    with pytest.raises(ConfigError, match="not found") as err:
        _create("channel_resnet18", pretrained=path)
    assert str(path) in str(err.value)


def test_wrong_architecture_lists_keys(tmp_path):
    net = torchvision.models.mobilenet_v3_small(weights=None)
    path = tmp_path / "mnv3.pth"
    torch.save(net.state_dict(), path)
    with pytest.raises(ConfigError) as err:
        _create("channel_resnet18", pretrained=path)
    msg = str(err.value)
    assert str(path) in msg and "channel_resnet18" in msg
    assert "the model lacks (backbone.features.0.0.weight" in msg
    assert "the file lacks (backbone.conv1.weight" in msg
    assert "more" in msg  # long lists are cut


def test_mismatched_shapes_are_listed(tmp_path):
    trained = _create("channel_resnet18", frames=4)
    path = tmp_path / "t4.pth"
    torch.save({"model": trained.state_dict()}, path)
    with pytest.raises(
        ConfigError,
        match=r"mismatched shapes \(backbone\.conv1\.weight: "
        r"file \[64, 12, 7, 7\] vs model \[64, 24, 7, 7\]",
    ):
        _create("channel_resnet18", frames=8, pretrained=path)


def test_unreadable_or_unsafe_files(tmp_path):
    junk = tmp_path / "junk.pth"
    junk.write_bytes(b"not a checkpoint at all")
    with pytest.raises(ConfigError, match="cannot read"):
        _create("cnn_lstm", pretrained=junk)
    tensor = tmp_path / "tensor.pth"
    torch.save(torch.zeros(3), tensor)
    with pytest.raises(ConfigError, match="holds no state dict"):
        _create("cnn_lstm", pretrained=tensor)
    pickled = tmp_path / "pickled.pth"
    torch.save({"model": _Opaque()}, pickled)  # arbitrary objects are refused
    with pytest.raises(ConfigError, match="cannot read"):
        _create("cnn_lstm", pretrained=pickled)


class _Opaque:
    pass


def test_read_state_dict_and_inflate_weight_directly(resnet18_file):
    path, sd = resnet18_file
    got = read_state_dict(path)
    assert got.keys() == sd.keys()
    w = torch.randn(4, 3, 3, 3)
    inflated = inflate_weight(w, 5)
    assert inflated.shape == (4, 15, 3, 3)
    torch.testing.assert_close(inflated.reshape(4, 5, 3, 3, 3).sum(1), w)
