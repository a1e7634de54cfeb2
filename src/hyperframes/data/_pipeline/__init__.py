"""The batch pipeline: from a batch of item keys to the model's input, whole batches at a time.

In the spirit of FFCV's pipeline stages, each stage works on the whole batch and the buffer is
allocated once (from the dataset's pool, or in shared memory inside a worker process):

1. **plan** (:func:`plan_batch`): the sampler's per-item plans (pure, seeded by (seed, epoch,
   item)) become a (B, T) index array and a (B, T) mask;
2. **draw** (:meth:`Recipe.draw`): each sample's crop box and flips, drawn from the sample's
   own generator (:func:`~hyperframes.data.transforms.transform_generator`) in the order the transforms draw
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
   callable wrapped in :class:`~hyperframes.data.transforms.PerSample` sample by sample); the flow follows
   their geometry;
6. **audio** (:func:`batch_audio`) at the pts of the frames the steps left.
7. **assemble** (:func:`meta_columns`, :func:`batch_record`): the meta columns, and the batch
   record of the frames the dataset laid out.

Every transform is taken: the recipe (:class:`Recipe`) reads only the steps' ``geometry``
(``"box"``, ``"mirror"``, ...), never their classes. Nothing goes sample by sample: a float
store's frames and frames on a GPU take the read's torch form (:func:`read_boxes_torch`: each
window read whole on the reader's device, cropped and resized with ``F.interpolate`` in
float32, flipped, into the batch buffer) and then the same tracks, steps and output; a task's
read stage (:mod:`~._targets`) beside flow or registration runs after the tracks (flow is
refused when the stage moves pixels); windows that come out in different sizes are a
``DataError`` (a batch of one always reads). A task's targets come from its target stage
(:mod:`~._targets`), at the read or on the output frames.

On uint8 frames, pixels differ from the transform run window by window (torchvision) by the
resize filter only: OpenCV's bilinear
(``INTER_LINEAR``; area averaging ``INTER_AREA`` when a fixed resize shrinks, or when a random
resized crop shrinks by 2x or more) on uint8 against torchvision's antialiased bilinear; and colour jitter computes its grey (contrast's mean,
saturation's blend) with OpenCV's uint8 arithmetic, within a level or two of torchvision's.
Registration warps the cropped frames, so near a box's edges, where content comes from
outside the box, it gives zeros where warping whole frames would give pixels.
"""

from ._assemble import batch_record, meta_columns
from ._ops import run_steps
from ._plan import BatchPlan, plan_batch
from ._read import Drawn, Recipe, read_boxes_torch
from ._targets import StageBatch, TargetStage, stage_batch
from ._tracks import batch_audio, batch_tracks

__all__ = [
    "BatchPlan",
    "Drawn",
    "Recipe",
    "StageBatch",
    "TargetStage",
    "batch_audio",
    "batch_record",
    "batch_tracks",
    "meta_columns",
    "plan_batch",
    "read_boxes_torch",
    "run_steps",
    "stage_batch",
]
