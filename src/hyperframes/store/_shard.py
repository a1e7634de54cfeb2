"""Shard files: one writer each, a journal per video, recovery after a crash.

A worker appends each video's payload to ``NAME.bin.part``, fsyncs it, then appends the video's
record as one JSON line to ``NAME.jsonl.part`` and fsyncs that: a video is stored once its line
is complete. Closing renames the payload to ``NAME.bin`` and writes ``NAME.jsonl`` (records plus
a last line with the shard's size and checksum) atomically. ``recover`` turns the ``.part``
leftovers of a killed build into a finished shard holding every video whose line was complete.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import xxhash

from .._atomic import fsync_dir, write_bytes_atomic
from ._codecs import Codec
from ._format import CHECKSUM_ALGORITHM, PART_SUFFIX, RECORDS_SUFFIX, SHARD_SUFFIX, align


def checksum_file(path: Path, *, block: int = 8 << 20) -> str:
    h = xxhash.xxh3_128()
    with open(path, "rb", buffering=0) as f:
        while data := f.read(block):
            h.update(data)
    return h.hexdigest()


_BUFFER_BYTES = 4 << 20


class VideoSink:
    """Receives one video's frames, encodes them and appends them to the shard."""

    def __init__(self, writer: ShardWriter, codec: Codec):
        self._w = writer
        self._codec = codec
        self.offset = writer._start_video()
        self.chunks: list[tuple[int, int, int, int]] = []
        self._pending: list[np.ndarray] = []
        self._chunked_frames = 0
        self.num_frames = 0
        self.shape: tuple[int, ...] | None = None

    def add(self, frame: np.ndarray) -> None:
        if self.shape is None:
            self.shape = frame.shape
        if self._codec.chunk_frames == 0:
            self._w._write(np.ascontiguousarray(frame).data)
        else:
            self._pending.append(frame)
            if len(self._pending) == self._codec.chunk_frames:
                self._flush_chunk()
        self.num_frames += 1

    def _flush_chunk(self) -> None:
        if not self._pending:
            return
        data = self._codec.encode(np.stack(self._pending))
        offset = self._w._write(data)
        self.chunks.append((offset, len(data), self._chunked_frames, len(self._pending)))
        self._chunked_frames += len(self._pending)
        self._pending = []

    def finish(self) -> tuple[int, int]:
        """Flush the last chunk; returns (offset, nbytes) of the video's payload."""
        self._flush_chunk()
        return self.offset, self._w._size - self.offset


class ShardWriter:
    """Appends videos to ``NAME.bin.part``; one writer per file, never shared."""

    def __init__(self, directory: Path, name: str):
        self.directory = Path(directory)
        self.name = name
        self.bin_part = self.directory / f"{name}{SHARD_SUFFIX}{PART_SUFFIX}"
        self.rec_part = self.directory / f"{name}{RECORDS_SUFFIX}{PART_SUFFIX}"
        self._bin = open(self.bin_part, "wb", buffering=0)  # noqa: SIM115
        self._rec = open(self.rec_part, "ab")  # noqa: SIM115
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
        while view:
            n = self._bin.write(view)
            view = view[n:]
        view.release()
        self._buf.clear()

    def _start_video(self) -> int:
        start = align(self._size)
        if start != self._size:
            self._write(bytes(start - self._size))
        return start

    def begin_video(self, codec: Codec) -> VideoSink:
        return VideoSink(self, codec)

    def rollback(self, offset: int) -> None:
        """Forget a video that failed half-way: cut the payload back to ``offset``."""
        self._flush()
        self._bin.truncate(offset)
        self._bin.seek(offset)
        self._size = offset

    def commit(self, record: dict) -> None:
        """Make the video durable: payload first, then its journal line."""
        self._flush()
        os.fsync(self._bin.fileno())
        self._rec.write((json.dumps(record, separators=(",", ":")) + "\n").encode())
        self._rec.flush()
        os.fsync(self._rec.fileno())
        self.num_videos += 1

    def close(self) -> Path | None:
        """Finish the shard (rename + final records); an empty shard is removed."""
        self._flush()
        self._bin.close()
        self._rec.close()
        return finalize(self.directory, self.name)


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


def finalize(directory: Path, name: str) -> Path | None:
    """Turn ``NAME.*.part`` into a finished shard, keeping only journalled videos."""
    directory = Path(directory)
    bin_part = directory / f"{name}{SHARD_SUFFIX}{PART_SUFFIX}"
    bin_final = directory / f"{name}{SHARD_SUFFIX}"
    rec_part = directory / f"{name}{RECORDS_SUFFIX}{PART_SUFFIX}"
    rec_final = directory / f"{name}{RECORDS_SUFFIX}"
    records = read_journal(rec_part) if rec_part.exists() else []
    payload = bin_part if bin_part.exists() else bin_final
    if not records:
        for p in (bin_part, bin_final, rec_part):
            p.unlink(missing_ok=True)
        return None
    end = max(r["offset"] + r["nbytes"] for r in records)
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


def recover_all(directory: Path) -> list[str]:
    """Finish every shard a killed build left behind; returns their names."""
    names = set()
    for p in Path(directory).glob(f"*{PART_SUFFIX}"):
        names.add(p.name.split(".")[0])
    for p in Path(directory).glob(f"*{SHARD_SUFFIX}"):
        if not (p.with_suffix(RECORDS_SUFFIX)).exists():
            names.add(p.name.split(".")[0])
    return [n for n in sorted(names) if finalize(directory, n) is not None]


def load_shard(directory: Path, name: str) -> tuple[list[dict], dict]:
    """Records and shard summary of a finished shard."""
    lines = read_journal(Path(directory) / f"{name}{RECORDS_SUFFIX}")
    if not lines or "shard" not in lines[-1]:
        raise ValueError(f"shard records {name}{RECORDS_SUFFIX} lack their summary line")
    return lines[:-1], lines[-1]
