"""One builder per store: an advisory lock file that names its holder."""

from __future__ import annotations

import fcntl
import json
import os
import socket
import time
from pathlib import Path

from .._core._errors import StoreError


class StoreLock:
    """``with StoreLock(path):`` holds an exclusive flock; a second holder gets a StoreError."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self._fd: int | None = None

    def __enter__(self) -> StoreLock:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 4096, 0).decode(errors="replace").strip()
            os.close(fd)
            try:
                info = json.loads(holder)
                who = (
                    f"pid {info['pid']} on {info['host']} since "
                    f"{time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(info['since']))}"
                )
            except (ValueError, KeyError):
                who = "another process"
            raise StoreError(
                f"store {self.path.parent} is locked by {who} (lock file {self.path}); "
                "wait for that build to finish or stop it"
            ) from None
        info = {"pid": os.getpid(), "host": socket.gethostname(), "since": time.time()}
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(info).encode(), 0)
        self._fd = fd
        return self

    def __exit__(self, *exc) -> None:
        if self._fd is not None:
            os.ftruncate(self._fd, 0)
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None
