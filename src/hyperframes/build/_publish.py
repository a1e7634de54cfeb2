"""Stores on object storage: the staging folder a store for a URL is built in, uploading a
finished store or file to a URL, and what killed builds left there (:func:`gc_store`).

Order of upload: the shards, then the index files, then ``manifest.json`` last, so a reader
never sees a manifest whose files are not all there. Shards and index files go under
``generations/G/`` (``format.GENERATIONS_DIR``; G hashes the finished store's own manifest, so
the same store is the same names and another build is other names), and the manifest uploaded
names G: a rebuild never writes over an object of the store that is there, and publishes by
replacing the manifest (one PUT). A reader opened before keeps reading the old generation
until :func:`gc_store` deletes it. An object already at the URL with the same size and
content (its ETag against the local file's MD5, or the multipart form of it) is not sent
again, so rerunning an interrupted upload sends only what is missing.

The staging folder is deterministic per URL (``$HYPERFRAMES_CACHE/staging/<hash>``, default
``~/.cache/hyperframes``), so an interrupted build resumes there; it is removed once the
store is uploaded. :func:`publish_file` is the step for one finished file (a Ray build's
actors upload their shards with it, with no staging folder shared: ``_ray_publish``);
``/work/notes/s3_api.md`` describes it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path

import xxhash

from .._core._errors import ConfigError, StoreError
from ..remote import RemoteFiles, bare_url, client_reason, filesystem, is_url, join_url
from ..store import Manifest, generation_prefix
from ..store.format import (
    BUILD_PARAMS,
    GENERATIONS_DIR,
    LOCK,
    MANIFEST,
    RECORDS_SUFFIX,
    SHARD_SUFFIX,
    SHARDS_DIR,
)
from ._url_lock import lock_holder

__all__ = [
    "check_write_access",
    "delete_objects",
    "gc_store",
    "leftovers",
    "publish_file",
    "publish_store",
    "staging_dir",
]

#: part size of multipart uploads (s3fs uploads files under twice this in one PUT)
PART_BYTES = 50 << 20


def staging_dir(url: str) -> Path:
    """The local folder a store for ``url`` is built in (same URL, same folder)."""
    base = os.environ.get("HYPERFRAMES_CACHE") or os.path.join("~", ".cache", "hyperframes")
    return Path(base).expanduser() / "staging" / xxhash.xxh3_64_hexdigest(url.rstrip("/").encode())


def _etag_of(path: Path, parts: int) -> str:
    """The S3 ETag of the file uploaded in ``parts`` parts of PART_BYTES (1: one PUT)."""
    digests = []
    with open(path, "rb") as f:
        while block := f.read(PART_BYTES):
            digests.append(hashlib.md5(block, usedforsecurity=False).digest())
    if parts <= 1 and len(digests) <= 1:
        return (digests[0] if digests else hashlib.md5(b"").digest()).hex()
    joined = hashlib.md5(b"".join(digests), usedforsecurity=False).hexdigest()
    return f"{joined}-{len(digests)}"


def _same(local: Path, info: dict) -> bool:
    size = info.get("size")
    if (-1 if size is None else int(size)) != local.stat().st_size:  # (an empty object: 0)
        return False
    etag = str(info.get("ETag") or info.get("etag") or "").strip('"')
    if not etag:
        return False
    parts = int(etag.rsplit("-", 1)[1]) if "-" in etag else 1
    return etag == _etag_of(local, parts)


def publish_file(local_path: str | os.PathLike, url: str) -> bool:
    """Upload one finished file to ``url`` (``s3://bucket/key``). Returns False when an object
    of the same size and content is already there (nothing sent), True after an upload.
    Safe to call again after a crash, and from several processes for different files."""
    local = Path(local_path)
    if not is_url(url):
        raise StoreError(f"{url!r} is not an object-storage URL (s3://bucket/key)")
    fs = filesystem(url)
    key = bare_url(url)
    try:
        info = fs.info(key)
    except FileNotFoundError:
        info = None
    except Exception as e:
        raise StoreError(f"{url}: cannot be checked before upload ({client_reason(e)})") from None
    if info is not None and _same(local, info):
        return False
    try:
        fs.put_file(str(local), key, chunksize=PART_BYTES)
        size = fs.info(key).get("size")
        size = -1 if size is None else int(size)  # (an empty object's size is 0)
    except OSError as e:
        raise StoreError(f"cannot upload {local} to {url}: {client_reason(e)}") from None
    except Exception as e:
        raise StoreError(f"cannot upload {local} to {url}: {client_reason(e)}") from None
    if size != local.stat().st_size:
        raise StoreError(
            f"{url}: holds {size} bytes after uploading {local} ({local.stat().st_size} bytes)"
        )
    return True


def check_write_access(url: str, *, folder: bool) -> None:
    """Write and delete a small probe object under the store's prefix ``url`` (``folder``)
    or next to the HDF5 file's key ``url``, so that wrong credentials or a missing bucket
    are a StoreError before any video is decoded, not after."""
    name = f".hyperframes-write-check-{os.getpid()}"
    probe = join_url(url, name) if folder else f"{url.rstrip('/')}{name}"
    fs = filesystem(url)
    try:
        fs.pipe_file(bare_url(probe), b"hyperframes checks it can write here; safe to delete\n")
    except Exception as e:  # the client's own error types (PermissionError, ClientError ...)
        raise StoreError(
            f"{url}: cannot be written ({client_reason(e)}); nothing was built. Check the "
            "credentials (AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, AWS_PROFILE or "
            "~/.aws/credentials), the endpoint (AWS_ENDPOINT_URL) and that the bucket "
            "exists and lets them write"
        ) from None
    with contextlib.suppress(Exception):  # written, not deletable: harmless, the build goes on
        fs.rm_file(bare_url(probe))


def publish_store(
    folder: str | os.PathLike,
    url: str,
    *,
    extra: dict | None = None,
    before_manifest: Callable[[], None] | None = None,
) -> dict:
    """Upload the finished store ``folder`` to ``url``: its shards and index files under a
    generation of their own, the manifest last (see the module). ``extra``: keys added to the
    uploaded manifest (the build's inputs, ``_build``); ``before_manifest``: called before
    the manifest goes up (the build lock's check: a build that lost it publishes nothing).
    Returns ``{"uploaded": n, "skipped":
    n, "bytes": n, "generation": G}`` (bytes sent)."""
    folder = Path(folder)
    manifest = folder / MANIFEST
    if not manifest.is_file():
        raise StoreError(f"{folder}: is not a finished store ({MANIFEST} is missing); not uploaded")
    raw = manifest.read_bytes()
    m = json.loads(raw)
    generation = xxhash.xxh3_64_hexdigest(raw)
    done: dict = {"uploaded": 0, "skipped": 0, "bytes": 0, "generation": generation}
    names = [f"shards/{r['name']}" for r in m["shards"]] + [r["name"] for r in m["index"]]
    for rel in names:
        local = folder / rel
        if publish_file(local, join_url(url, GENERATIONS_DIR, generation, rel)):
            done["uploaded"] += 1
            done["bytes"] += local.stat().st_size
        else:
            done["skipped"] += 1
    whole = Manifest.model_validate({**m, **(extra or {}), "generation": generation})
    published = json.dumps(whole.to_json(), indent=1).encode()
    if before_manifest is not None:
        before_manifest()
    if publish_bytes(published, join_url(url, MANIFEST)):
        done["uploaded"] += 1
        done["bytes"] += len(published)
    else:
        done["skipped"] += 1
    return done


def publish_bytes(data: bytes, url: str) -> bool:
    """Upload ``data`` as the object ``url`` in one PUT (False: those bytes are there)."""
    fs = filesystem(url)
    key = bare_url(url)
    try:
        if fs.cat_file(key) == data:
            return False
    except FileNotFoundError:
        pass
    except Exception as e:
        raise StoreError(f"{url}: cannot be checked before upload ({client_reason(e)})") from None
    try:
        fs.pipe_file(key, data)
    except Exception as e:
        raise StoreError(f"cannot upload {url}: {client_reason(e)}") from None
    return True


def delete_objects(url: str, names: list[str]) -> None:
    """Delete the objects ``names`` (relative to the store URL ``url``); one already gone is
    no error."""
    fs = filesystem(url)
    for rel in names:
        try:
            fs.rm_file(bare_url(join_url(url, rel)))
        except FileNotFoundError:
            pass
        except Exception as e:
            raise StoreError(
                f"{join_url(url, rel)}: cannot be deleted ({client_reason(e)})"
            ) from None


def leftovers(url: str) -> list[tuple[str, int]]:
    """``(name, bytes)`` of every object under the store URL that its manifest does not list
    (nor a listed shard's journal, nor the build parameters, nor a build's lock): what killed
    builds left, and the generations of earlier builds (see the module). StoreError when
    there is no manifest (an unfinished store: its build, rerun, keeps what it can and
    deletes the rest)."""
    remote = RemoteFiles(url)
    try:
        manifest = json.loads(remote.read(MANIFEST))
    except StoreError:
        raise StoreError(
            f"{url}: has no {MANIFEST} (an unfinished store, or no store at all): rerun its "
            "build, which deletes what it does not keep, or delete the whole prefix"
        ) from None
    prefix = generation_prefix(manifest, join_url(url, MANIFEST))
    keep = {MANIFEST, BUILD_PARAMS, LOCK}
    for row in manifest["shards"]:  # each with its journal (what a rerun resumes from)
        name = row["name"][: -len(SHARD_SUFFIX)]
        keep |= {
            f"{prefix}{SHARDS_DIR}/{name}{SHARD_SUFFIX}",
            f"{prefix}{SHARDS_DIR}/{name}{RECORDS_SUFFIX}",
        }
    keep |= {prefix + r["name"] for r in manifest["index"]}
    listing = remote.listing(refresh=True)
    return sorted((rel, info["size"]) for rel, info in listing.items() if rel not in keep)


def gc_store(url: str, *, delete: bool = False) -> list[tuple[str, int]]:
    """``hyperframes gc URL``: the leftovers of :func:`leftovers` (``(name, bytes)``),
    deleted when ``delete``. A path that is not a store URL is a ConfigError."""
    if not is_url(url):
        raise ConfigError(f"{url}: gc is for store URLs (s3://bucket/prefix)")
    holder = lock_holder(url)
    if holder is not None:
        raise StoreError(
            f"{url}: a build of this URL is running ({holder}); gc deletes what the manifest "
            "does not list, which includes what that build is uploading. Nothing was deleted: "
            "run gc after the build has ended"
        )
    found = leftovers(url)
    if delete:
        delete_objects(url, [rel for rel, _ in found])
    return found
