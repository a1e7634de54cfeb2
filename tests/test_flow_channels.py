"""Optical flow in the dataset (issue 12 item 3, dataset half): a texture translated by a known
(dx, dy) per frame, stored with ``--flow dis``; the window flow at stride 1 and 2, its
geometry under transforms, the channel layout's extra planes and a channel model on them."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from _media import make_translating_video
from _per_sample import per_sample
from hyperframes import models
from hyperframes._core._contract import InputContract
from hyperframes._core._errors import ConfigError, DataError
from hyperframes.data import HyperframeDataset, loader
from hyperframes.data._warp import compose_flow, resize_flow
from hyperframes.data.transforms import (
    ColorJitter,
    Compose,
    RandomHorizontalFlip,
    Resize,
    Reverse,
)

DX, DY = 1.5, -1.0
T = 4


@pytest.fixture(scope="module")
def moving_store(tmp_path_factory):
    from hyperframes.build import BuildOptions, build_store

    tmp = tmp_path_factory.mktemp("flow")
    make_translating_video(tmp / "src" / "move.mkv", DX, DY, frames=10, size=64)
    out = tmp / "store"
    build_store(tmp / "src", out, BuildOptions(size="none", flow="dis"), progress=False)
    return out


def interior_mean(flow: torch.Tensor, margin: int = 10) -> torch.Tensor:
    """Mean (dx, dy) over the pairs, away from the borders."""
    return flow[..., margin:-margin, margin:-margin].mean(dim=(-1, -2)).reshape(-1, 2).mean(0)


# -- pure -----------------------------------------------------------------------------------


def test_compose_flow_chains_pairs_and_resize_scales_vectors():
    pairs = torch.zeros(3, 2, 8, 8)
    pairs[:, 0], pairs[:, 1] = 1.0, -0.5
    torch.testing.assert_close(
        compose_flow(pairs, 0, 0, 3)[:, 2:5, 0:4].mean((1, 2)), torch.tensor([3.0, -1.5])
    )
    torch.testing.assert_close(compose_flow(pairs, 0, 2, 1).mean((1, 2)), torch.tensor([-1.0, 0.5]))
    assert not compose_flow(pairs, 0, 1, 1).any()
    big = resize_flow(pairs, (16, 32))
    assert big.shape == (3, 2, 16, 32)
    torch.testing.assert_close(big[0, :, 4, 4], torch.tensor([4.0, -1.0]))


# -- through the dataset ----------------------------------------------------------------------


@pytest.mark.parametrize("stride", [1, 2])
def test_window_flow_matches_the_known_translation(moving_store, stride):
    ds = HyperframeDataset(
        moving_store, "uniform", frames=T, flow=True, sampler_options={"clips": 1, "stride": stride}
    )
    s = ds[0]
    assert s.flow.shape == (T - 1, 2, 64, 64) and s.flow.dtype == torch.float32
    assert set(np.diff(s.meta["stored_indices"]).tolist()) == {stride}
    mean = interior_mean(s.flow)
    assert abs(float(mean[0]) - DX * stride) < 0.25 * stride, mean
    assert abs(float(mean[1]) - DY * stride) < 0.25 * stride, mean
    assert s.meta["registered"] is None


def test_flow_follows_the_transforms_geometry(moving_store):
    plain = HyperframeDataset(
        moving_store, "uniform", frames=T, flow=True, sampler_options={"clips": 1}
    )[0]
    ref = interior_mean(plain.flow)
    flipped = HyperframeDataset(
        moving_store,
        "uniform",
        frames=T,
        flow=True,
        sampler_options={"clips": 1},
        transform=Compose([RandomHorizontalFlip(1.0), ColorJitter(0.3, 0.3, 0.3), Resize(32)]),
    )[0]
    assert flipped.frames.shape == (T, 3, 32, 32) and flipped.flow.shape == (T - 1, 2, 32, 32)
    got = interior_mean(flipped.flow, margin=5)
    # mirrored: dx changes sign; half the size: vectors halve
    torch.testing.assert_close(got, torch.stack([-ref[0], ref[1]]) / 2, atol=0.1, rtol=0)
    with pytest.raises(ConfigError, match="Reverse"):
        HyperframeDataset(moving_store, frames=T, flow=True, transform=Reverse(1.0))[0]


def test_channel_layout_appends_flow_and_a_channel_model_takes_it(moving_store):
    ds = HyperframeDataset(
        moving_store, "uniform", frames=T, flow=True, layout="channel", sampler_options={"clips": 1}
    )
    assert ds.in_channels == 3 * T + 2 * (T - 1)
    s = ds[0]
    assert s.frames.shape == (ds.in_channels, 64, 64) and s.frames.dtype == torch.float32
    torch.testing.assert_close(s.frames[3 * T :], s.flow.flatten(0, 1))
    assert float(s.frames[: 3 * T].max()) <= 1.0  # frames scaled to [0, 1] beside the flow
    model = models.create("channel_resnet18", num_classes=3, frames=T, extra_channels=2 * (T - 1))
    conv = model.backbone.conv1
    assert conv.in_channels == ds.in_channels
    batch = next(iter(loader(ds, batch_size=2, shuffle=False, workers=0)))
    assert batch.frames.shape == (1, ds.in_channels, 64, 64)
    assert model(batch.frames).shape == (1, 3)
    # the contract does the same from temporal windows and the batch's flow
    temporal = HyperframeDataset(
        moving_store, "uniform", frames=T, flow=True, sampler_options={"clips": 1}
    )
    b = next(iter(loader(temporal, batch_size=2, shuffle=False, workers=0)))
    c = InputContract(frames=T, layout="channel", size=None, flow=True)
    x = c.prepare(b.frames, flow=b.flow)
    assert x.shape == (1, ds.in_channels, 64, 64) and model(x).shape == (1, 3)
    torch.testing.assert_close(x[:, 3 * T :], b.flow.flatten(1, 2))
    with pytest.raises(DataError, match="optical flow"):
        c.prepare(b.frames)
    with pytest.raises(ConfigError, match="channel layout"):
        InputContract(frames=T, layout="temporal", flow=True)
    assert InputContract.from_dict(c.to_dict()) == c and c.to_dict()["flow"] is True


def test_flow_needs_a_store_with_flow(tmp_path):
    from _media import write_video
    from hyperframes.build import BuildOptions, build_store

    write_video(tmp_path / "src" / "a.mp4", frames=6)
    build_store(tmp_path / "src", tmp_path / "s", BuildOptions(size="none"), progress=False)
    with pytest.raises(DataError, match="--flow"):
        HyperframeDataset(tmp_path / "s", frames=T, flow=True)
    with pytest.raises(DataError, match="--flow"):
        HyperframeDataset(tmp_path / "s", frames=T, register="flow")
    with pytest.raises(ConfigError, match="register="):
        HyperframeDataset(tmp_path / "s", frames=T, register="affine")


@pytest.mark.parametrize("mode", ["threads", "processes"])
def test_flow_is_the_same_in_every_worker_mode(moving_store, mode):
    ds = HyperframeDataset(moving_store, "sliding", frames=T, flow=True, register="flow")
    ref = [ds[i] for i in range(len(ds))]
    got = list(loader(ds, batch_size=2, shuffle=False, workers=2, mode=mode))
    flow = torch.cat([b.flow for b in got])
    assert flow.shape == (len(ds), T - 1, 2, 64, 64)
    assert torch.equal(flow, torch.stack([s.flow for s in ref]))
    assert torch.equal(torch.cat([b.frames for b in got]), torch.stack([s.frames for s in ref]))
    assert all(m["registered"] == "flow" for b in got for m in b.meta)
    # the pair flows read once for both uses give the flow of a window without registration
    plain = HyperframeDataset(moving_store, "sliding", frames=T, flow=True)
    assert torch.equal(flow, torch.stack([plain[i].flow for i in range(len(plain))]))


def test_an_hdf5_copy_serves_the_same_flow(moving_store, tmp_path):
    from hyperframes.build import convert_to_hdf5

    h5 = tmp_path / "move.h5"
    convert_to_hdf5(moving_store, h5, progress=False)
    kw = {"frames": T, "flow": True, "register": "homography"}
    a = HyperframeDataset(moving_store, "sliding", **kw)
    b = HyperframeDataset(h5, "sliding", **kw)
    ref = torch.stack([a[i].flow for i in range(len(a))])
    got = list(loader(b, batch_size=2, shuffle=False, workers=2, mode="processes"))
    assert torch.equal(torch.cat([x.flow for x in got]), ref)
    frames = torch.stack([a[i].frames for i in range(len(a))])
    assert torch.equal(torch.cat([x.frames for x in got]), frames)


def test_batch_pipeline_moves_flow_with_each_samples_box_and_flip(moving_store):
    """The batch path (boxes drawn per sample, one buffer) gives the flow the per-sample path's
    geometry gives: cropped and resized with the frames' box (vectors scaled), dx negated
    when the sample is mirrored."""
    from hyperframes.data import collate_hyperframes
    from hyperframes.data.transforms import RandomResizedCrop

    aug = Compose([RandomResizedCrop(48, scale=(0.3, 0.6)), RandomHorizontalFlip()])

    def batch(pipeline: bool):
        ds = HyperframeDataset(
            moving_store,
            "sliding",
            frames=T,
            transform=aug,
            flow=True,
            sampler_options={"window_stride": 1},
            seed=4,
        )
        if not pipeline:  # read whole, or per sample
            return per_sample(ds, list(range(len(ds))))
        return collate_hyperframes(ds.__getitems__(list(range(len(ds)))))

    fast, slow = batch(True), batch(False)
    assert fast.flow.shape == slow.flow.shape == (len(fast), T - 1, 2, 48, 48)
    for k in range(len(fast)):
        want, got = interior_mean(slow.flow[k], 8), interior_mean(fast.flow[k], 8)
        assert torch.sign(got[0]) == torch.sign(want[0])  # the flip's dx sign, sample by sample
        torch.testing.assert_close(got, want, atol=0.25, rtol=0.1)


def test_a_batch_that_registers_by_flow_and_carries_flow_reads_its_pair_flows_once(
    moving_store, monkeypatch
):
    ds = HyperframeDataset(moving_store, "sliding", frames=T, flow=True, register="flow")
    reads = []
    stored = ds.store.read_flow_stored

    def counted(video, lo, hi):
        reads.append((video, lo, hi))
        return stored(video, lo, hi)

    monkeypatch.setattr(ds.store, "read_flow_stored", counted)
    batch = ds.__getitems__(list(range(len(ds))))
    assert batch.flow is not None and batch.flow.shape[0] == len(ds)
    assert len(reads) == len(set(reads)) == len(ds)  # one read per window, not one per track
