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

import torch

from ..._core._errors import ConfigError, DataError
from ...data import HyperframeDataset, StageBatch
from ...models import bicubic_upscale, downscale, neighbour_blend

__all__ = ["FrameTaskDataset", "FrameTaskTargets", "downscale"]


class FrameTaskTargets:
    """The frame tasks' target stage (:class:`~hyperframes.data.TargetStage`, on the output
    frames): each window flipped with its own generator, then input, truth and baseline made
    for the whole batch at once (module doc)."""

    at = "output"

    def __init__(
        self, kind: str, *, factor: int = 4, filter: str = "bicubic", hflip: float = 0.0
    ) -> None:
        self.kind, self.factor, self.filter = kind, int(factor), filter
        self.hflip = float(hflip)

    def targets(self, batch: StageBatch) -> tuple[torch.Tensor, torch.Tensor]:
        window = batch.frames
        assert isinstance(window, torch.Tensor)  # the temporal layout
        if window.dtype != torch.uint8:
            raise DataError(
                f"{batch.store.path}: holds {window.dtype} frames; the {self.kind} task needs "  # type: ignore[attr-defined]
                "a store of uint8 frames (built without --dtype float16)"
            )
        if self.hflip > 0:
            flips = [float(torch.rand((), generator=g)) < self.hflip for g in batch.generators]
            if any(flips):
                chosen = torch.tensor(flips).view(-1, *(1,) * (window.dim() - 1))
                window = torch.where(chosen, window.flip(-1), window)
        k = window.shape[1] // 2
        truth = window[:, k].to(torch.float32) / 255
        if self.kind == "interpolation":
            baseline = neighbour_blend(window.to(torch.float32) / 255)
            window = window.clone()
            window[:, k] = 0  # the target is not part of the input
        else:
            try:
                window = downscale(window, self.factor, self.filter)
            except DataError as e:
                path = batch.store.videos.paths[int(batch.plan.videos[0])]  # type: ignore[attr-defined]
                raise DataError(f"{path}: {e}") from None
            low = window[:, k].to(torch.float32) / 255
            baseline = bicubic_upscale(low, self.factor).clamp_(0, 1)
        return window, torch.stack([truth, baseline], 1)


class FrameTaskDataset(HyperframeDataset):
    """A :class:`~hyperframes.data.HyperframeDataset` whose samples carry the frame task's
    ``target`` (module doc), made by its target stage (:class:`FrameTaskTargets`); ``kind``
    is ``"interpolation"`` or ``"super_resolution"``."""

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
        stage = FrameTaskTargets(kind, factor=factor, filter=filter, hflip=hflip)
        super().__init__(store, video_ids=video_ids, stage=stage, **kwargs)
        if self.layout != "temporal":
            raise ConfigError(f"the {kind} dataset gives the temporal layout only")
        if kind == "interpolation" and (self.frames < 3 or self.frames % 2 == 0):
            raise ConfigError(
                f"frames: {self.frames} but interpolation needs an odd window of 3 frames or "
                "more; allowed: 3, 5, 7, ..."
            )
        self.kind, self.factor, self.filter = kind, stage.factor, filter
        self.hflip = stage.hflip
