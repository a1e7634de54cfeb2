"""OpenCV's thread pool across ``fork``: no worker thread is alive when a process forks.

OpenCV's own pool (the ``pthreads`` backend of the pip wheels) has no fork handler: a child
forked while the parent's pool has worker threads inherits the pool's state without its
threads: ``cv2.setNumThreads`` in such a child joins threads that are not there and hung
21 of 100 forks here (``tests/test_fork_opencv.py``), and a parallel call can wait on a lock a
vanished worker held. Before each ``os.fork`` (DataLoader workers, ``multiprocessing``'s
``fork`` start method), when OpenCV is loaded, its pool is set to one thread, which stops its
worker threads in the parent; after the fork the parent gets its thread count back (the
pool starts threads again on its next parallel call) and the child keeps one thread, as
torch's DataLoader workers keep one intra-op thread.

Registered once by ``import hyperframes``; costs nothing while OpenCV is not imported.
"""

from __future__ import annotations

import os
import sys

_saved: list[int] = []


def _before_fork() -> None:
    cv2 = sys.modules.get("cv2")
    get_threads = getattr(cv2, "getNumThreads", None)
    set_threads = getattr(cv2, "setNumThreads", None)
    if get_threads is None or set_threads is None:  # not loaded, or a partial import
        return
    _saved.append(int(get_threads()))
    set_threads(1)


def _after_fork_in_parent() -> None:
    if _saved:
        sys.modules["cv2"].setNumThreads(_saved.pop())


def _after_fork_in_child() -> None:
    _saved.clear()


_registered = False


def register() -> None:
    """Install the fork handlers (idempotent)."""
    global _registered
    if not _registered and hasattr(os, "register_at_fork"):  # (no fork on Windows)
        os.register_at_fork(
            before=_before_fork,
            after_in_parent=_after_fork_in_parent,
            after_in_child=_after_fork_in_child,
        )
        _registered = True
