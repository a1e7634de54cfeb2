"""Many streams through one model (issue 38 item 6): K live streams in one batched forward
pass, round-robin, each with its own clock, frames and EMA; stored videos served from a
resident store without decoding."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from hyperframes import ConfigError, DataError, InputError, models
from hyperframes.demo._synthetic import make_motion_frames
from hyperframes.infer import InputContract, MultiStream, Predictor
from hyperframes.store import open_store

T = 4


@pytest.fixture(scope="module")
def template() -> Predictor:
    torch.manual_seed(0)
    model = models.create("cnn_lstm", num_classes=3, frames=T, base_width=4, hidden_size=8)
    contract = InputContract(frames=T, layout=model.layout, size=None)
    return Predictor(model, contract, ("a", "b", "c"), stride=2, ema=0.5, batch_size=4)


@pytest.fixture(scope="module")
def clips() -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    return [
        make_motion_frames(d, frames=n, size=16, rng=rng)
        for d, n in (("left", 9), ("right", 12), ("up", 7))
    ]


def _alone(template: Predictor, frames, times) -> list:
    p = Predictor(
        template.model, template.contract, template.classes, stride=2, ema=0.5, reuse=False
    )
    out = []
    for rgb, t in zip(frames, times):
        out += p.push(rgb, t)
    return out + p.flush()


def _same(got, want) -> None:
    assert [p.source_frames for p in got] == [p.source_frames for p in want]
    assert [p.start_seconds for p in got] == [p.start_seconds for p in want]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.logits, w.logits, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(g.smoothed, w.smoothed, rtol=1e-4, atol=1e-5)


def test_k_live_streams_each_as_if_alone(template, clips):
    multi = MultiStream(template, batch_size=4)
    ids = [multi.add_stream() for _ in clips]
    assert ids == [0, 1, 2]
    got: dict = {i: [] for i in ids}
    # each stream its own clock: different rates, same start times
    times = [np.arange(len(c)) / r for c, r in zip(clips, (10, 25, 7))]
    for tick in range(max(map(len, clips))):
        for i, clip in zip(ids, clips):
            if tick < len(clip):
                multi.push(i, clip[tick], times[i][tick])
        for sid, preds in multi.step().items():
            got[sid] += preds
    for i in ids:
        got[i] += multi.run().get(i, []) + multi.close_stream(i)
    for i, clip in zip(ids, clips):
        _same(got[i], _alone(template, clip, times[i]))
    assert multi.streams == [] and multi.windows >= multi.calls


def test_one_model_call_per_step_round_robin(template, clips):
    multi = MultiStream(template, batch_size=2)
    for name in ("x", "y", "z"):
        multi.add_stream(name)
    for k in range(T + 2):  # T + 2 frames, stride 2: two windows each
        for name in multi.streams:
            multi.push(name, clips[1][k], k / 10)
    assert multi.pending == 6
    served = [sorted(multi.step()) for _ in range(3)]
    assert multi.calls == 3 and multi.pending == 0
    # one window of each of two streams per call, the next call starting one stream on
    assert served == [["x", "y"], ["y", "z"], ["x", "z"]]


def test_stream_errors_name_the_stream(template, clips):
    multi = MultiStream(template)
    multi.add_stream("cam")
    with pytest.raises(ConfigError, match="stream 'cam' is already open"):
        multi.add_stream("cam")
    with pytest.raises(InputError, match=r"stream 'door' is not open \(open: 'cam'\)"):
        multi.push("door", clips[0][0], 0.0)
    multi.push("cam", clips[0][0], 1.0)
    with pytest.raises(InputError, match="times must increase"):
        multi.push("cam", clips[0][1], 0.5)
    with pytest.raises(InputError, match=r"stream 'cam'.*fewer than"):
        multi.close_stream("cam")
    with pytest.raises(ConfigError, match="MultiStream takes a Predictor"):
        MultiStream("best.pt")  # type: ignore[arg-type]


@pytest.mark.parametrize("resident", [True, False])
def test_stored_videos_served_without_decoding(template, tiny_motion_store, resident):
    store = open_store(tiny_motion_store)
    multi = MultiStream(template, batch_size=3)
    got: dict = {0: [], 2: [], 5: []}
    for video, pred in multi.serve_store(store, [0, 2, 5], resident=resident, chunk_frames=5):
        got[video].append(pred)
    assert multi.streams == []
    for v, preds in got.items():
        rec = store.videos[v]
        frames = store.read(v, np.arange(rec.num_frames)).permute(0, 2, 3, 1).numpy()
        _same(preds, _alone(template, frames, rec.pts_seconds))


def test_a_float16_store_is_refused_for_a_model_of_uint8_frames(
    template, tiny_motion_store, tmp_path
):
    """Its frames are normalised at build: served to a uint8 contract they would be
    normalised again (module doc of the contract's check_store_frames)."""
    from hyperframes.build import BuildOptions, build_store

    half = tmp_path / "half"
    videos = tiny_motion_store.parent / "videos"
    build_store(videos, half, BuildOptions(size="none", dtype="float16"), progress=False)
    multi = MultiStream(template, batch_size=4)
    with pytest.raises(DataError, match="holds float16 frames normalised at build"):
        next(multi.serve_store(half))
    assert multi.pending == 0
