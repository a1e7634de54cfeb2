"""Elastic resume of training: a run preempted on one number of processes continues mid-epoch
on another, reading the rest of the epoch's global order (hyperframes.train._loop._resume).

Which samples a run trains on is recorded by wrapping ``StepRunner._loss`` (:data:`HOOK`): one JSON
line per micro-batch per rank, ``{"epoch", "step", "items"}``. Ranks step in lockstep, so the
global order of a step is its ranks' items interleaved (item j of rank r before item j of rank
r + 1)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
import yaml

from hyperframes.build import BuildOptions, build_store
from hyperframes.demo import make_motion_dataset
from hyperframes.train import load_checkpoint, run_training, save_checkpoint
from hyperframes.train._loop._resume import rescaled_resumed_at, resized_position
from hyperframes.train._loop._step import StepRunner as _Run

#: wraps ``StepRunner._loss`` to record the items of every micro-batch in $HF_TEST_SEEN/rank<r>.jsonl;
#: with $HF_TEST_PAUSE_STEP, rank 0 then waits after that optimizer step for a signal (so the
#: preemption lands at a known step, whatever the timing), telling the test in $HF_TEST_PAUSED
HOOK = """
import json, os, time
from pathlib import Path
from hyperframes.train._loop import _step

def install(seen):
    loss, optimizer_step = _step.StepRunner._loss, _step.StepRunner._optimizer_step

    def recording_loss(self, x, batch, target):
        rec = {"epoch": self.epoch, "step": self.step, "items": [m["item"] for m in batch.meta]}
        with open(Path(seen) / f"rank{self.d.rank}.jsonl", "a") as f:
            f.write(json.dumps(rec) + "\\n")
        return loss(self, x, batch, target)

    def step_then_wait(self):
        optimizer_step(self)
        pause = os.environ.get("HF_TEST_PAUSE_STEP")
        if pause and self.step == int(pause) and self.d.rank == 0:
            paused = Path(os.environ["HF_TEST_PAUSED"])  # whole, then renamed (read at once)
            part = paused.with_name(paused.name + ".part")
            part.write_text(str(os.getpid()))
            os.replace(part, paused)
            deadline = time.monotonic() + 60
            while not self.stops.signum and time.monotonic() < deadline:
                time.sleep(0.01)

    _step.StepRunner._loss = recording_loss
    _step.StepRunner._optimizer_step = step_then_wait
    return recording_loss
"""

SCRIPT = (
    HOOK
    + """
import runpy, sys
install(os.environ["HF_TEST_SEEN"])
runpy.run_module("hyperframes", run_name="__main__", alter_sys=True)
"""
)


def _seen(folder: Path) -> dict[int, list[int]]:
    """{epoch: the global order of items trained on} from a run's per-rank records."""
    ranks = sorted(folder.glob("rank*.jsonl"))
    per_rank = [[json.loads(x) for x in p.read_text().splitlines()] for p in ranks]
    assert len({len(r) for r in per_rank}) == 1, "ranks out of lockstep"
    out: dict[int, list[int]] = {}
    for step in zip(*per_rank):
        assert len({r["epoch"] for r in step}) == 1
        items = [r["items"] for r in step]
        for j in range(max(map(len, items))):
            out.setdefault(step[0]["epoch"], []).extend(b[j] for b in items if j < len(b))
    return out


_REAL = _Run._loss, _Run._optimizer_step


def _record_here(monkeypatch, seen: Path) -> None:
    """:data:`HOOK` in this process (recording only), undone after the test."""
    namespace: dict = {}
    exec(HOOK, namespace)
    monkeypatch.setattr(_Run, "_loss", _REAL[0])
    monkeypatch.setattr(_Run, "_optimizer_step", _REAL[1])
    namespace["install"](seen)  # wraps the real methods; monkeypatch restores them
    _Run._optimizer_step = _REAL[1]  # type: ignore[method-assign]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def motion_store(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("elastic")
    classes = ("left", "right", "up")
    make_motion_dataset(root / "data", classes=classes, videos_per_class=4, frames=10, size=32)
    build_store(root / "data", root / "store", BuildOptions(size="none"), progress=False)
    return root / "store"


@pytest.fixture
def store_location(motion_store) -> str:
    """Where the in-process runs read their store: ``data.store`` (a local folder)."""
    return str(motion_store)


@pytest.fixture
def s3_store(motion_store, s3_url) -> str:
    """The same videos built into a store on the tests' S3 server (``build --out s3://``)."""
    build_store(motion_store.parent / "data", s3_url, BuildOptions(size="none"), progress=False)
    return s3_url


def node_overrides(node: int, tmp_path: Path) -> list[str]:
    """``--set`` overrides of one node: its own cache folder for the store at the URL."""
    return [f"data.cache_dir={tmp_path / f'cache-node{node}'}", "data.cache_limit=64000000"]


def _config(store: str, **train) -> dict:
    # 12 videos, 9 to train on; batch 1: with 2 processes 4 micro-batches per epoch (data.drop_last
    # leaves the 9th sample of the global order out), with 1 process 9
    return {
        "data": {"store": store, "frames": 4, "batch_size": 1, "val_fraction": 0.25},
        "model": {"name": "r2plus1d_tiny", "options": {"base_width": 4}},
        "train": {
            "epochs": 2,
            "optimizer": "adamw",
            "lr": 0.003,
            "warmup_epochs": 0.5,
            "log_every": 1,
            "device": "cpu",
            **train,
        },
    }


def test_resized_position_measures_progress_in_global_samples():
    # 9 items; 2 ranks of batch 1 read 4 (2 steps); 1 rank then has 5 of 9 micro-batches left
    assert resized_position(epoch=0, micro_per_epoch=9, micro_left=5, accumulate=1) == (4, 4)
    # accumulate 2: 5 steps an epoch, the 5 micro-batches left take 3 of them
    assert resized_position(epoch=1, micro_per_epoch=9, micro_left=5, accumulate=2) == (4, 7)
    assert resized_position(epoch=0, micro_per_epoch=9, micro_left=9, accumulate=1) == (0, 0)
    assert resized_position(epoch=0, micro_per_epoch=9, micro_left=0, accumulate=1) == (9, 9)
    with pytest.raises(Exception, match="does not fit this data"):
        resized_position(epoch=0, micro_per_epoch=4, micro_left=5, accumulate=1)
    assert rescaled_resumed_at((10, 0.5), old_steps_per_epoch=5, steps_per_epoch=9) == (18, 0.5)
    assert rescaled_resumed_at(None, old_steps_per_epoch=5, steps_per_epoch=9) is None


def test_checkpoints_hold_the_global_position_and_a_resized_resume_rebases_the_steps(
    store_location, tmp_path, monkeypatch
):
    """In one process: a run stopped after 4 steps saves the loader's global position; told
    that it was saved by 2 processes (the position means the same for any number: 4 samples of
    the global order), the resume continues at sample 4 with the steps re-based."""
    cfg = _config(store_location, epochs=1)
    straight, seen_straight = tmp_path / "straight", tmp_path / "seen-straight"
    seen_straight.mkdir()
    _record_here(monkeypatch, seen_straight)
    run_training(cfg, straight, progress=False)
    order = _seen(seen_straight)
    assert list(order) == [0] and len(order[0]) == 9

    run, seen = tmp_path / "run", tmp_path / "seen"
    seen.mkdir()
    _record_here(monkeypatch, seen)
    run_training(cfg, run, progress=False, stop_after_steps=4)
    ck = torch.load(run / "last.pt", weights_only=True)
    assert ck["loader"] == {
        "format": "hyperframes-loader-state",
        "version": 1,
        "epoch": 0,
        "samples_yielded": 4,
        "epoch_length": 9,
        "origin": 0,
        "world_size": 1,
        "seed": 0,
        "order": "shuffle",
    }
    assert (ck["world_size"], ck["steps_per_epoch"], ck["step"]) == (1, 9, 4)
    lines = (run / "log.jsonl").read_text().splitlines()
    assert ck["log_records"] == len(lines) == 4  # the 4 step records
    (run / "log.jsonl").write_text("\n".join(lines) + '\n{"kind": "step", "step": 1}\n')

    # what 2 processes would have saved at the same place: step 2 of 4 per epoch
    ck.update(world_size=2, steps_per_epoch=4, step=2, batches_done=2)
    ck["loader"]["world_size"] = 2
    save_checkpoint(run / "last.pt", ck)  # re-signed: an edit torch.save kept is damage
    summary = run_training(cfg, run, resume=True, progress=False)
    assert summary["steps"] == 9 and summary["epochs"] == 1
    assert _seen(seen) == order  # the same samples in the same order, the epoch continued
    records = [json.loads(x) for x in (run / "log.jsonl").read_text().splitlines()]
    assert len([r for r in records if r["kind"] == "step" and r["step"] == 1]) == 1
    resize = [r for r in records if r["kind"] == "resize"]
    assert resize == [
        {
            "kind": "resize",
            "epoch": 1,
            "step": 4,
            "saved_step": 2,
            "world_size": 1,
            "saved_world_size": 2,
            "samples_yielded": 4,
            "epoch_length": 9,
        }
    ]
    steps = [r["step"] for r in records if r["kind"] == "step"]
    assert steps == list(range(1, 10))  # continued at step 5 of 9: no gap, no repeat
    assert load_checkpoint(run / "last.pt")["loader"]["epoch"] == 1


def _torchrun(*args: str) -> list[str]:
    return [sys.executable, "-m", "torch.distributed.run", *args]


@pytest.mark.slow
def test_two_nodes_preempted_resume_on_one_node_mid_epoch(s3_store, tmp_path, monkeypatch):
    """``torchrun --nnodes 2 --nproc_per_node 1`` (two node agents on this machine, gloo,
    rendezvous on 127.0.0.1) reading one store on the S3 server, each node with its own cache
    folder; SIGTERM to both jobs' process groups after step 2, then ``--resume`` with one
    process on a third "node" (another cache): it continues epoch 1 at sample 4 of its global
    order and trains on exactly the samples of an uninterrupted run, in its order."""
    cfg = _config(s3_store)
    path, script = tmp_path / "c.yaml", tmp_path / "hooked.py"
    path.write_text(yaml.safe_dump(cfg))
    script.write_text(SCRIPT)
    run, paused = tmp_path / "run", tmp_path / "paused"
    before, after = tmp_path / "seen-2nodes", tmp_path / "seen-1node"
    before.mkdir()
    after.mkdir()
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONWARNINGS": "ignore"}
    train = [str(script), "train", str(path), "--out", str(run), "--quiet"]
    port = _free_port()
    nodes = []
    try:
        for node in (0, 1):
            nodes.append(
                subprocess.Popen(
                    _torchrun(
                        "--nnodes=2",
                        "--nproc_per_node=1",
                        f"--node_rank={node}",
                        "--master_addr=127.0.0.1",
                        f"--master_port={port}",
                        *train,
                        *(x for o in node_overrides(node, tmp_path) for x in ("--set", o)),
                    ),
                    env={
                        **env,
                        "HF_TEST_SEEN": str(before),
                        "HF_TEST_PAUSE_STEP": "2",
                        "HF_TEST_PAUSED": str(paused),
                    },
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                    start_new_session=True,  # each node its own process group, as a job is
                )
            )
        deadline = time.monotonic() + 90
        while not paused.exists():
            assert all(p.poll() is None for p in nodes), [p.communicate() for p in nodes]
            assert time.monotonic() < deadline, "the 2-node run did not reach step 2"
            time.sleep(0.05)
        for p in nodes:  # the scheduler's preemption notice, to every process of each job
            os.killpg(p.pid, signal.SIGTERM)
        outs = [p.communicate(timeout=90) for p in nodes]
    finally:
        for p in nodes:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
                p.communicate()
    err = "".join(e for _, e in outs)
    assert all(p.returncode != 0 for p in nodes)  # preempted: torchrun reports the stop
    assert "training stopped by SIGTERM in epoch 1/2 after batch 2/4 (step 2 of 8)" in err, err
    saved = load_checkpoint(run / "last.pt")
    assert (saved["epoch"], saved["batches_done"], saved["step"]) == (0, 2, 2)
    assert saved["world_size"] == 2 and saved["loader"]["samples_yielded"] == 4

    for node in (0, 1):  # each node read through its own cache
        assert any((tmp_path / f"cache-node{node}").rglob("*")), node
    resumed = subprocess.run(
        _torchrun(
            "--standalone",
            "--nnodes=1",
            "--nproc_per_node=1",
            *train,
            "--resume",
            *(x for o in node_overrides(2, tmp_path) for x in ("--set", o)),
        ),
        env={**env, "HF_TEST_SEEN": str(after)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    summary = json.loads((run / "summary.json").read_text())
    assert summary["world_size"] == 1 and summary["steps"] == 18 and summary["epochs"] == 2
    assert not summary["stopped"]

    straight = tmp_path / "seen-straight"
    straight.mkdir()
    _record_here(monkeypatch, straight)
    run_training(cfg, tmp_path / "straight", progress=False)
    order = _seen(straight)
    two, one = _seen(before), _seen(after)
    assert two == {0: order[0][:4]}  # 2 steps of 2 ranks: the first 4 samples
    assert one == {0: order[0][4:], 1: order[1]}  # the rest of epoch 1, then epoch 2
