"""The batch pipeline: from a batch of item keys to the model's input, whole batches at a time.

In the spirit of FFCV's pipeline stages, each stage works on the whole batch and the buffer is
allocated once (from the dataset's pool, or in shared memory inside a worker process):

1. **plan** (:func:`plan_batch`): the sampler's per-item plans (pure, seeded by (seed, epoch,
   item)) become a (B, T) index array and a (B, T) mask;
2. **draw** (:meth:`Recipe.draw`): each sample's crop box and flips, drawn from the sample's
   own generator (:func:`~.transforms.transform_generator`) in the order the transforms draw
   them, so boxes are those of the transform run on one window and the same for any worker count;
3. **read + crop + resize** (:func:`hyperframes.store.read_boxes`): each box resized
   straight into the (B, T, C, h, w) uint8 batch buffer, whatever the stored shapes, the
   flips in the same pass (OpenCV); float frames and frames on a GPU by torch
   (:func:`read_boxes_torch`);
4. **tracks** (:func:`batch_tracks`): registration through each sample's box and flip, flow
   moved with the frames' boxes, each one call for the batch;
5. **steps** (:func:`run_steps`): every other transform step in order, each a batch
   operation: its parameters drawn per sample from the same generators (``draw``), then
   applied to the whole batch (``batch_apply``: colour jitter and hue as uint8 / float32
   OpenCV passes with per-sample factors, affine warps, noise, temporal reorders, a user's
   callable wrapped in :class:`~.transforms.PerSample` sample by sample); the flow follows
   their geometry;
6. **audio** (:func:`batch_audio`) at the pts of the frames the steps left.

Every transform is taken: the recipe (:class:`Recipe`) reads only the steps' ``geometry``
(``"box"``, ``"mirror"``, ...), never their classes. Nothing goes sample by sample: a float
store's frames and frames on a GPU take the read's torch form (:func:`read_boxes_torch`: each
window read whole on the reader's device, cropped and resized with ``F.interpolate`` in
float32, flipped, into the batch buffer) and then the same tracks, steps and output; a task's
read stage (:mod:`~._stages`) beside flow or registration runs after the tracks (flow is
refused when the stage moves pixels); windows that come out in different sizes are a
``DataError`` (a batch of one always reads). A task's targets come from its target stage
(:mod:`~._stages`), at the read or on the output frames.

On uint8 frames, pixels differ from the transform run window by window (torchvision) by the
resize filter only: OpenCV's bilinear
(``INTER_LINEAR``; area averaging ``INTER_AREA`` when a fixed resize shrinks, or when a random
resized crop shrinks by 2x or more) on uint8 against torchvision's antialiased bilinear; and colour jitter computes its grey (contrast's mean,
saturation's blend) with OpenCV's uint8 arithmetic, within a level or two of torchvision's.
Registration warps the cropped frames, so near a box's edges, where content comes from
outside the box, it gives zeros where warping whole frames would give pixels.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch

from .._core._errors import ConfigError, DataError
from ..sampling import Plan
from ._flow_geometry import _jacobian
from .transforms import Window, batch_steps, transform_generator

__all__ = [
    "BatchPlan",
    "Drawn",
    "Recipe",
    "batch_audio",
    "batch_tracks",
    "plan_batch",
    "read_boxes_torch",
    "run_steps",
]


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


def plan_batch(
    keys: Sequence[tuple[int, int]],
    sampler,
    table,
    video_ids: np.ndarray,
    seed: int,
    *,
    plan: Callable[[tuple[int, int]], Plan] | None = None,
) -> BatchPlan:
    """Plan every (epoch, item) of ``keys``: ``sampler``'s
    :meth:`~hyperframes.sampling.Sampler.plan_columns` over ``table`` (its videos the store's
    ``video_ids``), all items at once, seeded by ``seed``; or, given ``plan`` (a dataset that
    plans its own way), ``plan(key)`` item by item (a :class:`~hyperframes.sampling.Plan`
    naming the store's video)."""
    epochs = np.asarray([k[0] for k in keys], np.int64)
    items = np.asarray([k[1] for k in keys], np.int64)
    if plan is None:
        video, index, mask, clip, segment = sampler.plan_columns(table, items, epochs, seed=seed)
        ids = np.asarray(video_ids, np.int64)[video]
        return BatchPlan(epochs, items, ids, index, mask, clip, segment)
    plans = [plan(k) for k in keys]
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
    """A transform's steps (:func:`~.transforms.batch_steps`) as the pipeline runs them: a
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
        sample's own generator (:func:`~.transforms.transform_generator`), the crop's then
        the fused flips', as the transform run on one window draws them. None when the output sizes
        differ (no fixed-size crop over a store of mixed shapes)."""
        b, t = len(plan), plan.index.shape[1]
        crop = self.crop
        gens: tuple = (None,) * b
        if self.random:
            gens = tuple(
                transform_generator(seed, int(plan.epochs[k]), int(plan.items[k])) for k in range(b)
            )
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


def run_steps(steps: Sequence, batch: Window, generators: Sequence, flow=None) -> tuple:
    """Every step of ``steps`` over ``batch`` (frames (B, T, C, H, W), indices and mask
    (B, T) tensors), in order: each sample's parameters drawn from its generator
    (``step.draw``), then the step on the whole batch (``step.batch_apply``). ``flow``
    (B, T-1, 2, H, W), when given, follows the geometric steps as the per-window
    :func:`~._flow_geometry.follow_geometry` does: the step, with the same parameters,
    resamples the flow beside a map of pixel coordinates, whose Jacobian turns the vectors
    into the output's pixels. Returns the batch and the flow."""
    aux = None
    if flow is not None and flow.shape[1] and any(s.geometry != "none" for s in steps):
        b, n, _, h, w = flow.shape
        ys, xs = torch.meshgrid(
            torch.arange(h, dtype=torch.float32),
            torch.arange(w, dtype=torch.float32),
            indexing="ij",
        )
        coords = torch.stack([xs, ys]).expand(b, n, 2, h, w)
        aux = torch.cat([coords, flow.float()], 2)
    for step in steps:
        if flow is not None:
            _check_flow_step(step)
        shape = tuple(batch.frames.shape[1:])
        params = [step.draw(g, shape) for g in generators]
        if aux is not None and step.geometry != "none":
            ones = torch.ones(aux.shape[:2], dtype=torch.bool)
            aux = step.batch_apply(Window(aux, torch.zeros(aux.shape[:2]), ones), params)[0]
        batch = step.batch_apply(batch, params)
    if aux is not None:
        flow = torch.stack([_output_vectors(a) for a in aux])
    return batch, flow


def _check_flow_step(step) -> None:
    who = type(step).__name__
    if step.changes_sequence or step.changes_count:
        raise ConfigError(
            f"flow=True: transform {who} reorders or drops frames, which breaks the flow "
            "between consecutive frames; leave it out"
        )
    if step.geometry == "unknown":
        raise ConfigError(
            f"flow=True: cannot tell how transform {who} moves pixels; the flow follows "
            "Resize, CenterCrop, RandomCrop, RandomResizedCrop, RandomHorizontalFlip, "
            "RandomAffine and photometric transforms"
        )


def _output_vectors(aux: torch.Tensor) -> torch.Tensor:
    """(n, 2, h, w) flow in output pixels from ``aux`` (n, 4, h, w): source coordinates
    then source vectors, through the inverse of the coordinates' Jacobian."""
    inv = torch.linalg.inv(_jacobian(aux[:, :2]))
    return torch.einsum("ij,njhw->nihw", inv, aux[:, 2:]).contiguous()


# -- tracks ------------------------------------------------------------------------------------
def batch_tracks(
    tracks, layout: str, plan: BatchPlan, drawn: Drawn, frames: torch.Tensor
) -> tuple[torch.Tensor, dict]:
    """The tracks that follow the read's geometry, each one call for the whole batch
    (``tracks``, a :class:`~._tracks.WindowTracks`: its batched methods): ``frames``
    registered onto each window's key frame (``register=``; frames 0, or T//2 in the
    ``"keyframe"`` ``layout``) through each sample's box and flip; ``flow`` (B, T-1, 2, h, w)
    moved with each sample's box and flip. Returns the frames and the tracks present."""
    out: dict = {}
    if tracks.register is not None:
        key = plan.index.shape[1] // 2 if layout == "keyframe" else 0
        frames = tracks.registered_batch(
            frames, plan.videos, plan.index, drawn.boxes, key, flip=drawn.flips
        )
    if tracks.flow:
        out["flow"] = tracks.window_flow_batch(
            plan.videos, plan.index, drawn.boxes, drawn.size, drawn.flips
        )
    return frames, out


def batch_audio(tracks, fps: np.ndarray, plan: BatchPlan, pts: np.ndarray) -> dict:
    """``audio`` (B, n_mels, T*k) and ``audio_mask`` (B, T) at the frames' ``pts`` (B, T),
    one call for the batch through ``tracks`` (``fps``: every store video's; none without an
    audio track)."""
    if tracks.audio is None:
        return {}
    audio, mask = tracks.read_audio_batch(plan.videos, pts, fps[plan.videos], plan.mask)
    return {"audio": audio, "audio_mask": mask}
