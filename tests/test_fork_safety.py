"""What a forked child inherits and must not touch (``hyperframes._core._fork``): the
parent's uncollected garbage and OpenCV's thread pool. ``import hyperframes`` installs fork
handlers; these tests fork real children the way DataLoader workers are forked.

- A threaded PyAV decoder dropped in a reference cycle, collected in a child, hung in
  ``pthread_cond_destroy`` (a full ``make test`` run: ``test_flow_channels``'s process
  workers; 10 of 10 forks in a script).
- ``cv2.setNumThreads`` in a child forked beside a pool with worker threads joins threads that
  are not there: 21 of 100 forks hung without the handlers.
"""

from __future__ import annotations

import gc
import multiprocessing
from pathlib import Path

import numpy as np
import pytest

import hyperframes  # noqa: F401  (installs the fork handlers)

FORKS = 30
VIDEOS = Path(__file__).resolve().parents[2] / "shared" / "videos"
NO_FORK = "fork" not in multiprocessing.get_all_start_methods()


def _run_child(target, args=()) -> int | None:
    """The exit code of a forked child running ``target``; None if it was still running
    after 10 s (then killed)."""
    child = multiprocessing.get_context("fork").Process(target=target, args=args)
    child.start()
    child.join(timeout=10)
    if child.is_alive():
        child.kill()
        child.join()
        return None
    return child.exitcode


def _threaded_decoder_garbage() -> None:
    """A PyAV decoder that has decoded with its threads, dropped in a reference cycle."""
    import av

    container = av.open(str(VIDEOS / "test.mp4"))
    stream = container.streams.video[0]
    stream.thread_type = "AUTO"
    for k, _ in enumerate(container.decode(stream)):
        if k == 5:
            break
    cycle: dict = {"container": container, "stream": stream}
    cycle["self"] = cycle


@pytest.mark.skipif(NO_FORK, reason="no fork on this platform")
def test_a_child_never_collects_its_parents_decoder_garbage():
    pytest.importorskip("av", reason="PyAV is not installed")
    enabled = gc.isenabled()
    gc.disable()  # the garbage must still be there when the parent forks
    try:
        for k in range(3):
            _threaded_decoder_garbage()
            assert _run_child(gc.collect) == 0, f"fork {k}: the child hung or failed"
            gc.collect()  # the parent collects its own garbage, as usual
            assert gc.get_freeze_count() == 0  # and nothing stays frozen in it
    finally:
        if enabled:
            gc.enable()


def _child_uses_opencv(threads: int, image: np.ndarray) -> None:
    import cv2

    cv2.setNumThreads(threads)
    cv2.GaussianBlur(image, (9, 9), 0)


@pytest.mark.skipif(NO_FORK, reason="no fork on this platform")
def test_children_forked_beside_a_busy_pool_can_use_opencv():
    cv2 = pytest.importorskip("cv2", reason="OpenCV is not installed")
    image = np.random.default_rng(0).integers(0, 256, (480, 640), dtype=np.uint8)
    before = cv2.getNumThreads()
    cv2.setNumThreads(2)  # a pool with a worker thread even on a 1-core runner
    try:
        for k in range(FORKS):
            cv2.GaussianBlur(image, (9, 9), 0)  # the pool has just worked when we fork
            code = _run_child(_child_uses_opencv, (1 + k % 2, image))
            assert code == 0, f"fork {k}: the child hung in OpenCV or failed ({code})"
            # the parent keeps its thread count, and its pool works after the fork
            assert cv2.getNumThreads() == 2
        cv2.GaussianBlur(image, (9, 9), 0)
    finally:
        cv2.setNumThreads(before)
