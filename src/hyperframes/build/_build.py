"""Build a store: discover sources, decode each once in worker processes, assemble the index.

Each worker writes its own shard files (no two writers share a file, nothing is copied at the
end). A build can be interrupted at any point (Ctrl-C, kill -9) and rerun with the same command:
finished videos are kept, the rest is redone, and the result holds the same content as an
uninterrupted build.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import multiprocessing as mp
import os
import queue
import shutil
import signal
import time
from pathlib import Path
from typing import TYPE_CHECKING

from .._core._atomic import fsync_dir, remove_stale_temps, write_json_atomic
from .._core._errors import ConfigError, HyperframesError, Interrupted, StoreError
from .._core._progress import Progress
from .._core._signals import interrupt_on_terminate, set_parent_death_signal, terminated
from .._core._urls import is_url
from ..inputs import Source, scan_inputs, source_stat
from ..store import create_codec, gap_text, track_keys, upsampled_line
from ..store.format import BUILD_PARAMS, INDEX_DIR, LOCK, MANIFEST, SHARD_SUFFIX, SHARDS_DIR
from ._assemble import as_given, assemble, live_records
from ._ingest import ingest
from ._lock import StoreLock
from ._options import BuildOptions
from ._shard import Orphaned, OutputError, ShardWriter, output_error, recover_all

if TYPE_CHECKING:
    from ..decode import Decoder

__all__ = ["ENGINES", "BuildReport", "build_store"]

#: where the videos are decoded: ``local`` worker processes, or a Ray cluster (``_ray``)
ENGINES = ("local", "ray")


@dataclasses.dataclass
class BuildReport:
    store: str
    videos: int
    frames: int
    store_bytes: int
    source_bytes: int
    failed: list[dict]
    reused: int
    seconds: float
    damaged: list[dict] = dataclasses.field(default_factory=list)
    skipped: list[dict] = dataclasses.field(default_factory=list)
    #: segments clamped to their video's end or dropped: ``{"path", "row", "note"}``
    notes: list[dict] = dataclasses.field(default_factory=list)
    #: videos whose frames lie further apart than ``max_gap`` somewhere: ``{"path", "count",
    #: "seconds", "max_gap", "first"}`` (``first``: the first few gaps, [pts before, after])
    gaps: list[dict] = dataclasses.field(default_factory=list)
    #: videos stored at a rate above their source's (``--fps``): frames repeated
    #: (:func:`~hyperframes.store._rates.upsampled_rows`)
    upsampled: list[dict] = dataclasses.field(default_factory=list)

    @property
    def exit_code(self) -> int:
        """0 when every video was stored clean; 2 when some failed or were stored damaged."""
        return 2 if self.failed or self.damaged else 0

    def summary(self) -> str:
        if self.source_bytes:
            ratio = f"{self.store_bytes / self.source_bytes:.2f}x the "
        else:
            ratio = ""
        lines = [
            f"store {self.store}: {self.videos} videos, {self.frames} frames, "
            f"{self.store_bytes / 1e6:.1f} MB ({ratio}{self.source_bytes / 1e6:.1f} MB "
            f"of source), {self.reused} kept from an earlier run, {self.seconds:.1f} s",
            f"failed: {len(self.failed)}",
        ]
        if not self.videos and self.failed:
            n = len(self.failed)
            lines[0] += "; nothing was stored: " + (
                "the one input failed" if n == 1 else f"all {n} inputs failed"
            )
        lines += [f"  {f['path']}: {f['error']}" for f in self.failed]
        lines.append(f"damaged (stored, the decoder reported errors): {len(self.damaged)}")
        lines += [f"  {_named(d)}: {d['summary']}" for d in self.damaged]
        lines.append(f"skipped (not inputs): {len(self.skipped)}")
        lines += [f"  {d['path']}: {d['reason']}" for d in self.skipped]
        if self.gaps:
            lines.append(
                f"timestamp gaps skipped (frames further apart than max_gap, not filled with "
                f"repeated frames): {len(self.gaps)}"
            )
            lines += [f"  {g['path']}: {gap_text(g)}" for g in self.gaps]
        if self.upsampled:
            lines.append(
                f"upsampled (the source is slower than --fps: frames repeated, no new motion): "
                f"{len(self.upsampled)}; --fps-max resamples only faster videos, never up"
            )
            lines += [upsampled_line(r) for r in self.upsampled]
        if self.notes:
            lines.append(f"segments adjusted: {len(self.notes)}")
            lines += [f"  {n['path']} (listed at {n['row']}): {n['note']}" for n in self.notes]
        return "\n".join(lines)


def _named(row: dict) -> str:
    """A report row's path, with the symlink's target beside it (``given -> target``)."""
    return f"{row['path']} -> {row['target']}" if row.get("target") else row["path"]


def _decoder_for(options: BuildOptions, kind: str) -> Decoder:
    from ..decode import create_decoder

    if kind == "frames":
        return create_decoder("frames", fps=options.frame_folder_fps)
    return create_decoder(options.decoder)


def _make_codec(options: BuildOptions):
    if options.codec == "jpeg":
        return create_codec("jpeg", quality=options.jpeg_quality)
    return create_codec(options.codec, chunk_frames=options.chunk_frames)


class _Worker:
    """Decodes sources into this worker's own shards.

    ``report`` receives ``("start" | "done" | "failed", worker, item, ...)`` and
    ``("frames", n)`` messages; ``alive`` says whether the build that owns the store lock is
    still running (checked before each video starts and before each commit).
    """

    def __init__(self, store: Path, options: BuildOptions, run: int, worker: int, report, alive):
        self.shards = store / SHARDS_DIR
        self.options = options
        self.codec = _make_codec(options)
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
            name = f"r{self.run:03d}-w{self.worker:03d}-{self.seq:05d}"
            self.seq += 1
            self.writer = ShardWriter(self.shards, name, alive=self.alive)
        return self.writer

    def process(self, i: int, source: Source) -> None:
        self.report(("start", self.worker, i))
        try:
            if source.kind not in self.decoders:
                self.decoders[source.kind] = _decoder_for(self.options, source.kind)
            rec = ingest(
                source,
                self.options,
                self.decoders[source.kind],
                self.codec,
                self._writer(),
                on_frames=lambda n: self.report(("frames", n)),
            )
            self.report(("done", self.worker, i, rec["num_frames"], rec["nbytes"]))
        except (OutputError, Orphaned):
            raise  # the output's fault, or the build is gone: never the input's
        except (HyperframesError, ValueError, RuntimeError, EOFError) as e:
            self.report(("failed", self.worker, i, _error_text(e)))
        except OSError as e:
            if e.filename and str(e.filename).startswith(str(self.shards)):
                raise output_error(e, self.shards.parent) from None
            self.report(("failed", self.worker, i, _error_text(e)))

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.writer = None

    def abandon(self) -> None:
        """Stop without finishing the shard: its journal keeps what was committed."""
        if self.writer is not None:
            self.writer.abandon()
            self.writer = None


def _error_text(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}"


def _worker_main(store, options, run, worker, sources, tasks, results, parent) -> None:
    """A build worker process. It never outlives the build: the kernel kills it when its
    parent dies (Linux), and it checks that its parent is alive before each video and commit
    (elsewhere), so a worker of a killed build stops without touching shared state."""
    set_parent_death_signal()
    if os.getppid() != parent:
        return  # the build died before we started

    def alive() -> bool:
        return os.getppid() == parent

    w = _Worker(Path(store), options, run, worker, results.put, alive)
    try:
        while True:
            item = tasks.get()
            if item is None:
                break
            w.process(item, sources[item])
        w.close()
        results.put(("exit", worker))
    except Orphaned:
        w.abandon()
    except KeyboardInterrupt:
        w.abandon()  # the journal keeps what is finished; the parent recovers it
    except BaseException as e:
        w.abandon()
        results.put(("fatal", worker, str(e) if isinstance(e, StoreError) else _error_text(e)))


def _check_params(store: Path, options: BuildOptions) -> None:
    import json

    path = store / BUILD_PARAMS
    if not path.exists():
        return
    old = json.loads(path.read_text())["content"]
    old.setdefault("on_damaged", "keep")  # stores begun before the option existed
    if old.get("fps") is not None:
        old.setdefault("max_gap", None)  # begun before gaps were bounded: they were filled
    new = options.content()
    diff = {k for k in set(old) | set(new) if old.get(k) != new.get(k)}
    if diff:
        parts = ", ".join(f"{k}: stored {old.get(k)!r}, asked {new.get(k)!r}" for k in sorted(diff))
        raise StoreError(
            f"store {store} was built with other parameters ({parts}); "
            "use another out folder, or the same parameters to resume"
        )


def build_store(
    data: str | os.PathLike,
    out: str | os.PathLike,
    options: BuildOptions | None = None,
    *,
    progress: bool = True,
    input_format: str | None = None,
    root: str | os.PathLike | None = None,
    engine: str = "local",
    ray_address: str | None = None,
) -> BuildReport:
    """Build (or resume) the store ``out`` from ``data``; see the module docstring.
    ``input_format`` / ``root``: how to read ``data`` and the folder its listed paths are
    relative to (see :func:`hyperframes.inputs._sources.scan_inputs`). ``engine``: ``local``
    (``options.workers`` processes here) or ``ray`` (``options.workers`` actors on the Ray
    cluster at ``ray_address``, a new one on this machine when None; see ``_ray``)."""
    options = options or BuildOptions()
    if is_url(out):  # built in a local staging folder, then uploaded (``_publish``)
        from ._publish import build_to_url

        return build_to_url(
            data,
            str(out),
            options,
            progress=progress,
            input_format=input_format,
            root=root,
            engine=engine,
            ray_address=ray_address,
        )
    dispatch = _dispatcher(engine, ray_address, options)
    if options.format == "hdf5":
        from ._hdf5 import build_hdf5

        return build_hdf5(data, out, options, progress=progress)
    t0 = time.perf_counter()
    if options.flow:
        from ._flow import require_opencv

        require_opencv()  # before any video is decoded
    store = Path(out)
    inputs = scan_inputs(data, input_format=input_format, root=root)
    sources, skipped, classes = inputs.sources, inputs.skipped, inputs.classes
    inside = str(store.absolute()) + os.sep  # a store built inside its data is not an input
    skipped = [r for r in skipped if not str(Path(r["path"]).absolute()).startswith(inside)]
    if store.exists() and not store.is_dir():
        raise StoreError(f"out {store} exists and is not a folder")
    try:
        (store / SHARDS_DIR).mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise StoreError(f"cannot create the store folder {store}: {e.strerror}") from None
    if not os.access(store, os.W_OK):
        raise StoreError(f"the store folder {store} is not writable")
    with StoreLock(store / LOCK), interrupt_on_terminate():
        try:
            return _build_locked(
                store,
                options,
                sources,
                skipped,
                classes,
                t0,
                progress,
                inputs.failed_rows,
                dispatch=dispatch,
            )
        except OSError as e:
            raise output_error(e, store) from None


def _dispatcher(engine: str, ray_address: str | None, options: BuildOptions):
    """None for the local engine; else a function that decodes ``todo`` elsewhere, with the
    signature ``(store, options, run, sources, todo, handle)``."""
    if engine not in ENGINES:
        raise ConfigError(f"engine must be one of {', '.join(ENGINES)}, got {engine!r}")
    if engine == "local":
        if ray_address is not None:
            raise ConfigError("ray_address is for engine 'ray'; the local engine takes none")
        return None
    if options.format == "hdf5":
        raise ConfigError("engine 'ray' builds store folders; build one, then convert it to HDF5")
    from ._ray import run_on_ray

    return functools.partial(run_on_ray, address=ray_address)


def _build_locked(
    store, options, sources, skipped, classes, t0, progress, failed_rows=(), *, dispatch=None
) -> BuildReport:
    for folder in (store, store / SHARDS_DIR, store / INDEX_DIR):
        remove_stale_temps(folder)  # of killed builds
    _check_params(store, options)
    write_json_atomic(store / BUILD_PARAMS, {"content": options.content()})
    recover_all(store / SHARDS_DIR)
    done = live_records(store, sources, need=track_keys(options))
    todo = [i for i, s in enumerate(sources) if s.path not in done]
    if (store / MANIFEST).exists() and todo:
        (store / MANIFEST).unlink()  # the store is incomplete until assembled again
        fsync_dir(store)
    run = _next_run(store)
    failures = {r["path"]: r["error"] for r in failed_rows}  # rows unusable before decoding
    failures.update(
        _run(store, options, sources, todo, run=run, progress=progress, dispatch=dispatch)
    )
    this_run = frozenset(
        p.name[: -len(SHARD_SUFFIX)]
        for p in (store / SHARDS_DIR).glob(f"r{run:03d}-*{SHARD_SUFFIX}")
    )
    return assemble(
        store,
        sources,
        classes,
        options,
        failures,
        reused=len(sources) - len(todo),
        started=t0,
        skipped=skipped,
        trusted=this_run,
    )


def _next_run(store: Path) -> int:
    runs = [int(p.name[1:4]) for p in (store / SHARDS_DIR).glob("r*-w*") if p.name[1:4].isdigit()]
    return max(runs, default=-1) + 1


def _run(store, options, sources, todo, *, run, progress, dispatch=None) -> dict[str, str]:
    """Decode ``todo`` sources (here, or by ``dispatch``: see ``_dispatcher``); returns
    {path: error} of those that failed."""
    failures: dict[str, str] = {}
    if not todo:
        return failures
    bar = Progress(total=len(todo), unit="videos", enabled=progress)

    def handle(msg) -> None:
        kind = msg[0]
        if kind == "frames":
            bar.add_frames(msg[1])
        elif kind == "done":
            bar.advance()
        elif kind == "failed":
            failures[sources[msg[2]].path] = msg[3]
            bar.advance(failed=True)

    try:
        workers = min(options.workers, len(todo))
        if dispatch is not None:
            dispatch(store, options, run, sources, todo, handle)
        elif workers <= 1:
            w = _Worker(store, options, run, 0, handle, lambda: True)
            try:
                for i in todo:
                    w.process(i, sources[i])
                w.close()
            except BaseException:
                w.abandon()
                raise
        else:
            _run_parallel(store, options, run, workers, sources, todo, handle)
    except KeyboardInterrupt:
        bar.close()
        _recover_quietly(store)
        how = "SIGTERM" if terminated() == signal.SIGTERM else "Ctrl-C"
        raise Interrupted(
            f"build of {store} stopped by {how}; finished videos are kept: rerun the same "
            "command to resume"
        ) from None
    except StoreError:
        bar.close()
        _recover_quietly(store)
        raise
    bar.close()
    recover_all(store / SHARDS_DIR)  # shards of workers that died during the run
    return failures


def _recover_quietly(store: Path) -> None:
    """Finish what the stopped workers journalled, if the disk allows; else the next build
    does it."""
    with contextlib.suppress(OSError, StoreError):
        recover_all(store / SHARDS_DIR, wait_seconds=5.0)


def _exit_text(code: int | None) -> str:
    if code is not None and code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit status {code}"


def _run_parallel(store, options, run, workers, sources, todo, handle) -> None:
    """Run ``workers`` worker processes over ``todo``. A worker that dies (a decoder crash,
    the OOM killer, kill -9) fails the video it was decoding, naming why, and is replaced."""
    ctx = mp.get_context("spawn")
    tasks, results = ctx.Queue(), ctx.Queue()
    for i in todo:
        tasks.put(i)
    for _ in range(workers):
        tasks.put(None)
    procs: dict[int, mp.process.BaseProcess] = {}
    inflight: dict[int, int] = {}
    exited: set[int] = set()
    remaining = set(todo)

    def start(w: int) -> None:
        p = ctx.Process(
            target=_worker_main,
            args=(str(store), options, run, w, sources, tasks, results, os.getpid()),
            daemon=True,
        )
        p.start()
        procs[w] = p

    for w in range(workers):
        start(w)
    next_id = workers
    try:
        while remaining or len(exited) < len(procs):
            try:
                msg = results.get(timeout=0.5)
            except queue.Empty:
                msg = None
            if msg is not None:
                kind = msg[0]
                if kind == "start":
                    inflight[msg[1]] = msg[2]
                elif kind in ("done", "failed"):
                    inflight.pop(msg[1], None)
                    remaining.discard(msg[2])
                    handle(msg)
                elif kind == "exit":
                    exited.add(msg[1])
                elif kind == "fatal":
                    raise StoreError(msg[2])
                else:
                    handle(msg)
                continue
            for w, p in list(procs.items()):
                if w in exited or p.exitcode is None:
                    continue
                exited.add(w)
                i = inflight.pop(w, None)
                if i is not None and i in remaining:
                    remaining.discard(i)
                    handle(
                        (
                            "failed",
                            w,
                            i,
                            f"the build worker decoding it died ({_exit_text(p.exitcode)}); "
                            "rerun to retry it",
                        )
                    )
                if remaining:
                    start(next_id)
                    next_id += 1
    finally:
        for p in procs.values():
            if p.exitcode is None:
                p.terminate()
        for p in procs.values():
            p.join(timeout=10)
            if p.exitcode is None:
                p.kill()
                p.join()


def remove_store(store: str | os.PathLike) -> None:
    """Delete a store folder (used by converters for their temporary stores)."""
    shutil.rmtree(store, ignore_errors=True)


def dry_run(
    data: str | os.PathLike,
    options: BuildOptions | None = None,
    *,
    input_format: str | None = None,
    root: str | os.PathLike | None = None,
) -> dict:
    """Estimate a store's size from the sources' headers, decoding nothing."""
    from .._core._sizes import target_size

    options = options or BuildOptions()
    sources = scan_inputs(data, input_format=input_format, root=root).sources
    est_frames, est_bytes, src_bytes, unreadable = 0, 0, 0, []
    ratio = {"raw": 1.0, "lz4": 0.8, "zstd": 0.6, "jpeg": 0.08}[options.codec]
    itemsize = 2 if options.dtype == "float16" else 1
    for s in sources:
        try:
            dec = _decoder_for(options, s.kind)
            info = dec.probe(s.path, stream=options.stream)
            src_bytes += source_stat(s)[0]
        except (HyperframesError, OSError) as e:
            unreadable.append(as_given({"path": s.path, "error": _error_text(e)}, s))
            continue
        dur = info.duration_seconds
        fps = options.target_fps(info.fps)
        if fps and dur:
            n = int(dur * fps)
        else:
            n = info.num_frames_from_header or int((dur or 0) * (info.fps or 0))
        hw = target_size(info.height, info.width, options.size) or (info.height, info.width)
        est_frames += n
        est_bytes += int(n * 3 * hw[0] * hw[1] * itemsize * ratio)
        if options.audio:  # float32 samples (as if every video had audio)
            est_bytes += int((dur or 0) * options.audio_rate * options.audio_channels * 4)
        if options.flow:  # per pair: 2 components at the flow size, and a 3x3 float32
            fh, fw = target_size(*hw, options.flow_size) or hw
            per = 2 * fh * fw * (1 if options.flow_dtype == "int8" else 2) + 36
            est_bytes += max(n - 1, 0) * per
    return {
        "videos": len(sources),
        "estimated_frames": est_frames,
        "estimated_bytes": est_bytes,
        "source_bytes": src_bytes,
        "codec": options.codec,
        "unreadable": unreadable,
        "note": "from container headers; compressed sizes are rough",
    }
