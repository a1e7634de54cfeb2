"""Training through :class:`~hyperframes.data.PrefetchLoader` (on a CUDA device the trainer's
default: batch k+1 moved and prepared on a side stream while step k runs). On the CPU the same
one-batch-ahead order runs without streams, so what it changes (the prepare of the next batch
before the step, the loader's state with a batch held ahead) is tested here: the same weights
as the plain loop, and a checkpoint written between steps resumes at the batch the step had
not had. The GPU parts run where a CUDA GPU is (``benchmarks/gpu_check.sh``)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from _stores import tiny_train_config
from hyperframes.data import HyperframeDataset, PrefetchLoader, loader
from hyperframes.train import load_checkpoint, run_training
from hyperframes.train._loop._step import StepRunner as _Run

needs_cuda = pytest.mark.skipif(
    not torch.cuda.is_available(),
    reason="GPU prefetch in training (side CUDA stream) needs a CUDA GPU; none on this machine",
)


def _items(batches) -> list[int]:
    out: list[int] = []
    for b in batches:
        batch = b[0] if isinstance(b, tuple) else b
        out.extend(int(m["item"]) for m in batch.meta)
    return out


def _loader(store, mode: str):
    ds = HyperframeDataset(store, frames=4, seed=3, sampler_options={"stride": 2})
    return loader(ds, batch_size=2, workers=0 if mode == "processes" else 2, mode=mode)


@pytest.mark.parametrize("mode", ["threads", "processes"])
def test_prefetch_state_counts_the_batches_handed_out_and_resumes_after_them(
    tiny_motion_store, mode
):
    n = len(_loader(tiny_motion_store, mode))
    assert n >= 4
    everything = _items(_loader(tiny_motion_store, mode))
    for k in (0, 1, n - 1, n):
        plain = _loader(tiny_motion_store, mode)
        it = iter(plain)
        got = [next(it) for _ in range(k)]
        pf = PrefetchLoader(_loader(tiny_motion_store, mode), "cpu", prepare=len, move=False)
        pit = iter(pf)
        pgot = [next(pit) for _ in range(k)]
        assert _items(pgot) == _items(got) == everything[: 2 * k]
        assert [p for _, p in pgot] == [len(b) for b in got]  # prepared, one ahead
        state = pf.state_dict()
        assert state == plain.state_dict()
        if 0 < k < n:  # one batch more taken from the loader than handed out
            assert pf.loader.state_dict() != state
        rest = PrefetchLoader(_loader(tiny_motion_store, mode), "cpu", prepare=len, move=False)
        rest.load_state_dict(state)
        assert _items(rest) == everything[2 * k :]
        del it, pit


def test_state_dict_refuses_a_held_count_it_has_not_yielded(tiny_motion_store):
    dl = _loader(tiny_motion_store, "threads")
    with pytest.raises(ValueError, match="held=1: allowed: 0 to the 0 batches yielded"):
        dl.state_dict(held=1)


def _config(store, **train) -> dict:
    cfg = tiny_train_config(store, epochs=1, seed=5, **train)
    cfg["data"]["frames"] = [4, 2]  # T drawn per micro-batch: the prefetcher's index matters
    cfg["data"]["workers"] = 2
    return cfg


def _train(store, out, monkeypatch, prefetch, **kw) -> dict:
    monkeypatch.setattr(_Run, "prefetch", prefetch)
    return run_training(_config(store), out, progress=False, **kw)


def _weights(run) -> dict:
    return load_checkpoint(run / "last.pt")["model"]


def test_prefetched_training_on_the_cpu_gives_the_plain_loops_weights(
    tiny_motion_store, tmp_path, monkeypatch
):
    plain = _train(tiny_motion_store, tmp_path / "plain", monkeypatch, False)
    pre = _train(tiny_motion_store, tmp_path / "pre", monkeypatch, True)
    assert pre["steps"] == plain["steps"] == 3
    a, b = _weights(tmp_path / "plain"), _weights(tmp_path / "pre")
    assert a.keys() == b.keys()
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert pre["final"]["train_loss"] == plain["final"]["train_loss"]
    # stopped between steps with a batch held ahead: resumes at the batch not yet trained on
    stop = tmp_path / "stopped"
    first = _train(tiny_motion_store, stop, monkeypatch, True, stop_after_steps=1)
    assert first["stopped"] and load_checkpoint(stop / "last.pt")["loader"]["samples_yielded"] == 2
    _train(tiny_motion_store, stop, monkeypatch, True, resume=True)
    c = _weights(stop)
    assert all(torch.equal(a[k], c[k]) for k in a)


@needs_cuda
def test_prefetched_training_on_the_gpu_matches_the_plain_loop_on_a_side_stream(
    tiny_motion_store, tmp_path, monkeypatch
):
    streams: list[int] = []
    inputs = _Run._inputs

    def recording(self, batch, i):  # the stream each micro-batch is prepared on
        streams.append(torch.cuda.current_stream(self.device).stream_id)
        return inputs(self, batch, i)

    monkeypatch.setattr(_Run, "_inputs", recording)
    monkeypatch.setattr(torch.backends.cudnn, "deterministic", True)  # the two runs comparable
    monkeypatch.setattr(torch.backends.cudnn, "benchmark", False)
    cfg = {**_config(tiny_motion_store), "train": {**_config(tiny_motion_store)["train"]}}
    cfg["train"]["device"] = "cuda"
    runs = {}
    for prefetch in (False, True):
        streams.clear()
        monkeypatch.setattr(_Run, "prefetch", prefetch)
        out = tmp_path / str(prefetch)
        runs[prefetch] = run_training(cfg, out, progress=False)
        default = torch.cuda.default_stream().stream_id
        on_side = [s != default for s in streams]
        assert len(streams) == 3 and all(on_side) == prefetch and any(on_side) == prefetch
    a, b = _weights(tmp_path / "False"), _weights(tmp_path / "True")
    for k in a:
        torch.testing.assert_close(b[k], a[k], rtol=1e-4, atol=1e-5)
    assert runs[True]["steps"] == runs[False]["steps"] == 3
    assert 0 <= runs[True]["data_wait_share"] < 1  # the wait for the prepared batch


@needs_cuda
def test_prefetch_waits_for_batches_made_on_the_gpu(tiny_motion_store):
    ds = HyperframeDataset(tiny_motion_store, frames=4, seed=3, memory="cuda")
    want = [b.frames.float().mean(dim=(1, 2)).cpu() for b in loader(ds, batch_size=2)]
    pf = PrefetchLoader(loader(ds, batch_size=2), "cuda", prepare=lambda b: b.frames.float())
    got = [x.mean(dim=(1, 2)).cpu() for _, x in pf]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w)


@needs_cuda
def test_validation_prefetched_on_the_gpu_gives_the_cpus_predictions(tiny_motion_store, tmp_path):
    from hyperframes.infer import load_inference_model
    from hyperframes.train._eval._predict import predict

    run = tmp_path / "run"
    run_training(_config(tiny_motion_store), run, progress=False)
    ds = HyperframeDataset(tiny_motion_store, frames=4, seed=3, sampler_options={"stride": 2})
    got = {}
    for device in ("cpu", "cuda"):
        m = load_inference_model(run / "last.pt", device=device)
        dl = loader(ds, batch_size=2, shuffle=False, workers=2)
        got[device] = predict(
            m.model,
            dl,
            task=m.task,
            contract=m.contract,
            device=torch.device(device),
            num_classes=len(m.classes),
        )
    assert len(got["cpu"]["items"]) == len(ds)
    for k, v in got["cpu"].items():
        np.testing.assert_allclose(got["cuda"][k], v, rtol=1e-3, atol=1e-4, err_msg=k)
