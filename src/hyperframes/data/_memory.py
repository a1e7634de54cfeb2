"""The whole store in RAM, or on a GPU, behind the reader API the dataset uses.

``ram``: every video's frames decoded once into one pinned-able CPU tensor; reads are indexing.
``cuda`` (or any torch device): the same tensor on the device, so indexing and augmentation run
there and nothing crosses the PCIe bus per batch.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from .._errors import ConfigError, DataError


class InMemoryStore:
    def __init__(self, store, *, device: str | torch.device = "cpu"):
        device = torch.device(device)
        if device.type == "cuda" and not torch.cuda.is_available():
            raise ConfigError(f"memory on {device} needs a CUDA GPU; none is available")
        self.store = store
        self.videos = store.videos
        self.classes = store.classes
        self.device = device
        nf = np.asarray(store.videos.num_frames)
        self._starts = np.concatenate([[0], np.cumsum(nf)])
        shapes = {v.shape for v in store.videos}
        self._uniform = len(shapes) == 1
        if self._uniform:
            (shape,) = shapes
            total = int(self._starts[-1])
            dtype = torch.from_numpy(np.empty(0, store.dtype)).dtype
            self._all = torch.empty((total, *shape), dtype=dtype)
            for v in range(len(store.videos)):
                s, e = int(self._starts[v]), int(self._starts[v + 1])
                store.read_numpy(v, np.arange(e - s), out=self._all[s:e].numpy())
            self._all = self._all.to(device)
        else:
            self._per_video = [
                torch.from_numpy(store.read_numpy(v, np.arange(int(nf[v])))).to(device)
                for v in range(len(nf))
            ]
        self.nbytes = (
            self._all.numel() * self._all.element_size()
            if self._uniform
            else sum(t.numel() * t.element_size() for t in self._per_video)
        )

    def __len__(self) -> int:
        return len(self.videos)

    def read(self, video, frame_indices) -> torch.Tensor:
        v = int(getattr(video, "id", video))
        idx = torch.as_tensor(np.asarray(frame_indices, np.int64), device=self.device)
        n = int(self._starts[v + 1] - self._starts[v])
        if idx.numel() and (int(idx.min()) < 0 or int(idx.max()) >= n):
            raise DataError(f"frame indices out of range for video {v}, which has {n} frames")
        if self._uniform:
            return self._all.index_select(0, idx + int(self._starts[v]))
        return self._per_video[v].index_select(0, idx)

    def read_batch(self, requests: Sequence[tuple], *, out=None):
        if self._uniform and len({len(ix) for _, ix in requests}) == 1:
            flat = np.concatenate(
                [
                    np.asarray(ix, np.int64) + self._starts[int(getattr(v, "id", v))]
                    for v, ix in requests
                ]
            )
            got = self._all.index_select(0, torch.as_tensor(flat, device=self.device))
            got = got.view(len(requests), -1, *self._all.shape[1:])
            if out is not None:
                out.copy_(got)
                return out
            return got
        return [self.read(v, ix) for v, ix in requests]
