"""Many streams through one model: K live streams, one batched forward pass per step.

::

    streams = MultiStream(Predictor.from_checkpoint("runs/x/best.pt", ema=0.7), batch_size=16)
    cams = {name: streams.add_stream(name) for name in ("door", "yard", "road")}
    while True:
        for name, camera in cameras.items():
            rgb, t = camera.read()                 # (H, W, 3) uint8, seconds
            streams.push(name, rgb, t)             # queued: no model call
        for name, preds in streams.step().items(): # one forward over every ready window
            ...
    streams.close_stream("door")                   # its last windows (flush)

Each stream is a :class:`Predictor` of its own sharing the template's model, contract and
options: its own clock (times must increase per stream; resampling to the model's rate per
stream), frame buffer, windows and EMA, so its predictions are exactly those a single
predictor gives on that stream (``batch_size`` aside, which changes no output). :meth:`step`
runs the model once on up to ``batch_size`` ready windows taken round-robin, one per stream
in turn starting after the stream served first last time, so no stream waits behind a busy
one; windows of streams whose frames differ in size (a contract without a fixed size) go in
one call per size. Memory per stream is the single predictor's bound plus the windows it has
waiting for a step.

Stored videos (:meth:`MultiStream.serve_store`): frames come from a store, held in RAM
(:class:`~hyperframes.data.InMemoryStore`) or read as stored -- no video decoding, only the
contract's resize and crop -- each video a stream, a frame of each per tick.

Limits: the per-frame feature reuse of a single predictor (``reuse``) is not used (every
window runs the whole model); :meth:`close_stream` runs that stream's last windows on their
own.
"""

from __future__ import annotations

import copy
from collections.abc import Hashable, Iterator, Sequence
from typing import Any

import numpy as np
import torch

from .._core._errors import ConfigError, InputError
from ..data import InMemoryStore
from ..store import open_store
from ._prediction import Prediction
from ._predictor import Predictor, Window

__all__ = ["MultiStream"]


class MultiStream:
    """K streams, one model call per :meth:`step` (module doc). ``predictor``: the template
    whose model, contract and options (stride, ema, short, ...) every stream gets; its own
    stream is not used. ``batch_size``: windows per model call (default: the template's)."""

    def __init__(self, predictor: Predictor, *, batch_size: int | None = None) -> None:
        if not isinstance(predictor, Predictor):
            raise ConfigError(
                f"MultiStream takes a Predictor (its model and options), got "
                f"{type(predictor).__name__}; make one with Predictor.from_checkpoint"
            )
        batch = predictor.batch_size if batch_size is None else batch_size
        if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
            raise ConfigError(f"batch_size {batch!r}: allowed: an integer >= 1")
        self.template = predictor
        self.batch_size = batch
        self._streams: dict[Hashable, Predictor] = {}
        self._next = 0  # the stream served first in the next step (round-robin)
        self._count = 0  # streams ever added (default ids)
        #: model calls and windows run since the MultiStream was made
        self.calls = 0
        self.windows = 0

    # -- streams ----------------------------------------------------------------------------
    def add_stream(self, stream_id: Hashable | None = None) -> Hashable:
        """Start a stream (``stream_id``: any hashable name; default 0, 1, 2, ... in the
        order added); returns its id."""
        if stream_id is None:
            while self._count in self._streams:
                self._count += 1
            stream_id = self._count
        if stream_id in self._streams:
            raise ConfigError(f"stream {stream_id!r} is already open; close it or pick another id")
        self._count += 1
        stream = copy.copy(self.template)  # shares the model, contract and options
        stream.split = None  # the plain path: windows batched across streams
        stream.first_window = None
        stream.notes = list(self.template.notes)
        stream.frames_computed = stream.frames_added = 0
        stream.reset()  # a stream state of its own: clock, frames, windows, EMA
        self._streams[stream_id] = stream
        return stream_id

    @property
    def streams(self) -> list[Hashable]:
        """The open streams' ids, in the order added."""
        return list(self._streams)

    def stream(self, stream_id: Hashable) -> Predictor:
        """The predictor of one stream (its ``frames_added``, ``held_frames``, ...)."""
        try:
            return self._streams[stream_id]
        except (KeyError, TypeError):
            open_ = ", ".join(map(repr, self._streams)) or "none"
            raise InputError(
                f"stream {stream_id!r} is not open (open: {open_}); add it with add_stream"
            ) from None

    def push(self, stream_id: Hashable, frame: Any, pts_seconds: float | None = None) -> None:
        """Add a stream's next frame (as :meth:`Predictor.push` takes it); its windows wait
        for the next :meth:`step`."""
        self.stream(stream_id)._accept(frame, pts_seconds)

    @property
    def pending(self) -> int:
        """Windows waiting for a step, over all streams."""
        return sum(len(s._pending) for s in self._streams.values())

    def close_stream(self, stream_id: Hashable, *, name: str | None = None) -> list[Prediction]:
        """End a stream: its waiting and last windows (:meth:`Predictor.flush`), then it is
        gone (``name``: the video, for the error that refuses a stream shorter than a
        window)."""
        stream = self.stream(stream_id)
        try:
            return stream.flush(name=name or f"stream {stream_id!r}")
        finally:
            del self._streams[stream_id]

    # -- compute ----------------------------------------------------------------------------
    def step(self) -> dict[Hashable, list[Prediction]]:
        """One model call (one per frame size) on up to ``batch_size`` ready windows, taken
        round-robin over the streams; their predictions by stream (streams with none are
        left out)."""
        picked = self._pick()
        out: dict[Hashable, list[Prediction]] = {}
        if not picked:
            return out
        by_size: dict[tuple[int, int] | None, list[tuple[Hashable, Window]]] = {}
        for sid, win in picked:
            by_size.setdefault(self._streams[sid]._size, []).append((sid, win))
        with torch.inference_mode():
            for group in by_size.values():
                frames = torch.cat([self._streams[sid]._windows([win]) for sid, win in group])
                t = self.template
                logits = t.model(t.contract.prepare(frames)).float()
                self.calls += 1
                self.windows += len(group)
                for (sid, win), lg in zip(group, logits):
                    out.setdefault(sid, []).extend(self._streams[sid]._emit([win], lg[None]))
        for sid in out:
            self._streams[sid]._prune()
        return out

    def run(self) -> dict[Hashable, list[Prediction]]:
        """:meth:`step` until no window waits; every stream's predictions in order."""
        out: dict[Hashable, list[Prediction]] = {}
        while self.pending:
            for sid, preds in self.step().items():
                out.setdefault(sid, []).extend(preds)
        return out

    def _pick(self) -> list[tuple[Hashable, Window]]:
        """Up to ``batch_size`` windows, one per stream in turn from ``_next`` on."""
        ids = list(self._streams)
        if not ids:
            return []
        start = self._next % len(ids)
        order = ids[start:] + ids[:start]
        picked: list[tuple[Hashable, Window]] = []
        while len(picked) < self.batch_size:
            took = False
            for sid in order:
                queue = self._streams[sid]._pending
                if queue and len(picked) < self.batch_size:
                    picked.append((sid, queue.popleft()))
                    took = True
            if not took:
                break
        self._next = start + 1
        return picked

    # -- stored videos ----------------------------------------------------------------------
    def serve_store(
        self,
        store: Any,
        videos: Sequence[int] | None = None,
        *,
        resident: bool = True,
        chunk_frames: int = 64,
    ) -> Iterator[tuple[int, Prediction]]:
        """Predictions over stored videos, each its own stream (its store video id), a frame
        of every video per tick and a :meth:`step` per tick; yields ``(video id,
        prediction)`` as they come, each video's in order. ``store``: an open store, its
        path, or one already held in RAM (an :class:`InMemoryStore`, kept across calls by a
        server); ``resident``: hold its frames in RAM first, else read them from the store
        as stored (a raw store: no decoding; a jpeg one decodes its images). Frames are read ``chunk_frames`` at a time per video; the model runs on full
        batches of ``batch_size`` windows, each video's last ones when it ends."""

        if not hasattr(store, "videos"):
            store = open_store(store)
        manifest = getattr(store, "manifest", None) or {}
        self.template.contract.check_store_frames(manifest, getattr(store, "path", store))
        held = isinstance(store, InMemoryStore)
        reader = InMemoryStore(store) if resident and not held else store
        ids = list(range(len(store.videos))) if videos is None else [int(v) for v in videos]
        for v in ids:
            if not 0 <= v < len(store.videos):
                raise InputError(
                    f"{store.path}: has videos 0..{len(store.videos) - 1}; video {v} asked for"
                )
            if v in self._streams:
                raise ConfigError(
                    f"stream {v!r} is already open; serve_store names streams by video"
                )
        records = {v: store.videos[v] for v in ids}
        for v in ids:
            self.add_stream(v)
        cursor = dict.fromkeys(ids, 0)
        chunks: dict[int, tuple[int, torch.Tensor]] = {}
        live = list(ids)
        while live:
            for v in list(live):
                i, n = cursor[v], int(records[v].num_frames)
                if i >= n:
                    live.remove(v)
                    for pred in self.close_stream(v, name=records[v].path):
                        yield v, pred
                    continue
                start, frames = chunks.get(v, (-1, torch.empty(0)))
                if not start <= i < start + len(frames):
                    take = np.arange(i, min(i + chunk_frames, n))
                    start, frames = i, reader.read(v, take)
                    chunks[v] = (start, frames)
                self.push(v, frames[i - start], float(records[v].pts_seconds[i]))
                cursor[v] = i + 1
            while self.pending >= self.batch_size:  # full batches; the rest at the close
                for sid, preds in self.step().items():
                    for pred in preds:
                        yield int(sid), pred  # type: ignore[call-overload]
