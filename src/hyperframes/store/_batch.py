"""A folder store's reads of many windows at once (:class:`BatchReads`, which ``Store``
inherits): ``read_batch`` planned by location, cropped and resized boxes, the batched decode
of a codec that decodes between addresses (lz4), and a store at a URL fetching a batch's
ranges at once or ahead of its reads. The per-thread scratch array a partly wanted chunk is
decoded into (:func:`scratch_array`) lives here too."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from .._core._device import batch_out, window_columns, window_requests
from .._core._errors import DataError, StoreError
from ..remote import BatchPlanner
from ._base import StoreBase
from ._crop import centre_boxes, read_boxes

__all__ = ["BatchReads"]


class BatchReads(StoreBase):
    """``Store``'s batched reads; ``Store`` gives the fields and per-video reads named here."""

    _chunks: np.ndarray
    _codec: Any
    _source: Any
    _views: dict[int, np.ndarray]
    _videos: np.ndarray
    #: plans a batch's byte ranges in one numpy step (made at the first remote batch)
    _planner: BatchPlanner | None = None

    def _geom(self, i: int) -> tuple[int, ...]:
        raise NotImplementedError

    def _verify_payload(self, i: int) -> None:
        raise NotImplementedError

    def _ranges(self, geom, idx: np.ndarray):
        raise NotImplementedError

    def _undecodable(self, i: int, what: object) -> StoreError:
        raise NotImplementedError

    def read_batch(self, requests: Sequence[tuple], *, out=None, size=None, boxes=None):
        """Many ``(video, frame_indices)`` reads in one call, planned by location.

        Returns one ``(B, T, C, H, W)`` tensor when every request has the same shape (written
        into ``out`` when given), else a list of tensors. With ``size`` (h, w) every window is
        cropped to its box of ``boxes`` ((B, 4) ``(top, left, height, width)`` in its stored
        pixels; default: the centred box of ``size``) and resized to ``size`` into one
        (B, T, C, h, w) tensor, whatever the stored shapes (:mod:`hyperframes.store._crop`).
        """
        import torch  # deferred: optional/heavy dependency

        reqs = [(self._video_id(v), np.asarray(ix, np.int64).reshape(-1)) for v, ix in requests]
        for v, ix in reqs:
            self._check_indices(v, ix)
        if size is not None or boxes is not None:
            return self._read_boxes(reqs, size, boxes, out)
        geoms = [self._geom(v) for v, _ in reqs]
        if not self._source.is_local:  # (reqs checked: planned as they are, if needed)
            self._source.expect(lambda: self._batch_plan(reqs))
        shapes = {(len(ix), *g[4:7]) for (_, ix), g in zip(reqs, geoms)}
        order = sorted(
            range(len(reqs)), key=lambda b: (geoms[b][0], geoms[b][1], reqs[b][1][:1].tolist())
        )
        if len(shapes) == 1:
            (shape,) = shapes
            out = batch_out(out, (len(reqs), *shape), self.dtype)
            arr = out.numpy()
            if self._codec is not None and self._codec.decode_to_address and arr.flags.c_contiguous:
                self._read_batch_at([v for v, _ in reqs], np.stack([ix for _, ix in reqs]), arr)
                return out
            for b in order:
                self._read_into(reqs[b][0], reqs[b][1], arr[b])
            return out
        result: list[torch.Tensor | None] = [None] * len(reqs)
        for b in order:
            result[b] = torch.from_numpy(self.read_numpy(*reqs[b]))
        return result

    def read_windows(self, videos, index, *, out=None):
        """``read_batch`` of windows given as columns: ``videos`` (B,) store ids and ``index``
        (B, T) frame indices, every window of one shape, into one (B, T, C, H, W) tensor
        (``out`` when given). A raw store on local disk checks and plans the batch with numpy
        and copies each window from its memory map in one slice (about 2 µs of Python a window,
        where ``read_batch``'s per-request checks and plan spent ~15); other stores read it as
        ``read_batch`` does."""
        videos, index = window_columns(videos, index)
        b, t = index.shape
        if self._codec is not None or not self._source.is_local or not b or not t:
            return self.read_batch(window_requests(videos, index), out=out)
        n = len(self._videos)
        bad_video = (videos < 0) | (videos >= n)
        if bad_video.any():
            self._video_id(int(videos[bad_video][0]))  # raises, naming it
        rows = self._videos[videos]
        bad = ((index < 0) | (index >= rows["num_frames"][:, None])).any(1)
        if bad.any():
            k = int(np.flatnonzero(bad)[0])
            self._check_indices(int(videos[k]), index[k])  # raises, naming the frame
        shapes = np.stack([rows[k] for k in ("channels", "height", "width")], 1)
        if (shapes != shapes[0]).any():
            return self.read_batch(window_requests(videos, index), out=out)
        out = batch_out(out, (b, t, *shapes[0].tolist()), self.dtype)
        arr = out.numpy()
        steps = np.diff(index, axis=1)
        step = steps[:, 0] if t > 1 else np.ones(b, np.int64)
        runs = (step > 0) & (steps == step[:, None]).all(1)
        order = np.lexsort((index[:, 0], rows["offset"], rows["shard"]))
        first, last = index[:, 0].tolist(), index[:, -1].tolist()
        views = self._views
        for k, v, run, s in zip(
            order.tolist(), videos[order].tolist(), runs[order].tolist(), step[order].tolist()
        ):
            view = views.get(v)
            if view is None:  # its first read (check="video": verified there)
                view = self.frames_view(v)
            if run:
                np.copyto(arr[k], view[first[k] : last[k] + 1 : s])
            else:
                np.take(view, index[k], axis=0, out=arr[k])
        return out

    def _batch_plan(self, reqs) -> list:
        """``[(shard, offsets, nbytes)]``: the byte ranges the ``(video, frame_indices)`` reads
        ``reqs`` (checked) need, planned for the whole batch at once (:class:`BatchPlanner`);
        window by window only for an index laid out otherwise."""
        planner = self._planner
        if planner is None:
            planner = BatchPlanner(
                self._videos, self._chunks, self.dtype.itemsize, self._codec is not None
            )
            self._planner = planner
        if planner.usable:
            return planner.plan([v for v, _ in reqs], [ix for _, ix in reqs])
        return [(self._geom(v)[0], *self._ranges(self._geom(v), ix)) for v, ix in reqs]

    def fetch_batch(self, requests: Sequence[tuple]) -> None:
        """A store at a URL: fetch every range the ``(video, frame_indices)`` reads of a batch
        need at once (or take them from the read-ahead), for this thread's next reads of
        them; through a node cache, only when a read finds a range missing from it
        (``RemoteShards.expect``); nothing for a local store."""
        if not self._source.is_local:
            reqs = [(self._video_id(v), np.asarray(ix, np.int64).reshape(-1)) for v, ix in requests]
            self._source.expect(lambda: self._batch_plan(reqs))

    def read_ahead(self, batches: Sequence[Sequence[tuple]], *, budget: int) -> int:
        """Hand over the batches to be read next, in order (each a list of ``(video,
        frame_indices)``): a store at a URL fetches their ranges in the background while at
        most ``budget`` bytes are held (:mod:`~hyperframes.remote._ahead`). Returns how many
        were taken, from the first (offer the rest again once a batch was read)."""
        if self._source.is_local:
            return len(batches)
        for n, requests in enumerate(batches):
            try:
                reqs = [
                    (self._video_id(v), np.asarray(ix, np.int64).reshape(-1)) for v, ix in requests
                ]
                for v, ix in reqs:
                    self._check_indices(v, ix)
            except (DataError, StoreError, IndexError, TypeError, ValueError):
                return len(batches)  # (its read raises the error; nothing fetched for it)
            if not self._source.ahead(self._batch_plan(reqs), budget):
                return n
        return len(batches)

    def cancel_read_ahead(self) -> None:
        """Drop the batches handed to :meth:`read_ahead` and not read yet."""
        ahead = getattr(self._source, "_ahead", None)
        if ahead is not None:
            ahead.cancel()

    def _read_boxes(self, reqs, size, boxes, out):
        """``read_batch`` with ``size`` / ``boxes``."""
        import torch  # deferred: optional/heavy dependency

        if size is None:
            raise DataError("read_batch: boxes= needs size= (h, w), the size they resize to")
        size = (int(size[0]), int(size[1]))
        shapes = {(len(ix), int(self._geom(v)[4])) for v, ix in reqs}
        if len(shapes) != 1:
            raise DataError(
                f"read_batch: windows of different lengths or channels {sorted(shapes)} cannot "
                "share one buffer"
            )
        ((t, c),) = shapes
        if boxes is None:
            boxes = centre_boxes([self._geom(v)[5:7] for v, _ in reqs], size)
        out = batch_out(out, (len(reqs), t, c, *size), self.dtype)
        read_boxes(self, reqs, boxes, out.numpy())
        return out if isinstance(out, torch.Tensor) else torch.from_numpy(out)

    def _read_batch_at(self, vids: list[int], idx: np.ndarray, arr: np.ndarray) -> None:
        """``read_batch`` for a codec that decodes between addresses (lz4): every window's runs
        of frames from one chunk are planned at once with numpy, then each run is one C call
        without the GIL, given integers: about a microsecond of Python per chunk, where the
        per-window path spent ~15 µs, as long as decoding the chunk (then two threads spent
        their time handing the GIL to each other and were slower than one). Measured on 2
        cores, loader: 4.0k windows/s before, 8.5-9.4k now in one thread; two threads ~1.1x
        that (a chunk decodes in ~20 µs, so the GIL still changes hands that often)."""
        if self._verified is not None:
            for i in set(vids) - self._verified:
                self._verify_payload(i)
        b, t = idx.shape
        n = b * t
        if not n:
            return
        videos = self._videos[np.asarray(vids, np.int64)]
        c0, k = videos["chunk_start"], videos["num_chunks"]
        chunk = np.empty((b, t), np.int64)
        for w in range(b):  # the chunk of each frame: the last whose first frame is <= it
            first = self._chunks["first_frame"][c0[w] : c0[w] + k[w]]
            chunk[w] = c0[w] - 1 + np.searchsorted(first, idx[w], side="right")
        chunk, flat = chunk.reshape(n), idx.reshape(n)
        starts = np.ones(n, bool)
        starts[1:] = chunk[1:] != chunk[:-1]
        starts[::t] = True  # a run never crosses windows
        rs = np.flatnonzero(starts)
        m = np.diff(np.append(rs, n))
        rows = self._chunks[chunk[rs]]
        a = flat[rs] - rows["first_frame"]
        step = np.ones(n, bool)
        step[1:] = flat[1:] - flat[:-1] == 1
        step[rs] = True
        in_order = np.logical_and.reduceat(step, rs)
        whole = in_order & (a == 0) & (m == rows["num_frames"])
        # maps held: the addresses stay valid
        maps, src = self._source.addresses(videos["shard"][rs // t], rows["offset"], rows["nbytes"])
        fb = arr[0, 0].nbytes
        dst = arr.ctypes.data + rs * fb
        frames = arr.reshape(n, *arr.shape[2:])
        # the callers check both
        assert self._codec is not None and self._codec.decode_to_address is not None
        decode = self._codec.decode_to_address
        scratch: np.ndarray | None = None
        scr = 0  # scratch's address, set with it
        for s_, nb, d, mr, w_, ordered, nf, a_, p0 in zip(
            src.tolist(),
            rows["nbytes"].tolist(),
            dst.tolist(),
            m.tolist(),
            whole.tolist(),
            in_order.tolist(),
            rows["num_frames"].tolist(),
            a.tolist(),
            rs.tolist(),
        ):
            if w_:  # the whole chunk, in order: straight into the batch
                if (got := decode(s_, nb, d, mr * fb)) != mr * fb:
                    raise self._undecodable(vids[p0 // t], _size_problem(got, mr * fb))
                continue
            if scratch is None:
                scratch = scratch_array((self._codec.chunk_frames, *arr.shape[2:]), arr.dtype)
                scr = scratch.ctypes.data
            if (got := decode(s_, nb, scr, nf * fb)) != nf * fb:
                raise self._undecodable(vids[p0 // t], _size_problem(got, nf * fb))
            if ordered:  # a run of the chunk's frames
                frames[p0 : p0 + mr] = scratch[a_ : a_ + mr]
            else:  # repeats or another order: picked frame by frame
                local = flat[p0 : p0 + mr] - (int(flat[p0]) - a_)
                np.take(scratch[:nf], local, axis=0, out=frames[p0 : p0 + mr])
        del maps


_local = threading.local()


def scratch_array(shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """An array of ``shape`` owned by the calling thread, reused from call to call (a chunk
    decoded only in part lands here; one allocation per thread, not one per chunk)."""
    size = int(np.prod(shape)) * np.dtype(dtype).itemsize
    buf = getattr(_local, "scratch", None)
    if buf is None or buf.size < size:
        buf = _local.scratch = np.empty(size, np.uint8)
    return buf[:size].view(dtype).reshape(shape)


def _size_problem(got: int, want: int) -> str:
    return f"a chunk decompresses to {got} bytes (negative: corrupt data), the index says {want}"
