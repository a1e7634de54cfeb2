"""PNG plots of a run: loss and accuracy (or mIoU) per epoch, and the confusion matrix.

Drawn with matplotlib's object API on an Agg canvas: no global backend is changed and no
window opens.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

__all__ = ["plot_bars", "plot_confusion", "plot_curves"]


def _figure(width: float, height: float):
    # deferred: optional/heavy dependency
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure  # deferred: optional/heavy dependency

    fig = Figure(figsize=(width, height), dpi=100)
    FigureCanvasAgg(fig)
    return fig


def _save(fig, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp.png")
    fig.savefig(tmp, bbox_inches="tight")
    tmp.replace(path)
    return path


def _series(history: list[dict], key: str) -> tuple[list[float], list[float]]:
    xs, ys = [], []
    for rec in history:
        v = rec.get(key)
        if isinstance(v, int | float) and v == v:
            xs.append(rec["epoch"])
            ys.append(v)
    return xs, ys


def plot_curves(
    history: list[dict],
    path: str | Path,
    *,
    metrics: Sequence[tuple[str, str]] = (
        ("train_accuracy", "train top-1"),
        ("val_top1", "val top-1"),
    ),
    title: str = "accuracy",
) -> Path:
    """``curves.png``: train/val loss (left) and, on the right, ``metrics`` (``(record key,
    label)`` pairs: a task's :attr:`~hyperframes.train.Task.curves`) under ``title``; epochs
    are whole numbers on both x axes."""
    return _save(_curves_figure(history, metrics, title), path)


def _curves_figure(history: list[dict], metrics: Sequence[tuple[str, str]], title: str):
    from matplotlib.ticker import MaxNLocator  # deferred: optional/heavy dependency

    fig = _figure(10, 4)
    ax_loss, ax_acc = fig.subplots(1, 2)
    for key, label in (("train_loss", "train"), ("val_loss", "val")):
        xs, ys = _series(history, key)
        if xs:
            ax_loss.plot(xs, ys, marker="o", label=label)
    ax_loss.set_xlabel("epoch")
    ax_loss.set_ylabel("loss")
    ax_loss.set_title("loss")
    for key, label in metrics:
        xs, ys = _series(history, key)
        if xs:
            ax_acc.plot(xs, ys, marker="o", label=label)
    ax_acc.set_ylim(0, 1.02)
    ax_acc.set_xlabel("epoch")
    ax_acc.set_title(title)
    for ax in (ax_loss, ax_acc):
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # no tick at epoch 1.5
        ax.grid(alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend()
    return fig


def plot_confusion(confusion, classes: list[str], path: str | Path, *, title: str = "") -> Path:
    """``confusion.png``: rows = true class, columns = predicted; colour = row share, text =
    counts."""
    conf = np.asarray(confusion, dtype=np.float64)
    n = conf.shape[0]
    rows = conf.sum(axis=1, keepdims=True)
    share = np.divide(conf, rows, out=np.zeros_like(conf), where=rows > 0)
    side = max(4.0, 0.45 * n + 2)
    fig = _figure(side + 1, side)
    ax = fig.subplots()
    im = ax.imshow(share, cmap="Blues", vmin=0, vmax=1)
    fig.colorbar(im, ax=ax, fraction=0.046, pad=0.04, label="share of the true class")
    labels = list(classes)[:n]
    ax.set_xticks(range(n), labels, rotation=45, ha="right")
    ax.set_yticks(range(n), labels)
    ax.set_xlabel("predicted")
    ax.set_ylabel("true")
    if n <= 30:
        for i in range(n):
            for j in range(n):
                if conf[i, j]:
                    colour = "white" if share[i, j] > 0.5 else "black"
                    ax.text(j, i, f"{int(conf[i, j])}", ha="center", va="center", color=colour)
    ax.set_title(title or "confusion matrix")
    return _save(fig, path)


def plot_bars(values: dict[str, float], path: str | Path, *, title: str, ylabel: str) -> Path:
    """A bar per run (the demo's summary)."""
    fig = _figure(7, 4)
    ax = fig.subplots()
    names = list(values)
    bars = ax.bar(range(len(names)), [values[k] for k in names], color="tab:blue")
    for b, k in zip(bars, names):
        ax.text(
            b.get_x() + b.get_width() / 2,
            b.get_height(),
            f"{values[k]:.2f}",
            ha="center",
            va="bottom",
        )
    ax.set_xticks(range(len(names)), names, rotation=15, ha="right")
    ax.set_ylim(0, 1.05)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(axis="y", alpha=0.3)
    return _save(fig, path)
