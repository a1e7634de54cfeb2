"""Build a store folder: discover sources, decode each once in worker processes, assemble the
index.

Each worker writes its own shard files (no two writers share a file, nothing is copied at the
end). A build can be interrupted at any point (Ctrl-C, kill -9) and rerun with the same command:
finished videos are kept, the rest is redone, and the result holds the same content as an
uninterrupted build.
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import time
from array import array
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from .._core._atomic import fsync_dir, remove_stale_temps, write_json_atomic
from .._core._errors import Interrupted, StoreError
from .._core._progress import Progress
from .._core._signals import interrupt_on_terminate, terminated
from ..inputs import (
    RootCheck,
    Source,
    SourceColumns,
    match_boxes,
    read_boxes,
    scan_inputs,
    source_paths,
    sources_named,
)
from ..store import track_keys
from ..store.format import BUILD_PARAMS, INDEX_DIR, LOCK, MANIFEST, SHARD_SUFFIX, SHARDS_DIR
from ._assemble import assemble
from ._failures import FailureLog
from ._flow import require_opencv
from ._ingest import no_such_file
from ._lock import StoreLock
from ._messages import Done, Failed, Frames, Message
from ._options import BuildOptions
from ._report import BuildReport
from ._resume import check_params, live_records, next_run
from ._shard import output_error, recover_all
from ._workers import InProcess, error_text, run_parallel

__all__ = ["build_folder", "decode_sources", "decoding"]


def build_folder(
    data, out, options: BuildOptions, *, progress: bool, input_format, root, dispatch=None
) -> BuildReport:
    """Build (or resume) the store folder ``out`` from ``data`` (``build_store``'s arguments);
    ``dispatch``: None to decode here, else the Ray engine (see :func:`decode_sources`)."""
    t0 = time.perf_counter()
    if options.flow:
        require_opencv()  # before any video is decoded
    store = Path(out)
    inputs = scan_inputs(
        data,
        input_format=input_format,
        root=root,
        allow_outside_root=options.allow_outside_root,
        defer_checks=True,  # each video is checked as it is handed out (decode_sources)
    )
    skipped = inputs.skipped
    boxes = None
    if options.boxes is not None:  # checked before anything is decoded
        rows = read_boxes(options.boxes)
        base = root if root is not None else (data if os.path.isdir(data) else None)
        found = inputs.sources
        boxes = (rows, [found[i].path for i in match_boxes(rows, found, root=base)])
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
                store, options, inputs, skipped, t0, progress, dispatch, boxes=boxes
            )
        except OSError as e:
            raise output_error(e, store) from None


def _build_locked(
    store, options, inputs, skipped, t0, progress, dispatch, *, boxes=None
) -> BuildReport:
    for folder in (store, store / SHARDS_DIR, store / INDEX_DIR):
        remove_stale_temps(folder)  # of killed builds
    check_params(store, options)
    write_json_atomic(store / BUILD_PARAMS, {"content": options.content()})
    recover_all(store / SHARDS_DIR)
    sources, refuse = inputs.sources, inputs.root_check
    done = live_records(store, sources, need=track_keys(options))
    if refuse is not None and done:  # stored from a root the inputs no longer allow: redone
        named = sources_named(sources, done)
        done = {p: r for p, r in done.items() if refuse(named[p]) is None}
    # positions to decode: all of them (a range), or 8 bytes each (not a list of ints)
    todo: Sequence[int] = range(len(sources))
    if done:
        todo = array("q", (i for i, p in enumerate(source_paths(sources)) if p not in done))
    if (store / MANIFEST).exists() and todo:
        (store / MANIFEST).unlink()  # the store is incomplete until assembled again
        fsync_dir(store)
    run = next_run(store)
    with decoding(store, options, inputs, todo, run, progress, t0, dispatch, refuse) as assembly:
        this_run = frozenset(
            p.name[: -len(SHARD_SUFFIX)]
            for p in (store / SHARDS_DIR).glob(f"r{run:03d}-*{SHARD_SUFFIX}")
        )
        return assembly(skipped=skipped, trusted=this_run, boxes=boxes)


@contextlib.contextmanager
def decoding(
    store: Path,
    options,
    inputs,
    todo: Sequence[int],
    run: int,
    progress,
    started: float,
    dispatch=None,
    refuse: Callable[[Source], dict | None] | None = None,
) -> Iterator[Callable[..., BuildReport]]:
    """A build but its end: the sources ``todo`` of ``inputs`` decoded into ``store``'s shards
    (:func:`decode_sources`), those that failed in an open :class:`FailureLog`; gives the
    caller :func:`~._assemble.assemble` of this build, to call (with its ``skipped``,
    ``trusted``, ``boxes``) once the shards are where the index is written from."""
    with FailureLog(store, len(inputs.sources), inputs.failed_rows) as failures:
        decode_sources(
            store,
            options,
            inputs.sources,
            todo,
            run=run,
            progress=progress,
            failures=failures,
            dispatch=dispatch,
            refuse=refuse,
        )
        yield functools.partial(
            assemble,
            store,
            inputs.sources,
            inputs.classes,
            options,
            failures,
            reused=len(inputs.sources) - len(todo),
            started=started,
        )


def decode_sources(
    store,
    options,
    sources,
    todo,
    *,
    run,
    progress,
    failures: FailureLog,
    dispatch=None,
    refuse: Callable[[Source], dict | None] | None = None,
) -> None:
    """Decode the sources ``todo`` (indices into ``sources``) into the shards of build run
    ``run``: here, in ``options.workers`` processes, or by ``dispatch`` (the Ray engine, with
    the signature of ``_ray.run_on_ray``); those that fail go to ``failures``. ``refuse``
    (``Inputs.root_check``): a source it refuses fails as it is handed out, undecoded."""
    if not todo:
        return
    bar = Progress(total=len(todo), unit="videos", enabled=progress)

    def handle(msg: Message) -> None:
        if isinstance(msg, Frames):
            bar.add_frames(msg.count)
        elif isinstance(msg, Done):
            bar.advance()
        elif isinstance(msg, Failed):
            failures.add(msg.item, msg.error, sources[msg.item])
            bar.advance(failed=True)

    def fail(i: int, path: str, error: str) -> None:  # a row of no link, by its path alone
        failures.add_path(i, path, error)
        bar.advance(failed=True)

    if refuse is not None:
        todo = _HandedOut(todo, sources, refuse, handle, fail)
    try:
        workers = min(options.workers, len(todo))
        if dispatch is not None:
            dispatch(store, options, run, sources, todo, handle)
        elif workers <= 1:
            InProcess(store, options, run, sources, todo, handle).execute()
        else:
            run_parallel(store, options, run, workers, sources, todo, handle)
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


class _HandedOut:
    """``todo`` as it is handed out, each source checked by ``refuse`` first: a refused one
    fails there (reported to ``handle``), so the first video starts decoding after one check,
    not after every row's. Its length is ``todo``'s (what the progress counts).

    Rows of columns checked by a :class:`RootCheck` are looked at by path alone (no
    :class:`Source` made): one ``lstat`` each, and a row whose file is outside the root or
    missing fails here (reported to ``fail``) with the words a worker would say, so ten
    million missing rows cost a stat and a line of ``failures.jsonl`` each."""

    def __init__(self, todo, sources, refuse, handle, fail):
        self.todo, self.sources, self.refuse = todo, sources, refuse
        self.handle, self.fail = handle, fail

    def __len__(self) -> int:
        return len(self.todo)

    def __iter__(self) -> Iterator[int]:
        if isinstance(self.sources, SourceColumns) and isinstance(self.refuse, RootCheck):
            yield from self._by_path(self.sources, self.refuse)
            return
        for i in self.todo:
            if self._passes(i):
                yield i

    def _passes(self, i: int) -> bool:
        why = self.refuse(self.sources[i])
        if why is not None:
            self.handle(Failed(-1, i, why["error"]))
        return why is None

    def _by_path(self, columns: SourceColumns, check: RootCheck) -> Iterator[int]:
        for i, path, row, whole in columns.plain_rows(self.todo):
            if whole:  # (a link's row says its given path: the source says it)
                if self._passes(i):
                    yield i
                continue
            why, missing = check.refusal(path, row)
            if why is not None:
                self.fail(i, path, why["error"])
            elif missing:
                self.fail(i, path, error_text(no_such_file(path, row)))
            else:
                yield i


def _recover_quietly(store: Path) -> None:
    """Finish what the stopped workers journalled, if the disk allows; else the next build
    does it."""
    with contextlib.suppress(OSError, StoreError):
        recover_all(store / SHARDS_DIR, wait_seconds=5.0)
