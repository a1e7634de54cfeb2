"""Read-ahead for stores at a URL: the byte ranges of batches not read yet, fetched in the
background while the current batch is decoded and trained on.

The loader knows every future batch (its sampler's order), so it hands the store the plans of
the next batches (``Store.read_ahead``); each batch's ranges, coalesced per shard exactly as
its read will ask for them, become one job of a small thread pool. Jobs of several batches
run at once (their GETs overlap on fsspec's event loop); through a node cache, a job fills
the cache as a read would. When the batch is read (``RemoteShards.prefetch``), its job's
bytes are taken (waiting for them if they are still on the way) instead of fetched.

Memory is bounded by a byte budget: a batch is accepted only when the bytes of the jobs
accepted and not yet taken (in flight or arrived), plus its own, fit; the loader offers the
next batches again as batches are taken, so the depth follows the budget. ``cancel`` (epoch
end, ``set_epoch``, a loop left early) drops every job: those not started never run, those
in flight finish and their bytes are dropped, counted against the budget until they have.
A job that fails leaves nothing: its batch is fetched again when read (the error, if it
persists, is raised there). Jobs never taken (a plan that was not read as planned) are
dropped once ``STALE_BATCHES`` later batches were taken.
"""

from __future__ import annotations

import functools
import os
import threading
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np

__all__ = ["ReadAhead", "plan_key"]

#: background fetch threads (each runs one batch's requests at a time)
WORKERS = 4
#: a job not taken while this many batches offered after it were is dropped
STALE_BATCHES = 64

Merged = dict[int, tuple[np.ndarray, np.ndarray]]


def plan_key(merged: Merged) -> tuple:
    """A batch's coalesced ranges (``{shard: (starts, ends)}``) as a hashable key."""
    return tuple((k, ms.tobytes(), me.tobytes()) for k, (ms, me) in sorted(merged.items()))


class _Job:
    __slots__ = ("cancelled", "future", "merged", "nbytes", "seq")

    def __init__(self, merged: Merged, nbytes: int, seq: int):
        self.merged, self.nbytes, self.seq = merged, nbytes, seq
        self.cancelled = False
        self.future: Future | None = None


class ReadAhead:
    """Background fetches of batches' coalesced ranges (module doc). ``fetch`` turns
    ``{shard: (starts, ends)}`` into ``{shard: [bytes of each range]}``."""

    def __init__(self, fetch: Callable[[Merged], dict]):
        self._fetch = fetch
        self._lock = threading.Lock()
        self._jobs: OrderedDict[tuple, _Job] = OrderedDict()
        self._pool: ThreadPoolExecutor | None = None
        self._pid = os.getpid()
        self._seq = 0
        #: bytes of the jobs accepted and not taken or finished dropping (what the budget bounds)
        self.held = 0
        self.peak = 0
        self.accepted = self.taken = self.dropped = 0

    def _executor(self) -> ThreadPoolExecutor:
        if self._pool is None or self._pid != os.getpid():  # (a fork has no pool threads)
            self._pool = ThreadPoolExecutor(WORKERS, thread_name_prefix="hyperframes-ahead")
            self._pid = os.getpid()
            self._jobs.clear()
            self.held = 0
        return self._pool

    def offer(self, merged: Merged, budget: int) -> bool:
        """Fetch this batch's ranges in the background if they fit in ``budget`` bytes beside
        those held; False when they do not (offer it again after a batch is taken)."""
        key = plan_key(merged)
        nbytes = int(sum(int((me - ms).sum()) for ms, me in merged.values()))
        pool = self._executor()
        with self._lock:
            if key in self._jobs:
                return True
            if self.held + nbytes > budget:
                return False
            self._seq += 1
            job = _Job(merged, nbytes, self._seq)
            self._jobs[key] = job
            self.held += nbytes
            self.peak = max(self.peak, self.held)
            self.accepted += 1
            job.future = pool.submit(self._run, job)
        return True

    def _run(self, job: _Job):
        return None if job.cancelled else self._fetch(job.merged)

    def _released(self, job: _Job, _done: Future) -> None:
        self._release(job)

    def _release(self, job: _Job) -> None:
        with self._lock:
            self.held -= job.nbytes

    def holds(self) -> bool:
        """Batches were accepted and not taken or dropped yet."""
        return bool(self._jobs)

    def take(self, merged: Merged) -> dict | None:
        """The bytes of this batch's job (waiting for them), or None when none was accepted
        (or it failed): the caller fetches them itself."""
        with self._lock:
            job = self._jobs.pop(plan_key(merged), None)
            stale = [k for k, j in self._jobs.items() if job and j.seq < job.seq - STALE_BATCHES]
            old = [self._jobs.pop(k) for k in stale]
        self._drop(old)
        if job is None or job.future is None:  # (a future is set before the lock is let go)
            return None
        try:
            got = job.future.result()
        except Exception:  # fetched again by the read, which raises the error if it stays
            got = None
        finally:
            self._release(job)
        if got is not None:
            with self._lock:
                self.taken += 1
        return got

    def _drop(self, jobs: list[_Job]) -> None:
        for job in jobs:
            job.cancelled = True
            fut = job.future
            with self._lock:
                self.dropped += 1
            if fut is None or fut.cancel():
                self._release(job)
            else:  # in flight: its bytes count until they have arrived and are let go
                fut.add_done_callback(functools.partial(self._released, job))

    def cancel(self) -> None:
        """Drop every job (see the module)."""
        with self._lock:
            jobs = list(self._jobs.values())
            self._jobs.clear()
        self._drop(jobs)

    def close(self) -> None:
        self.cancel()
        if self._pool is not None and self._pid == os.getpid():
            self._pool.shutdown(wait=False, cancel_futures=True)
        self._pool = None
