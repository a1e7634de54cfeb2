"""``HyperframeDataset``: a map-style dataset of windows planned by a sampler, read in batches
from a store, augmented with per-sample seeds and shaped into a layout."""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable, Mapping, Sequence
from numbers import Integral
from typing import TYPE_CHECKING

import numpy as np
import torch

from .._core._contract import model_frames
from .._core._device import torch_dtype
from .._core._errors import ConfigError, DataError
from ..sampling import Plan, VideoTable
from ..store import read_boxes
from ._buffers import BatchBuffers
from ._cache_plan import CachePlan, plan_cache
from ._collate import SIZE_HINT, collate_targets
from ._dataset_setup import (
    choose_videos,
    open_dataset_store,
    resolve_sampler,
    video_table,
)
from ._gpu_jpeg import CudaJpegReader
from ._memory import InMemoryStore, held_dtype
from ._options import (
    OutputOptions,
    ReadOptions,
    SamplingOptions,
    TrackOptions,
    dataset_options,
)
from ._pipeline import (
    BatchPlan,
    Recipe,
    TargetStage,
    batch_audio,
    batch_record,
    batch_tracks,
    meta_columns,
    plan_batch,
    read_boxes_torch,
    run_steps,
    stage_batch,
)
from ._record import BatchMeta, Hyperframe, HyperframeBatch
from ._targets import TargetMaker
from ._tracks import WindowTracks
from .transforms import Window, flip_batch

if TYPE_CHECKING:
    from ..store import StoreReader


class HyperframeDataset(torch.utils.data.Dataset):
    """Windows of ``frames`` frames from ``store`` (a path, a URL or an opened store).

    ``sampler`` is a registered name (``random``, ``sliding``, ``segments``, ``uniform``,
    ``duration``, ``keyframes``, ``per_segment``) or a sampler object; ``transform`` (from
    :mod:`hyperframes.data.transforms`) augments each window with the sample's own seeded
    generator. The other options come in four groups, each a frozen, validated model of
    :mod:`hyperframes.data._options` (or a mapping of its fields):

    * ``sampling=`` :class:`SamplingOptions`: the videos (``split``, ``video_ids``,
      ``exclude_damaged``), the sampler's options, ``clips_per_video``, ``seed``, ``epoch``;
    * ``output=`` :class:`OutputOptions`: ``layout``, ``dtype``, ``targets`` (a ``target``
      from the store's annotations: ``"multi_hot"`` (C,), ``"frames"`` (T, C));
    * ``reading=`` :class:`ReadOptions`: ``memory`` (``"disk"``, ``"ram"``, ``"cuda[:N]"``),
      its ``memory_budget`` and ``memory_priority``, ``decode_device`` (a jpeg store decoded
      on the GPU), ``cache_dir`` / ``cache_limit`` (a store at a URL);
    * ``tracks=`` :class:`TrackOptions`: ``audio``, ``audio_missing``, ``flow``, ``register``
      (see :mod:`hyperframes.data._tracks`; the store must hold them).

    ``stage=`` (by keyword) is a task's :class:`~._pipeline.TargetStage`: its targets (a key
    frame's mask, boxes, a frame task's truth) made a whole batch at a time inside the batch
    pipeline, at the read or on the output frames (:mod:`hyperframes.data._pipeline._targets`).

    Any of those options may also be given on its own by keyword (``seed=0``,
    ``layout="channel"``, ``flow=True``): it goes to its group, replacing that field of a
    group given beside it. An unknown keyword is a :class:`ConfigError` listing the allowed
    ones. ``dataset.options`` (:class:`DatasetOptions`) holds every option as resolved.

    Items are numbered by the sampler over the chosen videos; an item may also be given as
    ``(epoch, item)``, which is how :func:`hyperframes.loader` carries the epoch into
    persistent workers. With the ``per_segment`` sampler an item is one labelled segment of a
    video, and ``meta["segment"]`` is the store's segment row (-1 for other samplers).
    ``clips_per_video=n`` draws n windows from each of a random sampler's items per epoch,
    each its own item seeded by (seed, epoch, item) (:meth:`Sampler.with_clips_per_video`).

    A batch (``__getitems__``, as the loader reads) is read whole into one buffer with its
    tracks, with no per-sample object, by the batch pipeline
    (:mod:`hyperframes.data._pipeline`), which runs every transform as a batch operation (a
    plain callable wrapped in :class:`~.transforms.PerSample`).

    """

    def __init__(
        self,
        store,
        sampler="random",
        frames: int = 16,
        transform: Callable | None = None,
        *,
        tracks: TrackOptions | Mapping | None = None,
        sampling: SamplingOptions | Mapping | None = None,
        output: OutputOptions | Mapping | None = None,
        reading: ReadOptions | Mapping | None = None,
        **options,
    ):
        if isinstance(transform, Integral) and not isinstance(transform, bool):
            warnings.warn(
                "HyperframeDataset's 4th positional argument is the transform now; give the "
                "seed by keyword (seed=, or SamplingOptions(seed=) as sampling=)",
                DeprecationWarning,
                stacklevel=2,
            )
            options = {"seed": transform, **options}
            transform = None
        #: the task's target stage (:mod:`hyperframes.data._pipeline._targets`; None: the store's targets)
        self.stage: TargetStage | None = options.pop("stage", None)
        if self.stage is not None and not isinstance(self.stage, TargetStage):
            raise ConfigError(
                f"stage {type(self.stage).__name__}: a target stage needs an 'at' (\"read\" or "
                '"output") and a targets(batch) method; see hyperframes.data.TargetStage'
            )
        groups = {"tracks": tracks, "sampling": sampling, "output": output, "reading": reading}
        #: every option, by group (:mod:`hyperframes.data._options`)
        self.options = dataset_options(groups, options)
        draw, out, read = self.options.sampling, self.options.output, self.options.reading
        self.store = open_dataset_store(store, read.cache_dir, read.cache_limit)
        self.tracks = WindowTracks(self.store, **self.options.tracks.as_dict())
        self.layout, self.dtype, self.transform = out.layout, out.dtype, transform
        self.seed, self.epoch, self.frames = draw.seed, draw.epoch, int(frames)
        self.sampler = resolve_sampler(
            sampler, frames, draw.sampler_options, out.layout, draw.clips_per_video
        )
        videos = self.store.videos
        ids = choose_videos(self.store, draw.split, draw.video_ids, draw.exclude_damaged)
        self.video_ids = ids
        self.table = self._table(videos)
        self._targets = TargetMaker(videos, ids, self.table.segments, out.targets)
        self.targets = out.targets
        #: what windows are read from: the store, or the store held in RAM / on a GPU
        self.reader: StoreReader = self.store
        #: the videos a memory cache holds (``memory_budget``; None: no memory cache)
        self.cache_plan: CachePlan | None = None
        self._choose_reader(read)
        self._buffers = BatchBuffers()
        self._len = self.sampler.num_items(self.table)
        #: what the batch pipeline does with ``transform``
        self.recipe = Recipe.of(transform)

    def _choose_reader(self, read: ReadOptions) -> None:
        """:attr:`reader` for ``read.memory`` (a memory cache of ``read.memory_budget`` bytes)
        or for ``read.decode_device`` (JPEGs decoded on the GPU; ReadOptions refuses both);
        the store itself on disk without."""
        if read.memory != "disk":
            device = "cpu" if read.memory == "ram" else read.memory
            budget = read.memory_budget
            self.cache_plan = self._plan_cache(budget, read.memory_priority)
            hold = None if budget is None else self.cache_plan.videos
            self.reader = InMemoryStore(self.store, device=device, hold=hold)
        if read.decode_device is not None:
            self.reader = CudaJpegReader(self.store, device=read.decode_device)

    def _plan_cache(self, budget: int | None, priority: str) -> CachePlan:
        """Which of this dataset's videos a memory cache of ``budget`` bytes holds."""
        videos, ids = self.store.videos, self.video_ids
        shapes = np.asarray(videos.shapes).reshape(-1, 3)[ids]
        per_frame = shapes.prod(axis=1) * held_dtype(self.store.dtype).itemsize
        size = np.asarray(videos.num_frames)[ids] * per_frame
        reads = np.bincount(self.sampler.item_videos(self.table), minlength=len(ids))
        labels = np.asarray(videos.label_ids)[ids]
        return plan_cache(ids, size, reads, labels, budget=budget, priority=priority)

    @property
    def in_channels(self) -> int:
        """Channels of a sample's frames in the channel layout: C*T, plus 2*(T-1) with flow."""
        c = int(self.store.videos.shapes[0][0]) if len(self.store.videos) else 3
        return c * self.frames + (2 * (self.frames - 1) if self.tracks.flow else 0)

    @property
    def device(self) -> torch.device:
        """Where the batches' frames are: the CPU, or the GPU of ``memory="cuda"`` or
        ``decode_device="cuda"`` (the loader then reads in the calling thread)."""
        return getattr(self.reader, "device", torch.device("cpu"))

    def _table(self, videos) -> VideoTable:
        """The sampler's view of the chosen videos (:func:`video_table`)."""
        table, self._segment_rows = video_table(self.store, videos, self.video_ids, self.sampler)
        return table

    def __len__(self) -> int:
        return self._len

    def set_epoch(self, epoch: int) -> None:
        self.epoch = int(epoch)

    @property
    def classes(self) -> list[str]:
        """The store's class names: label ``k`` of an item is ``classes[k]`` (-1: none; empty
        for an unlabelled store)."""
        return list(self.store.classes)

    @property
    def labels(self) -> np.ndarray:
        """Label of each item (for class-balanced sampling)."""
        return np.asarray(self.sampler.item_labels(self.table))

    def _key(self, index) -> tuple[int, int]:
        if isinstance(index, tuple):
            epoch, item = index
        else:
            epoch, item = self.epoch, index
        item = int(item)
        if not 0 <= item < self._len:
            raise IndexError(f"item {item} is out of range: the dataset has {self._len} items")
        return int(epoch), item

    def __getitem__(self, index) -> Hyperframe:
        return self.__getitems__([index])[0]

    def plan(self, index) -> Plan:
        """Which frames item ``index`` (or ``(epoch, item)``) reads: a :class:`Plan` whose
        ``video`` is the store's video id. Pure index arithmetic: nothing is read."""
        epoch, item = self._key(index)
        p = self.sampler.plan(self.table, item, seed=self.seed, epoch=epoch)
        return Plan(int(self.video_ids[p.video]), p.frame_indices, p.mask, p.clip, p.segment)

    def batch_plan(self, indices: Sequence) -> BatchPlan:
        """The plans of ``indices`` (ints or (epoch, item)) as columns (a
        :class:`~._pipeline.BatchPlan`): the sampler's, all items at once, or :meth:`plan`
        item by item for a subclass that plans its own way. Nothing is read."""
        own = type(self).plan is not HyperframeDataset.plan
        keys = [self._key(i) for i in indices]
        return plan_batch(
            keys,
            self.sampler,
            self.table,
            self.video_ids,
            self.seed,
            plan=self.plan if own else None,
        )

    def __getitems__(self, indices: Sequence) -> HyperframeBatch:
        """The batch of ``indices``, as the loader reads it (its collation hands the batch on
        as it is; the batch is also the sequence of its samples): :meth:`read_batch`."""
        return self.read_batch(indices)

    def _stage_at(self, at: str) -> TargetStage | None:
        return self.stage if self.stage is not None and self.stage.at == at else None

    def _run_stage(
        self, at: str, frames, plan: BatchPlan, target: torch.Tensor | None = None
    ) -> tuple:
        """The frames and target after the target stage that runs ``at`` (``"read"`` or
        ``"output"``; the frames and ``target`` as they are without one)."""
        stage = self._stage_at(at)
        if stage is None:
            return frames, target
        frames, got = stage.targets(stage_batch(frames, plan, self.store, self.seed))
        return frames, (target if got is None else got)

    def read_batch(self, indices: Sequence) -> HyperframeBatch:
        """The batch of ``indices`` through the batch pipeline, with no per-sample object,
        whatever the transform, the store's dtype or where the frames are (module doc of
        :mod:`~._pipeline`). Windows that come out in different sizes (no fixed-size crop
        over a store of mixed shapes) are a :class:`DataError`; a batch of one always reads."""
        if not len(indices):
            raise DataError("read_batch: no items given; a batch needs at least one")
        plan = self.batch_plan(indices)
        shapes = np.asarray(self.store.videos.shapes)[plan.videos]
        drawn = self.recipe.draw(self.seed, plan, shapes[:, 1:])
        if len(set(shapes[:, 0].tolist())) != 1 or drawn is None:
            stored = ", ".join("x".join(map(str, s)) for s in sorted(set(map(tuple, shapes))))
            raise DataError(
                f"cannot batch windows of different sizes {stored} (as stored: C x H x W) "
                f"into one batch; {SIZE_HINT}"
            )
        shape = (len(plan), plan.index.shape[1], int(shapes[0, 0]), *drawn.size)
        frames = self._read(plan, drawn, shapes, shape)
        stage = self._stage_at("read")
        if stage is not None and (self.tracks.flow or self.tracks.register):
            # registered as read, then moved by the stage; the flow cannot follow a move
            frames, tracks = self._tracks(plan, drawn, frames)
            moved, target = self._run_stage("read", frames, plan)
            if moved is not frames and self.tracks.flow:
                raise ConfigError(
                    f"flow=True: target stage {type(stage).__name__} moves the frames (a crop "
                    "or a flip at the read), which the flow cannot follow; turn the task's "
                    "crop and flip off (size=None, hflip=0) or leave flow out"
                )
            frames = moved
        else:
            frames, target = self._run_stage("read", frames, plan)
            frames, tracks = self._tracks(plan, drawn, frames)
        # the other steps after registration; they may reorder frames
        index, mask = torch.from_numpy(plan.index), torch.from_numpy(plan.mask)
        window, flow = run_steps(
            self.recipe.rest, Window(frames, index, mask), drawn.generators, tracks.get("flow")
        )
        if flow is not None:
            tracks["flow"] = flow
        if window.indices is not index or window.mask is not mask:
            plan = dataclasses.replace(plan, index=window.indices.numpy(), mask=window.mask.numpy())
        meta = meta_columns(self.store, plan, self.seed, self._segment_rows, self.tracks.register)
        fps = np.asarray(self.store.videos.fps, np.float64)
        tracks.update(batch_audio(self.tracks, fps, plan, meta["pts_seconds"]))
        return self._assemble(window.frames, plan, meta, tracks, target)

    def _read(self, plan: BatchPlan, drawn, shapes: np.ndarray, shape: tuple) -> torch.Tensor:
        """The read step: every window cropped to its box, resized and flipped straight into
        one (B, T, C, h, w) buffer. uint8 frames on the CPU go through OpenCV
        (:func:`~hyperframes.store.read_boxes`); a float store's frames or frames on a GPU
        through torch (:func:`~._pipeline.read_boxes_torch`), in the reader's dtype on its
        device."""
        frames = self._buffer(shape)
        whole = (drawn.boxes[:, :2] == 0).all() and (drawn.boxes[:, 2:] == drawn.size).all()
        if whole and (shapes[:, 1:] == drawn.size).all():  # no crop: the reader's batch read
            self.reader.read_windows(plan.videos, plan.index, out=frames)  # the plan's columns
            return flip_batch(frames, drawn.flips)
        if frames.dtype == torch.uint8 and frames.device.type == "cpu":
            read_boxes(
                self.reader,
                list(zip(plan.videos, plan.index)),
                drawn.boxes,
                frames.numpy(),
                flips=drawn.flips,
                filter=self.recipe.filter,
            )
            return frames
        return read_boxes_torch(self.reader, plan, drawn, frames, antialias=self.recipe.antialias)

    def _tracks(self, plan: BatchPlan, drawn, frames: torch.Tensor) -> tuple:
        """Registration and flow (:func:`~._pipeline.batch_tracks`) on the CPU, where the
        tracks are read; frames on a GPU go there and back."""
        if self.device.type == "cpu" or self.tracks.register is None:
            return batch_tracks(self.tracks, self.layout, plan, drawn, frames)
        got, tracks = batch_tracks(self.tracks, self.layout, plan, drawn, frames.cpu())
        return got.to(frames.device), tracks

    def _assemble(
        self,
        frames: torch.Tensor,
        plan: BatchPlan,
        meta: BatchMeta,
        tracks: dict,
        target: torch.Tensor | None = None,
    ) -> HyperframeBatch:
        """The batch record of frames read and augmented by the pipeline, with its tracks:
        labels, targets (``target``: a read stage's), then dtype, layout and flow planes by
        the input contract's one layout function (:func:`~hyperframes._core._contract.model_frames`,
        which ``InputContract.prepare`` calls; the only place a batch is laid out), and the
        output stage."""
        pts = meta["pts_seconds"]
        pairs = list(zip(plan.videos.tolist(), plan.segments.tolist()))
        labels = torch.tensor([self._targets.label(v, g) for v, g in pairs], dtype=torch.int64)
        if target is None:
            target = collate_targets(
                [self._targets.target(v, g, pts[k], plan.mask[k]) for k, (v, g) in enumerate(pairs)]
            )

        flow = tracks.get("flow")
        alloc = self._take_float if frames.device.type == "cpu" else None
        window = model_frames(frames, self.layout, self.dtype, flow, alloc=alloc)
        window, target = self._run_stage("output", window, plan, target)
        return batch_record(window, labels, plan, meta, target, tracks)

    def _take_float(self, shape: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
        """A float buffer for :func:`model_frames` (pooled as the frames' buffers are)."""
        if torch.utils.data.get_worker_info() is not None:
            return torch.empty(shape, dtype=dtype).share_memory_()
        return self._buffers.take(shape, torch.empty(0, dtype=dtype).numpy().dtype)

    def _buffer(self, shape: tuple[int, ...]) -> torch.Tensor:
        """A (B, T, C, H, W) buffer of the reader's dtype: on its GPU for frames read there;
        else from the pool, or in shared memory inside a DataLoader worker process (the batch
        then reaches the main process without another copy)."""
        dtype = np.dtype(self.reader.dtype)
        if self.device.type != "cpu":
            return torch.empty(shape, dtype=torch_dtype(dtype), device=self.device)
        if torch.utils.data.get_worker_info() is not None:
            return torch.empty(shape, dtype=torch_dtype(dtype)).share_memory_()
        return self._buffers.take(shape, dtype)
