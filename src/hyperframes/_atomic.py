"""Crash-safe file writes, for every part of hyperframes that writes a file a user relies on:
temp file in the same folder, fsync, atomic rename, fsync of the folder. A reader sees the old
content or all of the new, never a partial file; a failed write leaves no temp file behind."""

from __future__ import annotations

import io
import json
import os
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


def write_atomic(path: str | os.PathLike, write: Callable[[BinaryIO], object]) -> Path:
    """Create or replace ``path`` with what ``write(f)`` writes to a binary file object."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
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


def write_bytes_atomic(path: str | os.PathLike, data: bytes) -> Path:
    return write_atomic(path, lambda f: f.write(data))


def write_text_atomic(path: str | os.PathLike, text: str) -> Path:
    return write_bytes_atomic(path, text.encode("utf-8"))


def write_json_atomic(path: str | os.PathLike, obj) -> Path:
    return write_text_atomic(path, json.dumps(obj, indent=1) + "\n")


def save_npy_atomic(path: str | os.PathLike, array) -> Path:
    import numpy as np

    buf = io.BytesIO()
    np.save(buf, array, allow_pickle=False)
    return write_bytes_atomic(path, buf.getvalue())
