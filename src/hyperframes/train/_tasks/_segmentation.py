"""Segmentation data: windows of a store whose targets are per-frame masks beside the videos.

For a source video ``dir/name.mp4`` the masks are ``dir/name.npz`` holding ``masks``
(F, H, W) integers, one per *source* frame (what
:func:`hyperframes.demo.make_segmentation_dataset` writes). The target of a window is the mask
of its key frame, position ``T // 2``, looked up by the window's source frame index
(``meta["frame_indices"]``), so stores resampled to another fps still get the right mask; a
mask of another size than the stored frames is resized (nearest). The target travels as the
sample's typed ``target`` (:attr:`Hyperframe.target <hyperframes.data.Hyperframe>`, (H, W)
int64; ``batch.target`` (B, H, W) after collation), so the standard loader, sampler positions
and DDP split apply unchanged.

Geometry moves frames and mask together, drawn from the sample's own generator: ``size``
(not None) crops a random box of ``scale`` times the frame's area and aspect in ``ratio`` (as
:class:`~hyperframes.data.transforms.RandomResizedCrop` draws it), the same box for every
frame and the mask, and resizes it to ``size`` x ``size`` (frames bilinear with antialias, the
mask nearest, so its values stay classes); then ``hflip`` > 0 mirrors both.
"""

from __future__ import annotations

from collections import OrderedDict
from pathlib import Path

import numpy as np
import torch
import torchvision.transforms.v2.functional as TF
from torchvision.transforms import InterpolationMode

from ..._core._errors import DataError
from ...data import StageBatch
from ...data.transforms import RandomResizedCrop
from ._key_geometry import KeyFrameDataset, KeyFrameGeometry

__all__ = ["SegmentationDataset", "SegmentationTargets", "masks_path"]

_CACHE_VIDEOS = 64


def masks_path(video_path: str) -> Path:
    return Path(video_path).with_suffix(".npz")


class SegmentationTargets(KeyFrameGeometry):
    """The segmentation task's target stage (:class:`~hyperframes.data.TargetStage`, at the
    read): each window's key frame mask, frames and mask cropped and flipped together with
    the sample's own generator (module doc). Masks are cached for the most recent videos."""

    def __init__(self, **geometry) -> None:
        super().__init__(**geometry)
        #: the random crop of frames and mask (None: whole frames)
        self.crop = (
            None
            if self.size is None
            else RandomResizedCrop(self.size, scale=self.scale, ratio=self.ratio)  # type: ignore[arg-type]
        )
        self._masks: OrderedDict[int, np.ndarray] = OrderedDict()

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_masks"] = OrderedDict()  # each worker loads what it needs
        return state

    def video_masks(self, store, video_id: int) -> np.ndarray:
        """All masks (F, H, W) of a video, cached for the most recent videos."""
        got = self._masks.get(video_id)
        if got is not None:
            self._masks.move_to_end(video_id)
            return got
        rec = store.videos[video_id]
        path = masks_path(rec.path)
        try:
            with np.load(path, allow_pickle=False) as f:
                if "masks" not in f.files:
                    raise DataError(
                        f"{path}: has no 'masks' array (has {', '.join(f.files)}); segmentation "
                        "targets need masks (F, H, W) one per source frame"
                    )
                masks = np.asarray(f["masks"])
        except FileNotFoundError:
            raise DataError(
                f"{path}: missing; segmentation training needs the masks of {rec.path} in a "
                ".npz of the same name holding masks (F, H, W)"
            ) from None
        except (OSError, ValueError) as e:
            raise DataError(f"{path}: cannot be read as masks ({e})") from None
        if masks.ndim != 3:
            raise DataError(f"{path}: masks have shape {masks.shape}, expected (F, H, W)")
        self._masks[video_id] = masks
        if len(self._masks) > _CACHE_VIDEOS:
            self._masks.popitem(last=False)
        return masks

    def mask(self, store, video_id: int, source_index: int) -> torch.Tensor:
        """The (H, W) int64 mask of source frame ``source_index``, at the stored frame size."""
        masks = self.video_masks(store, video_id)
        if not 0 <= source_index < masks.shape[0]:
            raise DataError(
                f"{masks_path(store.videos[video_id].path)}: has {masks.shape[0]} masks but "
                f"source frame {source_index} was asked for; one mask per source frame is needed"
            )
        m = torch.from_numpy(masks[source_index].astype(np.int64))
        _, h, w = store.videos[video_id].shape
        if tuple(m.shape) != (h, w):
            m = torch.nn.functional.interpolate(m[None, None].float(), size=(h, w), mode="nearest")
            m = m[0, 0].to(torch.int64)
        return m

    def targets(self, batch: StageBatch) -> tuple[torch.Tensor, torch.Tensor]:
        """The batch's frames and key frame masks (B, H, W), moved together."""
        key = batch.plan.index.shape[1] // 2
        videos = batch.plan.videos.tolist()
        masks = [
            self.mask(batch.store, v, int(batch.source_index[k, key])) for k, v in enumerate(videos)
        ]
        if self.crop is None and self.hflip <= 0:
            return batch.frames, torch.stack(masks)
        out = []
        for k, g in enumerate(batch.generators):
            frames = batch.frames[k]
            if self.crop is not None:
                frames, masks[k] = self._crop(frames, masks[k], g)
            if self.hflip > 0 and float(torch.rand((), generator=g)) < self.hflip:
                frames, masks[k] = frames.flip(-1), masks[k].flip(-1)
            out.append(frames)
        return torch.stack(out), torch.stack(masks)

    def _crop(
        self, frames: torch.Tensor, target: torch.Tensor, g: torch.Generator
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Frames (T, C, H, W) and mask (H, W) cropped to one box and resized together."""
        assert self.crop is not None  # targets calls this only with a crop
        height, width = frames.shape[-2:]
        top, left, h, w = self.crop.box(int(height), int(width), g)
        size = list(self.crop.size)
        frames = TF.resized_crop(frames, top, left, h, w, size, antialias=True)
        mask = TF.resized_crop(
            target[None], top, left, h, w, size, interpolation=InterpolationMode.NEAREST
        )
        return frames, mask[0]


class SegmentationDataset(KeyFrameDataset):
    """A :class:`~hyperframes.data.HyperframeDataset` of ``video_ids`` with the
    segmentation task's target stage (:class:`SegmentationTargets`): ``hflip``, ``size``,
    ``scale`` and ``ratio`` are its options (module doc)."""

    stage_type = SegmentationTargets

    @property
    def crop(self) -> RandomResizedCrop | None:
        """The random crop of frames and mask (None: whole frames)."""
        assert isinstance(self.stage, SegmentationTargets)
        return self.stage.crop

    def video_masks(self, video_id: int) -> np.ndarray:
        """All masks (F, H, W) of a video, cached for the most recent videos."""
        assert isinstance(self.stage, SegmentationTargets)
        return self.stage.video_masks(self.store, video_id)

    def target(self, video_id: int, source_index: int) -> torch.Tensor:
        """The (H, W) int64 mask of source frame ``source_index``, at the stored frame size."""
        assert isinstance(self.stage, SegmentationTargets)
        return self.stage.mask(self.store, video_id, source_index)
