"""``hyperframes estimate CONFIG``: parameters, FLOPs per clip and memory before training,
checked against the measured peak of real CPU training steps (glibc's mallinfo2 read after
every aten op: ``hyperframes.train._loop._estimate.measure_step_peak``); ``train.checkpointing`` as a
list of stages; normalisation layers kept in float32 under AMP."""

from __future__ import annotations

import json

import pytest
import torch
import yaml

from _stores import tiny_train_config
from hyperframes import ConfigError
from hyperframes.build import BuildOptions, build_store
from hyperframes.cli import main
from hyperframes.data import loader
from hyperframes.demo import make_motion_dataset
from hyperframes.store import open_store
from hyperframes.train import estimate, load_config
from hyperframes.train._config._data import build_data
from hyperframes.train._loop._estimate import _loss, _mallinfo, measure_step_peak
from hyperframes.train._loop._setup import build_model, build_optimizer
from hyperframes.train._tasks._base import create_task

BATCH = 6  # the training split of the store below: 3 of 4 videos per class


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    root = tmp_path_factory.mktemp("est") / "motion"
    make_motion_dataset(root, classes=("left", "right"), videos_per_class=4, frames=10, size=64)
    out = tmp_path_factory.mktemp("est") / "store"
    build_store(root, out, BuildOptions(size="none"), progress=False)
    return out


def _raw(store, **train) -> dict:
    raw = tiny_train_config(store, optimizer="sgd", **train)
    raw["data"].update(frames=8, batch_size=BATCH, sampler_options={}, val_sampler_options={})
    return raw


def _measured_step(cfg) -> int:
    """The peak bytes of a real training step of ``cfg`` at its batch: parameters and
    optimizer state (allocated before the step) plus what the step allocates."""
    st = open_store(cfg.data.store)
    try:
        b = build_data(cfg, st)
        model = build_model(cfg, b.num_classes, b.contract).train()
        opt = build_optimizer(cfg, model, 0.01)
        task = create_task(b.task, b.classes)
        batch = next(iter(loader(b.train, BATCH, shuffle=False, workers=0)))
        assert len(batch) == BATCH

        def step():
            x = b.contract.prepare(batch.frames)
            _loss(model, x, batch, task).backward()
            opt.step()
            opt.zero_grad()

        peak = measure_step_peak(step)
    finally:
        st.close()
    params = sum(p.numel() * p.element_size() for p in model.parameters())
    return peak + 2 * params  # + the momentum buffers, which the warm-up step made


@pytest.mark.skipif(_mallinfo() is None, reason="measuring CPU peak memory needs glibc mallinfo2")
@pytest.mark.parametrize("checkpointing", [False, True])
def test_the_estimate_is_within_25_percent_of_a_measured_cpu_step(store, checkpointing):
    cfg = load_config(_raw(store, checkpointing=checkpointing))
    e = estimate(cfg)
    measured = _measured_step(cfg)
    predicted = e.step_bytes(checkpointed=checkpointing)
    assert 0.75 < predicted / measured < 1.25, (predicted, measured)
    # activations are most of this step (else the check would not test them)
    assert e.activation_bytes > 0.5 * predicted


def test_counts_follow_the_model_and_the_clip(store):
    cfg = load_config(_raw(store))
    e = estimate(cfg)
    model = build_model(cfg, 2)
    assert e.parameters == sum(p.numel() for p in model.parameters())
    assert e.input_shape == [BATCH, 3, 8, 64, 64]
    half = estimate(load_config(_raw(store), overrides=["data.frames=4"]))
    assert 1.7 < e.flops_per_clip / half.flops_per_clip < 2.3  # a 3D CNN: linear in T
    assert 1.6 < e.activation_bytes / half.activation_bytes < 2.4
    double = estimate(load_config(_raw(store), overrides=["data.batch_size=12"]))
    assert double.activation_bytes == pytest.approx(2 * e.activation_bytes, rel=0.01)
    assert double.flops_per_clip == e.flops_per_clip
    assert e.checkpointed_activation_bytes < e.activation_bytes


def test_checkpointing_takes_the_stages_to_recompute(store):
    cfg = load_config(_raw(store, checkpointing=["stages.1"]))
    e = estimate(cfg)
    assert e.checkpointed_stages == ["stages.1"]
    every = estimate(load_config(_raw(store, checkpointing=True)))
    assert len(every.checkpointed_stages) == 4
    assert every.checkpointed_activation_bytes < e.checkpointed_activation_bytes
    assert e.checkpointed_activation_bytes < e.activation_bytes
    model = build_model(cfg, 2)
    assert model.checkpointing and model.checkpoint_stages == frozenset({"stages.1"})
    # same gradients as without checkpointing; only the named stage is recomputed
    plain = build_model(load_config(_raw(store)), 2)
    x = torch.randn(2, 3, 8, 32, 32)
    calls = []
    for i in (1, 2):  # a pre-hook: the recomputation stops once it has what backward needs
        model.stages[i].conv1.register_forward_pre_hook(lambda *a, i=i: calls.append(i))
    model(x).sum().backward()
    plain(x).sum().backward()
    assert calls == [1, 2, 1]  # stage 1 ran again in backward, stage 2 did not
    for (n, p), q in zip(model.named_parameters(), plain.parameters()):
        torch.testing.assert_close(p.grad, q.grad, msg=n)
    with pytest.raises(ConfigError, match=r"train\.checkpointing: .* no stage 'layer9'"):
        build_model(load_config(_raw(store, checkpointing=["layer9"])), 2)
    with pytest.raises(ConfigError, match=r"train\.checkpointing: expected"):
        load_config(_raw(store, checkpointing="layer3"))


def test_norm_layers_stay_float32_under_amp(store):
    cfg = load_config(_raw(store, amp=True))
    assert cfg.train.amp_float32 == ["batchnorm"]
    seen = {}
    for name, amp32 in (("kept", ["batchnorm"]), ("plain", [])):
        cfg.train.amp_float32 = amp32
        model = build_model(cfg, 2)
        bn = model.stem[1]
        assert isinstance(bn, torch.nn.BatchNorm3d)

        def note(m, i, o, name=name):
            seen[name] = o.dtype

        bn.register_forward_hook(note)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            model(torch.randn(2, 3, 8, 32, 32))
    assert seen == {"kept": torch.float32, "plain": torch.bfloat16}
    with pytest.raises(ConfigError, match=r"train\.amp_float32\[0\]"):
        load_config(_raw(store, amp_float32=["dropout"]))


def test_the_command_prints_the_estimate(store, tmp_path, capsys):
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(_raw(store)))
    assert main(["estimate", str(path)]) == 0
    out = capsys.readouterr().out
    for words in (
        "parameters",
        "FLOPs per clip",
        "activation memory at batch 6",
        "with activation checkpointing (4 stage(s)",
        "step peak",
    ):
        assert words in out
    assert main(["estimate", str(path), "--set", "data.batch_size=3", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["batch_size"] == 3 and got["activation_bytes"] > 0
    assert [s["name"] for s in got["stages"]] == [f"stages.{i}" for i in range(4)]
