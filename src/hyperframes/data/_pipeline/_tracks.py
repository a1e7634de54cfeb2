"""The batch pipeline's tracks stage: registration, flow and audio, each one call for the
whole batch (through a :class:`~hyperframes.data._tracks.WindowTracks`)."""

from __future__ import annotations

import numpy as np
import torch

from ._plan import BatchPlan
from ._read import Drawn

__all__ = ["batch_audio", "batch_tracks", "register_key"]


def batch_tracks(
    tracks, layout: str, plan: BatchPlan, drawn: Drawn, frames: torch.Tensor
) -> tuple[torch.Tensor, dict]:
    """The tracks that follow the read's geometry, each one call for the whole batch
    (``tracks``, a :class:`~hyperframes.data._tracks.WindowTracks`: its batched methods): ``frames``
    registered onto each window's key frame (``register=``; :func:`register_key`) through
    each sample's box and flip; ``flow`` (B, T-1, 2, h, w)
    moved with each sample's box and flip. Returns the frames and the tracks present."""
    out: dict = {}
    if tracks.register is not None:
        key = register_key(tracks.register_onto, layout, plan.index.shape[1])
        frames = tracks.registered_batch(
            frames, plan.videos, plan.index, drawn.boxes, key, flip=drawn.flips
        )
    if tracks.flow:
        out["flow"] = tracks.window_flow_batch(
            plan.videos, plan.index, drawn.boxes, drawn.size, drawn.flips
        )
    return frames, out


def register_key(onto: str | None, layout: str, frames: int) -> int:
    """The frame of a window of ``frames`` that registration warps onto: ``onto`` ``"first"``
    (0) or ``"middle"`` (``frames // 2``); None: by the output ``layout`` (the keyframe
    layout's key frame, the middle, else the first). A training run sets ``onto`` from the
    model's layout, as its windows stay temporal until the contract lays them out."""
    if onto is None:
        onto = "middle" if layout == "keyframe" else "first"
    return frames // 2 if onto == "middle" else 0


def batch_audio(tracks, fps: np.ndarray, plan: BatchPlan, pts: np.ndarray) -> dict:
    """``audio`` (B, n_mels, T*k) and ``audio_mask`` (B, T) at the frames' ``pts`` (B, T),
    one call for the batch through ``tracks`` (``fps``: every store video's; none without an
    audio track)."""
    if tracks.audio is None:
        return {}
    audio, mask = tracks.read_audio_batch(plan.videos, pts, fps[plan.videos], plan.mask)
    return {"audio": audio, "audio_mask": mask}
