"""A Ray build straight to object storage (``engine="ray"``, ``out="s3://..."``): each actor
publishes its own shards to the URL, the driver writes the index and the manifest last.

No folder is shared. An actor stages its shards on its own node (a folder beside the URL's
staging folder there, one per actor: :func:`actor_stage`; a dead actor's is removed by the
next actor of a later build on that node, or by the driver on its own node once the build is
over) and uploads each shard as soon as
``ShardWriter.close`` has finished it: the payload first (``publish_file``: one PUT, or a
multipart upload where large), its journal last. A journal at the URL is what marks a shard as
published, and it is only ever uploaded after its payload, so every listed journal's payload
is there whole. The actor holds back each video's "done" until the shard holding it is
published; the driver keeps the videos an actor has decoded but not yet published, and gives
them out again if that actor dies (``_Pool.lost``), after looking at the URL first (a video
whose journal made it is never decoded again).

The driver keeps a small local mirror of the URL (:func:`staging_dir`): the published
journals, and for each payload a sparse placeholder of the size the URL lists (the payload
bytes never come to the driver). ``assemble`` reads that mirror as it reads a store folder, so
the index and the manifest come from the same code as any other build's; the index files and
then the manifest are uploaded, and the shard objects of earlier, killed runs (a payload whose
journal never came, a shard no video is kept from) are deleted. A run killed anywhere (an
actor or the driver, kill -9, mid-upload) leaves at most such objects, never a listed journal
without its payload; rerunning the command keeps every published video, decodes the rest into
new shard names (runs are numbered from the URL's listing, so nothing is overwritten) and
deletes the leftovers. ``hyperframes gc URL`` lists what a run killed for good left behind.

One build per URL at a time: object storage has no locks, and the driver's lock is on its
own machine (a second build of the same URL from another machine is not stopped).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import time
from pathlib import Path

from .._core._atomic import write_bytes_atomic, write_json_atomic
from .._core._errors import Interrupted, StoreError
from .._core._signals import interrupt_on_terminate
from ..remote import RemoteFiles, bare_url, join_url
from ..store.format import BUILD_PARAMS, LOCK, MANIFEST, RECORDS_SUFFIX, SHARD_SUFFIX, SHARDS_DIR
from ._build import _check_params, _error_text, _run, _Worker
from ._lock import StoreLock
from ._publish import check_write_access, delete_objects, publish_file, staging_dir
from ._shard import load_shard, read_journal

__all__ = ["PublishActor", "actor_stage", "build_ray_to_url", "leftovers", "published"]


def actor_stage(url: str, run: int, rank: int) -> Path:
    """The node-local folder actor ``rank`` of run ``run`` stages its shards in."""
    base = staging_dir(url)
    return base.with_name(f"{base.name}.actors") / f"r{run:03d}-w{rank:03d}"


def _clear_older_stages(stage: Path, run: int) -> None:
    """Remove the stages of earlier runs on this node: their actors are gone (the driver of
    this run holds the build's lock), and what they had not published is redone."""
    for d in stage.parent.glob("r*-w*"):
        if d.name[1:4].isdigit() and int(d.name[1:4]) < run:
            shutil.rmtree(d, ignore_errors=True)


class _UploadError(StoreError):
    """A shard could not be published from this node."""


class PublishActor:
    """One build worker on a Ray node that publishes its own shards to ``url``.

    ``process`` returns the build messages as ``DecodeActor.process`` does, except that a
    video's ``("done", ...)`` comes only once the shard holding it is published (from a later
    ``process`` or from ``close``)."""

    def __init__(self, url: str, options, run: int, rank: int):
        self.url = url.rstrip("/")
        self.stage = actor_stage(url, run, rank)
        _clear_older_stages(self.stage, run)
        # made by the first video it is given (process): an actor that the driver stops while
        # it is still starting, never given work nor closed, leaves no folder behind
        shutil.rmtree(self.stage, ignore_errors=True)
        self.messages: list[tuple] = []
        self.held: dict[str, tuple] = {}  # source path -> its "done", until published
        self.worker = _Worker(self.stage, options, run, rank, self.messages.append, lambda: True)

    def where(self) -> tuple[str, int]:
        return socket.gethostname(), os.getpid()

    def process(self, i: int, source) -> list[tuple]:
        self.messages.clear()
        try:
            (self.stage / SHARDS_DIR).mkdir(parents=True, exist_ok=True)  # (gone after close)
            self.worker.process(i, source)
            for m in self.messages:
                if m[0] == "done":
                    self.held[source.path] = m
            released = self._publish()
        except _UploadError as e:
            return [("fatal", str(e))]
        except StoreError as e:
            self.worker.abandon()
            return [("fatal", str(e))]
        except Exception as e:  # a bug, not the input: stop the build, as a local worker does
            self.worker.abandon()
            return [("fatal", _error_text(e))]
        frames = sum(m[1] for m in self.messages if m[0] == "frames")
        failed = [m for m in self.messages if m[0] == "failed"]
        return [("frames", frames), *failed, *released]

    def close(self) -> list[tuple]:
        try:
            self.worker.close()
            released = self._publish()
        except StoreError as e:
            return [("fatal", str(e))]
        shutil.rmtree(self.stage, ignore_errors=True)
        return released

    def _publish(self) -> list[tuple]:
        """Upload every shard finished in the stage (payload, then journal), remove it here,
        and release the "done" of the videos it holds."""
        shards = self.stage / SHARDS_DIR
        released = []
        for journal in sorted(shards.glob(f"*{RECORDS_SUFFIX}")):
            name = journal.name[: -len(RECORDS_SUFFIX)]
            payload = shards / f"{name}{SHARD_SUFFIX}"
            try:
                publish_file(payload, join_url(self.url, SHARDS_DIR, payload.name))
                publish_file(journal, join_url(self.url, SHARDS_DIR, journal.name))
            except StoreError as e:  # kept staged: the journal of what was published is here
                raise _UploadError(
                    f"{e} (from the Ray node {socket.gethostname()}: its environment must give "
                    "the credentials and endpoint, as the driver's does)"
                ) from None
            paths = [r["path"] for r in read_journal(journal) if "path" in r]
            payload.unlink()
            journal.unlink()
            released += [self.held.pop(p) for p in paths if p in self.held]
        return released


def _read_if_there(remote: RemoteFiles, rel: str) -> bytes | None:
    """An object's bytes; None when it is gone or not readable yet (listed while its upload
    was finishing: an object store may list a key before a GET of it succeeds)."""
    try:
        return remote.read(rel)
    except StoreError:
        try:
            remote.fs.info(bare_url(remote.url_of(rel)))
        except FileNotFoundError:
            return None
        except Exception:  # the read's own error, raised below, says what is wrong
            pass
        raise


def published(url: str, run: int, rank: int) -> dict[str, dict]:
    """{source path: record} of the videos actor ``rank`` of run ``run`` published."""
    from ._ray import shard_prefix

    remote = RemoteFiles(url)
    prefix = f"{SHARDS_DIR}/{shard_prefix(run, rank)}"
    found: dict[str, dict] = {}
    for rel in sorted(remote.listing(refresh=True)):
        if rel.startswith(prefix) and rel.endswith(RECORDS_SUFFIX):
            data = _read_if_there(remote, rel)
            lines = [json.loads(x) for x in (data or b"").splitlines() if x.strip()]
            found.update({r["path"]: r for r in lines if "path" in r})
    return found


def _mirror(folder: Path, listing: dict[str, dict], remote: RemoteFiles) -> frozenset[str]:
    """Mirror the URL's published shards in ``folder/shards``: each journal downloaded, its
    payload a sparse placeholder of the size listed. A journal whose payload is missing or of
    another size than the journal says is left out (its videos are redone). Returns the names
    of the shards mirrored."""
    shards = folder / SHARDS_DIR
    shards.mkdir(parents=True, exist_ok=True)
    names = set()
    for rel, info in listing.items():
        if not (rel.startswith(f"{SHARDS_DIR}/") and rel.endswith(RECORDS_SUFFIX)):
            continue
        name = rel[len(SHARDS_DIR) + 1 : -len(RECORDS_SUFFIX)]
        journal = shards / f"{name}{RECORDS_SUFFIX}"
        if not journal.is_file() or journal.stat().st_size != info["size"]:
            data = _read_if_there(remote, rel)
            if data is None:
                continue
            write_bytes_atomic(journal, data)
        try:
            summary = load_shard(shards, name)[1]
        except ValueError:
            continue
        payload = listing.get(f"{SHARDS_DIR}/{name}{SHARD_SUFFIX}")
        if payload is not None and payload["size"] == summary["bytes"]:
            with open(shards / f"{name}{SHARD_SUFFIX}", "wb") as f:
                f.truncate(summary["bytes"])  # sparse: no payload byte comes here
            names.add(name)
    for p in shards.iterdir():
        if p.name.split(".")[0] not in names:
            p.unlink()
    return frozenset(names)


def _next_run(listing: dict[str, dict]) -> int:
    runs = [
        int(rel[len(SHARDS_DIR) + 2 : len(SHARDS_DIR) + 5])
        for rel in listing
        if rel.startswith(f"{SHARDS_DIR}/r") and rel[len(SHARDS_DIR) + 2 :][:3].isdigit()
    ]
    return max(runs, default=-1) + 1


def _params(folder: Path, options, listing: dict, remote: RemoteFiles) -> None:
    """Check the build parameters against the URL's (a store is resumed with its own), then
    record them there."""
    if BUILD_PARAMS in listing:
        write_bytes_atomic(folder / BUILD_PARAMS, remote.read(BUILD_PARAMS))
        _check_params(folder, options)
    write_json_atomic(folder / BUILD_PARAMS, {"content": options.content()})
    publish_file(folder / BUILD_PARAMS, remote.url_of(BUILD_PARAMS))


def build_ray_to_url(data, url: str, options, *, progress, input_format, root, ray_address):
    """``build_store(data, url, engine="ray")``: see the module docstring."""
    from ..inputs import scan_inputs

    t0 = time.perf_counter()
    url = url.rstrip("/")
    check_write_access(url, folder=True)
    if options.flow:
        from ._flow import require_opencv

        require_opencv()  # before any video is decoded
    inputs = scan_inputs(data, input_format=input_format, root=root)
    folder = staging_dir(url)
    (folder / SHARDS_DIR).mkdir(parents=True, exist_ok=True)
    try:
        with StoreLock(folder / LOCK), interrupt_on_terminate():
            report = _build_locked(folder, url, options, inputs, t0, progress, ray_address)
    except Interrupted as e:  # said of the URL, not of the driver's mirror folder
        how = "SIGTERM" if "SIGTERM" in str(e) else "Ctrl-C"
        raise Interrupted(
            f"build of {url} stopped by {how}; published videos are kept: rerun the same "
            "command to resume"
        ) from None
    shutil.rmtree(folder, ignore_errors=True)
    # the stages on this node (of actors that died: every actor of the build is gone now)
    shutil.rmtree(actor_stage(url, 0, 0).parent, ignore_errors=True)
    report.store = url
    return report


def _build_locked(folder: Path, url: str, options, inputs, t0, progress, ray_address):
    import functools

    from ..store import track_keys
    from ._assemble import assemble, live_records
    from ._ray import run_on_ray

    remote = RemoteFiles(url)
    listing = remote.listing(refresh=True)
    _params(folder, options, listing, remote)
    mirrored = _mirror(folder, listing, remote)
    sources = inputs.sources
    done = live_records(folder, sources, trusted=mirrored, need=track_keys(options))
    todo = [i for i, s in enumerate(sources) if s.path not in done]
    if MANIFEST in listing and todo:  # the URL is incomplete until assembled again
        delete_objects(url, [MANIFEST])
    run = _next_run(listing)
    dispatch = functools.partial(run_on_ray, address=ray_address, url=url)
    failures = {r["path"]: r["error"] for r in inputs.failed_rows}
    failures.update(
        _run(folder, options, sources, todo, run=run, progress=progress, dispatch=dispatch)
    )
    mirrored = _mirror(folder, remote.listing(refresh=True), remote)
    (folder / MANIFEST).unlink(missing_ok=True)
    report = assemble(
        folder,
        sources,
        inputs.classes,
        options,
        failures,
        reused=len(sources) - len(todo),
        started=t0,
        skipped=inputs.skipped,
        trusted=mirrored,
    )
    _upload_index(folder, url)
    return report


def _upload_index(folder: Path, url: str) -> None:
    """Upload the index files, then the manifest; then delete the shard objects the manifest
    does not list (of killed runs, or no longer used)."""
    manifest = json.loads((folder / MANIFEST).read_text())
    with contextlib.suppress(StoreError):
        delete_objects(url, [MANIFEST])  # the index changes under it
    for row in manifest["index"]:
        publish_file(folder / row["name"], join_url(url, row["name"]))
    publish_file(folder / MANIFEST, join_url(url, MANIFEST))
    leftover = [rel for rel, _ in leftovers(url) if rel.startswith(f"{SHARDS_DIR}/")]
    delete_objects(url, leftover)


def leftovers(url: str) -> list[tuple[str, int]]:
    """``(name, bytes)`` of every object under the store URL that its manifest does not list
    (nor a listed shard's journal, nor the build parameters): what killed builds left. StoreError when there is no manifest
    (an unfinished store: its build, rerun, keeps what it can and deletes the rest)."""
    remote = RemoteFiles(url)
    try:
        manifest = json.loads(remote.read(MANIFEST))
    except StoreError:
        raise StoreError(
            f"{url}: has no {MANIFEST} (an unfinished store, or no store at all): rerun its "
            "build, which deletes what it does not keep, or delete the whole prefix"
        ) from None
    keep = {MANIFEST, BUILD_PARAMS}
    for row in manifest["shards"]:  # each with its journal (what a rerun resumes from)
        name = row["name"][: -len(SHARD_SUFFIX)]
        keep |= {f"{SHARDS_DIR}/{name}{SHARD_SUFFIX}", f"{SHARDS_DIR}/{name}{RECORDS_SUFFIX}"}
    keep |= {r["name"] for r in manifest["index"]}
    listing = remote.listing(refresh=True)
    return sorted((rel, info["size"]) for rel, info in listing.items() if rel not in keep)


def gc_store(url: str, *, delete: bool = False) -> list[tuple[str, int]]:
    """``hyperframes gc URL``: the leftovers of :func:`leftovers` (``(name, bytes)``),
    deleted when ``delete``. A path that is not a store URL is a ConfigError."""
    from .._core._errors import ConfigError
    from .._core._urls import is_url

    if not is_url(url):
        raise ConfigError(f"{url}: gc is for store URLs (s3://bucket/prefix)")
    found = leftovers(url)
    if delete:
        delete_objects(url, [rel for rel, _ in found])
    return found
