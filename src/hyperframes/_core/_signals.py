"""Termination signals handled like Ctrl-C.

Cluster schedulers send SIGTERM before they preempt a job. Inside ``interrupt_on_terminate()``
SIGTERM raises ``KeyboardInterrupt`` in the main thread, so long work (a build, a training run)
stops through the same path as Ctrl-C: what is finished is kept, and the caller says how to
resume. ``terminated()`` tells afterwards which signal it was (exit status 128 + number).
"""

from __future__ import annotations

import contextlib
import signal
import threading

_received: list[int] = []


def _raise_interrupt(signum, frame) -> None:
    _received.append(signum)
    raise KeyboardInterrupt


@contextlib.contextmanager
def interrupt_on_terminate():
    """Within the block, SIGTERM raises KeyboardInterrupt (main thread only; elsewhere a no-op).
    The previous handler is restored on exit."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def terminated() -> int | None:
    """The termination signal received inside ``interrupt_on_terminate`` (None: none, or
    a plain Ctrl-C)."""
    return _received[-1] if _received else None


def exit_status_for_interrupt() -> int:
    """130 after Ctrl-C (SIGINT), 143 after SIGTERM: the shell's 128 + signal number."""
    sig = terminated()
    return 128 + (sig if sig is not None else signal.SIGINT)


def set_parent_death_signal(sig: int = signal.SIGKILL) -> bool:
    """Ask the kernel to send ``sig`` to this process when its parent dies (Linux
    ``PR_SET_PDEATHSIG``). Returns False where unsupported."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        pr_set_pdeathsig = 1
        return libc.prctl(pr_set_pdeathsig, int(sig), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False
