"""Build a store: discover sources, decode each once in worker processes, assemble the index.

Each worker writes its own shard files (no two writers share a file, nothing is copied at the
end). A build can be interrupted at any point (Ctrl-C, kill -9) and rerun with the same command:
finished videos are kept, the rest is redone, and the result holds the same content as an
uninterrupted build.
"""

from __future__ import annotations

import dataclasses
import multiprocessing as mp
import os
import queue
import shutil
import time
from pathlib import Path

from .._atomic import fsync_dir, write_json_atomic
from .._errors import HyperframesError, StoreError
from .._progress import Progress
from ._assemble import assemble, live_records
from ._codecs import create_codec
from ._format import BUILD_PARAMS, LOCK, MANIFEST, SHARDS_DIR
from ._ingest import ingest
from ._lock import StoreLock
from ._options import BuildOptions
from ._shard import ShardWriter, recover_all
from ._sources import Source, class_names, discover, source_stat

__all__ = ["BuildReport", "build_store"]


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

    @property
    def exit_code(self) -> int:
        return 2 if self.failed else 0

    def summary(self) -> str:
        ratio = self.store_bytes / self.source_bytes if self.source_bytes else float("nan")
        lines = [
            f"store {self.store}: {self.videos} videos, {self.frames} frames, "
            f"{self.store_bytes / 1e6:.1f} MB ({ratio:.2f}x the {self.source_bytes / 1e6:.1f} MB "
            f"of source), {self.reused} kept from an earlier run, {self.seconds:.1f} s",
            f"failed: {len(self.failed)}",
        ]
        lines += [f"  {f['path']}: {f['error']}" for f in self.failed]
        return "\n".join(lines)


def _decoder_for(options: BuildOptions, kind: str):
    from ..decode import create_decoder

    if kind == "frames":
        return create_decoder("frames", fps=options.frame_folder_fps)
    return create_decoder(options.decoder)


def _make_codec(options: BuildOptions):
    if options.codec == "jpeg":
        return create_codec("jpeg", quality=options.jpeg_quality)
    return create_codec(options.codec, chunk_frames=options.chunk_frames)


class _Worker:
    """Decodes sources into this worker's own shards."""

    def __init__(self, store: Path, options: BuildOptions, run: int, worker: int, report):
        self.shards = store / SHARDS_DIR
        self.options = options
        self.codec = _make_codec(options)
        self.decoders: dict[str, object] = {}
        self.run, self.worker, self.seq = run, worker, 0
        self.report = report
        self.writer: ShardWriter | None = None

    def _writer(self) -> ShardWriter:
        if self.writer is not None and self.writer.size >= self.options.shard_bytes:
            self.writer.close()
            self.writer = None
        if self.writer is None:
            name = f"r{self.run:03d}-w{self.worker:03d}-{self.seq:05d}"
            self.seq += 1
            self.writer = ShardWriter(self.shards, name)
        return self.writer

    def process(self, i: int, source: Source) -> None:
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
            self.report(("done", i, rec["num_frames"], rec["nbytes"]))
        except (HyperframesError, ValueError, RuntimeError, EOFError) as e:
            self.report(("failed", i, _error_text(e)))
        except OSError as e:
            if e.filename and str(e.filename).startswith(str(self.shards)):
                raise  # our own output failed: fatal
            self.report(("failed", i, _error_text(e)))

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.writer = None


def _error_text(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}"


def _worker_main(store, options, run, worker, sources, tasks, results) -> None:
    w = _Worker(Path(store), options, run, worker, results.put)
    try:
        while True:
            item = tasks.get()
            if item is None:
                break
            w.process(item, sources[item])
        w.close()
        results.put(("exit", worker))
    except KeyboardInterrupt:
        pass  # the journal keeps what is finished; the next build recovers it
    except BaseException as e:
        results.put(("fatal", worker, _error_text(e)))


def _check_params(store: Path, options: BuildOptions) -> None:
    import json

    path = store / BUILD_PARAMS
    if not path.exists():
        return
    old = json.loads(path.read_text())["content"]
    new = options.content()
    diff = {k for k in set(old) | set(new) if old.get(k) != new.get(k)}
    if diff:
        parts = ", ".join(f"{k}: stored {old.get(k)!r}, asked {new.get(k)!r}" for k in sorted(diff))
        raise StoreError(
            f"store {store} was built with other parameters ({parts}); "
            "use another --out folder, or the same parameters to resume"
        )


def build_store(
    data: str | os.PathLike,
    out: str | os.PathLike,
    options: BuildOptions | None = None,
    *,
    progress: bool = True,
) -> BuildReport:
    """Build (or resume) the store ``out`` from ``data``; see the module docstring."""
    options = options or BuildOptions()
    if options.format == "hdf5":
        from ._hdf5 import build_hdf5

        return build_hdf5(data, out, options, progress=progress)
    t0 = time.perf_counter()
    sources = discover(data)
    classes = class_names(sources)
    store = Path(out)
    if store.exists() and not store.is_dir():
        raise StoreError(f"--out {store} exists and is not a folder")
    try:
        (store / SHARDS_DIR).mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise StoreError(f"cannot create the store folder {store}: {e.strerror}") from None
    if not os.access(store, os.W_OK):
        raise StoreError(f"the store folder {store} is not writable")
    with StoreLock(store / LOCK):
        _check_params(store, options)
        write_json_atomic(store / BUILD_PARAMS, {"content": options.content()})
        recover_all(store / SHARDS_DIR)
        done = live_records(store, sources)
        todo = [i for i, s in enumerate(sources) if s.path not in done]
        if (store / MANIFEST).exists() and todo:
            (store / MANIFEST).unlink()  # the store is incomplete until assembled again
            fsync_dir(store)
        failures = _run(store, options, sources, todo, progress=progress)
        return assemble(
            store,
            sources,
            classes,
            options,
            failures,
            reused=len(sources) - len(todo),
            started=t0,
        )


def _next_run(store: Path) -> int:
    runs = [int(p.name[1:4]) for p in (store / SHARDS_DIR).glob("r*-w*") if p.name[1:4].isdigit()]
    return max(runs, default=-1) + 1


def _run(store, options, sources, todo, *, progress) -> dict[str, str]:
    """Decode ``todo`` sources; returns {path: error} of those that failed."""
    failures: dict[str, str] = {}
    if not todo:
        return failures
    run = _next_run(store)
    bar = Progress(total=len(todo), unit="videos", enabled=progress)

    def handle(msg) -> None:
        kind = msg[0]
        if kind == "frames":
            bar.add_frames(msg[1])
        elif kind == "done":
            bar.advance()
        elif kind == "failed":
            failures[sources[msg[1]].path] = msg[2]
            bar.advance(failed=True)

    try:
        workers = min(options.workers, len(todo))
        if workers <= 1:
            w = _Worker(store, options, run, 0, handle)
            try:
                for i in todo:
                    w.process(i, sources[i])
            finally:
                w.close()
        else:
            _run_parallel(store, options, run, workers, sources, todo, handle)
    except KeyboardInterrupt:
        bar.close()
        raise StoreError(
            f"build of {store} interrupted; finished videos are kept — rerun the same command "
            "to resume"
        ) from None
    bar.close()
    return failures


def _run_parallel(store, options, run, workers, sources, todo, handle) -> None:
    ctx = mp.get_context("spawn")
    tasks, results = ctx.Queue(), ctx.Queue()
    for i in todo:
        tasks.put(i)
    for _ in range(workers):
        tasks.put(None)
    procs = [
        ctx.Process(
            target=_worker_main,
            args=(str(store), options, run, w, sources, tasks, results),
            daemon=True,
        )
        for w in range(workers)
    ]
    for p in procs:
        p.start()
    alive = workers
    try:
        while alive:
            try:
                msg = results.get(timeout=1.0)
            except queue.Empty:
                if not any(p.is_alive() for p in procs):
                    raise StoreError(f"build workers of {store} died unexpectedly") from None
                continue
            if msg[0] == "exit":
                alive -= 1
            elif msg[0] == "fatal":
                raise StoreError(f"build worker {msg[1]} failed: {msg[2]}")
            else:
                handle(msg)
    finally:
        for p in procs:
            p.join(timeout=5)
            if p.is_alive():
                p.terminate()


def remove_store(store: str | os.PathLike) -> None:
    """Delete a store folder (used by converters for their temporary stores)."""
    shutil.rmtree(store, ignore_errors=True)


def dry_run(data: str | os.PathLike, options: BuildOptions | None = None) -> dict:
    """Estimate a store's size from the sources' headers, decoding nothing."""
    from ._options import target_size

    options = options or BuildOptions()
    sources = discover(data)
    est_frames, est_bytes, src_bytes, unreadable = 0, 0, 0, []
    ratio = {"raw": 1.0, "lz4": 0.8, "zstd": 0.6, "jpeg": 0.08}[options.codec]
    itemsize = 2 if options.dtype == "float16" else 1
    for s in sources:
        try:
            dec = _decoder_for(options, s.kind)
            info = dec.probe(s.path, stream=options.stream)
            src_bytes += source_stat(s)[0]
        except (HyperframesError, OSError) as e:
            unreadable.append({"path": s.path, "error": _error_text(e)})
            continue
        dur = info.duration_seconds
        if options.fps and dur:
            n = int(dur * options.fps)
        else:
            n = info.num_frames_from_header or int((dur or 0) * (info.fps or 0))
        hw = target_size(info.height, info.width, options.size) or (info.height, info.width)
        est_frames += n
        est_bytes += int(n * 3 * hw[0] * hw[1] * itemsize * ratio)
    return {
        "videos": len(sources),
        "estimated_frames": est_frames,
        "estimated_bytes": est_bytes,
        "source_bytes": src_bytes,
        "codec": options.codec,
        "unreadable": unreadable,
        "note": "from container headers; compressed sizes are rough",
    }
