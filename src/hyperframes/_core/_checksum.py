"""The checksum a checkpoint carries: SHA-256 over every entry it holds, tensors by their bytes.

``torch.load`` does not check the CRCs of the zip it reads, so a bit flipped on disk or in a
copy loads as a different weight (one flip of an exponent bit makes a weight 1e37). A
checkpoint therefore carries ``"checksum": {"algorithm": "sha256", "digest": HEX}``, computed
over all its other entries (weights, optimizer state, config, input contract, positions, RNG
states) when it is saved and recomputed by every reader (:func:`checksum_problem`).

What is hashed is the values, not the file: each value is fed as a type tag, its length and
its content, mappings key by key in sorted order (keys tagged with their type, so ``1`` and
``"1"`` differ), tensors as dtype, shape and their elements' bytes (C order, on the CPU).
So the digest does not depend on how torch lays out the zip, and a tensor that moved device
or stride still matches. Values a checkpoint may hold: mappings, lists, tuples, strings,
bytes, bools, ints, floats, None, tensors, ``torch.dtype`` and ``torch.device``; anything
else is a :class:`TypeError` at save time (a bug in the writer, not damage).

**Bounded before it is read.** A checkpoint asks for finite work: before ``torch.load`` its
zip's entries may declare at most :data:`~hyperframes._core._limits.MAX_CHECKPOINT_INFLATION`
times the file's size once inflated (``torch.save`` stores them uncompressed; a zip bomb
declares gigabytes in a few compressed megabytes: :func:`checkpoint_file_problem`), and before
hashing, its tensors may show at most
:data:`~hyperframes._core._limits.MAX_CHECKPOINT_REPEATED_BYTES` beyond the storage they view
(an expanded, stride-0 tensor of 40 GB over 4 bytes of storage: hashing it would write out
every repeat).

Checkpoints written before checksums (format version 1) have none: they load unchecked, and
the reader says so once per file on stderr (:func:`note_unchecked`); from version
:data:`CHECKSUM_SINCE` on, a checkpoint without its checksum is refused as damaged.
"""

from __future__ import annotations

import hashlib
import os
import struct
import sys
import zipfile
from collections.abc import Iterator, Mapping
from typing import Any

from ._limits import MAX_CHECKPOINT_INFLATION, MAX_CHECKPOINT_REPEATED_BYTES

__all__ = [
    "CHECKPOINT_FORMAT",
    "CHECKSUM_KEY",
    "CHECKSUM_SINCE",
    "checkpoint_file_problem",
    "checksum_problem",
    "note_unchecked",
    "state_checksum",
    "stored_bytes",
]

#: the ``format`` entry of a hyperframes checkpoint (a plain state dict has none)
CHECKPOINT_FORMAT = "hyperframes-checkpoint"
#: the entry holding the checksum (itself not hashed)
CHECKSUM_KEY = "checksum"
#: the first checkpoint format version that carries a checksum
CHECKSUM_SINCE = 2
_ALGORITHM = "sha256"
#: deeper than this is no checkpoint's (a crafted one may nest a list a million times)
_MAX_DEPTH = 64
_noted: set[str] = set()


def _feed(h, value: Any, depth: int = 0) -> None:
    import torch  # deferred: optional/heavy dependency

    if depth > _MAX_DEPTH:
        raise TypeError(f"its entries are nested deeper than {_MAX_DEPTH} levels")
    if isinstance(value, torch.Tensor):
        t = value.detach().to("cpu").contiguous()
        h.update(b"x%s|%s|" % (str(t.dtype).encode(), repr(tuple(t.shape)).encode()))
        if t.numel():
            h.update(t.reshape(-1).view(torch.uint8).numpy().data)
    elif isinstance(value, Mapping):
        h.update(b"d%d|" % len(value))
        for key in sorted(value, key=lambda k: (type(k).__name__, repr(k))):
            _feed(h, key, depth + 1)
            _feed(h, value[key], depth + 1)
    elif isinstance(value, list | tuple):
        h.update(b"%s%d|" % (b"l" if isinstance(value, list) else b"t", len(value)))
        for item in value:
            _feed(h, item, depth + 1)
    elif value is None or isinstance(value, bool):
        h.update(b"n" if value is None else b"T" if value else b"F")
    elif isinstance(value, int):
        h.update(b"i%d|" % value)
    elif isinstance(value, float):
        h.update(b"f" + struct.pack("<d", value))
    elif isinstance(value, str):
        data = value.encode("utf-8", "surrogatepass")
        h.update(b"s%d|" % len(data) + data)
    elif isinstance(value, bytes | bytearray):
        h.update(b"b%d|" % len(value) + bytes(value))
    elif isinstance(value, torch.dtype | torch.device):
        text = str(value).encode()
        h.update(b"o%d|" % len(text) + text)
    else:
        raise TypeError(
            f"a checkpoint entry of type {type(value).__name__} cannot be checksummed; "
            "allowed: tensors, mappings, lists, tuples, str, bytes, bool, int, float, None"
        )


def checkpoint_file_problem(path: str | os.PathLike) -> str | None:
    """What makes the file at ``path`` too costly to read, or None: its zip entries declare
    more than :data:`MAX_CHECKPOINT_INFLATION` times the file's size once inflated (only the
    zip's directory is read to say so). A file that is not a zip is torch.load's to judge."""
    try:
        size = os.path.getsize(path)
        with zipfile.ZipFile(path) as z:
            declared = sum(info.file_size for info in z.infolist())
    except (OSError, zipfile.BadZipFile, ValueError, EOFError):
        return None
    allowed = MAX_CHECKPOINT_INFLATION * size
    if declared <= allowed:
        return None
    return (
        f"refused: its entries declare {declared:,} bytes once inflated from a {size:,}-byte "
        f"file; allowed: at most {MAX_CHECKPOINT_INFLATION} times the file's size "
        "(torch.save stores entries uncompressed; this is a zip bomb or not a checkpoint)"
    )


def _tensors(value: Any, depth: int = 0) -> Iterator[tuple[str, Any]]:
    """``(where, tensor)`` of every tensor in ``value`` (mappings and sequences followed,
    as deep as :func:`_feed` follows them)."""
    import torch  # deferred: optional/heavy dependency

    if depth > _MAX_DEPTH:
        return
    if isinstance(value, torch.Tensor):
        yield "", value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            for where, t in _tensors(item, depth + 1):
                yield f"{key}{'.' + where if where else ''}", t
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            for where, t in _tensors(item, depth + 1):
                yield f"{i}{'.' + where if where else ''}", t


def stored_bytes(state: Mapping) -> int:
    """Bytes of the tensor storages ``state`` holds, each storage once: about the size of the
    file ``torch.save`` makes of it (what a save needs free)."""
    seen: dict[int, int] = {}
    for _, t in _tensors(state):
        storage = t.untyped_storage()
        seen[storage.data_ptr() or id(storage)] = storage.nbytes()
    return sum(seen.values())


def repeated_bytes_problem(state: Mapping) -> str | None:
    """What is wrong with the tensors of ``state`` before any is hashed, or None: together
    they may show at most :data:`MAX_CHECKPOINT_REPEATED_BYTES` beyond the storage they view
    (an expanded tensor repeats its storage; hashing reads every repeat)."""
    total, worst = 0, ("", 0, 0)
    for where, t in _tensors(state):
        shown = t.numel() * t.element_size()
        stored = t.untyped_storage().nbytes()
        if shown > stored:
            total += shown - stored
            if shown - stored > worst[1] - worst[2]:
                worst = (where, shown, stored)
    if total <= MAX_CHECKPOINT_REPEATED_BYTES:
        return None
    where, shown, stored = worst
    return (
        f"refused: its tensors repeat {total:,} bytes beyond the storage they hold (e.g. "
        f"{where!r} shows {shown:,} bytes over {stored:,} stored: an expanded, stride-0 "
        f"tensor); allowed: at most {MAX_CHECKPOINT_REPEATED_BYTES >> 20} MiB, so that "
        "checking it stays cheap"
    )


def state_checksum(state: Mapping) -> dict:
    """The checksum entry of ``state``: SHA-256 over every entry but :data:`CHECKSUM_KEY`."""
    h = hashlib.sha256()
    _feed(h, {k: v for k, v in state.items() if k != CHECKSUM_KEY})
    return {"algorithm": _ALGORITHM, "digest": h.hexdigest()}


def checksum_problem(state: Mapping) -> str | None:
    """What is wrong with ``state``'s checksum (it is missing from a version that carries one,
    malformed, or does not match the entries), or None when it matches or the checkpoint is
    from before checksums (:func:`note_unchecked` is then for the reader to call)."""
    saved = state.get(CHECKSUM_KEY)
    version = state.get("version")
    if saved is None:
        if isinstance(version, int) and version < CHECKSUM_SINCE:
            return None
        return (
            f"damaged: its checksum is missing (format version {version!r} carries one); "
            "the file was altered after it was written"
        )
    if (
        not isinstance(saved, Mapping)
        or saved.get("algorithm") != _ALGORITHM
        or not isinstance(saved.get("digest"), str)
    ):
        return f"damaged: its checksum entry is not a {_ALGORITHM} digest ({saved!r:.80})"
    repeated = repeated_bytes_problem(state)
    if repeated is not None:
        return repeated
    try:
        now = state_checksum(state)["digest"]
    except TypeError as e:
        return f"damaged: {e}"
    if now != saved["digest"]:
        return (
            f"damaged: its contents do not match the checksum saved with it ({_ALGORITHM} "
            f"{saved['digest'][:16]}..., now {now[:16]}...): bits changed after it was "
            "written (a disk, memory or copy error, or an edit)"
        )
    return None


def note_unchecked(path: object) -> None:
    """Say once per file (stderr) that a checkpoint from before checksums loads unchecked."""
    key = str(path)
    if key in _noted:
        return
    _noted.add(key)
    print(
        f"hyperframes: note: checkpoint {key} has no checksum (written before hyperframes "
        f"checkpoints carried one, format version < {CHECKSUM_SINCE}), so damage to it cannot "
        "be detected; it is loaded as is. Resuming the run re-saves last.pt with one; any "
        "checkpoint gets one with hyperframes.train.save_checkpoint(path, "
        "hyperframes.train.load_checkpoint(path))",
        file=sys.stderr,
        flush=True,
    )
