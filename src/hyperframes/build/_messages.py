"""What build workers tell the engine that runs them: one small frozen dataclass per kind.

A worker (in this process, a worker process or a Ray actor: ``_workers.Worker``) reports
:class:`Start` when it begins an item, :class:`Frames` as frames are decoded, then
:class:`Done` or :class:`Failed` for the item; a worker process says :class:`Exit` when it has
finished its last shard. :class:`Fatal` stops the build: a store error or a bug, never the
input's fault (``worker`` is the worker's number when one said it, None when the engine did).
They cross process and Ray boundaries by pickle, so they hold plain values only.
"""

from __future__ import annotations

import dataclasses

__all__ = ["Done", "Exit", "Failed", "Fatal", "Frames", "Message", "Start"]


@dataclasses.dataclass(frozen=True)
class _ItemMessage:
    """What worker ``worker`` says of item ``item`` (an index into the build's sources)."""

    worker: int
    item: int


@dataclasses.dataclass(frozen=True)
class Start(_ItemMessage):
    """Worker ``worker`` began item ``item``."""


@dataclasses.dataclass(frozen=True)
class Frames:
    """``count`` more frames were decoded (progress only)."""

    count: int


@dataclasses.dataclass(frozen=True)
class Done(_ItemMessage):
    """Item ``item`` is stored: ``num_frames`` frames in ``nbytes`` bytes of payload."""

    num_frames: int
    nbytes: int


@dataclasses.dataclass(frozen=True)
class Failed(_ItemMessage):
    """Item ``item`` is not stored; ``error`` says why (``"Type: message"``). ``worker`` is -1
    when no worker had it (refused as it was handed out)."""

    error: str


@dataclasses.dataclass(frozen=True)
class Exit:
    """Worker process ``worker`` finished its last shard and exits."""

    worker: int


@dataclasses.dataclass(frozen=True)
class Fatal:
    """The build must stop: ``text`` says why, in the words the user sees."""

    text: str
    worker: int | None = None


Message = Start | Frames | Done | Failed | Exit | Fatal
