"""Shard files: one writer each, a journal per video, recovery after a crash.

A worker appends each video's payload to ``NAME.bin.part``, fsyncs it, then appends the video's
record as one JSON line to ``NAME.jsonl.part`` and fsyncs that: a video is stored once its line
is complete. Closing renames the payload to ``NAME.bin`` and writes ``NAME.jsonl`` (records plus
a last line with the shard's size and checksum) atomically. ``recover`` turns the ``.part``
leftovers of a killed build into a finished shard holding every video whose line was complete.

Ownership: a writer creates its files exclusively (never truncating a file that exists) and
holds an exclusive ``flock`` on its payload file until it closes, so recovery only ever touches
the files of writers that are dead (the kernel drops a dead process's locks); a shard still
locked is a live writer's, and is left alone. A writer that finds its files were taken over
(recovered by another process) walks away without touching them.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import shutil
import time
from collections.abc import Callable, Iterable
from pathlib import Path

import numpy as np
import xxhash

from .._core._atomic import fsync_dir, write_bytes_atomic
from .._core._errors import StoreError
from ..store import Codec, checksum_file, payload_ranges
from ..store.format import CHECKSUM_ALGORITHM, PART_SUFFIX, RECORDS_SUFFIX, SHARD_SUFFIX, align

_BUFFER_BYTES = 4 << 20

#: errors that are the output's fault (disk full, quota, read-only, I/O): fatal for a build,
#: never blamed on the input being decoded
_OUTPUT_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EIO, errno.EFBIG}


class OutputError(StoreError):
    """Writing the store failed (disk full, read-only, I/O error). Fatal for a build, and not
    the fault of the video being stored; rerunning after fixing the cause continues."""


def output_error(e: OSError, store: Path) -> OutputError:
    """An ``OutputError`` saying what went wrong with the output folder ``store``."""
    if e.errno in (errno.ENOSPC, errno.EDQUOT):
        try:
            free = f"{shutil.disk_usage(store).free / 1e6:.1f} MB free"
        except OSError:
            free = "free space unknown"
        what = "no space left" if e.errno == errno.ENOSPC else "disk quota exceeded"
        return OutputError(
            f"{what} on {store} ({free}); finished videos are kept: free some space and "
            "rerun the same command to continue"
        )
    return OutputError(f"cannot write the store {store}: {e.strerror or e}")


class Orphaned(Exception):
    """The build process that owns this writer is gone: stop without touching shared state."""


class ShardBusy(StoreError):
    """A shard is still held by a live writer."""


def _try_lock(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False


class VideoSink:
    """Receives one video's frames, encodes them and appends them to the shard."""

    def __init__(self, writer: ShardWriter, codec: Codec):
        self._w = writer
        self._codec = codec
        self.offset = writer._start_video()
        self._hash = xxhash.xxh3_64()
        self.chunks: list[tuple[int, int, int, int]] = []
        self._pending: list[np.ndarray] = []
        self._chunked_frames = 0
        self.num_frames = 0
        self.shape: tuple[int, ...] | None = None

    def add(self, frame: np.ndarray, chunk: bytes | None = None) -> None:
        """Store ``frame`` (C, H, W); ``chunk``, when given, is already its encoded chunk (a
        codec of one frame per chunk, encoded from the decoder's own planes)."""
        if self.shape is None:
            self.shape = frame.shape
        if chunk is not None:
            assert self._codec.chunk_frames == 1 and not self._pending
            offset = self._emit(chunk)
            self.chunks.append((offset, len(chunk), self._chunked_frames, 1))
            self._chunked_frames += 1
        elif self._codec.chunk_frames == 0:
            self._emit(np.ascontiguousarray(frame).data)
        else:
            self._pending.append(frame)
            if len(self._pending) == self._codec.chunk_frames:
                self._flush_chunk()
        self.num_frames += 1

    def _flush_chunk(self) -> None:
        if not self._pending:
            return
        data = self._codec.encode(np.stack(self._pending))
        offset = self._emit(data)
        self.chunks.append((offset, len(data), self._chunked_frames, len(self._pending)))
        self._chunked_frames += len(self._pending)
        self._pending = []

    def _emit(self, data) -> int:
        self._hash.update(data)
        return self._w._write(data)

    def finish(self) -> tuple[int, int, int]:
        """Flush the last chunk; returns (offset, nbytes, xxh3-64) of the video's payload."""
        self._flush_chunk()
        return self.offset, self._w._size - self.offset, self._hash.intdigest()


class ShardWriter:
    """Appends videos to ``NAME.bin.part``; one writer per file, never shared.

    ``alive`` (optional) is asked before each video starts and before each commit; when it
    returns False the owner of this build is gone and the writer raises ``Orphaned``.
    """

    def __init__(self, directory: Path, name: str, *, alive: Callable[[], bool] | None = None):
        self.directory = Path(directory)
        self.name = name
        self.alive = alive or (lambda: True)
        self.bin_part = self.directory / f"{name}{SHARD_SUFFIX}{PART_SUFFIX}"
        self.rec_part = self.directory / f"{name}{RECORDS_SUFFIX}{PART_SUFFIX}"
        store = self.directory.parent
        flags = os.O_CREAT | os.O_EXCL | os.O_CLOEXEC
        try:
            bin_fd = os.open(self.bin_part, os.O_WRONLY | flags, 0o644)
        except FileExistsError:
            raise StoreError(f"{self.bin_part}: exists already; refusing to overwrite it") from None
        except OSError as e:
            raise output_error(e, store) from None
        fcntl.flock(bin_fd, fcntl.LOCK_EX)  # new file: nobody else can hold it
        try:
            rec_fd = os.open(self.rec_part, os.O_WRONLY | os.O_APPEND | flags, 0o644)
        except OSError as e:
            os.close(bin_fd)
            self.bin_part.unlink(missing_ok=True)
            raise output_error(e, store) from None
        self._bin = os.fdopen(bin_fd, "wb", buffering=0)
        self._rec = os.fdopen(rec_fd, "ab")
        self._inode = os.fstat(bin_fd).st_ino
        self._size = 0
        self._buf = bytearray()
        self.num_videos = 0

    @property
    def size(self) -> int:
        return self._size

    def _write(self, data) -> int:
        """Append ``data``; small writes gather in a buffer (one syscall per ~4 MiB, not one
        per frame), which :meth:`_flush` empties before anything relies on the file."""
        offset = self._size
        view = memoryview(data).cast("B")
        self._buf += view
        self._size = offset + len(view)
        if len(self._buf) >= _BUFFER_BYTES:
            self._flush()
        return offset

    def _flush(self) -> None:
        view = memoryview(self._buf)
        try:
            while view:
                n = self._bin.write(view)
                view = view[n:]
        except OSError as e:
            raise output_error(e, self.directory.parent) from None
        finally:
            view.release()
        self._buf.clear()

    def _start_video(self) -> int:
        if not self.alive():
            raise Orphaned(self.name)
        start = align(self._size)
        if start != self._size:
            self._write(bytes(start - self._size))
        return start

    def begin_video(self, codec: Codec) -> VideoSink:
        return VideoSink(self, codec)

    def append(self, blocks: Iterable) -> tuple[int, int, int]:
        """Append one more payload of the video being written (a track, after its frames),
        given as buffers written back to back, at an aligned offset: (offset, nbytes, xxh3-64).
        ``rollback`` to the video's offset removes it with the frames."""
        start = align(self._size)
        if start != self._size:
            self._write(bytes(start - self._size))
        h = xxhash.xxh3_64()
        for block in blocks:
            view = memoryview(block).cast("B")
            h.update(view)
            self._write(view)
        return start, self._size - start, h.intdigest()

    def rollback(self, offset: int) -> None:
        """Forget a video that failed half-way: cut the payload back to ``offset``.

        Every byte before the video was flushed when the previous video committed, so the
        buffer (this video's bytes) is dropped rather than written: this works on a full disk.
        """
        self._buf.clear()
        self._bin.truncate(offset)
        self._bin.seek(offset)
        self._size = offset

    def commit(self, record: dict) -> None:
        """Make the video durable: payload first, then its journal line."""
        self._flush()
        if not self.alive():
            raise Orphaned(self.name)
        try:
            os.fsync(self._bin.fileno())
            self._rec.write((json.dumps(record, separators=(",", ":")) + "\n").encode())
            self._rec.flush()
            os.fsync(self._rec.fileno())
        except OSError as e:
            raise output_error(e, self.directory.parent) from None
        self.num_videos += 1

    def _still_ours(self) -> bool:
        try:
            return os.stat(self.bin_part).st_ino == self._inode and self.rec_part.exists()
        except FileNotFoundError:
            return False

    def abandon(self) -> None:
        """Close the files without finishing the shard (the journal keeps what was committed;
        the next build recovers it)."""
        self._buf.clear()
        for f in (self._bin, self._rec):
            with contextlib.suppress(OSError):
                f.close()

    def close(self) -> Path | None:
        """Finish the shard (rename + final records); an empty shard is removed.

        If the files are no longer this writer's (another process recovered them), nothing
        is touched."""
        if not self._still_ours() or not self.alive():
            self.abandon()
            return None
        self._flush()
        try:
            self._rec.close()
            return finalize(self.directory, self.name, locked=True)
        except OSError as e:
            raise output_error(e, self.directory.parent) from None
        finally:
            self._bin.close()  # drops the lock, after the shard is finished


def read_journal(path: Path) -> list[dict]:
    """Complete JSON lines of a journal; a torn last line (crash mid-write) is dropped."""
    records = []
    with open(path, "rb") as f:
        for line in f:
            if not line.endswith(b"\n"):
                break
            try:
                records.append(json.loads(line))
            except ValueError:
                break
    return records


def finalize(directory: Path, name: str, *, locked: bool = False) -> Path | None:
    """Turn ``NAME.*.part`` into a finished shard, keeping only journalled videos.

    Unless the caller is the writer itself (``locked``), the payload file's lock is taken
    first: ``ShardBusy`` if a live writer holds it."""
    directory = Path(directory)
    bin_part = directory / f"{name}{SHARD_SUFFIX}{PART_SUFFIX}"
    bin_final = directory / f"{name}{SHARD_SUFFIX}"
    payload = bin_part if bin_part.exists() else bin_final
    if locked or not payload.exists():
        return _finalize(directory, name, payload)
    fd = os.open(payload, os.O_RDONLY | os.O_CLOEXEC)
    try:
        if not _try_lock(fd):
            raise ShardBusy(
                f"{payload}: is being written by a live process (a build worker still "
                "running?); stop it, or wait for it to finish, then rerun"
            )
        return _finalize(directory, name, payload)
    finally:
        os.close(fd)


def _finalize(directory: Path, name: str, payload: Path) -> Path | None:
    bin_part = directory / f"{name}{SHARD_SUFFIX}{PART_SUFFIX}"
    bin_final = directory / f"{name}{SHARD_SUFFIX}"
    rec_part = directory / f"{name}{RECORDS_SUFFIX}{PART_SUFFIX}"
    rec_final = directory / f"{name}{RECORDS_SUFFIX}"
    records = read_journal(rec_part) if rec_part.exists() else []
    if not records and not rec_part.exists() and rec_final.exists():
        return bin_final if bin_final.exists() else None  # finished already
    if not records:
        for p in (bin_part, bin_final, rec_part):
            p.unlink(missing_ok=True)
        return None
    end = max(off + n for r in records for _, off, n, _ in payload_ranges(r))
    with open(payload, "r+b") as f:
        f.truncate(end)
        os.fsync(f.fileno())
    if payload != bin_final:
        os.replace(payload, bin_final)
    shard = {"shard": name, "bytes": end, "checksum": checksum_file(bin_final)}
    shard["checksum_algorithm"] = CHECKSUM_ALGORITHM
    lines = [json.dumps(r, separators=(",", ":")) for r in records]
    lines.append(json.dumps(shard, separators=(",", ":")))
    write_bytes_atomic(rec_final, ("\n".join(lines) + "\n").encode())
    rec_part.unlink(missing_ok=True)
    fsync_dir(directory)
    return bin_final


def recover_all(directory: Path, *, wait_seconds: float = 10.0) -> list[str]:
    """Finish every shard a killed build left behind; returns their names.

    Only shards whose writer is dead are touched. A shard still locked is waited for (a
    killed worker's lock goes when the kernel has reaped it) for up to ``wait_seconds``;
    then ``ShardBusy`` names it."""
    names = set()
    for p in Path(directory).glob(f"*{PART_SUFFIX}"):
        names.add(p.name.split(".")[0])
    for p in Path(directory).glob(f"*{SHARD_SUFFIX}"):
        if not (p.with_suffix(RECORDS_SUFFIX)).exists():
            names.add(p.name.split(".")[0])
    done = []
    deadline = time.monotonic() + wait_seconds
    for n in sorted(names):
        while True:
            try:
                if finalize(directory, n) is not None:
                    done.append(n)
                break
            except ShardBusy:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
    return done


def load_shard(directory: Path, name: str) -> tuple[list[dict], dict]:
    """Records and shard summary of a finished shard."""
    lines = read_journal(Path(directory) / f"{name}{RECORDS_SUFFIX}")
    if not lines or "shard" not in lines[-1]:
        raise ValueError(f"shard records {name}{RECORDS_SUFFIX} lack their summary line")
    return lines[:-1], lines[-1]
