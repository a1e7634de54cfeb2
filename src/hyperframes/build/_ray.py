"""The Ray engine of ``build_store`` (``engine="ray"``): videos decoded by a pool of Ray actors
spread over a cluster, the store committed by the driver exactly as a local build commits it.

What travels, and what does not. The driver sends each actor one *path* at a time (a ``Source``:
a path, its label and split) and gets back a few small messages (frames decoded, bytes stored or
the error). Frames never go through Ray's object store: the actor decodes the video and streams
its frames straight into its own shard files in the store folder, with the very code a local
build worker runs (``_workers.Worker``: ``ingest`` into a ``ShardWriter``). The shard journals are
then what the driver's ``assemble`` reads, as after a local build: the global index and the
manifest (written last, atomically) come from the same function, so a Ray build and a local one
of the same data hold the same frames, timestamps and labels; only the shard names differ.

Why plain Ray actors rather than Ray Data's ``map_batches``. The unit of work is a path and
the result is a row of a few numbers, so Ray Data's streaming of blocks through the object
store and its backpressure buy nothing here; what a build needs is control over each actor's
life, which Ray Data keeps to itself:

* deterministic shard names: actor number ``rank`` of build run ``run`` writes
  ``r{run:03d}-w{rank:03d}-{seq:05d}``, the local build's own names, so a store can be resumed
  by either engine and ``_resume.next_run`` numbers runs across both;
* an end to each shard: the driver calls ``close`` on every actor once the work is done,
  which finishes its shard (a Ray Data UDF has no teardown hook to do it in);
* exact retries. Ray's own task retries are at-least-once: a video whose actor died after
  committing it (journal line written) but before replying would be stored a second time,
  leaving dead bytes in a shard the index references. So the actors are created with
  ``max_restarts=0`` and the driver decides instead, from the disk: when an actor dies it
  finishes that actor's shards (``_shard.finalize``: the journal keeps every video whose line
  is complete) and looks there first. A video found is done and never decoded again; one not
  found is given to a fresh actor (a new rank, hence new files: nothing is ever overwritten),
  at most ``RETRIES`` more times, after which it is failed with the reason, as a local build
  fails the video of a worker that died. An actor whose constructor fails stops the build with
  Ray's message instead of failing every video. The one gap: a dead actor's shard whose lock
  is not released within ``_LOCK_WAIT_SECONDS`` (a node lost while it held a lock on a network
  filesystem) cannot be read, so its videos are redone and may then be stored twice; the
  recovery at the end of the build names that shard, and the rerun keeps one copy of each.

Each actor has one video in flight at a time: the pool balances itself (whoever is free takes
the next path) and nothing queues behind a slow video. ``options.workers`` actors of one CPU each
are asked for; an actor gets its first video only once it has started, so actors Ray cannot
place yet (a busy cluster, or one that is scaling up) hold nothing back, and are dropped when the
work is done.

Crashes. A build killed outright (kill -9 of the driver) leaves its shards' ``.part`` files;
Ray stops the actors of a driver that is gone, and each actor also stops by itself before its
next video or commit once the store's lock file no longer names the build that started it
(``StoreLock`` writes its holder into the file), so rerunning the same command recovers every
committed video, decodes only the rest, and yields the same content as an uninterrupted build.
A Ray instance the build started itself (no ``ray_address``) ends with the driver however it
ends (``_ray_cluster``).

Where the shards go. Actors write into ``STORE/shards`` directly, so the store folder must be
one every node sees (a shared filesystem); an actor that does not find the build's lock file
there says so and stops the build. A store on object storage needs no shared folder: each
actor (``_ray_publish.PublishActor``) stages on its own node and publishes each finished shard
to the URL itself, payload first, journal last; it holds back a video's "done" until its shard
is published, and the pool gives a dead actor's unpublished videos out again (``unpublished``),
after looking at the URL's journals (``_ray_publish.published``) rather than its folder.
"""

from __future__ import annotations

import collections
import contextlib
import os
import socket
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .._core._errors import HyperframesError, StoreError
from ..inputs import Source
from ..store.format import LOCK, SHARDS_DIR
from ._engine import Engine, Handle
from ._journal import JournalRecord, load_records
from ._messages import Done, Failed, Fatal, Frames, Message
from ._options import BuildOptions
from ._ray_cluster import connect, import_ray
from ._ray_publish import PublishActor, published
from ._shard import Orphaned, ShardBusy, finalize
from ._workers import Worker, actor_fatal, actor_progress, shard_prefix

__all__ = ["RETRIES", "RayPool", "run_on_ray"]

#: how many more times a video is tried after the actor decoding it died
RETRIES = 2

#: how long the driver waits for a dead actor's shard lock to go before giving up on it
_LOCK_WAIT_SECONDS = 10.0


def _lock_token(store: Path) -> str | None:
    """What the store's lock file says about the build holding it (None: no such file)."""
    try:
        return (store / LOCK).read_text()
    except OSError:
        return None


class DecodeActor:
    """One build worker on a Ray node (made a Ray actor by ``run_on_ray``).

    ``process`` decodes one source into this actor's shards and returns the build messages
    (``_messages``: one ``Frames``, then ``Done`` or ``Failed`` as a local worker reports them,
    or a ``Fatal`` when the build must stop); ``close`` finishes the last shard.
    """

    def __init__(self, store: str, options: BuildOptions, run: int, rank: int, token: str):
        self.store = Path(store)
        self.token = token
        self.problem: str | None = None
        if _lock_token(self.store) != token:
            self.problem = (
                f"the store folder {store} is not shared with the Ray node "
                f"{socket.gethostname()} (its lock file there is missing or another build's): "
                "build onto a filesystem every node mounts at the same path"
            )
        self.rank = rank
        self.messages: list[Message] = []
        self.worker = Worker(self.store, options, run, rank, self.messages.append, self._alive)

    def _alive(self) -> bool:
        """The build that started this actor still holds the store (checked before each
        video and each commit)."""
        return _lock_token(self.store) == self.token

    def where(self) -> tuple[str, int]:
        return socket.gethostname(), os.getpid()

    def process(self, i: int, source: Source) -> list[Message]:
        if self.problem is not None:
            return [Fatal(self.problem, self.rank)]
        self.messages.clear()
        try:
            self.worker.process(i, source)
        except Orphaned:
            self.worker.abandon()
            return [self._lost_lock()]
        except Exception as e:  # a store error, or a bug: the build stops
            return actor_fatal(self.worker, e)
        return actor_progress(self.messages, (Done, Failed))

    def close(self) -> list[Message]:
        try:
            self.worker.close()
        except Orphaned:
            return [self._lost_lock()]
        except StoreError as e:
            return [Fatal(str(e), self.rank)]
        return []

    def _lost_lock(self) -> Fatal:
        return Fatal(f"the build of {self.store} lost its lock file; stopped", self.rank)


def committed(store: Path, run: int, rank: int) -> dict[str, JournalRecord]:
    """{source path: record} of the videos a dead actor had committed: its unfinished shards
    are finished first (``finalize`` keeps every complete journal line). A shard still locked
    after ``_LOCK_WAIT_SECONDS`` (its writer not dead after all) is left out: its videos are
    redone, and the end of the build recovers or names it."""
    shards = store / SHARDS_DIR
    names = {p.name.split(".")[0] for p in shards.glob(f"{shard_prefix(run, rank)}*")}
    found: dict[str, JournalRecord] = {}
    for name in sorted(names):
        deadline = time.monotonic() + _LOCK_WAIT_SECONDS
        while True:
            try:
                done = finalize(shards, name)
                break
            except ShardBusy:
                if time.monotonic() > deadline:
                    done = None
                    break
                time.sleep(0.05)
        if done is None:
            continue
        records, _ = load_records(shards, name)
        found.update({r.path: r for r in records})
    return found


def _death_reason(e: BaseException) -> str:
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
    return lines[0] if lines else type(e).__name__


class RayPool(Engine):
    """The driver's side: hands paths to free actors, replaces dead ones, and reports every
    video exactly once to ``handle`` (the local build's progress and failure bookkeeping)."""

    def __init__(
        self, ray, store: Path, options, run, sources, todo, handle: Handle, token, url=None
    ):
        super().__init__(handle)
        self.ray, self.store, self.options = ray, store, options
        self.build_run = run  # the build's run number (``run`` is the Engine's method)
        self.url = url  # the actors publish their shards there (``_ray_publish``)
        self.sources, self.token = sources, token
        self.pending: collections.deque[int] = collections.deque(todo)
        self.tries: collections.Counter[int] = collections.Counter()
        self.actors: dict[int, Any] = {}
        self.idle: list[int] = []  # started, no video
        self.starting: dict[Any, int] = {}  # reply of ``where`` -> rank
        self.stillborn = 0  # actors that died before they started
        self.running: dict[Any, tuple[int, int]] = {}  # reply -> (rank, video)
        # rank -> videos it decoded whose shard is not published yet (a build to a URL)
        self.unpublished: collections.defaultdict[int, list[int]] = collections.defaultdict(list)
        self.next_rank = 0
        actor_class: type = DecodeActor if url is None else PublishActor
        self.remote = ray.remote(num_cpus=1, max_restarts=0, max_task_retries=0)(actor_class)

    def spawn(self) -> None:
        """Ask Ray for one more actor; it takes videos once it has started (``ready``)."""
        rank = self.next_rank
        self.next_rank += 1
        if self.url is None:
            actor = self.remote.remote(
                str(self.store), self.options, self.build_run, rank, self.token
            )
        else:
            actor = self.remote.remote(self.url, self.options, self.build_run, rank)
        self.actors[rank] = actor
        self.starting[actor.where.remote()] = rank

    def size(self) -> int:
        """Actors wanted: ``workers``, never more than the videos left."""
        return max(1, min(self.options.workers, len(self.pending) + len(self.running)))

    def run(self) -> None:
        for _ in range(self.size()):
            self.spawn()
        while True:
            self.drain()
            self.close()  # an actor that dies now gives its unpublished videos back
            if not self.pending:
                break

    def drain(self) -> None:
        """Hand out every pending video; back when all have been answered."""
        while self.pending or self.running:
            while self.idle and self.pending:
                rank, i = self.idle.pop(), self.pending.popleft()
                reply = self.actors[rank].process.remote(i, self.sources[i])
                self.running[reply] = (rank, i)
            waiting = [*self.running, *self.starting]
            ready, _ = self.ray.wait(waiting, num_returns=1, timeout=0.5)
            for reply in ready:
                if reply in self.starting:
                    self.ready(self.starting.pop(reply), reply)
                    continue
                rank, i = self.running.pop(reply)
                try:
                    messages = self.ray.get(reply)
                except self.ray.exceptions.RayActorError as e:
                    self.lost(rank, i, e)
                    continue
                self.report_all(messages)
                if not any(isinstance(m, Done | Failed) and m.item == i for m in messages):
                    self.unpublished[rank].append(i)  # decoded; its shard not published yet
                self.idle.append(rank)

    def ready(self, rank: int, reply) -> None:
        """Actor ``rank`` has started (Ray placed it and its constructor ran), or failed to."""
        try:
            self.ray.get(reply)
        except self.ray.exceptions.RayActorError as e:
            if getattr(e, "actor_init_failed", False):
                raise StoreError(f"a Ray build actor could not start: {e}") from None
            self._kill(self.actors.pop(rank))
            self.stillborn += 1
            if self.stillborn > 3 * max(1, self.options.workers):
                raise StoreError(
                    f"Ray build actors keep dying before they start (last: {_death_reason(e)})"
                ) from None
            if self.pending and len(self.actors) < self.size():
                self.spawn()
            return
        self.idle.append(rank)

    def report_all(self, messages: list[Message]) -> None:
        for m in messages:
            self.report(m)  # (a Fatal raises here)
            if isinstance(m, Done) and m.item in self.unpublished.get(m.worker, ()):
                self.unpublished[m.worker].remove(m.item)  # published at last

    def lost(self, rank: int, i: int | None, e: BaseException) -> None:
        """Actor ``rank`` died while it had video ``i`` (None: while closing): keep what it
        committed (published, for a build to a URL), retry the rest on a fresh actor."""
        self._kill(self.actors.pop(rank))
        if rank in self.idle:  # died between videos (heard of at ``close``)
            self.idle.remove(rank)
        if self.url is None:
            found = committed(self.store, self.build_run, rank)
        else:
            found = published(self.url, self.build_run, rank)
        for video in [*self.unpublished.pop(rank, []), *([] if i is None else [i])]:
            self._redo(rank, video, found.get(self.sources[video].path), e)
        if self.pending and len(self.actors) < self.size():
            self.spawn()

    def _redo(self, rank: int, i: int, record: JournalRecord | None, e: BaseException) -> None:
        """Video ``i`` of dead actor ``rank``: done when ``record`` (stored after all), else
        given out again (failed after ``RETRIES``)."""
        if record is not None:  # stored before the actor died: do not store it twice
            self.handle(Frames(record.num_frames))
            self.handle(Done(rank, i, record.num_frames, record.nbytes))
        else:
            self.tries[i] += 1
            if self.tries[i] > RETRIES:
                times, last = self.tries[i], _death_reason(e)
                self.died(rank, i, f"the Ray actor decoding it died {times} times (last: {last})")
            else:
                self.pending.appendleft(i)

    def close(self) -> None:
        """Finish every actor's last shard. One that died meanwhile leaves its journal, which
        keeps what it committed: the recovery at the end of ``_folder.decode_sources`` finishes it; an
        actor publishing to a URL gives its unpublished videos back (``pending``)."""
        started = [r for r in self.actors if r not in self.starting.values()]
        replies = {r: self.actors[r].close.remote() for r in started}
        for rank, reply in replies.items():
            try:
                self.report_all(self.ray.get(reply))
            except self.ray.exceptions.RayActorError as e:
                if self.unpublished.get(rank):
                    self.lost(rank, None, e)

    def _kill(self, actor) -> None:
        with contextlib.suppress(Exception):  # gone already
            self.ray.kill(actor, no_restart=True)

    def stop(self) -> None:
        for actor in self.actors.values():
            self._kill(actor)
        self.actors.clear()


def run_on_ray(
    store: Path,
    options: BuildOptions,
    run: int,
    sources: list[Source],
    todo: Iterable[int],
    handle: Handle,
    *,
    address: str | None = None,
    url: str | None = None,
) -> None:
    """Decode the sources ``todo`` on Ray, reporting each to ``handle`` as a local worker
    would; the caller (``_folder.decode_sources``) owns progress, interruption and recovery. ``url``: the
    actors publish their shards there (``_ray_publish``), ``store`` is the driver's mirror."""
    ray = import_ray()
    token = _lock_token(store)
    if token is None:
        raise StoreError(f"store {store}: its lock file is missing; is the build still running?")
    joined, reaper = connect(ray, address)
    pool = None
    try:
        pool = RayPool(ray, store.absolute(), options, run, sources, todo, handle, token, url)
        pool.run()
    except HyperframesError:
        raise
    except ray.exceptions.RayError as e:
        raise StoreError(f"the Ray build of {store} failed: {e}") from None
    finally:
        if pool is not None:
            pool.stop()
        try:
            if joined:
                ray.shutdown()
        finally:
            if reaper is not None:
                reaper.close()
