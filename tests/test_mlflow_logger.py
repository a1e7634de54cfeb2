"""``train.loggers: [tensorboard, mlflow]``: a real training run logged to a local MLflow
store (the run folder's SQLite file) and read back with ``MlflowClient``: params, metrics,
plots and the checkpoint; a resumed run continues the same MLflow run."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from _stores import tiny_train_config
from hyperframes import ConfigError
from hyperframes.train import load_config, run_training

mlflow = pytest.importorskip(
    "mlflow", reason="mlflow is an optional extra (hyperframes-video[mlflow])"
)


def _client(run):
    from mlflow import MlflowClient

    saved = json.loads((run / "mlflow.json").read_text())
    assert saved["tracking_uri"] == f"sqlite:///{run / 'mlflow.db'}"
    return MlflowClient(tracking_uri=saved["tracking_uri"]), saved["run_id"]


def test_a_run_logs_params_metrics_plots_and_checkpoint_and_resumes_into_it(
    tiny_motion_store, tmp_path
):
    cfg = tiny_train_config(
        tiny_motion_store, epochs=1, schedule="constant", loggers=["tensorboard", "mlflow"]
    )
    cfg["data"]["workers"] = 0
    run = tmp_path / "run"
    run_training(cfg, run, progress=False)
    client, run_id = _client(run)
    got = client.get_run(run_id)
    assert got.info.status == "FINISHED"
    assert got.info.experiment_id == client.get_experiment_by_name("hyperframes").experiment_id
    params = got.data.params
    assert params["data.frames"] == "4" and params["train.lr"] == "0.003"
    assert params["model.name"] == "r2plus1d_tiny" and params["train.loggers"] == (
        '["tensorboard", "mlflow"]'
    )
    # the epoch's metrics are those of epochs.csv; the step losses those of log.jsonl
    with open(run / "epochs.csv", newline="") as f:
        (row,) = list(csv.DictReader(f))
    for key in ("train_loss", "val_loss", "val_top1"):
        assert got.data.metrics[f"epoch/{key}"] == pytest.approx(float(row[key]))
    records = [json.loads(line) for line in (run / "log.jsonl").read_text().splitlines()]
    steps = [(r["step"], r["loss"]) for r in records if r["kind"] == "step"]
    history = sorted((m.step, m.value) for m in client.get_metric_history(run_id, "step/loss"))
    assert [h[0] for h in history] == [s[0] for s in steps]
    assert [h[1] for h in history] == pytest.approx([s[1] for s in steps])
    assert len(steps) == 3  # 6 training videos, batches of 2, log_every 1
    # the plots and the best checkpoint, byte for byte; TensorBoard still writes beside it
    names = {
        a.path
        for folder in ("", "plots", "checkpoint")
        for a in client.list_artifacts(run_id, folder or None)
    }
    assert {"config.yaml", "summary.json", "plots/curves.png", "plots/confusion.png"} <= names
    local = client.download_artifacts(run_id, "checkpoint/best.pt", str(tmp_path / "dl"))
    assert Path(local).read_bytes() == (run / "best.pt").read_bytes()
    assert list((run / "tb").iterdir())
    assert (run / "mlartifacts").is_dir()  # the artifacts live in the run folder
    # resumed to train one more epoch: the same MLflow run, its epochs continued
    run_training({**cfg, "train": {**cfg["train"], "epochs": 2}}, run, resume=True, progress=False)
    client, again = _client(run)
    assert again == run_id
    assert client.get_run(run_id).info.status == "FINISHED"
    epochs = client.get_metric_history(run_id, "epoch/epoch")
    assert sorted(m.value for m in epochs) == [1.0, 2.0]


def test_loggers_are_checked_by_the_config(tiny_motion_store):
    base = tiny_train_config(tiny_motion_store)
    with pytest.raises(ConfigError, match=r"train\.loggers\[1\]: not an allowed value: 'wandb'"):
        load_config(base, overrides=["train.loggers=[tensorboard, wandb]"])
    cfg = load_config(base)
    assert cfg.train.loggers == ["tensorboard"] and cfg.train.mlflow_uri is None
