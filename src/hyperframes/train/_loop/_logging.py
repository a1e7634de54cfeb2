"""Run logs: every record to ``log.jsonl``, one row per epoch to ``epochs.csv``, and the same
scalars to TensorBoard (``tb/``) when the ``tensorboard`` package is installed, and to MLflow
with ``train.loggers: [..., mlflow]`` (:mod:`hyperframes.train._loop._mlflow`); and the progress bar
of an epoch (:class:`EpochProgress`).

Only rank 0 logs (``enabled=False`` elsewhere). When a run resumes from a checkpoint, the
records written after it (before the interruption) are dropped from ``log.jsonl`` and
``epochs.csv`` is rewritten from the checkpoint's history, so the logs read as if the run had
never stopped. The checkpoint says how many records the log held when it was saved
(``log_records``), and the first that many are kept: counting records, not comparing steps,
stays right when a resume with another number of processes re-bases the step numbers. For
older checkpoints, records after their step S are dropped.
"""

from __future__ import annotations

import csv
import io
import json
import math
import sys
import warnings
from pathlib import Path

from ..._core._atomic import write_text_atomic
from ._mlflow import MlflowLogger

__all__ = ["EpochProgress", "RunLogger", "format_duration"]

JSONL = "log.jsonl"
CSV = "epochs.csv"


def _clean(value):
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    return value


def _tensorboard_writer(path: Path):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from torch.utils.tensorboard import SummaryWriter  # deferred: optional/heavy dependency
    except ImportError:  # the tensorboard package is not installed (pip install tensorboard)
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return SummaryWriter(str(path))


class RunLogger:
    def __init__(
        self,
        run_dir: str | Path,
        *,
        enabled: bool = True,
        tensorboard: bool = True,
        resume_step: int | None = None,
        resume_records: int | None = None,
        history: list[dict] | None = None,
        mlflow: dict | None = None,
    ) -> None:
        """``mlflow``: the :class:`~hyperframes.train._loop._mlflow.MlflowLogger` options (``uri``,
        ``experiment``, ``params``), None for no MLflow."""
        self.run_dir = Path(run_dir)
        self.enabled = enabled
        self.tb = None
        self.mlflow = None
        self.records = 0  # records in log.jsonl (what a checkpoint saved now would keep)
        if not enabled:
            return
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.jsonl = self.run_dir / JSONL
        if resume_step is not None:
            self._truncate(resume_step, resume_records)
        elif self.jsonl.exists():
            self.jsonl.unlink()
        self.write_csv(history or [])
        if tensorboard:
            self.tb = _tensorboard_writer(self.run_dir / "tb")
        if mlflow is not None:
            self.mlflow = MlflowLogger(self.run_dir, resume=resume_step is not None, **mlflow)

    def _truncate(self, step: int, records: int | None) -> None:
        if not self.jsonl.exists():
            return
        keep: list[str] = []
        for line in self.jsonl.read_text(encoding="utf-8").splitlines():
            try:
                rec = json.loads(line)
            except ValueError:
                continue  # a line cut by the interruption
            if len(keep) == records:
                break
            if records is not None or int(rec.get("step", 0)) <= step:
                keep.append(line)
        self.records = len(keep)
        write_text_atomic(self.jsonl, "".join(k + "\n" for k in keep))

    def log(self, record: dict) -> None:
        """Append ``record`` (with ``kind`` and ``step``) to the JSONL and TensorBoard."""
        if not self.enabled:
            return
        with open(self.jsonl, "a", encoding="utf-8") as f:
            f.write(json.dumps(_clean(record)) + "\n")
        self.records += 1
        if self.tb is not None:
            prefix = record.get("kind", "log")
            for k, v in record.items():
                if isinstance(v, int | float) and not isinstance(v, bool) and k != "step":
                    self.tb.add_scalar(f"{prefix}/{k}", v, int(record.get("step", 0)))
            self.tb.flush()
        if self.mlflow is not None:
            self.mlflow.log(_clean(record))

    def write_csv(self, history: list[dict]) -> None:
        """Rewrite ``epochs.csv`` from the epoch records (columns: every scalar key seen)."""
        if not self.enabled:
            return
        columns: list[str] = []
        for rec in history:
            for k, v in rec.items():
                if k not in columns and not isinstance(v, dict | list):
                    columns.append(k)
        buf = io.StringIO()
        w = csv.DictWriter(buf, fieldnames=columns, extrasaction="ignore", lineterminator="\n")
        w.writeheader()
        for rec in history:
            w.writerow({k: _clean(rec.get(k)) for k in columns})
        write_text_atomic(self.run_dir / CSV, buf.getvalue())

    def close(self) -> None:
        if self.tb is not None:
            self.tb.close()
            self.tb = None

    def finish(self, status: str = "FINISHED") -> None:
        """The run's files are written: MLflow gets them and the run ends (``status``
        FINISHED, or KILLED for a stopped run; FAILED from :meth:`fail`)."""
        if self.mlflow is not None:
            mlflow, self.mlflow = self.mlflow, None
            mlflow.finish(status)

    def fail(self) -> None:
        if self.mlflow is not None:
            mlflow, self.mlflow = self.mlflow, None
            mlflow.fail()


class EpochProgress:
    """A tqdm bar per epoch (rank 0, when enabled) with loss, samples/s, data wait and ETA."""

    def __init__(self, enabled: bool, total: int, desc: str) -> None:
        self.bar = None
        if enabled:
            from tqdm import tqdm  # deferred: optional/heavy dependency

            self.bar = tqdm(
                total=total,
                desc=desc,
                unit="batch",
                file=sys.stderr,
                dynamic_ncols=True,
                mininterval=0.5,
                leave=False,
            )

    def update(self, text: str) -> None:
        if self.bar is not None:
            self.bar.set_postfix_str(text, refresh=False)
            self.bar.update(1)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def format_duration(seconds: float) -> str:
    """``H:MM:SS`` (negative: 0:00:00)."""
    seconds = max(0, int(seconds))
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"
