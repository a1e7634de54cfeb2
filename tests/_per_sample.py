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
            flow = ds.tracks.window_flow(plan.video, idx.numpy(), tuple(x.shape[-2:]))
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
