"""Predict over a video and over a stream: windows, smoothing, outputs, bounded memory."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest
import torch

from hyperframes import ConfigError, InputError, models
from hyperframes.checkpoint._checkpoint import save_checkpoint
from hyperframes.cli import main
from hyperframes.decode import create_decoder
from hyperframes.demo._synthetic import make_motion_frames, make_segmentation_frames, write_h264
from hyperframes.infer import InputContract, Predictor, iter_predictions, predict_video
from hyperframes.infer._timeline import _History

T = 4


def _checkpoint(path, name="cnn_lstm", classes=("a", "b", "c"), **state):
    torch.manual_seed(0)
    model = models.create(name, num_classes=len(classes), frames=T)
    config = {
        "data": {"frames": T, "layout": "auto", "mean": [0.5] * 3, "std": [0.25] * 3},
        "model": {"name": name, "num_classes": len(classes), "options": {}},
    }
    state = {"input": {"size": "32"}, **state}
    task = models.get_spec(name).task
    save_checkpoint(
        path,
        {
            "model": model.state_dict(),
            "config": config,
            "classes": list(classes),
            "task": task,
            **state,
        },
    )
    return path


@pytest.fixture(scope="module")
def video(tmp_path_factory):
    clip = make_motion_frames("right", frames=22, size=64, rng=np.random.default_rng(0))
    return write_h264(tmp_path_factory.mktemp("v") / "clip.mp4", clip, fps=10)


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory):
    return _checkpoint(tmp_path_factory.mktemp("c") / "best.pt")


def test_predict_video_writes_timeline_png_and_annotated_video(tmp_path, video, ckpt):
    report = predict_video(ckpt, video, stride=3, ema=0.5, out=tmp_path / "out", annotate=True)
    out = tmp_path / "out"
    assert {p.name for p in report.outputs} == {
        "timeline.csv",
        "timeline.json",
        "timeline.png",
        "annotated.mp4",
    }
    # 22 frames, T=4, S=3: starts 0, 3, ..., 18 -> 18 + 4 = 22 covers the end exactly
    data = json.loads((out / "timeline.json").read_text())
    wins = data["windows"]
    assert [w["first_source_frame"] for w in wins] == list(range(0, 19, 3))
    assert data["meta"]["classes"] == ["a", "b", "c"]
    assert data["meta"]["input_size"] == [32, 32]
    assert data["summary"]["windows"] == len(wins) == report.windows
    w = wins[1]
    assert w["start_seconds"] == pytest.approx(0.3) and w["end_seconds"] == pytest.approx(0.7)
    assert w["top"][0]["prob"] >= w["top"][1]["prob"] >= w["top"][2]["prob"]
    assert sum(w["probs"].values()) == pytest.approx(1.0, abs=1e-5)
    rows = list(csv.DictReader((out / "timeline.csv").read_text().splitlines()))
    assert len(rows) == len(wins)
    assert rows[1]["top1"] == w["top"][0]["class"]
    assert float(rows[1]["prob:a"]) == pytest.approx(w["probs"]["a"], abs=1e-6)
    assert (out / "timeline.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    info = create_decoder("pyav").probe(str(out / "annotated.mp4"))
    assert (info.width, info.height, info.codec) == (64, 64, "h264")
    assert sum(1 for _ in create_decoder("pyav").frames(str(out / "annotated.mp4"))) == 22
    assert "22 frames" in report.summary()


def test_push_gives_the_same_predictions_as_predict(tmp_path, video, ckpt):
    predict_video(ckpt, video, stride=2, ema=0.7, out=tmp_path / "o")
    wins = json.loads((tmp_path / "o" / "timeline.json").read_text())["windows"]

    p = Predictor.from_checkpoint(ckpt, stride=2, ema=0.7, batch_size=3)
    dec = create_decoder("pyav")
    info = dec.probe(str(video))
    size = p.frame_size(info.height, info.width)
    preds = []
    for f in dec.frames(str(video)):  # frames handed over as arrays, one by one
        preds += p.push(f.to_rgb(size=size), f.pts_seconds)
    preds += p.flush()
    assert len(preds) == len(wins)
    for pr, w in zip(preds, wins):
        assert (pr.first_source_frame, pr.last_source_frame) == (
            w["first_source_frame"],
            w["last_source_frame"],
        )
        assert pr.start_seconds == pytest.approx(w["start_seconds"], abs=1e-6)
        for c, v in zip(pr.classes, pr.probs):
            assert v == pytest.approx(w["probs"][c], abs=2e-6)
    # and, unrounded, against the video loop (decoded frames pushed directly)
    again = list(iter_predictions(Predictor.from_checkpoint(ckpt, stride=2, ema=0.7), video))
    np.testing.assert_allclose(
        np.stack([a.smoothed for a in again]), np.stack([b.smoothed for b in preds]), atol=1e-6
    )


def test_full_size_rgb_frames_are_resized_as_the_build_resizes(tmp_path):
    """A stream of full-size RGB arrays (a camera) gives predict's probabilities: the
    predictor resizes them with the store's decoder's own scaler (FFmpeg's area filter for
    PyAV), not PIL bilinear. A grey textured video, so that the chroma the build scales at its
    own resolution plays no part: within 2e-5 (measured 5e-6; PIL bilinear: 1e-4)."""
    texture = np.random.default_rng(0).integers(0, 256, (72, 96), dtype=np.uint8)
    clip = np.stack([np.repeat(np.roll(texture, 3 * i, axis=1)[..., None], 3, 2) for i in range(8)])
    video = write_h264(tmp_path / "grey.mp4", clip, fps=10)
    ckpt = _checkpoint(tmp_path / "best.pt", input={"size": "16"})
    predict_video(ckpt, video, stride=1, out=tmp_path / "o")
    wins = json.loads((tmp_path / "o" / "timeline.json").read_text())["windows"]
    p = Predictor.from_checkpoint(ckpt, stride=1)
    preds = []
    for f in create_decoder("pyav").frames(str(video)):
        preds += p.push(f.to_rgb(), f.pts_seconds)  # 96x72: the predictor resizes to 21x16
    preds += p.flush()
    want = np.array([[w["probs"][c] for c in p.classes] for w in wins])
    got = np.stack([pr.probs for pr in preds])
    assert got.shape == want.shape == (5, 3)
    np.testing.assert_allclose(got, want, atol=2e-5)
    assert (got.argmax(1) == want.argmax(1)).all()


def _predictor(stride=1, ema=0.0, batch=2, frames=T, reuse="auto", short="error", **kw):
    torch.manual_seed(0)
    model = models.create("cnn_lstm", num_classes=3, frames=frames, base_width=4, hidden_size=8)
    pre = InputContract(frames=frames, layout="temporal", size="16", **kw)
    return Predictor(
        model,
        pre,
        ["a", "b", "c"],
        stride=stride,
        ema=ema,
        batch_size=batch,
        reuse=reuse,
        short=short,
    )


def _frames(n, size=16, seed=0):
    g = np.random.default_rng(seed)
    return [g.integers(0, 256, (size, size, 3), dtype=np.uint8) for _ in range(n)]


def _run(p, frames, fps=10.0):
    """(predictions while pushing, predictions of the flush)."""
    out = []
    for i, f in enumerate(frames):
        out += p.push(f, i / fps)
    return out, p.flush()


def _all(p, frames, fps=10.0):
    live, tail = _run(p, frames, fps)
    return live + tail


@pytest.mark.parametrize(
    "n, stride, starts",
    [
        (10, 3, [0, 3, 6]),  # regular windows end at frame 8: a tail window [6, 10)
        (10, 2, [0, 2, 4, 6]),  # 6 + 4 = 10: no tail
        (10, 7, [0, 6]),  # stride > T: frames 4-5 in no regular window; tail [6, 10)
        (4, 1, [0]),
    ],
)
def test_windows_cover_the_video_and_the_tail(n, stride, starts):
    live, tail = _run(_predictor(stride=stride), _frames(n))
    preds = live + tail
    assert [p.first_source_frame for p in preds] == starts
    assert all(p.last_source_frame - p.first_source_frame + 1 == T for p in preds)
    assert preds[-1].last_source_frame == n - 1
    assert [p.index for p in preds] == list(range(len(preds)))


def test_short_video_is_refused_as_training_refuses_it_unless_padding_is_asked(tmp_path, ckpt):
    """Issue 35: a stream shorter than a window is refused (its frames, the window's need and
    the option named), by the Predictor, predict_video and the command line alike; with
    short='pad' it gives one window, its last frame repeated, and says so."""
    p = _predictor(frame_stride=2)
    assert [q for i, f in enumerate(_frames(3)) for q in p.push(f, i / 10)] == []
    with pytest.raises(InputError, match=r"clip\.mp4: 3 frames, fewer than the 7 a window of "):
        p.flush(name="clip.mp4")
    assert p.held_frames == 0  # the stream is forgotten: the predictor takes the next one
    with pytest.raises(InputError, match=r"the stream: 2 frames, .*T=4 frames 2 apart spans"):
        _run(p, _frames(2))
    clip = make_motion_frames("right", frames=3, size=64, rng=np.random.default_rng(0))
    short = write_h264(tmp_path / "short.mp4", clip, fps=10)
    with pytest.raises(InputError, match=r"short\.mp4: 3 frames, fewer than the 4 a window"):
        predict_video(ckpt, short, out=tmp_path / "refused")
    assert not (tmp_path / "refused" / "timeline.csv").exists()
    assert main(["predict", str(ckpt), str(short), "--out", str(tmp_path / "cli"), "--quiet"]) == 1
    assert not (tmp_path / "cli" / "timeline.csv").exists()
    args = ["predict", str(ckpt), str(short), "--out", str(tmp_path / "pad"), "--short", "pad"]
    assert main([*args, "--quiet"]) == 0
    (win,) = json.loads((tmp_path / "pad" / "timeline.json").read_text())["windows"]
    assert win["padded"] and win["source_frames"] == [0, 1, 2, 2]
    report = predict_video(ckpt, short, out=tmp_path / "pad2", short="pad")
    assert "short.mp4 is shorter than a window (3 frames, a window spans 4)" in report.summary()
    with pytest.raises(ConfigError, match=r"short 'drop': allowed: 'error' .* or 'pad'"):
        predict_video(ckpt, short, out=tmp_path / "drop", short="drop")


def test_short_video_padded_repeats_its_last_frame():
    p = _predictor(short="pad")
    live, tail = _run(p, _frames(2))
    assert live == [] and len(tail) == 1
    (pred,) = tail
    assert pred.padded and (pred.first_source_frame, pred.last_source_frame) == (0, 1)
    assert pred.source_frames == (0, 1, 1, 1)
    ref = _predictor()
    f = _frames(2)
    (want,) = _all(ref, [f[0], f[1], f[1], f[1]])  # the same window, spelled out
    np.testing.assert_allclose(pred.logits, want.logits, atol=1e-6)


def test_ema_smooths_logits_and_zero_turns_it_off():
    frames = _frames(12)
    raw = _all(_predictor(stride=2, ema=0.0), frames)
    smooth = _all(_predictor(stride=2, ema=0.6), frames)
    assert all(np.array_equal(r.logits, r.smoothed) for r in raw)
    s = raw[0].logits
    for r, m in zip(raw, smooth):
        np.testing.assert_allclose(m.logits, r.logits, atol=1e-6)
        s = s if r.index == 0 else 0.6 * s + 0.4 * r.logits
        np.testing.assert_allclose(m.smoothed, s, atol=1e-5)
        e = np.exp(s - s.max())
        np.testing.assert_allclose(m.probs, e / e.sum(), atol=1e-5)


@pytest.mark.parametrize("reuse", [False, "auto"])
@pytest.mark.parametrize("stride", [2, 7])
def test_memory_stays_bounded_on_a_long_stream(reuse, stride):
    p = _predictor(stride=stride, batch=3, reuse=reuse)
    bound = T + max(p.batch_size * p.stride, p.frame_batch if p.reuse else 0)
    most, count = 0, 0
    for i, f in enumerate(_frames(1, size=16) * 60):
        count += len(p.push(f, i / 30))
        most = max(most, p.held_frames)
    count += len(p.flush())
    assert count == len(range(0, 60 - T + 1, stride)) + ((60 - T) % stride != 0)
    assert most <= bound
    assert p.held_frames == 0  # flush resets


def test_frames_are_resampled_to_the_training_rate():
    p = _predictor(stride=4, fps=5.0)  # pushed at 10 fps: every other frame is used
    preds = _all(p, _frames(16), fps=10.0)
    assert [(q.start_seconds, q.end_seconds) for q in preds] == [
        pytest.approx((0.0, 0.8)),
        pytest.approx((0.8, 1.6)),
    ]
    # frames are named by their number in the source, not on the model's 5 fps grid
    assert [q.source_frames for q in preds] == [(0, 2, 4, 6), (8, 10, 12, 14)]


def test_frames_of_other_sizes_are_resized_and_cropped():
    p = _predictor()
    assert p.frame_size(32, 48) == (16, 24)  # the store's short side, 16
    p = _predictor(crop=12)  # trained on 12x12 crops: as eval, stored size then the crop
    assert p.frame_size(32, 48) == (16, 24)
    assert p.contract.input_size(32, 48) == (12, 12)
    (pred,) = _all(p, _frames(4, size=40))
    assert pred.logits.shape == (3,)


def test_windows_follow_the_frame_stride_of_training():
    p = _predictor(stride=3, frame_stride=2)  # windows span (4 - 1) * 2 + 1 = 7 frames
    preds = _all(p, _frames(12))
    assert [(q.first_source_frame, q.last_source_frame, q.key_source_frame) for q in preds] == [
        (0, 6, 4),
        (3, 9, 7),
        (5, 11, 9),  # the tail window
    ]
    # the first window is frames 0, 2, 4, 6 spelled out
    f = _frames(12)
    (want,) = _all(_predictor(), [f[0], f[2], f[4], f[6]])
    np.testing.assert_allclose(preds[0].logits, want.logits, atol=1e-6)
    (short,) = _all(_predictor(frame_stride=2, short="pad"), f[:5])  # shorter: padded
    assert short.padded and (short.first_source_frame, short.last_source_frame) == (0, 4)
    (want,) = _all(_predictor(), [f[0], f[2], f[4], f[4]])
    np.testing.assert_allclose(short.logits, want.logits, atol=1e-6)


def test_frame_size_and_rate_come_from_argument_checkpoint_store_or_defaults(tmp_path):
    from hyperframes.infer import load_inference_model

    store = tmp_path / "store"
    store.mkdir()
    (store / "manifest.json").write_text(json.dumps({"build": {"size": "48", "fps": 12.0}}))
    ck = _checkpoint(tmp_path / "a.pt", input=None)
    state = torch.load(ck, weights_only=True)
    state["config"]["data"]["store"] = str(store)
    state.pop("input")
    save_checkpoint(tmp_path / "s.pt", state)
    pre = load_inference_model(tmp_path / "s.pt").contract
    assert (pre.size, pre.fps) == ("48", 12.0) and "store" in pre.source
    pre = load_inference_model(tmp_path / "s.pt", size="20x30", fps=0).contract
    assert (pre.size, pre.fps, pre.store_size(100, 50)) == ("20x30", None, (20, 30))
    state["input"] = {"size": "40", "fps": 5}
    state["config"]["data"]["augmentation"] = {"size": 36}
    save_checkpoint(tmp_path / "i.pt", state)
    pre = load_inference_model(tmp_path / "i.pt").contract
    assert (pre.size, pre.fps, pre.crop, pre.input_size(40, 80)) == ("40", 5.0, 36, (36, 36))
    state["config"]["data"]["store"] = str(tmp_path / "gone")
    state.pop("input")
    save_checkpoint(tmp_path / "d.pt", state)
    loaded = load_inference_model(tmp_path / "d.pt")
    assert (loaded.contract.size, loaded.contract.fps) == ("128", None)
    assert "short side 128" in loaded.notes[0]


def test_segmentation_predictions_carry_a_mask(tmp_path):
    frames, _ = make_segmentation_frames(frames=9, size=32, rng=np.random.default_rng(1))
    video = write_h264(tmp_path / "seg.mp4", frames, fps=10)
    ck = _checkpoint(tmp_path / "seg.pt", "keyframe_unet", classes=("background", "moving"))
    report = predict_video(ck, video, stride=2, out=tmp_path / "o", annotate=True)
    assert report.last.mask.shape == (32, 32) and report.last.mask.dtype == np.uint8
    assert report.last.key_source_frame == report.last.first_source_frame + T // 2
    w = json.loads((tmp_path / "o" / "timeline.json").read_text())["windows"][0]
    assert sum(w["coverage"].values()) == pytest.approx(1.0)
    header = (tmp_path / "o" / "timeline.csv").read_text().splitlines()[0]
    assert "coverage:moving" in header
    assert (tmp_path / "o" / "annotated.mp4").stat().st_size > 0


def test_plot_history_is_bounded():
    h = _History(limit=8)
    for i in range(1000):
        h.add(float(i), np.array([i % 2, 1.0]))
    times, values = h.arrays()
    assert len(times) < 2 * 8 + 1
    assert times[0] == pytest.approx(np.mean(np.arange(h.bin)))
    np.testing.assert_allclose(values[:, 1], 1.0)
