"""A per-sample reference for the batch pipeline's tests: each window read whole from the
store, then the dataset's transform run on it alone with the sample's own generator (and the
flow moved by :func:`~hyperframes.data._flow_geometry.follow_geometry`), as a user would do
by hand. The dataset itself has one path (the batch pipeline); this is what it is compared
with."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import torch

from hyperframes._core._contract import model_frames
from hyperframes.data._flow_geometry import follow_geometry
from hyperframes.data._warp import compose_flows, resize_flow, warp_by_flow, warp_by_homography
from hyperframes.data.transforms import Window, transform_generator


def per_sample(ds, indices) -> SimpleNamespace:
    """``frames`` (B, ...) in the dataset's layout and dtype, ``flow`` (B, T-1, 2, h, w) or
    None, ``mask`` (B, T) and ``meta`` {"stored_indices": (B, T)} of ``indices``, sample by
    sample."""
    frames, flows, masks, stored = [], [], [], []
    for i in indices:
        epoch, item = ds._key(i)
        plan = ds.plan((epoch, item))
        idx = torch.from_numpy(np.asarray(plan.frame_indices, np.int64))
        mask = torch.from_numpy(np.asarray(plan.mask, bool))
        x = torch.from_numpy(np.asarray(ds.store.read_numpy(plan.video, idx.numpy())))
        flow = None
        if ds.tracks.flow:
            flow = window_flow(ds.tracks, plan.video, idx.numpy(), tuple(x.shape[-2:]))
        g = transform_generator(ds.seed, epoch, item)
        if ds.transform is not None and flow is not None:
            (x, idx, mask), flow = follow_geometry(ds.transform, Window(x, idx, mask), flow, g)
        elif ds.transform is not None:
            x, idx, mask = ds.transform(x, idx, mask, generator=g)
        frames.append(model_frames(x, ds.layout, ds.dtype, flow))
        flows.append(flow)
        masks.append(mask)
        stored.append(idx.numpy())
    return SimpleNamespace(
        frames=torch.stack(frames),
        flow=None if flows[0] is None else torch.stack(flows),
        mask=torch.stack(masks),
        meta={"stored_indices": np.stack(stored)},
    )


def window_flow(tracks, video: int, idx: np.ndarray, size: tuple[int, int]) -> torch.Tensor:
    """(T-1, 2, H, W) flow between a window's consecutive frames (stored ``idx``) at the
    stored frame size ``size``: the batch's chained pairs of one window, resized whole."""
    idx = np.asarray(idx, np.int64)
    if len(idx) < 2:
        return torch.zeros(0, 2, *size)
    return resize_flow(tracks._window_pairs([video], idx[None])[0].clone(), size)


def registered(tracks, frames: torch.Tensor, video: int, idx: np.ndarray, key: int):
    """``frames`` (T, C, H, W), whole as stored, warped onto frame ``key`` of the window."""
    idx = np.asarray(idx, np.int64)
    if tracks.register == "homography":
        return warp_by_homography(frames, tracks._to_key(video, idx, key))
    lo, hi = int(idx.min()), int(idx.max())
    one = np.asarray([video], np.int64)
    pairs = tracks._read_pairs(one, np.asarray([lo]), np.asarray([hi]))
    if not pairs.shape[0]:
        return frames
    flows = compose_flows(pairs, lo, int(idx[key]), idx)
    return warp_by_flow(frames, resize_flow(flows, tuple(frames.shape[-2:])))
