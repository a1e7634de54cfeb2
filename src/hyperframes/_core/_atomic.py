"""Crash-safe file writes, for every part of hyperframes that writes a file a user relies on:
temp file in the same folder, fsync, atomic rename, fsync of the folder. A reader sees the old
content or all of the new, never a partial file; a failed write leaves no temp file behind."""

from __future__ import annotations

import io
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO


def fsync_dir(path: Path) -> None:
    """Make a rename in ``path`` durable (a no-op where folders cannot be opened or synced)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def temp_path(path: str | os.PathLike) -> Path:
    """The temporary file ``path`` is written through: hidden, beside it, named by our pid."""
    path = Path(path)
    return path.with_name(f".{path.name}.{os.getpid()}.tmp")


def pid_alive(pid: int) -> bool:
    """Process ``pid`` runs on this machine (another user's counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's live process
    return True


def remove_stale_temps(folder: str | os.PathLike, name: str | None = None) -> list[Path]:
    """Delete temporary files in ``folder`` (of the file ``name`` only, when given) left by
    writers that were killed: their pid is gone. A live writer's temp file is left alone.
    Returns what was removed."""
    removed: list[Path] = []
    prefix = f".{name}." if name else "."
    try:
        entries = list(Path(folder).iterdir())
    except OSError:
        return removed
    for p in entries:
        stem = p.name
        if not (stem.startswith(prefix) and stem.endswith(".tmp")):
            continue
        pid = stem[: -len(".tmp")].rsplit(".", 1)[-1]
        if pid.isdigit() and int(pid) != os.getpid() and not pid_alive(int(pid)):
            p.unlink(missing_ok=True)
            removed.append(p)
    return removed


def write_atomic(path: str | os.PathLike, write: Callable[[BinaryIO], object]) -> Path:
    """Create or replace ``path`` with what ``write(f)`` writes to a binary file object."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = temp_path(path)
    try:
        with open(tmp, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    fsync_dir(path.parent)
    return path


def keep_previous(path: str | os.PathLike, previous: str | os.PathLike) -> Path | None:
    """Make ``previous`` a copy of ``path`` (a hard link where the filesystem has them, else a
    copy of its bytes), atomically, before ``path`` is replaced: ``path`` never goes missing,
    and ``previous`` is the old content or the older one, never a partial file. Returns
    ``previous``, or None when there is no ``path`` to keep."""

    path, previous = Path(path), Path(previous)
    if not path.is_file():
        return None
    tmp = temp_path(previous)
    tmp.unlink(missing_ok=True)
    try:
        os.link(path, tmp)
    except OSError:  # no hard links here (some network and FAT filesystems): copy
        with open(path, "rb") as src:
            return write_atomic(previous, lambda f: shutil.copyfileobj(src, f, 1 << 20))
    try:
        os.replace(tmp, previous)
    finally:
        tmp.unlink(missing_ok=True)
    fsync_dir(previous.parent)
    return previous


def write_bytes_atomic(path: str | os.PathLike, data: bytes) -> Path:
    return write_atomic(path, lambda f: f.write(data))


def write_text_atomic(path: str | os.PathLike, text: str) -> Path:
    return write_bytes_atomic(path, text.encode("utf-8"))


def write_json_atomic(path: str | os.PathLike, obj) -> Path:
    return write_text_atomic(path, json.dumps(obj, indent=1) + "\n")


def save_npy_atomic(path: str | os.PathLike, array) -> Path:
    import numpy as np  # deferred: optional/heavy dependency

    buf = io.BytesIO()
    np.save(buf, array, allow_pickle=False)
    return write_bytes_atomic(path, buf.getvalue())
