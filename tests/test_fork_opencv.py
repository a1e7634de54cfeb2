"""OpenCV's thread pool across ``os.fork`` (``hyperframes._core._fork``).

A process forked while OpenCV's pool has worker threads inherits the pool without them: in
the child, reconfiguring the pool (``cv2.setNumThreads``) joins threads that are not there
and hangs about one fork in five on this machine (21 of 100 measured without the handlers).
``import hyperframes`` installs fork handlers that stop the pool's threads in the parent
before each fork; these tests fork real children the way DataLoader workers are forked.
"""

from __future__ import annotations

import multiprocessing

import numpy as np
import pytest

import hyperframes  # noqa: F401  (installs the fork handlers)

cv2 = pytest.importorskip("cv2", reason="OpenCV is not installed")

FORKS = 30


def _child_uses_opencv(threads: int, image: np.ndarray) -> None:
    cv2.setNumThreads(threads)
    cv2.GaussianBlur(image, (9, 9), 0)


@pytest.mark.skipif(
    "fork" not in multiprocessing.get_all_start_methods(), reason="no fork on this platform"
)
def test_children_forked_beside_a_busy_pool_can_use_opencv():
    ctx = multiprocessing.get_context("fork")
    image = np.random.default_rng(0).integers(0, 256, (480, 640), dtype=np.uint8)
    before = cv2.getNumThreads()
    cv2.setNumThreads(2)  # a pool with a worker thread even on a 1-core runner
    try:
        for k in range(FORKS):
            cv2.GaussianBlur(image, (9, 9), 0)  # the pool has just worked when we fork
            child = ctx.Process(target=_child_uses_opencv, args=(1 + k % 2, image))
            child.start()
            child.join(timeout=10)
            if child.is_alive():
                child.kill()
                child.join()
                pytest.fail(f"fork {k}: the child hung in OpenCV")
            assert child.exitcode == 0, f"fork {k}: the child exited with {child.exitcode}"
            # the parent keeps its thread count, and its pool works after the fork
            assert cv2.getNumThreads() == 2
        cv2.GaussianBlur(image, (9, 9), 0)
    finally:
        cv2.setNumThreads(before)
