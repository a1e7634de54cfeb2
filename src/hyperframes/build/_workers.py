"""Build workers: :class:`Worker` decodes sources into its own shards (one ``ingest`` per
video), in this process, in a worker process of a local build (:func:`run_parallel`, which
replaces a worker that dies and fails the video it was decoding) or in a Ray actor (``_ray``).

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
from ..store import Codec, create_codec
from ..store.format import SHARDS_DIR
from ._ingest import ingest
from ._options import BuildOptions
from ._shard import Orphaned, OutputError, ShardWriter, output_error

__all__ = [
    "Worker",
    "actor_fatal",
    "actor_progress",
    "decoder_for",
    "error_text",
    "fatal_text",
    "make_codec",
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


def make_codec(options: BuildOptions) -> Codec:
    """The codec a build with ``options`` stores frames with."""
    if options.codec == "jpeg":
        return create_codec("jpeg", quality=options.jpeg_quality)
    return create_codec(options.codec, chunk_frames=options.chunk_frames)


class Worker:
    """Decodes sources into this worker's own shards.

    ``report`` receives ``("start" | "done" | "failed", worker, item, ...)`` and
    ``("frames", n)`` messages; ``alive`` says whether the build that owns the store lock is
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
        self.report(("start", self.worker, i))
        try:
            if source.kind not in self.decoders:
                self.decoders[source.kind] = decoder_for(self.options, source.kind)
            rec = ingest(
                source,
                self.options,
                self.decoders[source.kind],
                self.codec,
                self._writer(),
                on_frames=lambda n: self.report(("frames", n)),
            )
            self.report(("done", self.worker, i, rec.num_frames, rec.nbytes))
        except (OutputError, Orphaned):
            raise  # the output's fault, or the build is gone: never the input's
        except (HyperframesError, ValueError, RuntimeError, EOFError) as e:
            self.report(("failed", self.worker, i, error_text(e)))
        except OSError as e:
            if e.filename and str(e.filename).startswith(str(self.shards)):
                raise output_error(e, self.shards.parent) from None
            self.report(("failed", self.worker, i, error_text(e)))

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


def actor_fatal(worker: Worker, e: BaseException) -> list[tuple]:
    """A Ray actor's answer when a video raised: its partial shard given up, one ``fatal``
    message, so the build stops as it does for a local worker."""
    worker.abandon()
    return [("fatal", fatal_text(e))]


def actor_progress(messages: list[tuple], kinds: tuple[str, ...]) -> list[tuple]:
    """A Ray actor's answer for a video: the frames it decoded, then its messages of
    ``kinds``."""
    frames = sum(m[1] for m in messages if m[0] == "frames")
    return [("frames", frames), *(m for m in messages if m[0] in kinds)]


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
        conn.send(("exit", worker))
    except (Orphaned, EOFError, BrokenPipeError, ConnectionResetError):
        w.abandon()  # the build is gone (its pipe closed): nothing to report to
    except KeyboardInterrupt:
        w.abandon()  # the journal keeps what is finished; the parent recovers it
    except BaseException as e:
        w.abandon()
        with contextlib.suppress(OSError):
            conn.send(("fatal", worker, fatal_text(e)))


def _exit_text(code: int | None) -> str:
    if code is not None and code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit status {code}"


class _Pool:
    """The parent's side of a local parallel build: one pipe per worker, one item handed to
    each idle worker at a time, so the parent always knows which item each worker holds."""

    def __init__(self, store, options, run, sources, todo, handle) -> None:
        self.ctx = mp.get_context("spawn")
        self.args = (str(store), options, run)
        self.sources, self.handle = sources, handle
        self.pending = array("q", todo)  # 8 bytes a video
        self.pending.reverse()  # pop() from the end hands items out in order
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

    def message(self, w: int, msg: tuple) -> None:
        kind = msg[0]
        if kind in ("done", "failed"):
            self.inflight.pop(w, None)
            self.handle(msg)
            self.feed(w)
        elif kind == "exit":
            self.inflight.pop(w, None)
        elif kind == "fatal":
            raise StoreError(msg[2])
        elif kind == "start":
            self.started.add(w)
            self.stillborn.clear()
        else:
            self.handle(msg)

    def bury(self, w: int) -> None:
        """Worker ``w`` has exited: fail the item it held, naming why, and replace it."""
        p, conn = self.procs.pop(w)
        conn.close()
        i = self.inflight.pop(w, None)
        if i is not None and w not in self.started:
            self.pending.append(i)  # handed over but never begun: the next worker takes it
            self.stillborn.append(p.exitcode or 0)
            exits = sum(code > 0 for code in self.stillborn)
            if exits >= 3 or len(self.stillborn) >= 10:
                raise StoreError(
                    f"build workers die before they start a video ({_exit_text(p.exitcode)}, "
                    f"{len(self.stillborn)} in a row); run with --workers 1 to see why"
                    + _script_hint()
                )
        elif i is not None:
            why = f"the build worker decoding it died ({_exit_text(p.exitcode)}); rerun to retry it"
            self.handle(("failed", w, i, why))
        if self.pending:
            self.start()

    def run(self, workers: int) -> None:
        for _ in range(workers):
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
    pool = _Pool(store, options, run, sources, todo, handle)
    try:
        pool.run(workers)
    finally:
        pool.stop()
