"""The one interface every way of running build workers offers: :class:`Engine`.

An engine hands the items to decode (indices into the build's sources) to its workers and
reports what they say (``_messages``) to ``handle``, the build's progress and failure
bookkeeping (``_folder.decode_sources``), each item exactly once as :class:`Done` or
:class:`Failed`. Three implement it: ``_workers.InProcess`` (one worker in this process),
``_workers.ProcessPool`` (worker processes, one pipe each) and ``_ray.RayPool`` (Ray actors).
What they share lives here: a :class:`Fatal` stops the build with a StoreError, a worker that
died holding an item fails that item with the reason, and :meth:`Engine.execute` stops every
worker however the run ends.
"""

from __future__ import annotations

import abc
from collections.abc import Callable

from .._core._errors import StoreError
from ._messages import Done, Failed, Fatal, Frames, Message

__all__ = ["Engine", "Handle"]

#: the build's side: receives every message an engine passes on
Handle = Callable[[Message], None]


class Engine(abc.ABC):
    """Runs build workers over the items to decode, reporting to ``handle``."""

    def __init__(self, handle: Handle) -> None:
        self.handle = handle

    @abc.abstractmethod
    def run(self) -> None:
        """Decode every item; back once each has been reported."""

    @abc.abstractmethod
    def stop(self) -> None:
        """Stop every worker still running (after :meth:`run`, or when it raised)."""

    def execute(self) -> None:
        """:meth:`run`, then :meth:`stop` however it ended."""
        try:
            self.run()
        finally:
            self.stop()

    def report(self, msg: Message) -> None:
        """Pass a worker's message on: a :class:`Fatal` stops the build (StoreError with its
        text); :class:`Frames`, :class:`Done` and :class:`Failed` go to ``handle``
        (:class:`Start` and :class:`Exit` are the engine's own business)."""
        if isinstance(msg, Fatal):
            raise StoreError(msg.text)
        if isinstance(msg, Frames | Done | Failed):
            self.handle(msg)

    def died(self, worker: int, item: int, what: str) -> None:
        """The worker holding ``item`` died (``what`` says how): the item fails, to be
        retried by a rerun."""
        self.handle(Failed(worker, item, f"{what}; rerun to retry it"))
