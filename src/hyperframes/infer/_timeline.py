"""The per-window timeline of a prediction run: CSV, JSON and a PNG plot, written as it goes.

``timeline.csv``: one row per window, with the columns of :data:`COLUMNS`: ``window,
first_source_frame, last_source_frame, key_source_frame, start_seconds, end_seconds,
key_seconds, top1, top1_prob, ..., topK_prob``, then ``prob:<class>`` for every class
(smoothed probabilities; for segmentation models the mean per-pixel probability, followed by
``coverage:<class>``, the fraction of the key frame's pixels given to it). Frame numbers are
the source video's (0-based, every decoded frame counted), whatever rate the model runs at;
times are presentation times in seconds.

``timeline.json``: ``{"meta": {..., "columns": COLUMNS}, "windows": [Prediction.to_dict(),
...]}``, streamed to disk window by window; each window also lists its T ``source_frames``.

Both are streamed to hidden temporary files beside them (``.timeline.csv.PID.tmp``) and take
their names only when the run has finished (synced, then renamed; :meth:`TimelineWriter.close`):
a run that fails, or is killed, leaves no file at the final names (and the previous run's
files, if any, as they were); a killed run's temporary files are removed by the next writer.

``timeline.png``: class probability (segmentation: pixel coverage) over time, for the
classes that reach the highest values. The plot keeps a bounded history: past
:data:`PLOT_POINTS` windows, neighbouring points are averaged in pairs, so memory does not
grow with the video's length.
"""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path

import numpy as np

from .._core._atomic import fsync_dir, remove_stale_temps, temp_path
from .._core._tasks import task_traits
from ._prediction import Prediction

__all__ = ["COLUMNS", "PLOT_POINTS", "TimelineWriter", "plot_timeline"]

PLOT_POINTS = 4096
PLOT_CLASSES = 10
#: what each column of ``timeline.csv`` (and key of a window in ``timeline.json``) holds
COLUMNS = {
    "window": "the window's number, from 0, in time order",
    "first_source_frame": "the source video's frame number (0-based, every decoded frame "
    "counted) of the window's first frame",
    "last_source_frame": "the source frame number of the window's last frame (included)",
    "key_source_frame": "the source frame number of the window's middle frame (T // 2; a "
    "segmentation mask's frame)",
    "start_seconds": "the first frame's presentation time, in seconds",
    "end_seconds": "the last frame's time plus one frame interval at the model's rate: the "
    "window covers [start_seconds, end_seconds)",
    "key_seconds": "the middle frame's presentation time, in seconds",
    "topN, topN_prob": "the N-th most probable class and its (smoothed) probability",
    "prob:<class>": "the class's smoothed probability (segmentation: mean over pixels; "
    "multilabel: the class's own sigmoid, classes independent)",
    "coverage:<class>": "segmentation: the fraction of the key frame's pixels given to it",
}


class _History:
    """Times and per-class values, at most ``2 * limit`` points (pairs averaged beyond)."""

    def __init__(self, limit: int = PLOT_POINTS) -> None:
        self.limit = limit
        self.times: list[float] = []
        self.values: list[np.ndarray] = []
        self.bin = 1  # windows per point
        self._acc: list[tuple[float, np.ndarray]] = []

    def add(self, t: float, v: np.ndarray) -> None:
        self._acc.append((t, np.asarray(v, np.float32)))
        if len(self._acc) < self.bin:
            return
        self.times.append(float(np.mean([a for a, _ in self._acc])))
        self.values.append(np.mean([b for _, b in self._acc], axis=0))
        self._acc = []
        if len(self.times) >= 2 * self.limit:
            self.times = [0.5 * (a + b) for a, b in zip(self.times[::2], self.times[1::2])]
            self.values = [0.5 * (a + b) for a, b in zip(self.values[::2], self.values[1::2])]
            self.bin *= 2

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        times, values = list(self.times), list(self.values)
        if self._acc:
            times.append(float(np.mean([a for a, _ in self._acc])))
            values.append(np.mean([b for _, b in self._acc], axis=0))
        if not times:
            return np.zeros(0), np.zeros((0, 0))
        return np.asarray(times), np.stack(values)


def plot_timeline(
    path: str | os.PathLike,
    times: np.ndarray,
    values: np.ndarray,
    classes: list[str],
    *,
    ylabel: str = "probability",
    title: str = "",
    max_classes: int = PLOT_CLASSES,
    format: str | None = None,
) -> Path:
    """A PNG of ``values`` (N, K) over ``times`` (N,), one line per class (the ``max_classes``
    with the highest peaks). Uses matplotlib's Agg canvas; the global backend is untouched."""
    # deferred: optional/heavy dependency
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure  # deferred: optional/heavy dependency

    path = Path(path)
    fig = Figure(figsize=(10, 4), dpi=100)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)
    if len(times):
        order = np.argsort(-values.max(0), kind="stable")[:max_classes]
        for k in sorted(order):
            style = "-o" if len(times) == 1 else "-"
            ax.plot(times, values[:, k], style, label=classes[k], linewidth=1.5, markersize=3)
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("time (s)")
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)
    if title:
        ax.set_title(title, fontsize=10)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format=format)
    return path


class TimelineWriter:
    """Streams predictions to ``out/timeline.csv`` and ``.json``; the PNG on :meth:`close`."""

    def __init__(
        self,
        out: str | os.PathLike,
        classes: list[str],
        *,
        task: str = "classification",
        meta: dict | None = None,
        top_k: int = 3,
        name: str = "timeline",
    ) -> None:
        self.out = Path(out)
        self.out.mkdir(parents=True, exist_ok=True)
        self.classes = list(classes)
        self.task = task
        self.traits = task_traits(task)
        self.top_k = max(1, min(top_k, len(self.classes)))
        self.csv_path = self.out / f"{name}.csv"
        self.json_path = self.out / f"{name}.json"
        self.png_path = self.out / f"{name}.png"
        self.meta = {**(meta or {}), "columns": COLUMNS}
        self.count = 0
        self._history = _History()
        for path in (self.csv_path, self.json_path, self.png_path):
            remove_stale_temps(self.out, path.name)  # of killed runs
        # written under temporary names, renamed by close(): never partial at the final names
        self._csv_tmp, self._json_tmp = temp_path(self.csv_path), temp_path(self.json_path)
        self._csv_file = open(self._csv_tmp, "w", newline="", encoding="utf-8")  # noqa: SIM115
        self._csv = csv.writer(self._csv_file)
        header = [
            "window",
            "first_source_frame",
            "last_source_frame",
            "key_source_frame",
            "start_seconds",
            "end_seconds",
            "key_seconds",
        ]
        for i in range(1, self.top_k + 1):
            header += [f"top{i}", f"top{i}_prob"]
        header += [f"prob:{c}" for c in self.classes]
        if self.traits.per_pixel:
            header += [f"coverage:{c}" for c in self.classes]
        self._csv.writerow(header)
        self._json = open(self._json_tmp, "w", encoding="utf-8")  # noqa: SIM115
        self._json.write('{"meta": ' + json.dumps(self.meta) + ', "windows": [')
        self._closed = False

    def add(self, pred: Prediction) -> None:
        row: list = [
            pred.index,
            pred.first_source_frame,
            pred.last_source_frame,
            pred.key_source_frame,
            f"{pred.start_seconds:.6f}",
            f"{pred.end_seconds:.6f}",
            f"{pred.key_seconds:.6f}",
        ]
        for c, p in pred.top(self.top_k):
            row += [c, f"{p:.6f}"]
        row += [f"{p:.6f}" for p in pred.probs]
        cov = pred.coverage
        if self.traits.per_pixel and cov is not None:
            row += [f"{v:.6f}" for v in cov]
        self._csv.writerow(row)
        self._json.write(
            ("\n " if self.count == 0 else ",\n ") + json.dumps(pred.to_dict(self.top_k))
        )
        values = cov if cov is not None else pred.probs
        self._history.add(pred.centre_seconds, values)
        self.count += 1

    def close(self, extra_meta: dict | None = None) -> list[Path]:
        """Finish the files (``extra_meta`` goes into the JSON's end as ``"summary"``) and give
        them their names: CSV and JSON synced, the PNG drawn beside them, then each renamed."""
        if self._closed:
            return [self.csv_path, self.json_path, self.png_path]
        self._json.write("\n]")
        if extra_meta is not None:
            self._json.write(', "summary": ' + json.dumps(extra_meta))
        self._json.write("}\n")
        for f in (self._csv_file, self._json):
            f.flush()
            os.fsync(f.fileno())
            f.close()
        times, values = self._history.arrays()
        seg = self.traits.per_pixel
        png_tmp = temp_path(self.png_path)
        try:
            plot_timeline(
                png_tmp,
                times,
                values,
                self.classes,
                ylabel="fraction of pixels" if seg else "probability (smoothed)",
                title=str(self.meta.get("title", "")),
                format="png",
            )
            for tmp, path in (
                (self._csv_tmp, self.csv_path),
                (self._json_tmp, self.json_path),
                (png_tmp, self.png_path),
            ):
                os.replace(tmp, path)
        except BaseException:
            self.abort()
            png_tmp.unlink(missing_ok=True)
            raise
        self._closed = True
        fsync_dir(self.out)
        return [self.csv_path, self.json_path, self.png_path]

    def abort(self) -> None:
        """After an error: close and remove the temporary files (nothing takes a final name;
        files of an earlier run there stay as they were)."""
        if self._closed:
            return
        self._closed = True
        for f, tmp in ((self._csv_file, self._csv_tmp), (self._json, self._json_tmp)):
            f.close()
            tmp.unlink(missing_ok=True)
