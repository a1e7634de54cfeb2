"""A Ray build straight to object storage (``engine="ray"``, ``out="s3://..."``), on the
driver's side: the actors publish their own shards (``_ray_publish``), the driver writes the
index and the manifest last.

The driver keeps a small local mirror of the URL (``_publish.staging_dir``): the published
journals, and for each payload a sparse placeholder of the size the URL lists (the payload
bytes never come to the driver). ``assemble`` reads that mirror as it reads a store folder, so
the index and the manifest come from the same code as any other build's; the index files and
then the manifest are uploaded, and the shard objects of earlier, killed runs (a payload whose
journal never came, a shard no video is kept from) are deleted. A run killed anywhere (an
actor or the driver, kill -9, mid-upload) leaves at most such objects, never a listed journal
without its payload; rerunning the command keeps every published video, decodes the rest into
new shard names (runs are numbered from the URL's listing, so nothing is overwritten) and
deletes the leftovers. ``hyperframes gc URL`` lists what a run killed for good left behind.

One build per URL at a time: the driver holds the URL's lock object (``_url_lock``: a
conditional PUT with a lease), so a second build of the URL, from this machine or another, is
refused naming the first.
"""

from __future__ import annotations

import contextlib
import functools
import json
import shutil
import time
from pathlib import Path

from .._core._atomic import write_bytes_atomic, write_json_atomic
from .._core._errors import Interrupted, StoreError
from .._core._signals import interrupt_on_terminate
from ..inputs import scan_inputs
from ..remote import RemoteFiles, join_url
from ..store import track_keys
from ..store.format import BUILD_PARAMS, LOCK, MANIFEST, RECORDS_SUFFIX, SHARD_SUFFIX, SHARDS_DIR
from ._flow import require_opencv
from ._folder import decoding
from ._lock import StoreLock
from ._publish import check_write_access, delete_objects, leftovers, publish_file, staging_dir
from ._ray import run_on_ray
from ._ray_publish import actor_stage, read_if_there
from ._resume import check_params, live_records
from ._shard import load_shard
from ._url_lock import UrlLock

__all__ = ["build_ray_to_url"]


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
            data = read_if_there(remote, rel)
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
        check_params(folder, options)
    write_json_atomic(folder / BUILD_PARAMS, {"content": options.content()})
    publish_file(folder / BUILD_PARAMS, remote.url_of(BUILD_PARAMS))


def build_ray_to_url(data, url: str, options, *, progress, input_format, root, ray_address):
    """``build_store(data, url, engine="ray")``: see the module docstring."""
    t0 = time.perf_counter()
    url = url.rstrip("/")
    check_write_access(url, folder=True)
    if options.flow:
        require_opencv()  # before any video is decoded
    inputs = scan_inputs(
        data,
        input_format=input_format,
        root=root,
        allow_outside_root=options.allow_outside_root,
    )
    folder = staging_dir(url)
    (folder / SHARDS_DIR).mkdir(parents=True, exist_ok=True)
    try:
        with UrlLock(url), StoreLock(folder / LOCK), interrupt_on_terminate():
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
    with decoding(folder, options, inputs, todo, run, progress, t0, dispatch) as assembly:
        mirrored = _mirror(folder, remote.listing(refresh=True), remote)
        (folder / MANIFEST).unlink(missing_ok=True)
        report = assembly(skipped=inputs.skipped, trusted=mirrored)
    report.failures_file = None  # (the staging folder is removed: the manifest lists them)
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
