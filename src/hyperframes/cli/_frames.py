"""The options of another T: ``--frames`` (eval, predict) and ``hyperframes recalibrate``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["add_recalibrate", "frames_option"]


def frames_option(p) -> None:
    p.add_argument(
        "--frames",
        type=int,
        default=None,
        metavar="T",
        help="windows of T frames instead of the model's (CNN+LSTM, TSN, 3D CNNs, transformers "
        "take any T; channel and TSM models refuse it, saying why); `hyperframes "
        "recalibrate` re-estimates a BatchNorm model's statistics at that T",
    )


def add_recalibrate(sub, command: Callable[..., Any], handler: Callable[..., Any]) -> None:
    r = command(
        sub,
        "recalibrate",
        "re-estimate BatchNorm statistics at another T",
        "Run the model in training mode, without gradients, over windows of T frames of a "
        "store's training split, so every BatchNorm layer's running mean and variance are "
        "those of T-frame clips; write a new checkpoint whose input contract says T and what "
        "was recalibrated (the weights are unchanged).",
    )
    r.add_argument("checkpoint", help="RUN_DIR (its best.pt, else last.pt) or a checkpoint")
    r.add_argument("--store", default=None, help="store to estimate on (default: the run's)")
    r.add_argument("--frames", type=int, required=True, metavar="T", help="the new T")
    r.add_argument(
        "--split",
        default=None,
        help="the store's videos to read (default: the run's training split)",
    )
    r.add_argument("--batches", type=int, default=50, help="batches to estimate over (default 50)")
    r.add_argument(
        "--batch-size", type=int, default=None, help="clips per batch (default: the config's)"
    )
    r.add_argument("--device", default="auto", help="auto, cpu, cuda or cuda:N")
    r.add_argument(
        "--out",
        default=None,
        help="the checkpoint to write (default RUN_DIR/recalibrated_T<T>.pt)",
    )
    r.set_defaults(func=handler)
