"""The peers of ``bench_codecs.py`` that read from files other than a hyperframes store, each as a
batched dataset for ``hyperframes.loader`` (``__getitems__`` of ``(epoch, item)`` keys, one
``(B, T, 3, S, S)`` uint8 batch), with the standard augmentation done the way such a loader does
it: ``RandomResizedCrop(S)`` (scale 0.08-1, aspect 3/4-4/3, one box per window) and a horizontal
flip with probability 1/2, per frame with OpenCV (bilinear resize of the box, then the flip).

- rawframes: one JPEG file per frame (mmaction2's ``img_00001.jpg`` layout), written from the
  stored frames with libjpeg-turbo (simplejpeg, the jpeg store's quality and subsampling) and
  read back with it: the folders people make with ``denseflow`` / ``extract_frames``;
- LitData: the decoded windows written with ``litdata.optimize`` (its chunk format, no
  compression), read with ``StreamingDataset[i]`` (one per loader thread).

``augment_window`` is also what the on-the-fly decoders of ``_decoders.py`` apply.
"""

from __future__ import annotations

import math
import threading
from pathlib import Path

import numpy as np

SCALE, RATIO = (0.08, 1.0), (3 / 4, 4 / 3)


def rrc_box(rng: np.random.Generator, height: int, width: int) -> tuple[int, int, int, int]:
    """(top, left, h, w): the Inception-style box RandomResizedCrop draws (torchvision's rule)."""
    area = height * width
    for _ in range(10):
        target = area * rng.uniform(*SCALE)
        aspect = math.exp(rng.uniform(math.log(RATIO[0]), math.log(RATIO[1])))
        w, h = round(math.sqrt(target * aspect)), round(math.sqrt(target / aspect))
        if 0 < w <= width and 0 < h <= height:
            return int(rng.integers(0, height - h + 1)), int(rng.integers(0, width - w + 1)), h, w
    side = min(height, width)
    return (height - side) // 2, (width - side) // 2, side, side


def augment_frames(frames_hwc, out_tchw: np.ndarray, rng: np.random.Generator) -> None:
    """Crop each ``(H, W, 3)`` frame of ``frames_hwc`` (a sequence) to one random box, resize it
    to ``out``'s size (OpenCV, bilinear) and flip all or none, into ``out_tchw`` (T, 3, S, S)."""
    import cv2

    size = out_tchw.shape[-1]
    flip = rng.random() < 0.5
    box = None
    for t, frame in enumerate(frames_hwc):
        if box is None:
            box = rrc_box(rng, *frame.shape[:2])
        top, left, h, w = box
        small = cv2.resize(
            frame[top : top + h, left : left + w], (size, size), interpolation=cv2.INTER_LINEAR
        )
        if flip:
            small = small[:, ::-1]
        out_tchw[t] = small.transpose(2, 0, 1)


def augment_window(window_tchw: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
    """A decoded ``(T, 3, H, W)`` window augmented to ``(T, 3, size, size)``."""
    out = np.empty((len(window_tchw), 3, size, size), np.uint8)
    augment_frames([np.ascontiguousarray(f.transpose(1, 2, 0)) for f in window_tchw], out, rng)
    return out


class _Batched:
    """What ``hyperframes.loader`` needs of a batched dataset; subclasses fill one window."""

    def __init__(self, n: int, frames: int, size: int):
        from hyperframes.data._buffers import BatchBuffers

        self.n, self.frames, self.size, self.epoch, self.seed = n, frames, size, 0, 0
        self._buffers = BatchBuffers()

    def __len__(self) -> int:
        return self.n

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __getitems__(self, keys):
        out = self._buffers.take((len(keys), self.frames, 3, self.size, self.size), np.uint8)
        arr = out.numpy()
        for k, (epoch, item) in enumerate(keys):
            rng = np.random.default_rng((int(epoch), int(item)))
            self.window(int(item), arr[k], rng)
        return out

    def window(self, item: int, out: np.ndarray, rng: np.random.Generator) -> None:
        raise NotImplementedError


def write_rawframes(store, root: Path, *, quality: int = 90) -> int:
    """Every stored frame of ``store`` as ``root/<video>/img_00001.jpg`` ...; returns the bytes."""
    import simplejpeg

    total = 0
    for v in range(len(store)):
        folder = root / f"video_{v:05d}"
        folder.mkdir(parents=True)
        frames = store.read_numpy(v, np.arange(store.videos[v].num_frames))
        for k, f in enumerate(frames):
            data = simplejpeg.encode_jpeg(
                np.ascontiguousarray(f.transpose(1, 2, 0)),
                quality=quality,
                colorspace="RGB",
                colorsubsampling="420",
            )
            (folder / f"img_{k + 1:05d}.jpg").write_bytes(data)
            total += len(data)
    return total


class Rawframes(_Batched):
    """Windows ``(folder, first frame)`` read from JPEG files, decoded with libjpeg-turbo."""

    def __init__(self, windows: list[tuple[Path, int]], frames: int, size: int):
        super().__init__(len(windows), frames, size)
        self.windows = windows

    def window(self, item, out, rng):
        import simplejpeg

        folder, start = self.windows[item]
        decoded = []
        for k in range(start, start + self.frames):
            with open(folder / f"img_{k + 1:05d}.jpg", "rb") as f:
                decoded.append(simplejpeg.decode_jpeg(f.read(), colorspace="RGB"))
        augment_frames(decoded, out, rng)


class LitWindows(_Batched):
    """Decoded ``(T, H, W, 3)`` windows from a LitData ``optimize`` output folder."""

    def __init__(self, folder: Path, n: int, frames: int, size: int):
        super().__init__(n, frames, size)
        self.folder, self._local = str(folder), threading.local()

    def window(self, item, out, rng):
        ds = getattr(self._local, "ds", None)
        if ds is None:
            from litdata import StreamingDataset  # (benchmark-only peer)

            ds = self._local.ds = StreamingDataset(self.folder)
        augment_frames(np.asarray(ds[item]["frames"]), out, rng)


class _StoreWindow:
    """Picklable ``optimize`` fn: one ``(video, start)`` window of a store, as (T, H, W, 3)."""

    def __init__(self, store: str, windows, frames: int):
        self.store, self.windows, self.frames = store, windows, frames

    def __call__(self, j: int) -> dict:
        from hyperframes.store import open_store

        v, start = self.windows[j]
        got = open_store(self.store).read_numpy(v, np.arange(start, start + self.frames))
        return {"frames": np.ascontiguousarray(got.transpose(0, 2, 3, 1))}


def write_litdata(store_path: str, windows, frames: int, out: Path) -> None:
    """``windows`` ``(video, start)`` of the store decoded and written by ``litdata.optimize``."""
    from _common import litdata_optimize

    litdata_optimize(_StoreWindow(store_path, windows, frames), list(range(len(windows))), out)
