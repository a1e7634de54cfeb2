"""Stores at a URL (``s3://bucket/prefix``): the object-storage client and the few calls the
store makes through it (list, whole small objects, byte ranges, uploads).

The client is fsspec + s3fs (the ``s3`` extra), chosen over obstore for:

- maturity: s3fs is the S3 layer of pandas, dask, xarray and Hugging Face datasets, on botocore,
  so credentials and endpoint follow the standard AWS chain unchanged (``AWS_ACCESS_KEY_ID``,
  ``AWS_SECRET_ACCESS_KEY``, ``AWS_SESSION_TOKEN``, ``AWS_REGION``, ``AWS_ENDPOINT_URL``,
  ``AWS_PROFILE`` and ``~/.aws/{config,credentials}``, SSO, instance roles). obstore's Rust
  client reads the environment but not ``~/.aws`` profiles without boto3 on top.
- range requests: ``cat_ranges`` issues many ranged GETs of one or more objects concurrently on
  fsspec's event-loop thread (what a window of scattered chunks needs); both clients do this.
- fork safety, the deciding point: a DataLoader forks its workers. Measured here, a process
  forked after obstore (0.12.1) had made a request hangs on its first request, even through a
  new store object (its runtime does not survive fork). An s3fs instance refuses use after a
  fork with a clear error, and a new instance in the child works; :func:`filesystem` keeps one
  instance per process id, so a forked worker makes its own.
- gs:// and az://: the same fsspec interface with gcsfs / adlfs installed (not pinned here):
  every call below goes through the fsspec protocol of the URL, so those URLs work when their
  package is present (only s3:// is tested).

Credentials never pass through hyperframes: nothing here reads, stores or prints them; a URL
is kept and shown as given (``s3://bucket/prefix``, which holds no secret).
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field

from .._core._errors import ConfigError, StoreError, install_command
from .._core._urls import is_url

__all__ = [
    "RemoteFiles",
    "Traffic",
    "filesystem",
    "is_url",
    "join_url",
]


def join_url(url: str, *parts: str) -> str:
    return "/".join([url.rstrip("/"), *(p.strip("/") for p in parts)])


_fs_lock = threading.Lock()
_fs_cache: dict[tuple[int, str], object] = {}


def filesystem(url: str):
    """The fsspec filesystem for ``url``'s scheme, one per process (made again after a fork:
    an s3fs instance refuses use in a forked child). Credentials come from the standard
    environment and config files of the scheme's library (for s3: botocore's chain)."""
    scheme = url.partition("://")[0].lower()
    key = (os.getpid(), scheme)
    fs = _fs_cache.get(key)
    if fs is None:
        with _fs_lock:
            fs = _fs_cache.get(key)
            if fs is None:
                try:
                    import fsspec  # deferred: optional/heavy dependency
                except ImportError:
                    raise ConfigError(
                        f"{url}: reading a store from object storage needs the s3 extra; "
                        f"install it with `{install_command('s3')}`"
                    ) from None
                try:
                    # skip_instance_cache: fsspec's own cache would hand back an instance
                    # made before a fork
                    fs = fsspec.filesystem(scheme, skip_instance_cache=True)
                except (ImportError, ValueError) as e:
                    raise ConfigError(
                        f"{url}: no object-storage client for {scheme}:// ({e}); s3:// comes "
                        f"with `{install_command('s3')}`, gs:// with gcsfs, az:// with adlfs"
                    ) from None
                _fs_cache[key] = fs
    return fs


@dataclass
class Traffic:
    """What a process fetched from object storage: requests and payload bytes (for tests and
    benchmarks: a window read fetches only its ranges)."""

    requests: int = 0
    bytes: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, requests: int, nbytes: int) -> None:
        with self._lock:
            self.requests += requests
            self.bytes += nbytes


def bare_url(url: str) -> str:
    """``bucket/key`` as fsspec names it."""
    return url.partition("://")[2].rstrip("/")


class RemoteFiles:
    """The objects under one store URL: listed once (names and sizes), read whole or by
    ranges. Errors become StoreError naming the URL."""

    def __init__(self, url: str):
        self.url = url.rstrip("/")
        self.traffic = Traffic()
        self._listing: dict[str, dict] | None = None

    @property
    def fs(self):
        return filesystem(self.url)

    def url_of(self, rel: str) -> str:
        return join_url(self.url, rel)

    def listing(self, *, refresh: bool = False) -> dict[str, dict]:
        """``{relative name: {"size", "etag"}}`` of every object under the URL (one LIST)."""
        if self._listing is None or refresh:
            base = bare_url(self.url)
            try:
                # s3fs keeps listings (a store may be new); all of them: invalidating ``base``
                # alone keeps those of the folders under it, which ``find`` then reuses
                self.fs.invalidate_cache()
                found = self.fs.find(base, detail=True)
            except FileNotFoundError:
                found = {}
            except Exception as e:  # the client's own error types: name the URL
                raise StoreError(f"{self.url}: cannot be listed ({client_reason(e)})") from None
            self._listing = {
                name[len(base) + 1 :]: {
                    "size": int(info.get("size") or 0),
                    "etag": str(info.get("ETag") or info.get("etag") or ""),
                }
                for name, info in found.items()
                if name.startswith(base + "/") and info.get("type", "file") == "file"
            }
        return self._listing

    def read(self, rel: str, *, etag: str | None = None) -> bytes:
        """The whole object; with ``etag``, only the object listed with it (see
        :meth:`read_many`)."""
        if etag is not None:
            size = (self._listing or {}).get(rel, {}).get("size")
            if size == 0:
                return b""
            if size is not None:
                return self.read_many([(rel, 0, size)], pinned={rel: etag})[0]
        try:
            data = self.fs.cat_file(bare_url(self.url_of(rel)))
        except FileNotFoundError:
            raise StoreError(f"{self.url_of(rel)}: missing; the store is incomplete") from None
        except Exception as e:
            raise StoreError(f"{self.url_of(rel)}: cannot be read ({client_reason(e)})") from None
        self.traffic.add(1, len(data))
        return data

    def read_ranges(
        self, rel: str, starts: Sequence[int], ends: Sequence[int], *, etag: str | None = None
    ) -> list[bytes]:
        """Bytes ``starts[j]:ends[j]`` of the object, all requested at once (concurrently);
        with ``etag``, of that version of it only (see :meth:`read_many`)."""
        pinned = None if etag is None else {rel: etag}
        return self.read_many([(rel, int(s), int(e)) for s, e in zip(starts, ends)], pinned=pinned)

    def read_many(
        self, ranges: Sequence[tuple[str, int, int]], *, pinned: dict[str, str] | None = None
    ) -> list[bytes]:
        """Bytes ``start:end`` of several objects (``(rel, start, end)``), requested together
        (one range: one plain ranged GET).

        ``pinned`` (``{rel: ETag}``, from the listing a store was opened with): each GET of
        an object named there carries ``If-Match`` with its ETag (s3://), and the ETag that
        comes back is compared too, so bytes of an object replaced since (a store rebuilt or
        uploaded again at the same URL) are never returned: a StoreError says the store
        changed."""
        if not ranges:
            return []
        if pinned and self.url.lower().startswith("s3://"):
            got = self._read_pinned(ranges, pinned)
        else:
            got = self._read_plain(ranges)
        for b, (rel, lo, hi) in zip(got, ranges):
            if len(b) != hi - lo:
                raise StoreError(
                    f"{self.url_of(rel)}: bytes {lo}..{hi} came back as {len(b)} bytes: the "
                    "object is shorter than its listing; it changed while being read"
                )
        self.traffic.add(len(got), sum(len(b) for b in got))
        return got

    def _read_plain(self, ranges: Sequence[tuple[str, int, int]]) -> list[bytes]:
        paths = [bare_url(self.url_of(rel)) for rel, _, _ in ranges]
        try:
            if len(ranges) == 1:
                return [self.fs.cat_file(paths[0], start=ranges[0][1], end=ranges[0][2])]
            return self.fs.cat_ranges(
                paths, [s for _, s, _ in ranges], [e for _, _, e in ranges], on_error="raise"
            )
        except Exception as e:
            where = self.url_of(ranges[0][0]) if len(set(paths)) == 1 else self.url
            raise StoreError(f"{where}: cannot be read ({client_reason(e)})") from None

    def changed(self, rel: str) -> StoreError:
        """The error of a read that found ``rel`` replaced since the store was opened."""
        return StoreError(
            f"{self.url}: the store changed since it was opened ({rel} is no longer the object "
            "it was: the store was rebuilt or uploaded again at this URL); open the store "
            "again to read the new build"
        )

    def _read_pinned(self, ranges: Sequence[tuple[str, int, int]], pinned: dict[str, str]):
        """Ranged GETs (s3fs's client, concurrently on its event loop), each carrying the
        ETag its object had when listed."""
        from fsspec.asyn import sync  # deferred: optional/heavy dependency (the s3 extra)

        fs = self.fs

        async def one(rel: str, lo: int, hi: int):
            if hi <= lo:
                return b""
            bucket, _, key = bare_url(self.url_of(rel)).partition("/")
            kw = {"Range": f"bytes={lo}-{hi - 1}"}
            etag = pinned.get(rel)
            if etag:
                kw["IfMatch"] = etag
            resp = await fs._call_s3("get_object", Bucket=bucket, Key=key, **kw)
            try:
                data = await resp["Body"].read()
            finally:
                resp["Body"].close()
            if etag and str(resp.get("ETag", "")).strip('"') != etag.strip('"'):
                raise _Changed(rel)
            return data

        async def all_of():
            return await asyncio.gather(*(one(*r) for r in ranges), return_exceptions=True)

        got = sync(fs.loop, all_of)
        for (rel, _, _), g in zip(ranges, got):
            if isinstance(g, _Changed) or (isinstance(g, Exception) and is_precondition_failed(g)):
                raise self.changed(rel)
        for (rel, _, _), g in zip(ranges, got):
            if isinstance(g, FileNotFoundError):
                raise self.changed(rel)  # (deleted since it was listed)
            if isinstance(g, BaseException):
                raise StoreError(
                    f"{self.url_of(rel)}: cannot be read ({client_reason(g)})"  # type: ignore[arg-type]
                ) from None
        return got


class _Changed(Exception):
    """A pinned read got another version of its object."""


def is_precondition_failed(e: BaseException) -> bool:
    """``e`` (or its cause) is S3's 412 PreconditionFailed: the If-Match did not hold."""
    while e is not None:
        response = getattr(e, "response", None)
        if isinstance(response, dict):
            err = response.get("Error") or {}
            if err.get("Code") in ("PreconditionFailed", "412"):
                return True
            if (response.get("ResponseMetadata") or {}).get("HTTPStatusCode") == 412:
                return True
        if "PreconditionFailed" in str(e):
            return True
        e = e.__cause__  # type: ignore[assignment]
    return False


def client_reason(e: Exception) -> str:
    """A client error in a line, without anything a request carried (no headers, no keys)."""
    text = str(e).splitlines()[0] if str(e) else ""
    return f"{type(e).__name__}: {text}"[:300]
