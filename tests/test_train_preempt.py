"""SIGTERM (a scheduler's preemption notice) and Ctrl-C stop training cleanly: ``last.pt`` at the
step where it stood, one line saying where and how to resume, exit status 143 / 130, no
traceback; ``--resume`` continues mid-epoch to the same weights and metrics as an uninterrupted
run.

The interrupted runs are real ``hyperframes train`` processes (``python -m hyperframes`` run by
:data:`PAUSING`, which only makes the process wait for the test's signal after a chosen step,
so that where the signal lands does not depend on timing)."""

from __future__ import annotations

import csv
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
import yaml

from hyperframes.build import BuildOptions, build_store
from hyperframes.cli import main
from hyperframes.demo import make_motion_dataset
from hyperframes.train import TrainingInterrupted, load_checkpoint, run_training
from hyperframes.train._loop._step import StepRunner as _Run
from hyperframes.train._loop._stopping import _StopRequests

pytestmark = pytest.mark.slow  # signals to real training processes

TIMING = ("samples_per_s", "data_wait_share", "epoch_seconds", "elapsed_seconds")

#: ``python -m hyperframes`` whose process (of rank $HF_TEST_PAUSE_RANK, default any), after
#: optimizer step $HF_TEST_PAUSE_STEP, writes its pid to $HF_TEST_PAUSED and waits until the
#: trainer's handler has seen a signal (Python runs handlers in the main thread, whichever
#: thread the kernel delivered the signal to).
PAUSING = """
import os, runpy, time
from pathlib import Path
from hyperframes.train._loop import _step

pause_step, paused = int(os.environ["HF_TEST_PAUSE_STEP"]), Path(os.environ["HF_TEST_PAUSED"])
pause_rank = os.environ.get("HF_TEST_PAUSE_RANK")
optimizer_step = _step.StepRunner._optimizer_step

def step_then_wait(self):
    optimizer_step(self)
    if self.step == pause_step and pause_rank in (None, str(self.d.rank)):
        # written whole, then renamed: the test waits for the file and reads it at once
        part = paused.with_name(paused.name + ".part")
        part.write_text(str(os.getpid()))
        os.replace(part, paused)
        deadline = time.monotonic() + 120
        while not self.stops.signum and time.monotonic() < deadline:
            time.sleep(0.01)

_step.StepRunner._optimizer_step = step_then_wait
runpy.run_module("hyperframes", run_name="__main__", alter_sys=True)
"""


@pytest.fixture(scope="module")
def config(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("preempt")
    classes = ("left", "right", "up")
    make_motion_dataset(root / "data", classes=classes, videos_per_class=3, frames=12, size=32)
    build_store(root / "data", root / "store", BuildOptions(size="none"), progress=False)
    # 6 train videos, batch 2: 3 steps per epoch, 6 in all; every random draw in use
    return {
        "data": {
            "store": str(root / "store"),
            "frames": 4,
            "batch_size": 2,
            "sampler_options": {"stride": 2},
            "val_sampler_options": {"clips": 1, "stride": 2},
            "augmentation": {"size": 28, "color_jitter": 0.2},
        },
        "model": {"name": "r2plus1d_tiny", "options": {"base_width": 8}},
        "train": {
            "epochs": 2,
            "optimizer": "adamw",
            "lr": 0.003,
            "warmup_epochs": 0.5,
            "mixup": 0.2,
            "cutmix": 1.0,
            "log_every": 1,
            "device": "cpu",
        },
    }


@pytest.fixture(scope="module")
def uninterrupted(config, tmp_path_factory) -> Path:
    run = tmp_path_factory.mktemp("preempt") / "straight"
    run_training(config, run, progress=False)
    return run


def _env(**extra) -> dict:
    # the same intra-op threads as this process, where the uninterrupted run trained
    return {**os.environ, "OMP_NUM_THREADS": str(torch.get_num_threads()), **extra}


def _rows(run: Path) -> list[dict]:
    with open(run / "epochs.csv", newline="") as f:
        return [{k: v for k, v in r.items() if k not in TIMING} for r in csv.DictReader(f)]


def _steps(run: Path) -> list[dict]:
    records = [json.loads(line) for line in (run / "log.jsonl").read_text().splitlines()]
    return [{k: v for k, v in r.items() if k not in TIMING} for r in records if r["kind"] == "step"]


def _wait_for(path: Path, proc: subprocess.Popen, timeout_s: float = 120.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not path.exists():
        if proc.poll() is not None:
            _, err = proc.communicate()
            pytest.fail(f"training ended (status {proc.returncode}) before pausing:\n{err}")
        if time.monotonic() > deadline:
            pytest.fail(f"training did not reach the pause within {timeout_s} s")
        time.sleep(0.02)


@pytest.mark.parametrize(
    ("sig", "pause_step", "where", "resume_in"),
    [
        (signal.SIGTERM, 5, "in epoch 2/2 after batch 2/3 (step 5 of 6)", "process"),
        (signal.SIGINT, 2, "in epoch 1/2 after batch 2/3 (step 2 of 6)", "here"),
    ],
    ids=["sigterm", "sigint"],
)
def test_a_signal_saves_mid_epoch_and_resume_ends_as_if_never_stopped(
    config, uninterrupted, tmp_path, capsys, sig, pause_step, where, resume_in
):
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(config))
    run, paused = tmp_path / "run", tmp_path / "paused"
    cmd = ["train", str(path), "--out", str(run)]
    env = _env(HF_TEST_PAUSE_STEP=str(pause_step), HF_TEST_PAUSED=str(paused))
    proc = subprocess.Popen(
        [sys.executable, "-c", PAUSING, *cmd],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        _wait_for(paused, proc)
        assert int(paused.read_text()) == proc.pid
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 128 + sig, err
    assert "Traceback" not in err
    said = [line for line in err.splitlines() if line.startswith("hyperframes train:")]
    assert said == [
        f"hyperframes train: training stopped by {sig.name} {where}; saved {run / 'last.pt'}; "
        f"continue with: hyperframes train {path} --out {run} --resume"
    ], err
    saved = torch.load(run / "last.pt", weights_only=True)
    assert (saved["epoch"], saved["batches_done"], saved["step"]) == (
        (pause_step - 1) // 3,
        (pause_step - 1) % 3 + 1,
        pause_step,
    )
    assert saved["epoch_state"]["count"] == 2 * saved["batches_done"]  # the epoch's sums so far
    summary = json.loads((run / "summary.json").read_text())
    assert summary["stopped"] and summary["stop_signal"] == sig.name
    assert not list(run.glob(".*.tmp"))

    if resume_in == "process":
        resumed = subprocess.run(
            [sys.executable, "-m", "hyperframes", *cmd, "--resume"],
            env=_env(),
            capture_output=True,
            text=True,
            timeout=180,
        )
        assert resumed.returncode == 0, resumed.stderr
        out = resumed.stdout
    else:  # here, by the same command-line function (no second start-up to pay for)
        capsys.readouterr()
        assert main([*cmd, "--resume"]) == 0
        out = capsys.readouterr().out
    assert f"batch {saved['batches_done']}, step {pause_step}" in out
    a, b = load_checkpoint(uninterrupted / "last.pt"), load_checkpoint(run / "last.pt")
    assert a["model"].keys() == b["model"].keys()
    assert all(torch.equal(a["model"][k], b["model"][k]) for k in a["model"])
    assert _rows(run) == _rows(uninterrupted) and len(_rows(run)) == 2
    assert _steps(run) == _steps(uninterrupted) and len(_steps(run)) == 6
    assert json.loads((run / "summary.json").read_text())["stop_signal"] is None


def test_run_training_raises_after_saving_and_restores_the_handlers(config, monkeypatch, tmp_path):
    optimizer_step = _Run._optimizer_step

    def step_then_ctrl_c(self):
        optimizer_step(self)
        if self.step == 1:
            signal.raise_signal(signal.SIGINT)  # lands in the middle of a micro-step

    monkeypatch.setattr(_Run, "_optimizer_step", step_then_ctrl_c)
    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    cfg = {**config, "train": {**config["train"], "epochs": 1}}
    with pytest.raises(
        TrainingInterrupted, match=r"stopped by SIGINT in epoch 1/1 after batch 1/3"
    ) as e:
        run_training(cfg, tmp_path / "run", progress=False)
    assert e.value.exit_code == 130 and e.value.step == 1
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before
    assert load_checkpoint(tmp_path / "run" / "last.pt")["batches_done"] == 1


def test_a_second_ctrl_c_stops_at_once_and_repeated_sigterms_are_ignored(monkeypatch):
    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    with _StopRequests() as stops:
        signal.raise_signal(signal.SIGTERM)
        signal.raise_signal(signal.SIGTERM)
        assert stops.signum == signal.SIGTERM
    with _StopRequests() as stops:
        signal.raise_signal(signal.SIGINT)
        signal.raise_signal(signal.SIGINT)  # too soon after the first: a double key press
        assert stops.signum == signal.SIGINT
        monkeypatch.setattr(_StopRequests, "FORCE_AFTER_S", 0.0)
        with pytest.raises(KeyboardInterrupt):
            signal.raise_signal(signal.SIGINT)
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # as under nohup: stays ignored
    try:
        with _StopRequests() as stops:
            signal.raise_signal(signal.SIGTERM)
            assert stops.signum == 0
        assert signal.getsignal(signal.SIGTERM) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGTERM, before[1])


@pytest.mark.slow
def test_with_torchrun_a_signal_to_one_rank_stops_every_rank_after_the_same_step(config, tmp_path):
    cfg = {**config, "data": {**config["data"], "batch_size": 1}}  # 3 steps per epoch per rank
    path, script = tmp_path / "c.yaml", tmp_path / "pausing.py"
    path.write_text(yaml.safe_dump(cfg))
    script.write_text(PAUSING)
    run, paused = tmp_path / "run", tmp_path / "paused"
    env = {
        **os.environ,
        "OMP_NUM_THREADS": "1",
        "PYTHONWARNINGS": "ignore",
        "HF_TEST_PAUSE_STEP": "2",
        "HF_TEST_PAUSE_RANK": "1",
        "HF_TEST_PAUSED": str(paused),
    }
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2"]
    proc = subprocess.Popen(
        [*torchrun, str(script), "train", str(path), "--out", str(run), "--quiet"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        _wait_for(paused, proc)
        os.kill(int(paused.read_text()), signal.SIGTERM)  # rank 1 only; rank 0 trains on
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode != 0  # torchrun reports its stopped workers as failed
    said = [line for line in (out + err).splitlines() if "stopped by" in line]
    assert said == [
        "training stopped by SIGTERM in epoch 1/2 after batch 2/3 (step 2 of 6); saved "
        f"{run / 'last.pt'}; continue with the same torchrun command and --resume"
    ], err
    assert re.search(r"exitcode\s*:\s*143", err)  # the first rank out, whichever it was
    saved = torch.load(run / "last.pt", weights_only=True)
    assert (saved["epoch"], saved["batches_done"], saved["step"]) == (0, 2, 2)
