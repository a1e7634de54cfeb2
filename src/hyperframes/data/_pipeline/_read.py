"""The batch pipeline's read stage: the recipe of a transform, each sample's draws (crop box,
flips), and the torch form of the read (:func:`read_boxes_torch`)."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import torch

from ..transforms import batch_steps, transform_generators
from ._plan import BatchPlan

__all__ = ["Drawn", "Recipe", "read_boxes_torch"]


@dataclasses.dataclass(frozen=True)
class Drawn:
    """A batch's read-side draws: ``boxes`` (B, 4) (top, left, height, width) in stored
    pixels, ``size`` (h, w) of the output, ``flips`` (B,) whether each sample's read mirrors
    it (an odd number of the flips fused into the read), and each sample's ``generators``
    (None for a recipe that draws nothing), which the steps after the read go on drawing
    from."""

    boxes: np.ndarray
    size: tuple[int, int]
    flips: np.ndarray
    generators: tuple


@dataclasses.dataclass(frozen=True)
class Recipe:
    """A transform's steps (:func:`~hyperframes.data.transforms.batch_steps`) as the pipeline runs them: a
    first ``"box"`` step (a crop or resize) done by the read, the ``"mirror"`` steps right
    after it fused into the read, and the rest applied to the batch in order
    (:func:`run_steps`). Which step is which is the steps' own ``geometry``: the pipeline
    knows no transform class."""

    steps: tuple

    @classmethod
    def of(cls, transform) -> Recipe:
        """The recipe of ``transform`` (None, a transform, a Compose or a plain callable)."""
        return cls(tuple(batch_steps(transform)))

    @property
    def crop(self) -> Any:
        """The first step when the read can do it (``geometry == "box"``), else None."""
        return self.steps[0] if self.steps and self.steps[0].geometry == "box" else None

    @property
    def _fused(self) -> int:
        """How many steps the read does: the crop and the flips right after it."""
        n = int(self.crop is not None)
        while n < len(self.steps) and self.steps[n].geometry == "mirror":
            n += 1
        return n

    @property
    def rest(self) -> tuple:
        """The steps after the read, in order."""
        return self.steps[self._fused :]

    @property
    def filter(self) -> str:
        """The read's resize filter (:mod:`hyperframes._core._resize`): the crop's
        ``read_filter``: ``"linear"`` for random resized crops (training), ``"area"`` for
        fixed resizes and the eval crop."""
        return self.crop.read_filter if self.crop is not None else "area"

    @property
    def antialias(self) -> bool:
        """Whether the torch form of the read (:func:`read_boxes_torch`) antialiases its
        resize: the crop's own ``antialias`` (True, torchvision's default, without one)."""
        return bool(getattr(self.crop, "antialias", True))

    @property
    def random(self) -> bool:
        """Whether any step draws (a user's step may, whatever it says: it gets a generator,
        as a transform run on one window does)."""
        return any(s.random or s.geometry == "unknown" for s in self.steps)

    def draw(self, seed: int, plan: BatchPlan, shapes: np.ndarray, channels: int = 3):
        """The read's draws for every sample (``shapes`` (B, 2) stored (H, W)): each from the
        sample's own generator (:func:`~hyperframes.data.transforms.transform_generator`), the crop's then
        the fused flips', as the transform run on one window draws them. None when the output sizes
        differ (no fixed-size crop over a store of mixed shapes)."""
        b, t = len(plan), plan.index.shape[1]
        crop = self.crop
        gens: tuple = (None,) * b
        if self.random:
            gens = transform_generators(seed, plan.epochs, plan.items)
        boxes = np.empty((b, 4), np.int64)
        sizes: set[tuple[int, int]] = set()
        if crop is None or not crop.random:  # the box depends on the frame shape only
            for hw in {tuple(x) for x in shapes.tolist()}:
                h, w = int(hw[0]), int(hw[1])
                box, size = crop.read_box(h, w, None) if crop else ((0, 0, h, w), (h, w))
                boxes[(shapes == hw).all(1)] = box
                sizes.add(tuple(size))
        else:
            for k in range(b):
                box, size = crop.read_box(int(shapes[k, 0]), int(shapes[k, 1]), gens[k])
                boxes[k], sizes = box, sizes | {tuple(size)}
        if len(sizes) != 1:
            return None
        size = sizes.pop()
        flips = np.zeros(b, bool)
        for step in self.steps[int(crop is not None) : self._fused]:
            flips ^= np.asarray([bool(step.draw(g, (t, channels, *size))) for g in gens])
        return Drawn(boxes, size, flips, gens)


def read_boxes_torch(
    reader, plan: BatchPlan, drawn: Drawn, out: torch.Tensor, *, antialias: bool = True
) -> torch.Tensor:
    """The read step's torch form, for frames OpenCV's uint8 read does not take (a float
    store, frames on a GPU): each window of ``plan`` read whole from ``reader``, cropped to
    its box of ``drawn``, resized (``F.interpolate``, bilinear, ``antialias``; in float32,
    rounded back for uint8) and mirrored where ``drawn.flips`` says, straight into ``out``
    (B, T, C, h, w), on the frames' device. Windows with one box (a centre crop, a fixed
    resize) are resized in one call. Returns ``out``."""
    got = reader.read_batch(list(zip(plan.videos.tolist(), plan.index)))
    windows = list(got) if isinstance(got, (list, tuple)) else got.unbind(0)
    boxes = [tuple(int(v) for v in box) for box in drawn.boxes.tolist()]
    if len(set(boxes)) == 1 and not isinstance(got, (list, tuple)):
        out.copy_(
            _resize_box(torch.as_tensor(got, device=out.device), boxes[0], drawn.size, antialias)
        )
    else:
        for k, (window, box) in enumerate(zip(windows, boxes)):
            w = torch.as_tensor(window, device=out.device)
            out[k].copy_(_resize_box(w, box, drawn.size, antialias))
    for k in np.flatnonzero(drawn.flips).tolist():
        out[k] = out[k].flip(-1)
    return out


def _resize_box(frames: torch.Tensor, box: tuple, size: tuple, antialias: bool) -> torch.Tensor:
    """``frames`` (..., C, H, W) cropped to ``box`` (top, left, h, w) and resized to ``size``
    (h, w) bilinearly, computed in float32 (float16 and uint8 have no antialiased kernels
    everywhere) and given back in the frames' dtype (uint8 rounded)."""
    top, left, h, w = box
    frames = frames[..., top : top + h, left : left + w]
    if (h, w) == tuple(size):
        return frames
    lead = frames.shape[:-3]
    flat = frames.reshape(-1, *frames.shape[-3:]).to(torch.float32)
    resized = torch.nn.functional.interpolate(
        flat, size=tuple(size), mode="bilinear", align_corners=False, antialias=antialias
    )
    if not frames.is_floating_point():
        resized = resized.round_().clamp_(0, 255)
    return resized.to(frames.dtype).reshape(*lead, *resized.shape[-3:])
