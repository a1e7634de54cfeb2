"""ONNX export with a dynamic batch, checked against onnxruntime (max |diff| < 1e-4, fp32).

By default one representative model per family is exported (a ResNet-18-sized model
takes 5-20 s to export on two cores); set ``HYPERFRAMES_EXPORT_ALL=1`` to export every
registered model whose registry entry says it supports ONNX.
"""

from __future__ import annotations

import dataclasses
import json
import os

import numpy as np
import pytest
import torch

pytest.importorskip("onnxruntime")
pytest.importorskip("onnxscript")

import onnxruntime as ort

from hyperframes import ConfigError, models
from hyperframes.checkpoint._checkpoint import save_checkpoint
from hyperframes.infer import ExportError, export_onnx
from hyperframes.infer._export import onnx_models
from hyperframes.models._registry import _REGISTRY

T = 4
SUBSET = [
    "tsn_resnet18",
    "r2plus1d_tiny",
    "video_vit_tiny",
    "cnn_lstm",
    "keyframe_unet",  # keyframe_unet_add: test_export_from_a_checkpoint_with_its_preprocessing
    "av_channel_resnet18",
]
NAMES = onnx_models() if os.environ.get("HYPERFRAMES_EXPORT_ALL") else SUBSET


def _model(name):
    torch.manual_seed(0)
    return models.create(name, num_classes=3, frames=T).eval()


@pytest.mark.parametrize("name", NAMES)
def test_export_matches_onnxruntime(tmp_path, name):
    model = _model(name)
    report = export_onnx(model, tmp_path / f"{name}.onnx", size=32)
    assert report.max_abs_diff is not None and report.max_abs_diff < 1e-4
    assert report.checked_batch == 3  # exported at batch 2: the batch axis is dynamic
    session = ort.InferenceSession(str(report.path), providers=["CPUExecutionProvider"])
    inputs = session.get_inputs()
    if model.layout == "keyframe":
        assert [i.name for i in inputs] == ["key", "context"]
        assert report.output_shape == ["batch", 3, 32, 32]
    elif hasattr(model, "n_mels"):  # audio-visual: video and log-mel
        assert [i.name for i in inputs] == ["input", "audio"]
        assert report.output_shape == ["batch", 3]
    else:
        assert [i.name for i in inputs] == ["input"]
        assert report.output_shape == ["batch", 3]
    assert all(not isinstance(i.shape[0], int) for i in inputs)  # symbolic batch
    meta = json.loads(report.sidecar.read_text())
    assert meta["layout"] == model.layout and meta["max_abs_diff"] == report.max_abs_diff


def test_every_registered_family_supports_onnx():
    families = {models.get_spec(n).family for n in onnx_models()}
    assert {"channel", "tsn", "tsm", "cnn3d", "transformer", "lstm", "keyframe"} <= families
    # restore (frame_unet, frame_sr): exported from checkpoints in test_frame_tasks.py;
    # detection (fcos_channel): from a trained detector's checkpoint in test_detection.py
    skipped = {"channel", "tsm", "restore", "detection"}
    assert {models.get_spec(n).family for n in SUBSET} >= families - skipped


def test_export_from_a_checkpoint_with_its_preprocessing(tmp_path):
    torch.manual_seed(0)
    model = models.create("keyframe_unet_add", num_classes=2, frames=T)
    config = {
        "data": {"frames": T, "mean": [0.4] * 3, "std": [0.2] * 3},
        "model": {"name": "keyframe_unet_add", "num_classes": 2, "options": {}},
    }
    ck = save_checkpoint(
        tmp_path / "best.pt",
        {
            "model": model.state_dict(),
            "config": config,
            "classes": ["bg", "fg"],
            "input": {"size": "24x32"},
        },
    )
    report = export_onnx(ck, tmp_path / "out" / "seg.onnx")
    assert report.inputs == {"key": ["batch", 3, 24, 32], "context": ["batch", T, 3, 24, 32]}
    assert report.output_shape == ["batch", 2, 24, 32]
    assert report.max_abs_diff is not None and report.max_abs_diff < 1e-4
    assert report.checked_batch == 3  # exported at batch 2: the batch axis is dynamic
    meta = json.loads((tmp_path / "out" / "seg.onnx.json").read_text())
    assert report.sidecar == tmp_path / "out" / "seg.onnx.json"
    assert meta["classes"] == ["bg", "fg"] and meta["task"] == "segmentation"
    assert meta["contract"]["mean"] == [0.4] * 3 and meta["contract"]["size"] == "24x32"
    # the contract travels inside the ONNX file too
    import onnx

    props = {p.key: p.value for p in onnx.load(str(report.path)).metadata_props}
    assert json.loads(props["hyperframes.contract"]) == meta["contract"]
    # the ONNX graph agrees with the checkpoint's model on a batch of 1
    session = ort.InferenceSession(str(report.path), providers=["CPUExecutionProvider"])
    assert [i.name for i in session.get_inputs()] == ["key", "context"]
    assert all(not isinstance(i.shape[0], int) for i in session.get_inputs())  # symbolic batch
    assert meta["layout"] == "keyframe" and meta["max_abs_diff"] == report.max_abs_diff
    ctx = torch.randn(1, T, 3, 24, 32)
    with torch.inference_mode():
        model.eval()
        want = model(models.to_layout(ctx, "keyframe")).numpy()
    got = session.run(None, {"key": ctx[:, T // 2].numpy(), "context": ctx.numpy()})[0]
    assert np.abs(got - want).max() < 1e-4
    assert "onnxruntime max |diff|" in report.summary()


def test_a_model_without_onnx_support_is_refused(tmp_path, monkeypatch):
    spec = models.get_spec("cnn_lstm")
    monkeypatch.setitem(_REGISTRY, "cnn_lstm", dataclasses.replace(spec, onnx=False))
    with pytest.raises(ConfigError, match=r"model 'cnn_lstm' does not support ONNX export"):
        export_onnx(_model("cnn_lstm"), tmp_path / "m.onnx")


def test_a_graph_that_does_not_reproduce_the_model_is_an_error(tmp_path, monkeypatch):
    from hyperframes.infer import _export

    monkeypatch.setattr(torch.onnx, "export", lambda *a, **k: None)  # no need to export
    monkeypatch.setattr(_export, "_check", lambda *a: (0.5, 3))
    with pytest.raises(
        ExportError, match=r"m\.onnx: onnxruntime differs from PyTorch by up to 0\.5"
    ):
        export_onnx(_model("r2plus1d_tiny"), tmp_path / "m.onnx", size=32)


def test_bad_export_options(tmp_path):
    with pytest.raises(ConfigError, match=r"size 'big': allowed"):
        export_onnx(_model("r2plus1d_tiny"), tmp_path / "m.onnx", size="big")
    with pytest.raises(ConfigError, match=r"batch 0: allowed: an integer >= 1"):
        export_onnx(_model("r2plus1d_tiny"), tmp_path / "m.onnx", batch=0)


def test_missing_export_packages_are_named_at_once_with_the_extra(tmp_path, monkeypatch):
    """Without onnx and onnxruntime (``None`` in ``sys.modules``: Python's own way of making a
    module unimportable), one error names both and the ``export`` extra, before any work."""
    import sys

    for module in ("onnx", "onnxruntime"):
        monkeypatch.setitem(sys.modules, module, None)
    with pytest.raises(ConfigError) as e:
        export_onnx(_model("r2plus1d_tiny"), tmp_path / "m.onnx", size=32)
    said = str(e.value)
    assert "not installed here: onnx, onnxruntime." in said and "\n" not in said
    assert "pip install 'hyperframes-video[export]'" in said
    assert not any(tmp_path.iterdir())
    with pytest.raises(
        ConfigError, match=r"\(check=False\) needs onnx, onnxscript; not installed here: onnx\."
    ):
        export_onnx(_model("r2plus1d_tiny"), tmp_path / "m.onnx", check=False)
