"""What a forked child must not touch of its parent: garbage the parent has not collected yet,
and OpenCV's thread pool.

A child of ``os.fork`` (a DataLoader worker of ``mode="processes"``, ``multiprocessing``'s
``fork`` start method) has only the thread that forked; every lock, condition variable and
thread pool of the parent comes with it in whatever state the parent's other threads left it.

- **The parent's uncollected garbage.** A PyAV decoder that decoded with threads and was
  dropped inside a reference cycle (a container and its streams make one) waits for the
  parent's collector. Collected in a child instead, its ``avcodec_free_context`` destroys
  condition variables the parent's decoder threads were waiting on, and glibc waits forever
  for those threads to leave (gdb on a hung worker of ``test_flow_channels``; 10 of 10 forks
  in ``tests/test_fork_safety.py`` without the handlers). Before each fork the collector's
  objects are frozen (``gc.freeze``: they are never examined again in the child, which
  collects only what it makes itself) and the parent unfreezes them after it; where the
  program froze objects itself, nothing is changed.
- **OpenCV's pool** (the ``pthreads`` backend of the pip wheels) has no fork handler:
  ``cv2.setNumThreads`` in a child joins threads that are not there (it hung 21 of 100 forks
  here), and a parallel call can wait on a lock a vanished worker held. Before each fork,
  when OpenCV is loaded, its pool is set to one thread, which stops its workers in the
  parent; the parent gets its thread count back after the fork, and the child keeps one
  thread, as torch's DataLoader workers keep one intra-op thread.

Registered once by ``import hyperframes``; costs two O(1) calls a fork, and nothing while
OpenCV is not imported.
"""

from __future__ import annotations

import gc
import os
import sys

_froze: list[bool] = []
_threads: list[int] = []


def _before_fork() -> None:
    froze = gc.get_freeze_count() == 0  # (a program that freezes objects itself decides)
    if froze:
        gc.freeze()
    _froze.append(froze)
    cv2 = sys.modules.get("cv2")
    get_threads = getattr(cv2, "getNumThreads", None)
    set_threads = getattr(cv2, "setNumThreads", None)
    if get_threads is None or set_threads is None:  # not loaded, or a partial import
        return
    _threads.append(int(get_threads()))
    set_threads(1)


def _after_fork_in_parent() -> None:
    if _threads:
        sys.modules["cv2"].setNumThreads(_threads.pop())
    if _froze and _froze.pop():
        gc.unfreeze()


def _after_fork_in_child() -> None:
    # the inherited objects stay frozen here: the child never collects its parent's garbage
    _froze.clear()
    _threads.clear()


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
