"""Dense tasks complete (issue 38 item 3): masks for every frame of a predicted stream (mirror
padding at its ends), crop and scale for segmentation windows and their masks together, a
channel-layout segmentation model, and the keyframe models' options."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from hyperframes import models
from hyperframes.demo import make_segmentation_frames
from hyperframes.infer import InputContract, Predictor

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
