"""Layouts rearrange a window (views where possible); collation stacks windows into batches."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from hyperframes import ConfigError, DataError
from hyperframes._core._layouts import (
    KeyframeWindow,
    expand_channel_stats,
    from_layout,
    list_layouts,
    to_layout,
)
from hyperframes.data._collate import collate_windows
from hyperframes.data.transforms import Window

T, C, H, W = 5, 3, 6, 7


def window(dtype=torch.uint8, t=T, h=H, w=W):
    return torch.arange(t * C * h * w).reshape(t, C, h, w).remainder(251).to(dtype)


def test_list_layouts():
    assert list_layouts() == ["temporal", "channel", "conv3d", "keyframe"]


def test_unknown_layout_lists_allowed_names():
    with pytest.raises(
        ConfigError,
        match=r"unknown layout 'nchw'; allowed layouts are temporal, channel, conv3d, keyframe",
    ):
        to_layout(window(), "nchw")


def test_wrong_rank_is_a_data_error():
    with pytest.raises(DataError, match=r"\(T, C, H, W\) or a batch .* got shape \(3, 6, 7\)"):
        to_layout(window()[0], "channel")


def test_temporal_is_identity():
    x = window()
    assert to_layout(x, "temporal") is x


@pytest.mark.parametrize("dtype", [torch.uint8, torch.float32])
def test_channel_is_frame_major_view(dtype):
    x = window(dtype)
    y = to_layout(x, "channel")
    assert y.shape == (T * C, H, W) and y.dtype == dtype
    assert y.data_ptr() == x.data_ptr()
    for f in range(T):
        for c in range(C):
            assert torch.equal(y[C * f + c], x[f, c])
    assert torch.equal(from_layout(y, "channel", frames=T), x)


def test_channel_of_non_contiguous_input_still_correct():
    x = window().transpose(-1, -2)  # not contiguous: reshape copies
    y = to_layout(x, "channel")
    assert torch.equal(y[C * 2 + 1], x[2, 1])


def test_conv3d_is_permuted_view():
    x = window()
    y = to_layout(x, "conv3d")
    assert y.shape == (C, T, H, W) and y.data_ptr() == x.data_ptr()
    assert torch.equal(y[1, 3], x[3, 1])
    assert torch.equal(from_layout(y, "conv3d"), x)


def test_keyframe_is_middle_frame_plus_context():
    x = window(t=6)
    k = to_layout(x, "keyframe")
    assert isinstance(k, KeyframeWindow)
    assert torch.equal(k.key, x[3]) and k.context is x
    assert k.key.data_ptr() == x[3].data_ptr()
    assert from_layout(k, "keyframe") is x


def test_batched_layouts():
    b = torch.stack([window(), window() + 1])
    ch = to_layout(b, "channel")
    assert ch.shape == (2, T * C, H, W) and ch.data_ptr() == b.data_ptr()
    assert torch.equal(ch[1, C * 4 + 2], b[1, 4, 2])
    c3 = to_layout(b, "conv3d")
    assert c3.shape == (2, C, T, H, W) and torch.equal(c3[1, 2, 4], b[1, 4, 2])
    k = to_layout(b, "keyframe")
    assert k.key.shape == (2, C, H, W) and torch.equal(k.key[1], b[1, T // 2])
    assert torch.equal(from_layout(ch, "channel", frames=T), b)
    assert torch.equal(from_layout(c3, "conv3d"), b)


def test_expand_channel_stats():
    mean = [0.1, 0.2, 0.3]
    ch = expand_channel_stats(mean, "channel", frames=2)
    assert ch.shape == (6, 1, 1)
    assert ch.flatten().tolist() == pytest.approx([0.1, 0.2, 0.3, 0.1, 0.2, 0.3])
    assert expand_channel_stats(mean, "conv3d").shape == (3, 1, 1, 1)
    assert expand_channel_stats(mean, "temporal").shape == (3, 1, 1)
    with pytest.raises(DataError, match="needs frames="):
        expand_channel_stats(mean, "channel")


# -- collation ----------------------------------------------------------------------------------


def test_collate_windows_keeps_uint8_and_masks():
    ws = [
        Window(window(), torch.arange(T), torch.ones(T, dtype=torch.bool)),
        Window(window() + 1, np.arange(T) * 2, np.array([1, 1, 1, 0, 0], bool)),
    ]
    b = collate_windows(ws)
    assert b.frames.shape == (2, T, C, H, W) and b.frames.dtype == torch.uint8
    assert b.indices.shape == (2, T) and b.indices.dtype == torch.int64
    assert b.mask.shape == (2, T) and b.mask.dtype == torch.bool
    assert b.mask[1].tolist() == [True, True, True, False, False]


def test_collate_dicts_and_tensors_and_keyframes():
    samples = [
        {"frames": window(), "mask": np.ones(T, bool), "label": 3, "video": "a.mp4"},
        {"frames": window(), "mask": np.ones(T, bool), "label": 4, "video": "b.mp4"},
    ]
    b = collate_windows(samples)
    assert b["frames"].shape == (2, T, C, H, W) and b["frames"].dtype == torch.uint8
    assert b["mask"].dtype == torch.bool and b["label"].tolist() == [3, 4]
    assert b["video"] == ["a.mp4", "b.mp4"]
    assert collate_windows([window(), window()]).shape == (2, T, C, H, W)
    k = collate_windows([to_layout(window(), "keyframe")] * 3)
    assert k.key.shape == (3, C, H, W) and k.context.shape == (3, T, C, H, W)


def test_collate_different_sizes_names_sizes_and_transforms():
    with pytest.raises(
        DataError, match=r"different sizes 6x7, 8x9; .*RandomResizedCrop.*Resize.*CenterCrop"
    ):
        collate_windows([window(), window(h=8, w=9)])


def test_collate_different_frame_counts():
    with pytest.raises(DataError, match=r"different shapes .*short='pad'"):
        collate_windows([window(), window(t=4)])


def test_collate_different_dtypes():
    with pytest.raises(DataError, match=r"different dtypes torch.float32, torch.uint8"):
        collate_windows([window(), window(torch.float32)])


def test_collate_empty_and_unknown():
    with pytest.raises(DataError, match="empty list"):
        collate_windows([])
    with pytest.raises(DataError, match="cannot batch int"):
        collate_windows([1, 2])


def test_dataloader_workers_give_the_same_batches():
    from torch.utils.data import DataLoader

    from hyperframes.data._torch_samplers import EpochSampler

    loaders = [
        DataLoader(
            _PlannedWindows(),
            batch_size=4,
            sampler=EpochSampler(12, seed=1),
            num_workers=workers,
            collate_fn=collate_windows,
        )
        for workers in (0, 2)
    ]
    single, multi = ([b for b in loader] for loader in loaders)
    assert len(single) == len(multi) == 3
    for a, b in zip(single, multi):
        assert a["frames"].dtype == torch.uint8 and a["frames"].shape == (4, 4, C, 4, 4)
        assert torch.equal(a["frames"], b["frames"]) and torch.equal(a["label"], b["label"])
    assert multi[0]["frames"].is_shared()  # stacked straight into shared memory in the worker


class _PlannedWindows(torch.utils.data.Dataset):
    """12 synthetic videos planned by a random sampler and augmented per (seed, epoch, item)."""

    def __init__(self):
        from hyperframes.data.transforms import Compose, RandomCrop, transform_generator
        from hyperframes.sampling import VideoMeta, create_sampler

        self.videos = [VideoMeta(10 + i, 30.0, label=i % 3) for i in range(12)]
        self.sampler = create_sampler("random", frames=4)
        self.aug = Compose([RandomCrop(4)])
        self.gen = transform_generator

    def __len__(self):
        return self.sampler.num_items(self.videos)

    def __getitem__(self, item):
        p = self.sampler.plan(self.videos, item, seed=0, epoch=0)
        frames = window(t=self.videos[p.video].num_frames)[torch.from_numpy(p.frame_indices)]
        w = self.aug(frames, p.frame_indices, p.mask, generator=self.gen(0, 0, item))
        return {"frames": w.frames, "mask": w.mask, "label": self.videos[p.video].label}
