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

Checkpoints written before checksums (format version 1) have none: they load unchecked, and
the reader says so once per file on stderr (:func:`note_unchecked`); from version
:data:`CHECKSUM_SINCE` on, a checkpoint without its checksum is refused as damaged.
"""

from __future__ import annotations

import hashlib
import struct
import sys
from collections.abc import Mapping
from typing import Any

__all__ = [
    "CHECKPOINT_FORMAT",
    "CHECKSUM_KEY",
    "CHECKSUM_SINCE",
    "checksum_problem",
    "note_unchecked",
    "state_checksum",
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
