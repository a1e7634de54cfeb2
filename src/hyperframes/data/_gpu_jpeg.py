"""A jpeg store decoded on the GPU: the reader ``HyperframeDataset(decode_device="cuda")`` uses.

Reading a batch takes the stored JPEG of every frame of every window (views of the memory-mapped
shards: nothing decoded on the CPU) and decodes them in one call of
``torchvision.io.decode_jpeg(list_of_tensors, device="cuda")`` (nvJPEG, batched); the windows
arrive on the GPU as ``(B, T, C, H, W)`` uint8, as from ``memory="cuda"`` but holding only the
compressed store in host memory. On the CPU the compressed bytes are copied once into a tensor
per frame (a few kB each), which is all the host does per batch.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from .._core._device import batch_out, window_requests
from .._core._errors import ConfigError
from ._memory import numpy_out


class CudaJpegReader:
    """A :class:`~hyperframes.store.StoreReader` over a jpeg ``store`` whose reads decode on
    ``device``: a CUDA device (nvJPEG), or ``"cpu"`` (torchvision's libjpeg: the same code
    path, testable without a GPU)."""

    def __init__(self, store, *, device: str | torch.device = "cuda"):
        device = torch.device(device)
        if device.type == "cuda" and not torch.cuda.is_available():
            raise ConfigError(
                f"decode_device={str(device)!r}: decoding on the GPU needs a CUDA GPU (none is "
                "available here); leave decode_device unset to decode on the CPU"
            )
        if getattr(store, "codec_name", None) != "jpeg":
            raise ConfigError(
                f"decode_device needs a jpeg store (nvJPEG decodes JPEG); {store.path} uses codec "
                f"{getattr(store, 'codec_name', None)!r}: build it with codec jpeg, or leave "
                "decode_device unset"
            )
        self.store = store
        self.path = store.path
        self.manifest = store.manifest
        self.videos = store.videos
        self.classes = store.classes
        self.dtype = np.dtype(store.dtype)
        self.device = device

    def __len__(self) -> int:
        return len(self.videos)

    def change_scores(self, video) -> np.ndarray | None:
        return self.store.change_scores(video)

    def flow_scores(self, video) -> np.ndarray | None:
        return self.store.flow_scores(video)

    def _decode(self, encoded: list[np.ndarray]) -> list[torch.Tensor]:
        from torchvision.io import ImageReadMode, decode_jpeg  # deferred: optional/heavy dependency

        data = [torch.from_numpy(np.array(e, np.uint8)) for e in encoded]  # writable copies
        return decode_jpeg(data, mode=ImageReadMode.RGB, device=self.device)

    def read(self, video, frame_indices) -> torch.Tensor:
        return torch.stack(self._decode(self.store.encoded_frames(video, frame_indices)))

    def read_numpy(self, video, frame_indices, *, out: np.ndarray | None = None) -> np.ndarray:
        return numpy_out(self.read(video, frame_indices), out)

    def read_batch(self, requests: Sequence[tuple], *, out=None):
        """All frames of all windows decoded in one batched nvJPEG call."""
        encoded = [self.store.encoded_frames(v, ix) for v, ix in requests]
        frames = self._decode([e for window in encoded for e in window])
        windows, at = [], 0
        for window in encoded:
            windows.append(torch.stack(frames[at : at + len(window)]))
            at += len(window)
        if len({tuple(w.shape) for w in windows}) != 1:
            return windows
        batch = torch.stack(windows)
        if out is not None:
            return batch_out(out, tuple(batch.shape), self.dtype).copy_(batch)
        return batch

    def read_windows(self, videos, index, *, out=None):
        return self.read_batch(window_requests(videos, index), out=out)

    def close(self) -> None:
        self.store.close()
