"""The threaded loader's mechanisms: batch buffers reused but never overwritten while held, the
same batches from any number of worker threads, pending reads cancelled when a loop stops early.
How reads scale with threads is measured by benchmarks/bench_read.py, not here.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from hyperframes.build import BuildOptions, build_store
from hyperframes.data import HyperframeDataset, loader
from hyperframes.data._buffers import BatchBuffers

SRC = str(Path(__file__).resolve().parents[1] / "src")
CODECS = ("raw", "lz4", "zstd", "jpeg")


@pytest.fixture(scope="module")
def stores(class_folder, tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("scaling")
    out = {}
    for codec in CODECS:
        out[codec] = root / codec
        build_store(
            class_folder, out[codec], BuildOptions(size="none", codec=codec), progress=False
        )
    return out


def test_buffers_are_reused_only_when_nobody_holds_them():
    pool = BatchBuffers(keep=3)
    a = pool.take((2, 3), np.uint8)
    ptr = a.data_ptr()
    view = a[1]  # a view keeps the buffer busy
    del a
    b = pool.take((2, 3), np.uint8)
    assert b.data_ptr() != ptr
    del view
    c = pool.take((2, 3), np.uint8)  # now free: lent again
    assert c.data_ptr() == ptr
    assert pool.take((4,), np.float16).dtype == torch.float16  # another shape: its own buffer
    assert len(pool) == 3
    held = [pool.take((5,), np.uint8) for _ in range(4)]  # beyond keep: fresh, not kept
    assert len({t.data_ptr() for t in held}) == 4 and len(pool) == 3


def test_loader_reuses_batch_buffers_and_never_overwrites_a_kept_batch(stores):
    ds = HyperframeDataset(stores["raw"], sampler="random", frames=8, seed=2)
    dl = loader(ds, batch_size=2, workers=0, drop_last=True)
    # the loop variable holds batch k while batch k+1 is read: two buffers take turns
    ptrs = [b.frames.data_ptr() for b in dl]
    assert len(ptrs) == 3 and len(set(ptrs)) == 2
    kept = list(dl)  # every batch kept: each its own buffer, none overwritten
    assert len({b.frames.data_ptr() for b in kept}) == len(kept)
    for batch in kept:
        items = ds.__getitems__([(m["epoch"], m["item"]) for m in batch.meta])
        assert torch.equal(batch.frames, torch.stack([h.frames for h in items]))


@pytest.mark.parametrize("codec", CODECS)
def test_worker_threads_give_the_same_batches(stores, codec):
    ds = HyperframeDataset(stores[codec], sampler="random", frames=8, seed=5)
    batches = {}
    for workers in (0, 1, 3):
        dl = loader(ds, batch_size=2, workers=workers, drop_last=False)
        dl.set_epoch(1)
        batches[workers] = [b.frames.clone() for b in dl]
    for workers in (1, 3):
        assert len(batches[workers]) == len(batches[0])
        assert all(torch.equal(a, b) for a, b in zip(batches[0], batches[workers]))


def test_leaving_a_loop_early_cancels_the_reads_not_started(stores):
    ds = HyperframeDataset(stores["raw"], sampler="random", frames=8, seed=1)
    calls = []
    real = ds.__getitems__

    def counting(keys):
        calls.append(len(keys))
        time.sleep(0.05)
        return real(keys)

    ds.__getitems__ = counting
    dl = loader(ds, batch_size=1, workers=1, prefetch_factor=4, drop_last=True)
    for _ in dl:
        break
    time.sleep(0.3)
    assert len(calls) <= 3  # the first, at most one running, not the 4 queued behind it


def test_a_script_that_leaves_a_loader_half_way_exits_without_a_traceback(stores):
    """A loop left after one batch, then the interpreter exits: the thread pool is shut down
    while the modules it uses still exist (a ``__del__`` run at teardown printed
    ``'NoneType' object has no attribute 'Empty'`` on every exit)."""
    script = (
        "import sys, hyperframes\n"
        "ds = hyperframes.HyperframeDataset(sys.argv[1], sampler='random', frames=4, seed=0)\n"
        "it = iter(hyperframes.loader(ds, batch_size=1, workers=2))\n"
        "batch = next(it)\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", script, str(stores["raw"])],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": SRC},
    )
    assert run.returncode == 0 and run.stderr == "", run.stderr
