"""predict_video and evaluate: at most ten parameters, the rest in typed option groups; the old
keywords still work and go to their group; an unknown keyword is a ConfigError with a "did you
mean" (issue 36)."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

from hyperframes import ConfigError
from hyperframes.demo._synthetic import make_motion_frames, write_h264
from hyperframes.infer import predict_video
from hyperframes.infer._options import ReadingOptions, TimelineOptions
from hyperframes.train import evaluate
from hyperframes.train._eval._options import EvalOptions, eval_options
from test_infer_predict import _checkpoint


@pytest.mark.parametrize("function", [predict_video, evaluate], ids=lambda f: f.__name__)
def test_at_most_ten_parameters(function):
    assert len(inspect.signature(function).parameters) <= 10


def test_an_unknown_keyword_is_refused_with_a_did_you_mean(tmp_path):
    # refused before the checkpoint is read: these files do not exist
    with pytest.raises(ConfigError, match=r"unknown option 'top_kk'; did you mean top_k\?"):
        predict_video(tmp_path / "none.pt", tmp_path / "none.mp4", top_kk=2)
    with pytest.raises(ConfigError, match=r"unknown option 'strid'; did you mean stride\?"):
        predict_video(tmp_path / "none.pt", tmp_path / "none.mp4", strid=2)
    with pytest.raises(ConfigError, match=r"unknown option 'batch_sise'; did you mean batch_size"):
        evaluate(tmp_path / "none.pt", batch_sise=2)
    with pytest.raises(ConfigError, match=r"workers: out of range: -1"):
        evaluate(tmp_path / "none.pt", settings={"workers": -1})


def test_an_old_keyword_goes_to_its_group_and_replaces_that_field():
    o = eval_options({"workers": 2, "batch_size": 8}, {"batch_size": 3}, others=())
    assert o == EvalOptions(workers=2, batch_size=3)
    with pytest.raises(ConfigError, match="settings="):
        eval_options(3, {}, others=())


def test_predict_video_same_timeline_by_keyword_or_by_group(tmp_path):
    clip = make_motion_frames("right", frames=14, size=48, rng=np.random.default_rng(1))
    video = write_h264(tmp_path / "clip.mp4", clip, fps=10)
    ckpt = _checkpoint(tmp_path / "best.pt")
    old = predict_video(ckpt, video, out=tmp_path / "old", stride=2, ema=0.5, top_k=2, size="32")
    new = predict_video(
        ckpt,
        video,
        out=tmp_path / "new",
        stride=2,
        reading=ReadingOptions(size="32"),
        timeline={"ema": 0.5, "top_k": 2},
    )
    rows = [(tmp_path / d / "timeline.csv").read_text() for d in ("old", "new")]
    assert rows[0] == rows[1] and rows[0].count("\n") > 1
    # a keyword beside its group replaces that field of the group (ema 0.9 -> 0.5)
    predict_video(
        ckpt,
        video,
        out=tmp_path / "beside",
        stride=2,
        reading={"size": "32"},
        timeline=TimelineOptions(ema=0.9, top_k=2),
        ema=0.5,
    )
    assert (tmp_path / "beside" / "timeline.csv").read_text() == rows[0]
    assert old.outputs and new.outputs
