"""The MLflow logger of a run (``train.loggers: [tensorboard, mlflow]``).

One MLflow run per training run, in experiment ``train.mlflow_experiment`` of the tracking
store ``train.mlflow_uri`` (default ``sqlite:///<out>/mlflow.db``, its artifacts in
``<out>/mlartifacts``; MLflow 3 refuses a plain ``./mlruns`` folder store, so a local store is a
SQLite file). ``mlflow ui --backend-store-uri sqlite:///<out>/mlflow.db`` shows it. What goes
there:

* params: the resolved config, flattened (``data.frames``, ``train.lr``...);
* metrics: every scalar of every record of ``log.jsonl`` under the names TensorBoard gets
  (``step/loss``, ``epoch/val_acc``...), at the record's step;
* artifacts, when the run ends: ``config.yaml``, ``epochs.csv``, ``summary.json``,
  ``split.json`` (and ``eval_metrics.json`` with ``eval.clips``/``eval.crops``), the plots
  (``plots/curves.png``, ``plots/confusion.png``) and the best checkpoint
  (``checkpoint/best.pt``).

A resumed run continues the same MLflow run (its id is kept in ``<out>/mlflow.json``); metrics
logged after the checkpoint and before the interruption stay in MLflow's history (it has no
delete), so a step may show two values there, while ``log.jsonl`` is rewound.
"""

from __future__ import annotations

import functools
import json
import math
import time
import warnings
from pathlib import Path

from ..._core._atomic import write_text_atomic
from ..._core._errors import ConfigError, install_command

__all__ = ["MlflowLogger", "flat_params"]

RUN_FILE = "mlflow.json"
#: files of the run folder logged as artifacts (folder in the MLflow run, file name)
ARTIFACTS = (
    ("", "config.yaml"),
    ("", "epochs.csv"),
    ("", "summary.json"),
    ("", "split.json"),
    ("", "eval_metrics.json"),
    ("plots", "curves.png"),
    ("plots", "confusion.png"),
    ("checkpoint", "best.pt"),
)
MAX_PARAM = 6000  # MLflow's limit on a param value's length


def flat_params(config: dict, prefix: str = "") -> dict[str, str]:
    """``{"data.frames": "8", ...}``: every leaf of a nested config as a string."""
    out: dict[str, str] = {}
    for key, value in config.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            out.update(flat_params(value, name + "."))
        else:
            text = json.dumps(value) if not isinstance(value, str) else value
            out[name] = text[:MAX_PARAM]
    return out


def _quiet(method):
    """Run ``method`` with the deprecation warnings of MLflow's own dependencies (SQLAlchemy,
    alembic) silenced: they are MLflow's to fix, and a user can do nothing about them."""

    @functools.wraps(method)
    def quiet(*args, **kwargs):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            warnings.simplefilter("ignore", FutureWarning)
            return method(*args, **kwargs)

    return quiet


@_quiet
def _import_mlflow():
    try:
        import mlflow  # noqa: F401  (an optional extra: imported when a run asks for it)
        from mlflow.entities import Metric, Param  # deferred: optional/heavy dependency
        from mlflow.tracking import MlflowClient  # deferred: optional/heavy dependency
    except ImportError as e:
        raise ConfigError(
            f"train.loggers: mlflow needs the mlflow package, which is not importable here "
            f"({e}); install it with: {install_command('mlflow')}, or remove mlflow from "
            "train.loggers"
        ) from None
    return MlflowClient, Metric, Param


class MlflowLogger:
    """Logs a run to MLflow (module doc); ``resume=True`` continues the run recorded in
    ``<run_dir>/mlflow.json`` when it is of the same tracking URI."""

    @_quiet
    def __init__(
        self, run_dir: Path, *, uri: str | None, experiment: str, params: dict, resume: bool
    ) -> None:
        client_cls, self._metric, param = _import_mlflow()
        self.run_dir = Path(run_dir)
        self.uri = uri or f"sqlite:///{(self.run_dir / 'mlflow.db').absolute()}"
        self.client = client_cls(tracking_uri=self.uri)
        self.run_id = self._resumed() if resume else None
        flat = flat_params(params)
        if self.run_id is None:
            exp = self._experiment(experiment, default_store=uri is None)
            self.run_id = self.client.create_run(exp, run_name=self.run_dir.name).info.run_id
            write_text_atomic(
                self.run_dir / RUN_FILE,
                json.dumps({"tracking_uri": self.uri, "run_id": self.run_id}) + "\n",
            )
            have: dict = {}
        else:
            self.client.update_run(self.run_id, status="RUNNING")
            have = self.client.get_run(self.run_id).data.params
        # params are write-once in MLflow: a resumed run keeps those it logged first
        new = [param(k, v) for k, v in flat.items() if k not in have]
        for i in range(0, len(new), 100):  # MLflow takes at most 100 params a call
            self.client.log_batch(self.run_id, params=new[i : i + 100])

    def _resumed(self) -> str | None:
        try:
            saved = json.loads((self.run_dir / RUN_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(saved, dict) or saved.get("tracking_uri") != self.uri:
            return None
        run_id = saved.get("run_id")
        return run_id if isinstance(run_id, str) else None

    def _experiment(self, name: str, *, default_store: bool) -> str:
        found = self.client.get_experiment_by_name(name)
        if found is not None:
            return found.experiment_id
        # the run folder's own store keeps its artifacts beside it; another store, its default
        where = (self.run_dir / "mlartifacts").absolute().as_uri() if default_store else None
        return self.client.create_experiment(name, artifact_location=where)

    @_quiet
    def log(self, record: dict) -> None:
        """The record's finite scalars as metrics ``<kind>/<key>`` at its step."""
        prefix, step = record.get("kind", "log"), int(record.get("step", 0))
        now = int(time.time() * 1000)
        metrics = [
            self._metric(f"{prefix}/{k}", float(v), now, step)
            for k, v in record.items()
            if isinstance(v, int | float)
            and not isinstance(v, bool)
            and k != "step"
            and math.isfinite(v)
        ]
        if metrics:
            self.client.log_batch(self.run_id, metrics=metrics)

    @_quiet
    def finish(self, status: str = "FINISHED") -> None:
        """Log the run folder's artifacts that exist (module doc) and end the run."""
        for folder, name in ARTIFACTS:
            path = self.run_dir / name
            if path.is_file():
                self.client.log_artifact(self.run_id, str(path), artifact_path=folder or None)
        self.client.set_terminated(self.run_id, status=status)

    @_quiet
    def fail(self) -> None:
        """End the run as failed (training raised), with what was logged so far."""
        self.client.set_terminated(self.run_id, status="FAILED")
