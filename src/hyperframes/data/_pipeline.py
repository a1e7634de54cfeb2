"""The batch pipeline: from a batch of item keys to the model's input, whole batches at a time.

In the spirit of FFCV's pipeline stages, each stage works on the whole batch and the buffer is
allocated once (from the dataset's pool, or in shared memory inside a worker process):

1. **plan** (:func:`plan_batch`): the sampler's per-item plans (pure, seeded by (seed, epoch,
   item)) become a (B, T) index array and a (B, T) mask;
2. **draw** (:meth:`Recipe.draw`): each sample's crop box, flip and colour factors, drawn from
   the sample's own generator (:func:`~.transforms.transform_generator`) in the order the
   transforms draw them, so boxes are the per-sample path's and the same for any worker count;
3. **read + crop + resize** (:func:`hyperframes.store.read_boxes`): each box resized
   straight into the (B, T, C, h, w) uint8 batch buffer, whatever the stored shapes;
4. **augment**: flips as an index operation on the buffer, colour jitter as uint8 operations
   with per-sample factors (:func:`jitter_batch`);
5. **tracks** (:func:`batch_tracks`): registration through each sample's box and flip,
   log-mel audio and flow moved with the frames' boxes, each one call for the batch.

A transform is taken by the pipeline when it is one of, or a :class:`~.transforms.Compose`
of, a first spatial step (``CenterCrop``, ``RandomCrop``, ``RandomResizedCrop``, ``Resize``
with (h, w), the input contract's eval crop) followed by ``RandomHorizontalFlip`` and
``ColorJitter`` (one set of factors per window, no hue) steps; :func:`recipe_of` says None for
anything else and the dataset uses the per-sample path.

Pixels differ from the per-sample path by the resize filter only: OpenCV's bilinear
(``INTER_LINEAR``; area averaging ``INTER_AREA`` when a fixed resize shrinks, or when a random
resized crop shrinks by 2x or more) on uint8 against torchvision's antialiased bilinear; and colour jitter computes its grey (contrast's mean,
saturation's blend) with OpenCV's uint8 arithmetic, within a level or two of torchvision's.
Registration warps the cropped frames, so near a box's edges, where content comes from
outside the box, it gives zeros where the per-sample path (warping whole frames) has pixels.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from .._core._errors import DataError
from .._core._resize import flip_planes
from ..store import centre_boxes
from . import transforms as R
from .transforms import (
    CenterCrop,
    ColorJitter,
    Compose,
    ContractCrop,
    RandomCrop,
    RandomHorizontalFlip,
    RandomResizedCrop,
    transform_generator,
)
from .transforms import Resize as _Resize

__all__ = ["BatchPlan", "Recipe", "batch_tracks", "jitter_batch", "plan_batch", "recipe_of"]


@dataclasses.dataclass(frozen=True)
class BatchPlan:
    """A batch's plans as columns: ``epochs``/``items`` (B,), ``videos`` (B,) store ids,
    ``index`` (B, T) stored frame indices, ``mask`` (B, T), ``clips`` and ``segments`` (B,)
    (the sampler's segment number, -1 when none)."""

    epochs: np.ndarray
    items: np.ndarray
    videos: np.ndarray
    index: np.ndarray
    mask: np.ndarray
    clips: np.ndarray
    segments: np.ndarray

    def __len__(self) -> int:
        return len(self.items)


def plan_batch(dataset, indices: Sequence, *, own_plan: bool = False) -> BatchPlan:
    """Plan every item of ``indices`` (ints or (epoch, item)) of ``dataset``: the sampler's
    :meth:`~hyperframes.sampling.Sampler.plan_columns`, all items at once, or with
    ``own_plan`` (a subclass that plans its own way) ``dataset.plan`` item by item."""
    keys = [dataset._key(i) for i in indices]
    epochs = np.asarray([k[0] for k in keys], np.int64)
    items = np.asarray([k[1] for k in keys], np.int64)
    if not own_plan:
        video, index, mask, clip, segment = dataset.sampler.plan_columns(
            dataset.table, items, epochs, seed=dataset.seed
        )
        ids = np.asarray(dataset.video_ids, np.int64)[video]
        return BatchPlan(epochs, items, ids, index, mask, clip, segment)
    plans = [dataset.plan(k) for k in keys]
    lengths = {len(p.frame_indices) for p in plans}
    if len(lengths) > 1:
        raise DataError(
            f"cannot batch windows of different lengths {sorted(lengths)}; the sampler's "
            "short='pad' keeps T fixed"
        )
    return BatchPlan(
        epochs,
        items,
        np.asarray([p.video for p in plans], np.int64),
        np.stack([np.asarray(p.frame_indices, np.int64) for p in plans]),
        np.stack([np.asarray(p.mask, bool) for p in plans]),
        np.asarray([p.clip for p in plans], np.int64),
        np.asarray([p.segment for p in plans], np.int64),
    )


# -- recipes ---------------------------------------------------------------------------------
_SPATIAL = (CenterCrop, RandomCrop, RandomResizedCrop, _Resize, ContractCrop)


def _fixed_resize(step) -> bool:
    return isinstance(step, _Resize) and len(step.size) == 2


def recipe_of(transform) -> Recipe | None:
    """The pipeline's plan for ``transform`` (None: the transform is not one it knows)."""
    if transform is None:
        return Recipe(None, ())
    steps = list(transform.transforms) if isinstance(transform, Compose) else [transform]
    crop = None
    if steps and isinstance(steps[0], _SPATIAL):
        crop = steps.pop(0)
        if isinstance(crop, _Resize) and not _fixed_resize(crop):
            return None
    for s in steps:
        if isinstance(s, RandomHorizontalFlip):
            continue
        if type(s) is ColorJitter and not s.per_frame and s.hue == (0.0, 0.0):
            continue
        return None
    return Recipe(crop, tuple(steps))


@dataclasses.dataclass(frozen=True)
class Drawn:
    """A batch's drawn parameters: ``boxes`` (B, 4) (top, left, height, width) in stored
    pixels, ``size`` (h, w) of the output, and per step after the crop its (B,) flips or
    (B, 3) colour factors (brightness, contrast, saturation)."""

    boxes: np.ndarray
    size: tuple[int, int]
    params: tuple[np.ndarray, ...]

    @property
    def flips(self) -> np.ndarray:
        """(B,) whether each sample ends mirrored (an odd number of flips)."""
        flips = np.zeros(len(self.boxes), bool)
        for p in self.params:
            if p.dtype == bool:
                flips ^= p
        return flips


def _centre_box(step, h: int, w: int) -> tuple[int, int, int, int]:
    ch, cw = step.size
    if ch > h or cw > w:
        raise DataError(
            f"CenterCrop: crop {ch}x{cw} is larger than the {h}x{w} frames; put a Resize "
            f"(or RandomResizedCrop) before it or store frames at a larger size"
        )
    return tuple(centre_boxes([(h, w)], (ch, cw))[0].tolist())


@dataclasses.dataclass(frozen=True)
class Recipe:
    """A first spatial step (or None) and the flip / jitter steps after it."""

    crop: Any
    after: tuple

    @property
    def filter(self) -> str:
        """The resize filter (:mod:`hyperframes._core._resize`): ``"linear"`` for random
        resized crops (training), ``"area"`` for fixed resizes and the eval crop."""
        return "linear" if isinstance(self.crop, RandomResizedCrop) else "area"

    @property
    def random(self) -> bool:
        return any(getattr(s, "random", False) for s in (self.crop, *self.after))

    def _box(self, h: int, w: int, g) -> tuple[tuple, Any]:
        c = self.crop
        if c is None:
            return (0, 0, h, w), (h, w)
        if isinstance(c, CenterCrop):
            return _centre_box(c, h, w), c.size
        if isinstance(c, RandomResizedCrop):
            return c.box(h, w, g), c.size
        if isinstance(c, RandomCrop):
            if c.size[0] > h or c.size[1] > w:
                raise DataError(
                    f"RandomCrop: crop {c.size[0]}x{c.size[1]} is larger than the {h}x{w} "
                    "frames; put a Resize (or RandomResizedCrop) before it or store frames at "
                    "a larger size"
                )
            top, left = R.randint(g, 0, h - c.size[0]), R.randint(g, 0, w - c.size[1])
            return (top, left, *c.size), c.size
        if isinstance(c, ContractCrop):
            return c.contract.crop_box(h, w, c.position)
        return (0, 0, h, w), tuple(c.size)  # Resize((h, w))

    def draw(self, seed: int, plan: BatchPlan, shapes: np.ndarray) -> Drawn | None:
        """Every sample's parameters (``shapes`` (B, 2) stored (H, W)); None when the output
        sizes differ (no fixed-size crop over a store of mixed shapes)."""
        b = len(plan)
        boxes = np.empty((b, 4), np.int64)
        params = [
            np.zeros(b, bool) if isinstance(s, RandomHorizontalFlip) else np.ones((b, 3))
            for s in self.after
        ]
        sizes: set[tuple[int, int]] = set()
        if not self.random:  # the box depends on the frame shape only: once per shape
            for hw in {tuple(x) for x in shapes.tolist()}:
                box, size = self._box(int(hw[0]), int(hw[1]), None)
                boxes[(shapes == hw).all(1)] = box
                sizes.add(tuple(size))
            return Drawn(boxes, sizes.pop(), tuple(params)) if len(sizes) == 1 else None
        for k in range(b):
            g = transform_generator(seed, int(plan.epochs[k]), int(plan.items[k]))
            box, size = self._box(int(shapes[k, 0]), int(shapes[k, 1]), g)
            boxes[k], sizes = box, sizes | {tuple(size)}
            for s, p in zip(self.after, params):
                if isinstance(s, RandomHorizontalFlip):
                    p[k] = R.coin(g, s.p)
                elif R.coin(g, s.p):
                    f = s._factors(g, 1)
                    p[k] = (f[0][0], f[1][0], f[2][0])
        if len(sizes) != 1:
            return None
        return Drawn(boxes, sizes.pop(), tuple(params))


# -- augmentation on the batch -----------------------------------------------------------------
def flip_batch(frames: torch.Tensor, flips: np.ndarray) -> None:
    """Mirror, in place, the (B, T, C, h, w) windows whose ``flips`` is True (OpenCV's flip
    per window: torch's ``frames[sel] = frames[sel].flip(-1)`` gathers, flips and scatters,
    ~1 ms a 16-frame 112x112 window against ~0.04 ms)."""
    arr = frames.numpy()
    for k in np.flatnonzero(flips).tolist():
        flip_planes(arr[k])


#: added to an affine map before OpenCV rounds it to uint8: ``round(v - 0.49)`` truncates, as
#: torchvision's uint8 blend does (``(a * x + b).clamp(0, 255).to(uint8)``), but for fractions
#: within 0.01 of the next level
_TRUNC = -0.49


def jitter_batch(frames: np.ndarray, factors: np.ndarray) -> None:
    """Colour jitter, in place, of uint8 (B, T, C, h, w) ``frames`` with (B, 3) per-sample
    brightness, contrast, saturation factors (1: unchanged), in that order, as torchvision's
    ``adjust_*``: brightness one affine pass over the window, contrast one per frame around
    the frame's mean grey, saturation a blend with each pixel's grey; each pass OpenCV's SIMD
    uint8 arithmetic with saturation (``convertScaleAbs`` for brightness, whose results are
    never negative, ``addWeighted`` for the rest: two to three times faster than a lookup
    table, which gathers byte by byte)."""
    import cv2  # deferred: optional/heavy dependency

    b, t, c, h, w = frames.shape
    hw = h * w
    weights = np.asarray([0.2989, 0.587, 0.114]) if c == 3 else np.ones(1)
    for k in range(b):
        fb, fc, fs = (float(v) for v in factors[k])
        sample = frames[k].reshape(t, c * hw)
        if fb != 1.0:
            cv2.convertScaleAbs(sample, dst=sample, alpha=fb, beta=_TRUNC)
        if fc != 1.0:
            sums = cv2.reduce(sample.reshape(t * c, hw), 1, cv2.REDUCE_SUM, dtype=cv2.CV_32S)
            means = sums.reshape(t, c) @ weights / hw
            if c == 3:
                means = means - 0.5  # torchvision floors each pixel's grey before the mean
            for j in range(t):
                row = sample[j : j + 1]
                beta = (1.0 - fc) * float(means[j]) + _TRUNC
                # addWeighted saturates at 0; convertScaleAbs would mirror a negative value
                cv2.addWeighted(row, fc, row, 0.0, beta, dst=row)
        if fs != 1.0 and c == 3:
            r, g, bl = sample[:, :hw], sample[:, hw : 2 * hw], sample[:, 2 * hw :]
            grey = cv2.addWeighted(r, 0.2989, g, 0.587, 0.0)
            grey = cv2.addWeighted(grey, 1.0, bl, 0.114, 0.0)
            for plane in (r, g, bl):  # strided views: OpenCV writes them in place
                cv2.addWeighted(plane, fs, grey, 1.0 - fs, _TRUNC, dst=plane)


def jitter_all(frames: torch.Tensor, recipe: Recipe, drawn: Drawn) -> None:
    """The colour jitter steps, in their order, in place on the (B, T, C, h, w) buffer."""
    for step, p in zip(recipe.after, drawn.params):
        if not isinstance(step, RandomHorizontalFlip) and (p != 1.0).any():
            jitter_batch(frames.numpy(), p)


# -- tracks ------------------------------------------------------------------------------------
def batch_tracks(
    dataset, plan: BatchPlan, drawn: Drawn, pts: np.ndarray, frames: torch.Tensor
) -> tuple[torch.Tensor, dict]:
    """Every track of the batch, in one place, each one call for the whole batch
    (:class:`~._tracks.WindowTracks`' batched methods): ``frames`` registered onto each window's
    key frame (``register=``; frames 0, or T//2 in the keyframe layout) through each
    sample's box and flip; ``audio`` (B, n_mels, T*k) and ``audio_mask`` (B, T) at the
    frames' ``pts`` (B, T); ``flow`` (B, T-1, 2, h, w) moved with each sample's box and
    flip. Returns the frames and the tracks present."""
    tracks, videos = dataset.tracks, dataset.store.videos
    out: dict = {}
    if tracks.register is not None:
        key = plan.index.shape[1] // 2 if dataset.layout == "keyframe" else 0
        frames = tracks.registered_batch(
            frames, plan.videos, plan.index, drawn.boxes, key, flip=drawn.flips
        )
    if tracks.audio is not None:
        fps = np.asarray(videos.fps, np.float64)[plan.videos]
        out["audio"], out["audio_mask"] = tracks.read_audio_batch(plan.videos, pts, fps, plan.mask)
    if tracks.flow:
        out["flow"] = tracks.window_flow_batch(
            plan.videos, plan.index, drawn.boxes, drawn.size, drawn.flips
        )
    return frames, out
