"""A Ray build straight to object storage (``engine="ray"``, ``out="s3://..."``), on the
actors' side: each actor publishes its own shards to the URL (the driver's side, which writes
the index and the manifest last, is ``_ray_url``).

No folder is shared. An actor stages its shards on its own node (a folder beside the URL's
staging folder there, one per actor: :func:`actor_stage`; a dead actor's is removed by the
next actor of a later build on that node, or by the driver on its own node once the build is
over) and uploads each shard as soon as
``ShardWriter.close`` has finished it: the payload first (``publish_file``: one PUT, or a
multipart upload where large), its journal last. A journal at the URL is what marks a shard as
published, and it is only ever uploaded after its payload, so every listed journal's payload
is there whole. The actor holds back each video's "done" until the shard holding it is
published; the driver keeps the videos an actor has decoded but not yet published, and gives
them out again if that actor dies (``_Pool.lost``), after looking at the URL first
(:func:`published`: a video whose journal made it is never decoded again).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
from pathlib import Path

from .._core._errors import StoreError
from ..remote import RemoteFiles, bare_url, join_url
from ..store.format import RECORDS_SUFFIX, SHARD_SUFFIX, SHARDS_DIR
from ._journal import JournalRecord
from ._messages import Done, Failed, Fatal, Message
from ._publish import publish_file, staging_dir
from ._shard import read_journal
from ._workers import Worker, actor_fatal, actor_progress, shard_prefix

__all__ = ["PublishActor", "actor_stage", "published", "read_if_there"]


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
    video's ``Done`` comes only once the shard holding it is published (from a later
    ``process`` or from ``close``)."""

    def __init__(self, url: str, options, run: int, rank: int):
        self.url = url.rstrip("/")
        self.stage = actor_stage(url, run, rank)
        _clear_older_stages(self.stage, run)
        # made by the first video it is given (process): an actor that the driver stops while
        # it is still starting, never given work nor closed, leaves no folder behind
        shutil.rmtree(self.stage, ignore_errors=True)
        self.rank = rank
        self.messages: list[Message] = []
        self.held: dict[str, Done] = {}  # source path -> its Done, until published
        self.worker = Worker(self.stage, options, run, rank, self.messages.append, lambda: True)

    def where(self) -> tuple[str, int]:
        return socket.gethostname(), os.getpid()

    def process(self, i: int, source) -> list[Message]:
        self.messages.clear()
        try:
            (self.stage / SHARDS_DIR).mkdir(parents=True, exist_ok=True)  # (gone after close)
            self.worker.process(i, source)
            for m in self.messages:
                if isinstance(m, Done):
                    self.held[source.path] = m
            released = self._publish()
        except _UploadError as e:
            return [Fatal(str(e), self.rank)]
        except Exception as e:  # a store error, or a bug: the build stops
            return actor_fatal(self.worker, e)
        return [*actor_progress(self.messages, (Failed,)), *released]

    def close(self) -> list[Message]:
        try:
            self.worker.close()
            released = self._publish()
        except StoreError as e:
            return [Fatal(str(e), self.rank)]
        shutil.rmtree(self.stage, ignore_errors=True)
        return released

    def _publish(self) -> list[Message]:
        """Upload every shard finished in the stage (payload, then journal), remove it here,
        and release the "done" of the videos it holds."""
        shards = self.stage / SHARDS_DIR
        released: list[Message] = []
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


def read_if_there(remote: RemoteFiles, rel: str) -> bytes | None:
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


def published(url: str, run: int, rank: int) -> dict[str, JournalRecord]:
    """{source path: record} of the videos actor ``rank`` of run ``run`` published."""
    remote = RemoteFiles(url)
    prefix = f"{SHARDS_DIR}/{shard_prefix(run, rank)}"
    found: dict[str, JournalRecord] = {}
    for rel in sorted(remote.listing(refresh=True)):
        if rel.startswith(prefix) and rel.endswith(RECORDS_SUFFIX):
            data = read_if_there(remote, rel)
            lines = [json.loads(x) for x in (data or b"").splitlines() if x.strip()]
            where = remote.url_of(rel)
            records = [
                JournalRecord.from_json(line, where=f"{where}: line {n}")
                for n, line in enumerate(lines, 1)
                if "path" in line
            ]
            found.update({r.path: r for r in records})
    return found
