"""The ONNX export says how to prepare its input (issue 22 item 4): the metadata and the README
state every step from a video file to the graph's input, and a consumer who follows those words
with PyAV, OpenCV and numpy -- none of hyperframes' preprocessing code -- gets ``predict``'s
probabilities to within 1e-3.

The model is a small channel-layout net (3T input planes, as the ResNet early-fusion models take
them) registered for this test, with its classifier scaled so that probabilities move with the
input (they span 0 to 1 over the clip's windows): a wrong filter, crop or channel order shows.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from torch import nn

pytest.importorskip("onnxruntime")
pytest.importorskip("onnxscript")

from hyperframes import models
from hyperframes.cli import main

T = 4
CLASSES = ["a", "b", "c"]
NAME = "test_only_recipe_channel"


class _SmallChannel(models.VideoModel):
    layout = "channel"

    def __init__(self, num_classes: int, frames: int) -> None:
        super().__init__(num_classes, frames)
        self.conv = nn.Conv2d(3 * frames, 8, 5, stride=2)
        self.fc = nn.Linear(8, num_classes)

    def forward(self, x, mask=None):
        return self.fc(torch.tanh(self.conv(x)).mean((2, 3)))


@pytest.fixture
def checkpoint(tmp_path):
    from hyperframes._core._contract import InputContract
    from hyperframes.checkpoint._checkpoint import save_checkpoint

    @models.register_model(NAME, layout="channel", family="test")
    def build(num_classes: int, frames: int):
        """A small channel-layout net (test only)."""
        return _SmallChannel(num_classes, frames)

    try:
        torch.manual_seed(0)
        model = models.create(NAME, num_classes=len(CLASSES), frames=T).eval()
        with torch.no_grad():
            model.fc.weight.mul_(30.0)
        # the store resizes 340x256 frames to short side 64 (4x down), the crop to 56
        contract = InputContract(
            frames=T, layout="channel", size="64", crop=56, classes=tuple(CLASSES)
        )
        config = {"data": {"frames": T}, "model": {"name": NAME, "num_classes": 3, "options": {}}}
        state = {
            "model": model.state_dict(),
            "config": config,
            "classes": CLASSES,
            "contract": contract.to_dict(),
        }
        yield save_checkpoint(tmp_path / "best.pt", state)
    finally:
        models._registry._REGISTRY.pop(NAME)


def _follow_the_readme(video, recipe: dict) -> list[np.ndarray]:
    """Each frame of ``video`` prepared as the README's "Inference and export" says: RGB24 from
    FFmpeg scaled to the store's size by its area filter in the same call; the central square
    resized to the crop by OpenCV (area when shrinking); x / 255, (x - mean) / std.
    (C, crop, crop) float32 per frame."""
    import av
    import cv2

    n = int(recipe["store_size"])
    crop = recipe["crop"]
    mean = np.asarray(recipe["mean"], np.float32)
    std = np.asarray(recipe["std"], np.float32)
    out = []
    with av.open(str(video)) as f:
        for frame in f.decode(video=0):
            h, w = frame.height, frame.width
            hh, ww = (n, round(w * n / h)) if h <= w else (round(h * n / w), n)
            rgb = frame.to_ndarray(format="rgb24", width=ww, height=hh, interpolation="AREA")
            side = min(hh, ww)
            top, left = (hh - side) // 2, (ww - side) // 2
            square = rgb[top : top + side, left : left + side]
            how = cv2.INTER_AREA if side > crop else cv2.INTER_LINEAR
            x = cv2.resize(square, (crop, crop), interpolation=how).astype(np.float32) / 255
            out.append(((x - mean) / std).transpose(2, 0, 1))
    return out


def _softmax(logits: np.ndarray) -> np.ndarray:
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def test_the_readme_recipe_reproduces_predict(checkpoint, shared_videos, tmp_path, capsys):
    import onnx
    import onnxruntime as ort

    onnx_path = tmp_path / "model.onnx"
    assert main(["export", str(checkpoint), "--onnx", str(onnx_path)]) == 0
    assert f"wrote {tmp_path / 'model.onnx.json'}" in capsys.readouterr().out
    meta = {p.key: p.value for p in onnx.load(str(onnx_path)).metadata_props}
    recipe = json.loads(meta["hyperframes.preprocessing"])
    assert recipe == json.loads((tmp_path / "model.onnx.json").read_text())["preprocessing"]
    # the whole recipe is stated: resize algorithm and size, crop, mean/std, order, dtype
    assert recipe["store_size"] == "64" and "SWS_AREA" in recipe["store_resize"]
    assert recipe["crop"] == 56 and "INTER_AREA" in recipe["crop_resize"]
    assert "input[b, 3 * t + c, y, x]" in recipe["order"] and recipe["dtype"] == "float32"
    assert recipe["inputs"] == {"input": ["batch", 3 * T, 56, 56]}
    for words in ("SWS_AREA", "central 56 x 56", "(x - mean[c]) / std[c]", "3 * t + c"):
        assert words in meta["preprocessing"]

    video = shared_videos / "part_0.mp4"  # real footage, 340x256, 32 frames
    out = tmp_path / "pred"
    assert main(["predict", str(checkpoint), str(video), "--stride", "4", "--out", str(out)]) == 0
    windows = json.loads((out / "timeline.json").read_text())["windows"]
    want = np.array([[w["probs"][c] for c in CLASSES] for w in windows])
    assert len(windows) == 8 and want.min() < 0.1 and want.max() > 0.9  # probabilities move

    frames = _follow_the_readme(video, recipe)
    session = ort.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
    # channel layout: frame-major, input[b, 3 * t + c]
    x = np.stack([np.concatenate([frames[i] for i in w["source_frames"]]) for w in windows])
    got = _softmax(session.run(["logits"], {"input": x})[0])
    assert np.abs(got - want).max() < 1e-3
    # the check has teeth: channel-major order (input[b, T * c + t]) is far off
    wrong = np.stack([np.stack([frames[i] for i in w["source_frames"]], 1) for w in windows])
    off = _softmax(session.run(["logits"], {"input": wrong.reshape(x.shape)})[0])
    assert np.abs(off - want).max() > 1e-2
