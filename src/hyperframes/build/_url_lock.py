"""One build per store URL, across machines: a lock object with a lease.

Object storage has no ``flock``; a build to ``s3://bucket/prefix`` (either engine) holds the
object ``prefix/.lock`` instead, created with a conditional PUT (``If-None-Match: *``), so of
two builds started at once exactly one creates it. It names its holder (host, boot id, pid)
and a lease: the holder renews it every ``RENEW_SECONDS`` (a PUT with ``If-Match`` on the ETag
it wrote, so a renewal never overwrites another's lock) and deletes it when the build ends.

A second build finds the lock and is refused with a StoreError naming the holder, unless the
holder is gone: its lease passed (a build on another machine killed for good), or it ran on
this machine and its process is dead (a build killed by ``kill -9``, rerun here at once). It
then takes the lock over, again with a conditional PUT on the ETag it read, so two builds
taking over one dead lock cannot both win. A build whose renewal finds the lock taken (its
own lease ran out: the process was stopped longer than the lease) publishes no manifest.
``hyperframes gc`` refuses to run while a live build holds the lock.

s3:// only (conditional writes through s3fs); other schemes build without a lock.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import threading
import time

from .._core._atomic import pid_alive
from .._core._errors import StoreError
from ..remote import bare_url, client_reason, filesystem, is_precondition_failed, join_url
from ..store.format import LOCK

__all__ = ["LEASE_SECONDS", "RENEW_SECONDS", "UrlLock", "lock_holder"]

#: how long a lock stays another build's without a renewal
LEASE_SECONDS = 120.0
#: how often its holder renews it
RENEW_SECONDS = 30.0


def _host() -> str:
    """This machine: its host name and boot id (two machines may share a host name)."""
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            boot = f.read().strip()[:8]
    except OSError:
        boot = "?"
    return f"{socket.gethostname()} (boot {boot})"


def _alive(held: dict) -> bool:
    """The build that wrote ``held`` may still run: its lease holds and, when it ran on this
    machine, its process lives."""
    until = held.get("lease_until")
    if not isinstance(until, (int, float)) or until < time.time():
        return False
    pid = held.get("pid")
    if held.get("host") == _host() and isinstance(pid, int):
        return pid_alive(pid)
    return True


def _described(held: dict) -> str:
    until = held.get("lease_until")
    left = f"{until - time.time():.0f} s" if isinstance(until, (int, float)) else "?"
    return f"{held.get('holder', '?')}, its lease ends in {left}"


class _Taken(Exception):
    """A conditional write found the lock object other than expected."""


class UrlLock:
    """The lock of the store URL ``url`` (see the module), as a context manager."""

    def __init__(self, url: str):
        self.url = url.rstrip("/")
        self.where = join_url(self.url, LOCK)
        self.enabled = self.url.lower().startswith("s3://")
        self.etag: str | None = None
        #: why the lock was lost while held (None: held, or never taken)
        self.lost: str | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # -- the object -----------------------------------------------------------------------
    def _call(self, method: str, **kw):
        from fsspec.asyn import sync  # deferred: optional/heavy dependency (the s3 extra)

        fs = filesystem(self.url)
        bucket, _, key = bare_url(self.where).partition("/")
        return sync(fs.loop, fs._call_s3, method, Bucket=bucket, Key=key, **kw)

    def _put(self, **condition) -> str:
        body = {
            "holder": f"hyperframes build on {_host()}, pid {os.getpid()}",
            "host": _host(),
            "pid": os.getpid(),
            "lease_until": time.time() + LEASE_SECONDS,
            "lease_seconds": LEASE_SECONDS,
        }
        try:
            resp = self._call("put_object", Body=json.dumps(body).encode(), **condition)
        except FileExistsError:
            raise _Taken from None
        except Exception as e:
            if is_precondition_failed(e) or "ConditionalRequestConflict" in str(e):
                raise _Taken from None
            raise StoreError(f"{self.where}: cannot be written ({client_reason(e)})") from None
        return str(resp.get("ETag", ""))

    def read(self) -> tuple[dict | None, str | None]:
        """``(the lock's content, its ETag)``, ``(None, None)`` when there is none."""
        from fsspec.asyn import sync  # deferred: optional/heavy dependency (the s3 extra)

        fs = filesystem(self.url)
        bucket, _, key = bare_url(self.where).partition("/")

        async def get():
            resp = await fs._call_s3("get_object", Bucket=bucket, Key=key)
            try:
                return await resp["Body"].read(), str(resp.get("ETag", ""))
            finally:
                resp["Body"].close()

        try:
            data, etag = sync(fs.loop, get)
        except FileNotFoundError:
            return None, None
        except Exception as e:
            raise StoreError(f"{self.where}: cannot be read ({client_reason(e)})") from None
        try:
            held = json.loads(data)
        except ValueError:
            held = {}
        return (held if isinstance(held, dict) else {}), etag

    # -- taking, renewing, letting go -----------------------------------------------------
    def acquire(self) -> None:
        if not self.enabled:
            return
        for _ in range(5):
            try:
                self.etag = self._put(IfNoneMatch="*")
                return
            except _Taken:
                pass
            held, etag = self.read()
            if held is None:
                continue  # let go meanwhile: create it again
            if _alive(held):
                raise StoreError(
                    f"{self.url}: another build of this URL is running ({_described(held)}); "
                    "nothing was built. One build per URL at a time: wait for it to end, or, if "
                    f"it was killed, for its lease to run out (at most {LEASE_SECONDS:.0f} s), "
                    "then run this build again"
                )
            try:  # its holder is gone: take it over, unless another build just did
                self.etag = self._put(IfMatch=etag)
                return
            except _Taken:
                continue
        raise StoreError(f"{self.url}: its lock {self.where} keeps changing; try again")

    def _renew(self) -> None:
        while not self._stop.wait(RENEW_SECONDS):
            try:
                self.etag = self._put(IfMatch=self.etag)
            except _Taken:
                held, _ = self.read()
                self.lost = _described(held) if held else "the lock object was deleted"
                return
            except StoreError:
                continue  # (a network error: tried again; the lease says how long it may last)

    def check(self) -> None:
        """StoreError when the lock was lost while held (before publishing a manifest)."""
        if self.lost is not None:
            raise StoreError(
                f"{self.url}: this build lost its lock (now: {self.lost}): its lease ran out "
                "while it was stopped, and another build may be writing; no manifest was "
                "published. Run the build again when the other one has ended"
            )

    def release(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if not self.enabled or self.etag is None or self.lost is not None:
            return
        with contextlib.suppress(StoreError):
            held, etag = self.read()
            if held is not None and etag == self.etag:
                with contextlib.suppress(Exception):
                    self._call("delete_object")
        self.etag = None

    def __enter__(self) -> UrlLock:
        self.acquire()
        if self.enabled:
            self._stop.clear()
            self._thread = threading.Thread(
                target=self._renew, name="hyperframes-url-lock", daemon=True
            )
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.release()


def lock_holder(url: str) -> str | None:
    """Who holds the build lock of ``url`` now (None: no live build)."""
    lock = UrlLock(url)
    if not lock.enabled:
        return None
    held, _ = lock.read()
    return _described(held) if held is not None and _alive(held) else None
