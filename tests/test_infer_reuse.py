"""Per-frame feature reuse reproduces the plain path exactly (max |diff| < 1e-5)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from hyperframes import ConfigError, models
from hyperframes.infer import InputContract, Predictor
from hyperframes.infer._reuse import split_model

T = 4


def _model(name, **options):
    torch.manual_seed(0)
    model = models.create(name, num_classes=5, frames=T, **options).eval()
    with torch.no_grad():  # non-trivial BatchNorm statistics, as after training
        for m in model.modules():
            if isinstance(m, torch.nn.modules.batchnorm._BatchNorm):
                m.running_mean.uniform_(-0.2, 0.2)
                m.running_var.uniform_(0.5, 1.5)
    return model


SPLIT = [
    ("tsn_resnet18", {}, "backbone"),
    ("tsn_mobilenet_v3_small", {"consensus": "attention"}, "backbone"),
    ("cnn_lstm", {"num_layers": 2}, "encoder"),
    ("lstm_resnet18", {}, "encoder"),
    ("tsm_resnet18", {}, "stem"),
]


@pytest.mark.parametrize("name, options, part", SPLIT, ids=[s[0] for s in SPLIT])
def test_split_equals_forward(name, options, part):
    model = _model(name, **options)
    split = split_model(model)
    assert split is not None and split.part == part
    x = torch.randn(3, T, 3, 32, 32, generator=torch.Generator().manual_seed(1))
    with torch.inference_mode():
        want = model(x)
        got = split.forward(x)
    assert (got - want).abs().max().item() < 1e-5


@pytest.mark.parametrize(
    "name", ["channel_resnet18", "r2plus1d_tiny", "video_vit_tiny", "keyframe_unet"]
)
def test_families_that_mix_frames_early_are_not_split(name):
    assert split_model(_model(name)) is None


def test_a_subclass_with_its_own_forward_is_not_split():
    class Custom(models.TSN):
        def forward(self, x, mask=None):
            return super().forward(x, mask) * 2

    torch.manual_seed(0)
    assert split_model(Custom("resnet18", num_classes=3, frames=T)) is None


def test_a_model_can_opt_in_with_its_own_hooks():
    class Mean(torch.nn.Module):
        num_classes, task = 3, "classification"

        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(3, 3)

        def frame_features(self, x):
            return x.mean((2, 3))

        def sequence_head(self, f):
            return self.lin(f.mean(1))

        def forward(self, x):
            return self.sequence_head(
                self.frame_features(x.flatten(0, 1)).unflatten(0, x.shape[:2])
            )

    split = split_model(Mean())
    assert split is not None and split.part == "model"


N = 15


def _stream(model, *, reuse, stride, batch, layout="temporal"):
    pre = InputContract(frames=T, layout=layout, size="16")
    p = Predictor(model, pre, stride=stride, ema=0.5, batch_size=batch, reuse=reuse)
    g = np.random.default_rng(3)
    preds = []
    for i in range(N):
        preds += p.push(g.integers(0, 256, (24, 30, 3), dtype=np.uint8), i / 25)
    preds += p.flush()
    return p, preds


@pytest.mark.parametrize(
    "name, stride, batch",
    [
        ("tsn_resnet18", 1, 4),
        ("tsn_resnet18", 3, 2),
        ("cnn_lstm", 1, 4),
        ("cnn_lstm", 3, 2),
        ("tsm_resnet18", 2, 3),
    ],
)
def test_predictor_with_reuse_equals_the_naive_path(name, stride, batch):
    model = _model(name)
    fast, a = _stream(model, reuse="auto", stride=stride, batch=batch)
    slow, b = _stream(model, reuse=False, stride=stride, batch=batch)
    assert fast.reuse and not slow.reuse
    assert [p.source_frames for p in a] == [p.source_frames for p in b]
    diff = max(float(np.abs(p.logits - q.logits).max()) for p, q in zip(a, b))
    assert diff < 1e-5
    sdiff = max(float(np.abs(p.smoothed - q.smoothed).max()) for p, q in zip(a, b))
    assert sdiff < 1e-5
    # each frame through the per-frame part once, instead of T per window
    assert fast.frames_computed == N
    assert slow.frames_computed == len(b) * T


def test_reuse_is_off_without_overlap_and_refused_without_a_split():
    model = _model("cnn_lstm")
    pre = InputContract(frames=T, layout="temporal", size="32")
    assert not Predictor(model, pre, stride=T).reuse  # nothing to share between windows
    assert Predictor(model, pre, stride=T, reuse=True).reuse
    with pytest.raises(ConfigError, match=r"reuse=True: model 'r2plus1d_tiny' has no per-frame"):
        Predictor(_model("r2plus1d_tiny"), InputContract(frames=T, layout="conv3d"), reuse=True)


@pytest.mark.parametrize(
    ("cls", "extra", "name"), [("TSN", "attention", "consensus"), ("TSM", 4, "fold_div")]
)
def test_the_public_models_still_take_the_old_positional_order(cls, extra, name):
    """TSN / TSM(backbone, num_classes, frames, ...) by position, as before their keywords were
    declared once: the same model, with a DeprecationWarning that says to pass them by keyword;
    never a positional int taken as another option."""
    model = getattr(models, cls)
    with pytest.warns(DeprecationWarning, match=r"by position is deprecated.*num_classes="):
        old = model("resnet18", 3, T, extra, 0.25)
    new = model("resnet18", num_classes=3, frames=T, **{name: extra, "dropout": 0.25})
    assert (old.num_classes, old.frames, getattr(old, name)) == (3, T, extra)
    assert old.dropout.p == new.dropout.p == 0.25
    with pytest.raises(TypeError, match="by position and by keyword"):
        model("resnet18", 3, T, num_classes=3)
    with pytest.raises(TypeError, match="at most 6 positional"):
        model("resnet18", 3, T, extra, 0.25, False, "more")
