"""Build workers: :class:`Worker` decodes sources into its own shards (one ``ingest`` per
video) and reports typed messages (``_messages``). Two engines (``_engine.Engine``) run it
locally: :class:`InProcess` (one worker in this process) and :class:`ProcessPool` (worker
processes; one that dies fails the video it was decoding and is replaced); ``_ray.RayPool``
runs it in Ray actors.

Shard names say who wrote them: worker ``w`` of build run ``r`` writes
``r{r:03d}-w{w:03d}-{seq:05d}`` (:func:`shard_prefix`), whichever engine runs it, so runs are
numbered across engines and no two writers ever share a file.
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import os
import signal
import sys
from array import array
from multiprocessing.connection import Connection, wait
from pathlib import Path

from .._core._errors import HyperframesError, StoreError
from .._core._signals import set_parent_death_signal
from ..decode import Decoder, create_decoder
from ..inputs import Source
from ..store.format import SHARDS_DIR
from ._engine import Engine, Handle
from ._ingest import ingest
from ._messages import Done, Exit, Failed, Fatal, Frames, Message, Start
from ._options import BuildOptions, make_codec
from ._shard import Orphaned, OutputError, ShardWriter, output_error

__all__ = [
    "InProcess",
    "ProcessPool",
    "Worker",
    "actor_fatal",
    "actor_progress",
    "decoder_for",
    "error_text",
    "fatal_text",
    "run_parallel",
    "shard_prefix",
    "worker_main",
]


def shard_prefix(run: int, rank: int) -> str:
    """The names of the shards worker (or Ray actor) ``rank`` of build run ``run`` writes
    start with this."""
    return f"r{run:03d}-w{rank:03d}-"


def decoder_for(options: BuildOptions, kind: str) -> Decoder:
    """The decoder of a build with ``options`` for sources of ``kind`` (video, frames)."""
    if kind == "frames":
        return create_decoder("frames", fps=options.frame_folder_fps)
    return create_decoder(options.decoder)


class Worker:
    """Decodes sources into this worker's own shards.

    ``report`` receives its messages (:class:`Start`, :class:`Frames`, then :class:`Done` or
    :class:`Failed` per item); ``alive`` says whether the build that owns the store lock is
    still running (checked before each video starts and before each commit).
    """

    def __init__(self, store: Path, options: BuildOptions, run: int, worker: int, report, alive):
        self.shards = store / SHARDS_DIR
        self.options = options
        self.codec = make_codec(options)
        self.decoders: dict[str, Decoder] = {}
        self.run, self.worker, self.seq = run, worker, 0
        self.report = report
        self.alive = alive
        self.writer: ShardWriter | None = None

    def _writer(self) -> ShardWriter:
        if self.writer is not None and self.writer.size >= self.options.shard_bytes:
            self.writer.close()
            self.writer = None
        if self.writer is None:
            name = f"{shard_prefix(self.run, self.worker)}{self.seq:05d}"
            self.seq += 1
            self.writer = ShardWriter(self.shards, name, alive=self.alive)
        return self.writer

    def process(self, i: int, source: Source) -> None:
        self.report(Start(self.worker, i))
        try:
            if source.kind not in self.decoders:
                self.decoders[source.kind] = decoder_for(self.options, source.kind)
            rec = ingest(
                source,
                self.options,
                self.decoders[source.kind],
                self.codec,
                self._writer(),
                on_frames=lambda n: self.report(Frames(n)),
            )
            self.report(Done(self.worker, i, rec.num_frames, rec.nbytes))
        except (OutputError, Orphaned):
            raise  # the output's fault, or the build is gone: never the input's
        except (HyperframesError, ValueError, RuntimeError, EOFError) as e:
            self.report(Failed(self.worker, i, error_text(e)))
        except OSError as e:
            if e.filename and str(e.filename).startswith(str(self.shards)):
                raise output_error(e, self.shards.parent) from None
            self.report(Failed(self.worker, i, error_text(e)))

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.writer = None

    def abandon(self) -> None:
        """Stop without finishing the shard: its journal keeps what was committed."""
        if self.writer is not None:
            self.writer.abandon()
            self.writer = None


def error_text(e: BaseException) -> str:
    """An exception as a report says it: its type, then its message."""
    return f"{type(e).__name__}: {e}"


def fatal_text(e: BaseException) -> str:
    """Why a build stops: a store error in its own words, anything else (a bug, not the
    input) with its type."""
    return str(e) if isinstance(e, StoreError) else error_text(e)


def actor_fatal(worker: Worker, e: BaseException) -> list[Message]:
    """A Ray actor's answer when a video raised: its partial shard given up, one
    :class:`Fatal`, so the build stops as it does for a local worker."""
    worker.abandon()
    return [Fatal(fatal_text(e), worker.worker)]


def actor_progress(messages: list[Message], kinds: tuple[type, ...]) -> list[Message]:
    """A Ray actor's answer for a video: the frames it decoded (one :class:`Frames`), then
    its messages of ``kinds``."""
    frames = sum(m.count for m in messages if isinstance(m, Frames))
    return [Frames(frames), *(m for m in messages if isinstance(m, kinds))]


def worker_main(store, options, run, worker, sources, conn, parent) -> None:
    """A build worker process: it decodes the items its parent sends on ``conn``, one at a
    time, and reports on the same pipe, which it shares with no other worker (a worker killed
    mid-message takes only its own pipe with it). It never outlives the build: the kernel
    kills it when its parent dies (Linux), and it checks that its parent is alive before each
    video and commit (elsewhere), so a worker of a killed build stops without touching shared
    state."""
    set_parent_death_signal()
    if os.getppid() != parent:
        return  # the build died before we started

    def alive() -> bool:
        return os.getppid() == parent

    w = Worker(Path(store), options, run, worker, conn.send, alive)
    try:
        while True:
            item = conn.recv()
            if item is None:
                break
            w.process(item, sources[item])
        w.close()
        conn.send(Exit(worker))
    except (Orphaned, EOFError, BrokenPipeError, ConnectionResetError):
        w.abandon()  # the build is gone (its pipe closed): nothing to report to
    except KeyboardInterrupt:
        w.abandon()  # the journal keeps what is finished; the parent recovers it
    except BaseException as e:
        w.abandon()
        with contextlib.suppress(OSError):
            conn.send(Fatal(fatal_text(e), worker))


def _exit_text(code: int | None) -> str:
    if code is not None and code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit status {code}"


class InProcess(Engine):
    """One worker in this process, over ``todo`` in order (a build with ``workers=1``)."""

    def __init__(self, store, options, run, sources, todo, handle: Handle) -> None:
        super().__init__(handle)
        self.worker = Worker(Path(store), options, run, 0, self.report, lambda: True)
        self.sources, self.todo = sources, todo

    def run(self) -> None:
        try:
            for i in self.todo:
                self.worker.process(i, self.sources[i])
            self.worker.close()
        except BaseException:
            self.worker.abandon()
            raise

    def stop(self) -> None:
        pass  # (run finished or abandoned the shard)


class ProcessPool(Engine):
    """The parent's side of a local parallel build: one pipe per worker, one item handed to
    each idle worker at a time, so the parent always knows which item each worker holds."""

    def __init__(self, store, options, run, sources, todo, handle: Handle, workers: int) -> None:
        super().__init__(handle)
        self.workers = workers
        self.ctx = mp.get_context("spawn")
        self.args = (str(store), options, run)
        self.sources = sources
        self.pending = _Pending(todo)
        self.procs: dict[int, tuple[mp.process.BaseProcess, Connection]] = {}
        self.inflight: dict[int, int] = {}  # worker -> the item it holds
        self.started: set[int] = set()  # workers that said "start" for the item they hold
        self.stillborn: list[int] = []  # exit codes of workers in a row that died unstarted
        self.next_id = 0

    def start(self) -> None:
        w, self.next_id = self.next_id, self.next_id + 1
        mine, theirs = self.ctx.Pipe()
        p = self.ctx.Process(
            target=worker_main,
            args=(*self.args, w, self.sources, theirs, os.getpid()),
            daemon=True,
        )
        p.start()
        theirs.close()  # the worker's end lives in the worker: its death closes the pipe
        self.procs[w] = (p, mine)
        self.feed(w)

    def feed(self, w: int) -> None:
        """Hand worker ``w`` its next item, or tell it to finish."""
        item = self.pending.pop() if self.pending else None
        self.started.discard(w)
        if item is not None:
            self.inflight[w] = item
        with contextlib.suppress(OSError):  # it died: its sentinel says so next
            self.procs[w][1].send(item)

    def receive(self, w: int) -> None:
        """Handle what worker ``w`` sent (up to a message cut short by its death)."""
        conn = self.procs[w][1]
        with contextlib.suppress(EOFError, OSError):
            while conn.poll():
                self.message(w, conn.recv())

    def message(self, w: int, msg: Message) -> None:
        self.report(msg)  # (a Fatal raises here)
        if isinstance(msg, Done | Failed):
            self.inflight.pop(w, None)
            self.feed(w)
        elif isinstance(msg, Exit):
            self.inflight.pop(w, None)
        elif isinstance(msg, Start):
            self.started.add(w)
            self.stillborn.clear()

    def bury(self, w: int) -> None:
        """Worker ``w`` has exited: fail the item it held, naming why, and replace it."""
        p, conn = self.procs.pop(w)
        conn.close()
        i = self.inflight.pop(w, None)
        if i is not None and w not in self.started:
            self.pending.put_back(i)  # handed over but never begun: the next worker takes it
            self.stillborn.append(p.exitcode or 0)
            exits = sum(code > 0 for code in self.stillborn)
            if exits >= 3 or len(self.stillborn) >= 10:
                raise StoreError(
                    f"build workers die before they start a video ({_exit_text(p.exitcode)}, "
                    f"{len(self.stillborn)} in a row); run with --workers 1 to see why"
                    + _script_hint()
                )
        elif i is not None:
            self.died(w, i, f"the build worker decoding it died ({_exit_text(p.exitcode)})")
        if self.pending:
            self.start()

    def run(self) -> None:
        for _ in range(self.workers):
            self.start()
        while self.procs:
            live = self.procs.values()
            ready = set(wait([c for _, c in live] + [p.sentinel for p, _ in live], timeout=1.0))
            for w, (p, conn) in list(self.procs.items()):
                if conn in ready:
                    self.receive(w)
                if p.sentinel in ready or p.exitcode is not None:
                    p.join()
                    self.receive(w)
                    self.bury(w)

    def stop(self) -> None:
        for p, _ in self.procs.values():
            if p.exitcode is None:
                p.terminate()
        for p, conn in self.procs.values():
            p.join(timeout=10)
            if p.exitcode is None:
                p.kill()
                p.join()
            conn.close()


class _Pending:
    """The items not handed out yet, taken from ``todo`` one at a time as workers ask (a
    ``todo`` that checks each item as it goes checks it then), and those put back."""

    def __init__(self, todo) -> None:
        self._todo = iter(todo)
        self._back = array("q")

    def put_back(self, item: int) -> None:
        self._back.append(item)

    def pop(self) -> int:
        return self._back.pop() if self._back else next(self._todo)

    def __bool__(self) -> bool:
        if not self._back:
            item = next(self._todo, None)
            if item is None:
                return False
            self._back.append(item)
        return True


def _script_hint() -> str:
    """What to check when the build runs from a Python script: workers start by spawn, which
    imports the script again, so a build at its top level, unguarded, runs again in every
    worker (and cannot start workers there: Python exits it with status 1)."""
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    spec = getattr(getattr(main, "__spec__", None), "name", "") or ""
    if not path or spec.startswith("hyperframes") or Path(path).name == "hyperframes":
        return ""  # the command line, or an interactive session
    return (
        f"; {path} builds with workers, which start by spawn and import it again: put its "
        'build under `if __name__ == "__main__":` (or build with workers=1)'
    )


def run_parallel(store, options, run, workers, sources, todo, handle) -> None:
    """Run ``workers`` worker processes over ``todo``. A worker that dies (a decoder crash,
    the OOM killer, kill -9) fails the video it was decoding, naming why, and is replaced."""
    ProcessPool(store, options, run, sources, todo, handle, workers).execute()
