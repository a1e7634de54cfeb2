"""Every registered model, tested from the registry: forward, backward, shapes, determinism,
bf16 autocast, gradient checkpointing, ONNX export -- plus the registry's own behaviour."""

from __future__ import annotations

import copy
import math
import warnings

import pytest
import torch

from hyperframes import ConfigError
from hyperframes import models as M
from hyperframes.models._base import LAYOUTS, Keyframes, as_keyframes

NUM_CLASSES = 3
FRAMES = 4
BATCH = 2
SIZE = 32

ALL = M.list()


def _spec(name: str) -> M.ModelSpec:
    spec = M.get_spec(name)
    if not spec.available:
        pytest.skip(f"{name} needs {', '.join(spec.requires)}")
    return spec


def _create(name: str, seed: int = 0, **kw) -> torch.nn.Module:
    _spec(name)
    torch.manual_seed(seed)
    return M.create(name, num_classes=NUM_CLASSES, frames=FRAMES, **kw)


def _input(model, seed: int = 1):
    g = torch.Generator().manual_seed(seed)
    return model.example_input(batch=BATCH, size=SIZE, generator=g)


def _expected_shape(model) -> tuple[int, ...]:
    if model.task == "segmentation":
        return (BATCH, NUM_CLASSES, SIZE, SIZE)
    if model.task == "masked_video":  # every patch predicted, and the mask column
        p = model.encoder.patch_size
        return (BATCH, FRAMES * (SIZE // p) ** 2, p * p * 3 + 1)
    if model.task == "detection":  # per location: class logits, 4 + 1 box columns, anchor
        anchors = sum((SIZE // s) ** 2 for s in (4, 8))
        return (BATCH, anchors, NUM_CLASSES + 9)
    if model.task in ("interpolation", "super_resolution"):  # an RGB frame, upscaled for SR
        side = SIZE * getattr(model, "scale", 1)
        return (BATCH, 3, side, side)
    return (BATCH, NUM_CLASSES)


def _loss(model, x) -> torch.Tensor:
    """A loss reaching every parameter (keyframe models: their auxiliary head too)."""
    if hasattr(model, "forward_with_aux"):
        out, aux = model.forward_with_aux(x)
        return out.float().square().mean() + aux.float().square().mean()
    return model(x).float().square().mean()


_cache: dict[str, tuple[torch.nn.Module, object]] = {}


def _built(name: str):
    """One (model, input) per name for the read-only tests (creation is the slow part)."""
    _spec(name)
    if name not in _cache:
        model = _create(name).eval()
        _cache[name] = (model, _input(model))
    return _cache[name]


@pytest.fixture(scope="module", autouse=True)
def _drop_cache():
    yield
    _cache.clear()


# -- every registered model -------------------------------------------------------------


@pytest.mark.parametrize("name", ALL)
def test_layout_and_example_input(name):
    model, x = _built(name)
    assert model.layout in LAYOUTS
    assert model.layout == M.get_spec(name).layout
    assert model.frames == FRAMES and model.num_classes == NUM_CLASSES
    assert model.registry_name == name
    t, c = FRAMES, 3
    if isinstance(x, M.AudioVisual):  # the layout is the video part's; audio is (B, mels, T*k)
        assert x.audio.shape == (BATCH, model.n_mels, t * model.columns_per_frame)
        x = x.video
    if model.layout == "temporal":
        assert x.shape == (BATCH, t, c, SIZE, SIZE)
    elif model.layout == "channel":
        assert x.shape == (BATCH, c * t, SIZE, SIZE)
    elif model.layout == "conv3d":
        assert x.shape == (BATCH, c, t, SIZE, SIZE)
    else:
        assert isinstance(x, Keyframes)
        assert x.key.shape == (BATCH, c, SIZE, SIZE)
        assert x.context.shape == (BATCH, t, c, SIZE, SIZE)
        assert torch.equal(x.key, x.context[:, t // 2])


@pytest.mark.parametrize("name", ALL)
def test_forward_backward(name):
    fresh, x = _built(name)
    model = copy.deepcopy(fresh).train()
    out = model(x)
    assert out.shape == _expected_shape(model)
    assert out.dtype == torch.float32
    assert torch.isfinite(out).all()
    _loss(model, x).backward()
    for pname, p in model.named_parameters():
        assert p.grad is not None, f"{name}: no gradient for {pname}"
        assert torch.isfinite(p.grad).all(), f"{name}: non-finite gradient for {pname}"


@pytest.mark.parametrize("name", ALL)
def test_deterministic_under_seed(name):
    model, x = _built(name)
    twin = _create(name).eval()
    with torch.no_grad():
        assert torch.equal(model(x), twin(x))


def test_seed_matters():
    a, b = _create("cnn_lstm", seed=1).eval(), _create("cnn_lstm", seed=2).eval()
    x = _input(a)
    with torch.no_grad():
        assert not torch.equal(a(x), b(x))


@pytest.mark.parametrize("name", ALL)
def test_create_checkpointing_option(name):
    _spec(name)
    with torch.device("meta"):  # instant: no weights are initialised
        assert M.create(name, checkpointing=True).checkpointing is True
        assert M.create(name).checkpointing is False


@pytest.mark.parametrize("name", ALL)
def test_autocast_bf16(name):
    model, x = _built(name)
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
        out = model(x)
    assert out.shape == _expected_shape(model)
    assert torch.isfinite(out.float()).all()


@pytest.mark.parametrize("name", ALL)
def test_checkpointing_same_outputs_and_grads(name):
    fresh, x = _built(name)
    plain = copy.deepcopy(fresh).train()
    ckpt = copy.deepcopy(fresh).train()
    ckpt.checkpointing = True
    torch.manual_seed(7)  # same dropout masks in both
    a = plain(x)
    torch.manual_seed(7)
    b = ckpt(x)
    torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
    torch.manual_seed(7)
    _loss(plain, x).backward()
    torch.manual_seed(7)
    _loss(ckpt, x).backward()
    grads = dict(ckpt.named_parameters())
    for pname, p in plain.named_parameters():
        torch.testing.assert_close(p.grad, grads[pname].grad, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("name", ALL)
def test_full_mask_is_no_mask(name):
    model, x = _built(name)
    mask = torch.ones(BATCH, FRAMES, dtype=torch.bool)
    with torch.no_grad():
        torch.testing.assert_close(model(x, mask=mask), model(x), rtol=1e-5, atol=1e-6)


def _flat_inputs(x) -> list[torch.Tensor]:
    return list(x) if isinstance(x, tuple) else [x]


@pytest.mark.parametrize("name", ALL)
def test_onnx_export_matches(name, tmp_path):
    ort = pytest.importorskip("onnxruntime")
    spec = _spec(name)
    if not spec.onnx:
        pytest.skip(f"{name}: its family does not export to ONNX")
    model, x = _built(name)
    # what export_onnx writes: a masked-video model's encoder on every token
    model = model.export_graph() if hasattr(model, "export_graph") else model
    path = tmp_path / f"{name}.onnx"
    with warnings.catch_warnings():
        # The TorchScript exporter is quick; torch flags it as legacy. One model is also
        # checked with the dynamo exporter in test_models_families.
        warnings.filterwarnings("ignore", category=DeprecationWarning, message=".*legacy.*")
        warnings.filterwarnings("ignore", category=torch.jit.TracerWarning)
        torch.onnx.export(model, (x,), str(path), dynamo=False)
    opts = ort.SessionOptions()
    opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
    sess = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
    feeds = {i.name: t.numpy() for i, t in zip(sess.get_inputs(), _flat_inputs(x))}
    (got,) = sess.run(None, feeds)
    with torch.no_grad():
        want = model(x).numpy()
    assert got.shape == want.shape
    assert abs(got - want).max() < 1e-4


# -- the registry itself ----------------------------------------------------------------


def test_list_and_filters():
    assert M.list is M.list_models
    names = M.list()
    assert len(names) == len(set(names)) >= 15
    for layout in LAYOUTS:
        sub = M.list(layout=layout)
        assert sub, layout
        assert all(M.get_spec(n).layout == layout for n in sub)
    assert set(M.list(task="segmentation")) == {
        "keyframe_unet",
        "keyframe_unet_add",
        "channel_unet",
    }
    assert M.list(family="tsm") == ["tsm_resnet18", "tsm_resnet50"]
    with pytest.raises(ConfigError, match="unknown layout"):
        M.list(layout="nope")


def test_every_family_is_registered():
    families = {M.get_spec(n).family for n in M.list()}
    assert families >= {"channel", "tsn", "tsm", "cnn3d", "transformer", "lstm", "keyframe"}
    for name in ("r3d_18", "r2plus1d_18", "mc3_18", "s3d", "r2plus1d_tiny"):
        assert M.get_spec(name).layout == "conv3d"


def test_describe_rows():
    rows = M.describe()
    assert [r.name for r in rows] == M.list()
    for row in rows:
        name, layout, params = row[:3]
        assert layout == M.get_spec(name).layout
        if row.available:
            assert isinstance(params, int) and params > 0, name
        else:
            assert params is None
    by_name = {r.name: r for r in rows}
    assert by_name["r2plus1d_tiny"].params < by_name["r3d_18"].params


def test_unknown_name_and_options():
    with pytest.raises(ConfigError, match="did you mean tsm_resnet18 or "):
        M.create("tsm_resnet81")
    with pytest.raises(ConfigError, match=r"no option.*'depthh'.*base_width"):
        M.create("r2plus1d_tiny", depthh=3)
    with pytest.raises(ConfigError, match="num_classes"):
        M.create("cnn_lstm", num_classes=0)
    with pytest.raises(ConfigError, match="frames"):
        M.create("cnn_lstm", frames=2.5)
    with pytest.raises(ConfigError, match="consensus"):
        M.create("tsn_resnet18", consensus="max")


def test_register_model_decorator():
    name = "test_only_tiny_channel"

    @M.register_model(name, layout="channel", family="test")
    def build(num_classes: int, frames: int, width: int = 4):
        """A test model."""
        return _TinyChannel(num_classes, frames, width)

    try:
        assert name in M.list()
        spec = M.get_spec(name)
        assert spec.summary == "A test model." and spec.family == "test"
        model = M.create(name, num_classes=5, frames=2, width=3)
        assert model.registry_name == name
        assert model(model.example_input(batch=2, size=8)).shape == (2, 5)
        with pytest.raises(ConfigError, match="already registered"):
            M.register_model(name, layout="channel")(build)
    finally:
        M._registry._REGISTRY.pop(name)
    with pytest.raises(ConfigError, match="unknown layout"):
        M.register_model("x", layout="spatial")
    with pytest.raises(ConfigError, match="unknown task"):
        M.register_model("x", layout="channel", task="tracking")


def test_registered_layout_must_match_module():
    name = "test_only_wrong_layout"
    M.register_model(name, layout="conv3d")(lambda num_classes, frames: _TinyChannel(1, 1, 1))
    try:
        with pytest.raises(ConfigError, match="registered with layout 'conv3d'"):
            M.create(name)
    finally:
        M._registry._REGISTRY.pop(name)


class _TinyChannel(M.VideoModel):
    layout = "channel"

    def __init__(self, num_classes, frames, width):
        super().__init__(num_classes, frames)
        self.conv = torch.nn.Conv2d(3 * frames, width, 3)
        self.fc = torch.nn.Linear(width, num_classes)

    def forward(self, x, mask=None):
        return self.fc(self.conv(x).mean((2, 3)))


def test_to_layout_round_trip():
    x = torch.arange(2 * 3 * 3 * 2 * 2, dtype=torch.float32).reshape(2, 3, 3, 2, 2)
    ch = M.to_layout(x, "channel")
    assert ch.shape == (2, 9, 2, 2)
    assert torch.equal(ch[:, 3:6], x[:, 1])  # frame-major: frame 1 is channels 3..5
    c3 = M.to_layout(x, "conv3d")
    assert torch.equal(c3[:, :, 2], x[:, 2])
    kf = M.to_layout(x, "keyframe")
    assert torch.equal(kf.key, x[:, 1]) and kf.context is x
    assert as_keyframes({"key": kf.key, "context": x}) == kf
    assert as_keyframes((kf.key, x)) == kf
    with pytest.raises(ConfigError):
        M.to_layout(x, "planar")


def test_aux_weight_smoke():
    assert M.aux_weight(0, 10) == 1.0
    assert math.isclose(M.aux_weight(5, 10), 0.5)
