"""Windows for the frame tasks: input, target and baseline made at load.

``train.task: interpolation``: the target is the window's middle frame ``T // 2`` (T odd), the
input the window with that frame zeroed (the model never reads it), the baseline the linear
blend of its two neighbours.

``train.task: super_resolution``: the target is the window's key frame ``T // 2`` at store
resolution; the input is the whole window downscaled ``factor`` times by ``filter``
(:func:`downscale`, what the run's contract records as ``frame_task``), the baseline the
bicubic upscaling of the low-resolution key frame (:func:`hyperframes.models._restore.bicubic_upscale`).

The sample's ``target`` is float32 (2, 3, H, W) in [0, 1]: the true frame and the baseline
(``batch.target`` (B, 2, 3, H, W)), so metrics against the baseline need nothing else.
``hflip`` > 0 mirrors the window before any of this (with the sample's own generator).
"""

from __future__ import annotations

import dataclasses

import torch

from .._core._errors import ConfigError, DataError
from ..data import HyperframeDataset
from ..data.transforms import transform_generator
from ..models import bicubic_upscale, downscale, neighbour_blend

__all__ = ["FrameTaskDataset", "downscale"]


class FrameTaskDataset(HyperframeDataset):
    """A :class:`~hyperframes.data.HyperframeDataset` whose samples carry the frame task's
    ``target`` (module doc); ``kind`` is ``"interpolation"`` or ``"super_resolution"``."""

    def __init__(
        self,
        store,
        video_ids,
        *,
        kind: str,
        factor: int = 4,
        filter: str = "bicubic",
        hflip: float = 0.0,
        **kwargs,
    ) -> None:
        if kind not in ("interpolation", "super_resolution"):
            raise ConfigError(f"kind {kind!r}: allowed: interpolation, super_resolution")
        super().__init__(store, video_ids=video_ids, **kwargs)
        if self.layout != "temporal":
            raise ConfigError(f"the {kind} dataset gives the temporal layout only")
        if kind == "interpolation" and (self.frames < 3 or self.frames % 2 == 0):
            raise ConfigError(
                f"frames: {self.frames} but interpolation needs an odd window of 3 frames or "
                "more; allowed: 3, 5, 7, ..."
            )
        self.kind, self.factor, self.filter = kind, int(factor), filter
        self.hflip = float(hflip)

    def _finish(self, frames, plan, key, video_id):
        sample = super()._finish(frames, plan, key, video_id)
        window = sample.frames
        assert isinstance(window, torch.Tensor)  # the temporal layout
        if window.dtype != torch.uint8:
            raise DataError(
                f"{self.store.path}: holds {window.dtype} frames; the {self.kind} task needs a "
                "store of uint8 frames (built without --dtype float16)"
            )
        if self.hflip > 0:
            g = transform_generator(self.seed, *key)
            if float(torch.rand((), generator=g)) < self.hflip:
                window = window.flip(-1)
        k = window.shape[0] // 2
        truth = window[k].to(torch.float32) / 255
        if self.kind == "interpolation":
            baseline = neighbour_blend(window[None].to(torch.float32) / 255)[0]
            window = window.clone()
            window[k] = 0  # the target is not part of the input
        else:
            try:
                window = downscale(window, self.factor, self.filter)
            except DataError as e:
                raise DataError(f"{self.store.videos[video_id].path}: {e}") from None
            low = window[k : k + 1].to(torch.float32) / 255
            baseline = bicubic_upscale(low, self.factor)[0].clamp_(0, 1)
        target = torch.stack([truth, baseline])
        return dataclasses.replace(sample, frames=window, target=target)
