"""The whole store in RAM, or on a GPU, behind the reader API the dataset uses.

``ram``: every video's frames decoded once into one pinned-able CPU tensor; reads are indexing.
``cuda`` (or any torch device): the same tensor on the device, so indexing and augmentation run
there and nothing crosses the PCIe bus per batch.

:class:`InMemoryStore` is a :class:`~hyperframes.store.StoreReader`: it answers the same
questions as the store it was loaded from (``videos``, ``classes``, ``manifest``,
``change_scores``) and reads return the same frames, as tensors on ``device``.

``hold=`` (store video ids) holds only those videos (a partial cache within a byte budget:
:func:`~hyperframes.data._cache_plan.plan_cache`); the others are read from the store and moved
to ``device`` per read. A float16 store is held as float32, converted once at load (a float16
batch would be converted on every step).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from .._core._device import batch_out, window_requests
from .._core._errors import ConfigError, DataError


class InMemoryStore:
    def __init__(self, store, *, device: str | torch.device = "cpu", hold=None):
        device = torch.device(device)
        if device.type == "cuda" and not torch.cuda.is_available():
            raise ConfigError(f"memory on {device} needs a CUDA GPU; none is available")
        self.store = store
        self.path = store.path
        self.manifest = store.manifest
        self.videos = store.videos
        self.classes = store.classes
        self.dtype = held_dtype(store.dtype)
        self.device = device
        nf = np.asarray(store.videos.num_frames)
        self._starts = np.concatenate([[0], np.cumsum(nf)])
        shapes = np.unique(np.asarray(store.videos.shapes).reshape(-1, 3), axis=0)
        self._uniform = len(shapes) == 1 and hold is None
        #: the videos held (None: all of them)
        self.held: frozenset[int] | None = None
        if hold is not None:
            self.held = frozenset(int(v) for v in hold)
            self._per_video = {v: self._load(v) for v in sorted(self.held)}
        elif self._uniform:
            shape = tuple(int(x) for x in shapes[0])
            total = int(self._starts[-1])
            dtype = torch.from_numpy(np.empty(0, store.dtype)).dtype
            self._all = torch.empty((total, *shape), dtype=dtype)
            for v in range(len(nf)):
                s, e = int(self._starts[v]), int(self._starts[v + 1])
                store.read_numpy(v, np.arange(e - s), out=self._all[s:e].numpy())
            self._all = self._converted(self._all).to(device)
        else:
            self._per_video = {v: self._load(v) for v in range(len(nf))}
        self.nbytes = (
            self._all.numel() * self._all.element_size()
            if self._uniform
            else sum(t.numel() * t.element_size() for t in self._per_video.values())
        )

    def _converted(self, frames: torch.Tensor) -> torch.Tensor:
        return frames.float() if frames.dtype == torch.float16 else frames

    def _load(self, v: int) -> torch.Tensor:
        n = int(self._starts[v + 1] - self._starts[v])
        frames = torch.from_numpy(self.store.read_numpy(v, np.arange(n)))
        return self._converted(frames).to(self.device)

    def __len__(self) -> int:
        return len(self.videos)

    def __repr__(self) -> str:
        return f"InMemoryStore({str(self.path)!r}, videos={len(self)}, device={self.device})"

    def change_scores(self, video) -> np.ndarray | None:
        return self.store.change_scores(video)

    def flow_scores(self, video) -> np.ndarray | None:
        return self.store.flow_scores(video)

    def _video(self, video) -> int:
        v = int(getattr(video, "id", video))
        if not 0 <= v < len(self.videos):
            raise DataError(f"video {v} is out of range: {self.path} holds {len(self.videos)}")
        return v

    def read(self, video, frame_indices) -> torch.Tensor:
        v = self._video(video)
        idx = torch.as_tensor(np.asarray(frame_indices, np.int64).reshape(-1), device=self.device)
        n = int(self._starts[v + 1] - self._starts[v])
        if idx.numel() and (int(idx.min()) < 0 or int(idx.max()) >= n):
            raise DataError(f"frame indices out of range for video {v}, which has {n} frames")
        if self._uniform:
            return self._all.index_select(0, idx + int(self._starts[v]))
        if v not in self._per_video:  # not held: read from the store
            got = torch.from_numpy(self.store.read_numpy(v, idx.cpu().numpy()))
            return self._converted(got).to(self.device)
        return self._per_video[v].index_select(0, idx)

    def read_numpy(self, video, frame_indices, *, out: np.ndarray | None = None) -> np.ndarray:
        return numpy_out(self.read(video, frame_indices), out)

    def read_windows(self, videos, index, *, out=None):
        return self.read_batch(window_requests(videos, index), out=out)

    def read_batch(self, requests: Sequence[tuple], *, out=None):
        reqs = [(self._video(v), np.asarray(ix, np.int64).reshape(-1)) for v, ix in requests]
        if not (self._uniform and len({len(ix) for _, ix in reqs}) == 1):
            windows = [self.read(v, ix) for v, ix in reqs]
            if out is not None and len({tuple(w.shape) for w in windows}) == 1:
                got = torch.stack(windows)
                return batch_out(out, tuple(got.shape), self.dtype).copy_(got)
            return windows
        for v, ix in reqs:
            n = int(self._starts[v + 1] - self._starts[v])
            if ix.size and (ix.min() < 0 or ix.max() >= n):
                raise DataError(f"frame indices out of range for video {v}, which has {n} frames")
        flat = np.concatenate([ix + self._starts[v] for v, ix in reqs])
        got = self._all.index_select(0, torch.as_tensor(flat, device=self.device))
        got = got.view(len(reqs), -1, *self._all.shape[1:])
        if out is not None:
            return batch_out(out, tuple(got.shape), self.dtype).copy_(got)
        return got

    def close(self) -> None:
        # frees the frames; a read after close then fails on None (there is no closed check)
        self._all = self._per_video = None  # type: ignore[assignment]


def held_dtype(stored) -> np.dtype:
    """The dtype a memory cache holds frames stored as ``stored``: float16 becomes float32."""
    dtype = np.dtype(stored)
    return np.dtype(np.float32) if dtype == np.float16 else dtype


def numpy_out(frames: torch.Tensor, out: np.ndarray | None) -> np.ndarray:
    """``read_numpy`` for readers that read tensors (possibly on a GPU): a host array, copied
    into ``out`` when given (same shape and dtype, else ``DataError``)."""
    got = frames.cpu().numpy()
    if out is None:
        return got
    if out.shape != got.shape or out.dtype != got.dtype:
        raise DataError(f"out has shape {out.shape} {out.dtype}; needs {got.shape} {got.dtype}")
    out[...] = got
    return out
