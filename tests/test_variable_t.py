"""T that changes between training and inference: several T in training, re-calibrated
BatchNorm statistics, the norm choice, --frames where a model takes another T (and the
reason where it does not), and short="pad" refused for the models that ignore the mask."""

from __future__ import annotations

import json

import pytest
import torch

from hyperframes import ConfigError
from hyperframes import models as M
from hyperframes.build import BuildOptions, build_store
from hyperframes.checkpoint._checkpoint import save_checkpoint
from hyperframes.cli import main
from hyperframes.data import HyperframeDataset
from hyperframes.demo import make_motion_dataset
from hyperframes.infer import InputContract, Predictor, load_inference_model
from hyperframes.train import (
    evaluate,
    load_checkpoint,
    load_config,
    recalibrate,
    run_training,
)
from hyperframes.train._config._frames import draw_frames, narrow_batch

CLASSES = ("left", "right", "up")


@pytest.fixture(scope="module")
def videos(tmp_path_factory):
    root = tmp_path_factory.mktemp("vt") / "motion"
    make_motion_dataset(root, classes=CLASSES, videos_per_class=3, frames=16, size=32, seed=3)
    return root


@pytest.fixture(scope="module")
def store(videos, tmp_path_factory):
    root = videos
    out = tmp_path_factory.mktemp("vt") / "store"
    build_store(root, out, BuildOptions(size="none"), progress=False)
    return out


def _config(store, frames, **model) -> dict:
    return {
        "data": {
            "store": str(store),
            "frames": frames,
            "batch_size": 3,
            "workers": 0,
            "val_sampler_options": {"clips": 1},
        },
        "model": {"name": "r2plus1d_tiny", "options": {"base_width": 4}, **model},
        "train": {"epochs": 2, "optimizer": "adamw", "lr": 0.003, "seed": 1},
    }


@pytest.fixture(scope="module")
def run8(store, tmp_path_factory):
    """r2plus1d_tiny (BatchNorm) trained at T=8."""
    run = tmp_path_factory.mktemp("vt") / "run8"
    run_training(_config(store, 8), run, progress=False)
    return run


def test_several_t_draw_per_batch_from_the_seed_only():
    draws = [draw_frames([4, 8], 1, 0, b) for b in range(40)]
    assert draws == [draw_frames([4, 8], 1, 0, b) for b in range(40)]
    assert {t for t, _ in draws} == {4, 8}  # both drawn
    assert draws != [draw_frames([4, 8], 2, 0, b) for b in range(40)]  # the seed changes them

    from hyperframes.data import HyperframeBatch

    frames = torch.arange(2 * 8).reshape(2, 8, 1, 1, 1).expand(2, 8, 3, 2, 2)
    batch = HyperframeBatch(frames, torch.zeros(2), torch.ones(2, 8, dtype=torch.bool), [{}, {}])
    narrow = narrow_batch(batch, 4, 0.99)
    assert narrow.frames.shape[1] == 4 and narrow.mask.shape == (2, 4)
    assert narrow.frames[0, :, 0, 0, 0].tolist() == [4, 5, 6, 7]  # consecutive, at the end


def test_frames_list_in_the_config(store, tmp_path):
    cfg = load_config(_config(store, [8, 4, 8]))
    assert cfg.data.frames == 8 and cfg.data.frame_choices == [4, 8]
    with pytest.raises(ConfigError, match=r"channel_resnet18.*takes only T=8.*first convolution"):
        load_config({**_config(store, [4, 8]), "model": {"name": "channel_resnet18"}})
    with pytest.raises(ConfigError, match=r"data\.frames: \[4, 0\] is not a list"):
        load_config(_config(store, [4, 0]))
    # trains with T drawn per batch; the same weights for any number of data workers
    runs = []
    for workers in (0, 2):
        c = _config(store, [4, 8])
        c["data"]["workers"] = workers
        c["train"]["epochs"] = 1
        run_training(c, tmp_path / f"w{workers}", progress=False)
        runs.append(load_checkpoint(tmp_path / f"w{workers}" / "last.pt"))
    a, b = (r["model"] for r in runs)
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert runs[0]["config"]["data"]["frame_choices"] == [4, 8]
    assert runs[0]["contract"]["frames"] == 8  # validation and the contract: the largest


def test_eval_at_another_t_and_recalibration(run8, store, tmp_path, capsys):
    at8 = evaluate(run8, store, split="all", clips=2, crops=1, verbose=False)
    at4 = evaluate(run8, store, split="all", clips=2, crops=1, verbose=False, frames=4)
    assert (at8["frames"], at4["frames"]) == (8, 4)
    before = load_checkpoint(run8)
    report = recalibrate(run8, store, frames=4, batches=4, batch_size=3, device="cpu")
    after = load_checkpoint(report.path)  # checksum checked
    assert report.layers > 0 and report.clips == 12
    assert after["contract"]["frames"] == 4
    assert after["contract"]["calibration"] == {
        "frames": 4,
        "trained_frames": 8,
        "store": str(store),
        "clips": 12,
    }
    assert "optimizer" not in after  # for eval and inference, not for resuming
    w0, w1 = before["model"], after["model"]
    stats = [k for k in w0 if k.endswith("running_mean")]
    assert stats and all(not torch.equal(w0[k], w1[k]) for k in stats)
    same = [k for k in w0 if k.endswith("weight")]
    assert all(torch.equal(w0[k], w1[k]) for k in same)  # the weights are the run's
    recal = evaluate(report.path, store, split="all", clips=2, crops=1, verbose=False)
    assert recal["frames"] == 4 and recal["calibration"]["trained_frames"] == 8
    assert recal["video_level"]["top1"] >= 0  # scored at T=4 with the new statistics
    loaded = load_inference_model(report.path)
    assert loaded.contract.frames == 4 and loaded.model.frames == 8
    # the command line
    out = tmp_path / "r.pt"
    argv = ["recalibrate", str(run8), "--store", str(store), "--frames", "4", "--batches", "2"]
    assert main([*argv, "--out", str(out), "--device", "cpu"]) == 0
    assert "re-estimated at T=4 (trained at T=8)" in capsys.readouterr().out
    assert load_checkpoint(out)["contract"]["calibration"]["clips"] == 6


def test_norm_choice(store, tmp_path):
    model = M.create("r2plus1d_tiny", num_classes=3, frames=4, base_width=4, norm="group")
    assert not any(isinstance(m, torch.nn.modules.batchnorm._BatchNorm) for m in model.modules())
    assert any(isinstance(m, torch.nn.GroupNorm) for m in model.modules())
    layer = M.create("cnn_lstm", num_classes=3, frames=4, base_width=4, norm="layer")
    assert all(m.num_groups == 1 for m in layer.modules() if isinstance(m, torch.nn.GroupNorm))
    with pytest.raises(ConfigError, match="norm 'instance'"):
        M.create("r2plus1d_tiny", norm="instance")
    with pytest.raises(ConfigError, match=r"model\.norm: model 'channel_resnet18' has no norm"):
        load_config({**_config(store, 4), "model": {"name": "channel_resnet18", "norm": "group"}})
    c = _config(store, 4, norm="layer")
    c["train"]["epochs"] = 1
    run_training(c, tmp_path / "run", progress=False)
    with pytest.raises(ConfigError, match="no BatchNorm layer, nothing to re-estimate"):
        recalibrate(tmp_path / "run", store, frames=8, device="cpu")
    assert load_inference_model(tmp_path / "run", frames=8).contract.frames == 8


def test_other_t_taken_or_refused_with_the_reason():
    x4 = torch.randn(1, 4, 3, 32, 32)
    for name in ("cnn_lstm", "tsn_resnet18", "video_vit_tiny"):
        m = M.create(name, num_classes=3, frames=8).eval()
        with torch.no_grad():
            assert m(M.to_layout(x4, m.layout)).shape == (1, 3), name
    vit = M.create("video_vit_tiny", num_classes=3, frames=8).eval()
    with torch.no_grad():  # the temporal embedding interpolated: T=8 unchanged, 12 taken
        assert torch.equal(vit._time_embedding(8), vit.pos_time)
        ends = vit._time_embedding(12)[0, [0, -1], 0]
        torch.testing.assert_close(ends, vit.pos_time[0, [0, -1], 0])
    contract = InputContract(frames=4, layout="channel", size=None)
    channel = M.create("channel_resnet18", num_classes=3, frames=8)
    with pytest.raises(ConfigError, match=r"takes only T=8 frames \(its first convolution"):
        Predictor(channel, contract)
    tsm = M.create("tsm_resnet18", num_classes=3, frames=8)
    with pytest.raises(ConfigError, match="temporal shift is built for the T frames"):
        Predictor(tsm, InputContract(frames=4, layout="temporal", size=None))
    lstm = M.create("cnn_lstm", num_classes=3, frames=8)
    assert Predictor(lstm, InputContract(frames=4, layout="temporal", size=None)).frames == 4


def _checkpoint(path, name: str, frames: int = 8):
    torch.manual_seed(0)
    model = M.create(name, num_classes=3, frames=frames)
    config = {"data": {"frames": frames}, "model": {"name": name, "num_classes": 3}}
    state = {"model": model.state_dict(), "config": config, "classes": list(CLASSES)}
    save_checkpoint(path, {**state, "input": {"size": "32"}, "task": "classification"})
    return path


def test_predict_frames_on_the_command_line(videos, tmp_path, capfd):
    video = next(videos.rglob("*.mp4"))
    lstm = _checkpoint(tmp_path / "lstm.pt", "cnn_lstm")
    out = tmp_path / "p"
    argv = ["predict", str(lstm), str(video), "--out", str(out), "--quiet", "--stride", "4"]
    assert main([*argv, "--frames", "4"]) == 0
    meta = json.loads((out / "timeline.json").read_text())
    assert meta["meta"]["frames_per_window"] == 4
    assert all(len(w["source_frames"]) == 4 for w in meta["windows"])
    capfd.readouterr()
    channel = _checkpoint(tmp_path / "channel.pt", "channel_resnet18")
    argv = ["predict", str(channel), str(video), "--out", str(tmp_path / "q"), "--quiet"]
    assert main([*argv, "--frames", "4"]) != 0
    err = capfd.readouterr().err
    assert "--frames 4: model 'channel_resnet18' takes only T=8 frames (its first conv" in err
    assert not (tmp_path / "q").exists()


def test_padding_refused_where_the_mask_is_ignored(store):
    pad = {"short": "pad"}
    with pytest.raises(ConfigError, match=r"short: pad: model 'r2plus1d_tiny' would learn from"):
        load_config({**_config(store, 4), "data": {"store": str(store), "sampler_options": pad}})
    c = _config(store, 4)
    c["data"]["val_sampler_options"] = {"clips": 1, **pad}
    c["model"] = {"name": "channel_resnet18"}
    with pytest.raises(ConfigError, match="stacks the repeated frames into its first conv"):
        load_config(c)
    c["model"] = {"name": "tsn_resnet18"}  # reads the mask: padding allowed
    assert load_config(c).data.val_sampler_options["short"] == "pad"
    for layout in ("conv3d", "channel"):
        with pytest.raises(ConfigError, match=f"short='pad' with layout '{layout}'"):
            HyperframeDataset(store, "uniform", frames=40, layout=layout, sampler_options=pad)
    ds = HyperframeDataset(store, "uniform", frames=40, sampler_options={"clips": 1, **pad})
    assert not bool(ds[0].mask.all())  # the temporal layout keeps its mask
