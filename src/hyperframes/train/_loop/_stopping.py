"""Stopping on a signal: SIGINT and SIGTERM only *ask* training to stop.

:class:`_StopRequests` records the first signal while a run is in progress; the trainer stops
at its next safe point, saves ``last.pt`` and raises :class:`TrainingInterrupted` (see
:mod:`hyperframes.train._loop._trainer` for where those points are).
"""

from __future__ import annotations

import signal
import threading
import time
from pathlib import Path

from ..._core._errors import Interrupted

__all__ = ["TrainingInterrupted"]


class TrainingInterrupted(Interrupted):
    """SIGINT or SIGTERM stopped training after saving ``last.pt`` where it stood.

    ``where`` says where (epoch, batch, step) and what was saved; ``signum`` is the signal,
    ``exit_code`` the shell's ``128 + signum`` (130 for Ctrl-C, 143 for SIGTERM); ``rank`` the
    process that raised, of ``world_size`` (every rank raises; rank 0 wrote the checkpoint and,
    with several processes, already printed ``where``)."""

    def __init__(
        self, where: str, *, signum: int, run_dir: Path, step: int, rank: int, world_size: int
    ) -> None:
        self.where, self.signum, self.run_dir = where, signum, run_dir
        self.step, self.rank, self.world_size = step, rank, world_size
        super().__init__(f"{where}; resume to continue, with the same config and out {run_dir}")

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


class _StopRequests:
    """SIGINT and SIGTERM handlers, while the ``with`` block runs, that record the first signal
    in ``signum`` instead of stopping the process (the trainer stops at its next safe point).
    A second SIGINT, at least ``FORCE_AFTER_S`` after the first, raises ``KeyboardInterrupt``
    at once. A signal the process ignores (``nohup``, a background job) stays ignored; outside
    the main thread (no handlers can be set there) nothing is installed."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM)
    FORCE_AFTER_S = 1.0

    def __init__(self) -> None:
        self.signum = 0
        self._first_s = 0.0
        self._previous: dict = {}

    def __enter__(self) -> _StopRequests:
        if threading.current_thread() is threading.main_thread():
            for s in self.SIGNALS:
                if signal.getsignal(s) is not signal.SIG_IGN:
                    self._previous[s] = signal.signal(s, self._handle)
        return self

    def __exit__(self, *exc) -> None:
        for s, handler in self._previous.items():
            # None: the previous handler was not set from Python; the default is all we know
            signal.signal(s, signal.SIG_DFL if handler is None else handler)
        self._previous.clear()

    def _handle(self, signum, frame) -> None:
        now = time.monotonic()
        if not self.signum:
            self.signum, self._first_s = int(signum), now
        elif signum == signal.SIGINT and now - self._first_s >= self.FORCE_AFTER_S:
            raise KeyboardInterrupt
