"""The batch pipeline (issue 20): a batch planned as (B, T) arrays, read + cropped + resized
into one buffer whatever the stored shapes, augmented on the whole batch, with meta as columns;
the same windows and boxes for any worker count, threads or processes; pixels as the
per-sample path's up to the resize filter."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from _media import smooth_texture, write_lossless
from _per_sample import per_sample
from hyperframes import ConfigError, DataError
from hyperframes.build import BuildOptions, build_store
from hyperframes.data import HyperframeDataset, PrefetchLoader, collate_hyperframes, loader
from hyperframes.data._record import BatchMeta
from hyperframes.data.transforms import (
    CenterCrop,
    ColorJitter,
    Compose,
    RandomHorizontalFlip,
    RandomResizedCrop,
    Resize,
    Transform,
    transform_generator,
)
from hyperframes.store import open_store

T = 4
SIZES = [(48, 64), (64, 40), (44, 44)]  # (height, width): three aspect ratios


def _write_colour_clip(path: Path, height: int, width: int, *, seed: int, frames: int = 10):
    """A lossless (FFV1) clip of a smooth colour texture drifting a pixel per frame."""
    canvas = np.stack(
        [smooth_texture(height + frames, width + frames, seed=seed * 3 + c) for c in range(3)], -1
    )
    write_lossless(path, [canvas[k : k + height, k : k + width] for k in range(frames)], 10)


@pytest.fixture(scope="module")
def mixed(tmp_path_factory):
    """A raw store of three real encoded clips of three aspect ratios (native size)."""
    root = tmp_path_factory.mktemp("mixed")
    for i, (h, w) in enumerate(SIZES):
        _write_colour_clip(root / "src" / ("ab"[i % 2]) / f"v{i}.mkv", h, w, seed=i)
    build_store(root / "src", root / "store", BuildOptions(size="none"), progress=False)
    return open_store(root / "store")


AUG = Compose([RandomResizedCrop(32), RandomHorizontalFlip(), ColorJitter(0.4, 0.4, 0.4)])


def _ds(store, transform, **kw):
    kw.setdefault("sampler_options", {"stride": 2, "window_stride": 1})
    return HyperframeDataset(store, "sliding", frames=T, seed=5, transform=transform, **kw)


def _per_sample(store, transform, indices, **kw):
    """The same windows read whole and transformed sample by sample (the reference)."""
    return per_sample(_ds(store, transform, **kw), indices)


def test_mixed_shapes_batch_into_one_tensor_with_meta_columns(mixed):
    ds = _ds(mixed, CenterCrop(36))
    assert len({tuple(s) for s in np.asarray(mixed.videos.shapes).tolist()}) == 3
    assert ds.read_batch([0]) is not None  # read whole: no per-sample tensor on the way
    samples = ds.__getitems__(list(range(len(ds))))
    batch = collate_hyperframes(samples)
    assert batch is samples  # the loader's collation hands the batch on
    assert batch.frames.shape == (len(ds), T, 3, 36, 36) and batch.frames.dtype == torch.uint8
    assert isinstance(batch.meta, BatchMeta)
    assert batch.meta["item"].tolist() == list(range(len(ds)))  # columns of B
    assert batch.meta["stored_indices"].shape == (len(ds), T)
    assert [m["item"] for m in batch.meta] == list(range(len(ds)))  # and per-sample dicts
    one = ds[3]  # ds[i] is still a Hyperframe, equal to its row of the batch
    assert torch.equal(one.frames, batch.frames[3]) and one.meta["item"] == 3
    assert np.array_equal(one.meta["pts_seconds"], batch.meta["pts_seconds"][3])


def test_store_read_batch_crops_mixed_shapes_into_a_tensor(mixed):
    reqs = [(v, np.arange(T)) for v in range(3)]
    boxes = np.array([[0, 0, 40, 40], [4, 2, 20, 16], [1, 1, 43, 38]])  # inside each video
    got = mixed.read_batch(reqs, boxes=boxes, size=(24, 24))
    assert isinstance(got, torch.Tensor) and got.shape == (3, T, 3, 24, 24)
    import cv2

    y, x, h, w = boxes[1]
    plane = mixed.read_numpy(1, [2])[0, 0, y : y + h, x : x + w]
    want = cv2.resize(np.ascontiguousarray(plane), (24, 24), interpolation=cv2.INTER_LINEAR)
    assert np.array_equal(got[1, 2, 0].numpy(), want)
    centre = mixed.read_batch(reqs, size=(40, 40))  # no boxes: the centred crop of that size
    assert torch.equal(centre[0], mixed.read(0, np.arange(T))[:, :, 4:44, 12:52])
    with pytest.raises(DataError, match="not inside"):
        mixed.read_batch(reqs, boxes=boxes + np.array([0, 9, 0, 0]), size=(24, 24))


def test_read_boxes_flips_in_its_pass_and_resizes_with_the_filter_asked(mixed):
    import cv2

    from hyperframes.store import read_boxes

    reqs = [(v, np.arange(T)) for v in range(3)]
    hw = [tuple(s[1:]) for s in np.asarray(mixed.videos.shapes).tolist()]
    assert all(h >= 44 and w >= 40 for h, w in hw)
    boxes = np.array([[0, 0, 40, 40], [4, 2, 20, 16], [0, 0, 44, 40]])  # shrink, enlarge, 2x
    flips = np.array([True, False, True])
    plain = read_boxes(mixed, reqs, boxes, np.empty((3, T, 3, 22, 22), np.uint8))
    fused = read_boxes(mixed, reqs, boxes, np.empty_like(plain), flips=flips)
    assert np.array_equal(fused[0], plain[0][..., ::-1]) and np.array_equal(fused[1], plain[1])
    assert np.array_equal(fused[2], plain[2][..., ::-1])
    lin = read_boxes(mixed, reqs, boxes, np.empty_like(plain), filter="linear")
    frames = [mixed.read_numpy(v, [1])[0, 2] for v in range(3)]

    def want(k, interp):
        y, x, h, w = boxes[k]
        crop = np.ascontiguousarray(frames[k][y : y + h, x : x + w])
        return cv2.resize(crop, (22, 22), interpolation=interp)

    # "area" (the default: fixed resizes, the eval crop) averages whenever it shrinks ...
    assert np.array_equal(plain[0, 1, 2], want(0, cv2.INTER_AREA))
    # ... "linear" (random resized crops) is bilinear below a 2x shrink, area from 2x on
    assert np.array_equal(lin[0, 1, 2], want(0, cv2.INTER_LINEAR))
    assert not np.array_equal(lin[0, 1, 2], plain[0, 1, 2])
    assert np.array_equal(lin[2, 1, 2], want(2, cv2.INTER_AREA))
    assert np.array_equal(lin[1], plain[1])  # enlarging: bilinear either way
    with pytest.raises(DataError, match="filter must be one of"):
        read_boxes(mixed, reqs, boxes, np.empty_like(plain), filter="cubic")
    with pytest.raises(DataError, match="flips must be"):
        read_boxes(mixed, reqs, boxes, np.empty_like(plain), flips=[True])


def test_random_resized_crops_take_the_linear_filter_fixed_resizes_the_area_one():
    from hyperframes.data._pipeline import Recipe

    assert Recipe.of(Compose([RandomResizedCrop(32), RandomHorizontalFlip()])).filter == "linear"
    assert Recipe.of(Resize((32, 32))).filter == "area"
    assert Recipe.of(CenterCrop(32)).filter == "area"


def _batches(dl) -> dict:
    return {
        int(m["item"]): (b.frames[k].clone(), tuple(m["stored_indices"].tolist()))
        for b in dl
        for k, m in enumerate(b.meta)
    }


@pytest.mark.parametrize("mode,workers", [("threads", 0), ("threads", 2), ("processes", 2)])
def test_same_windows_and_boxes_for_any_workers(mixed, mode, workers):
    want = _batches(loader(_ds(mixed, AUG), batch_size=4, workers=0, shuffle=True))
    got = _batches(loader(_ds(mixed, AUG), batch_size=3, workers=workers, mode=mode))
    assert sorted(got) == sorted(want)
    for item, (frames, idx) in want.items():
        assert got[item][1] == idx
        assert torch.equal(got[item][0], frames), item


def test_boxes_are_the_per_sample_transforms_draws(mixed):
    ds = _ds(mixed, AUG)
    plan = ds.batch_plan(list(range(len(ds))))
    shapes = np.asarray(mixed.videos.shapes)[plan.videos][:, 1:]
    drawn = ds.recipe.draw(ds.seed, plan, shapes)
    for k in range(len(plan)):
        g = transform_generator(5, 0, k)
        assert tuple(drawn.boxes[k]) == AUG.transforms[0].box(*shapes[k].tolist(), g)


def _compare(store, transform) -> np.ndarray:
    fast = collate_hyperframes(_ds(store, transform).__getitems__(list(range(6)))).frames
    slow = _per_sample(store, transform, list(range(6)))
    return (fast.int() - slow.frames.int()).abs().numpy()


def test_crop_and_flip_equal_the_per_sample_path_exactly(mixed):
    diff = _compare(mixed, Compose([CenterCrop(40), RandomHorizontalFlip()]))
    assert diff.max() == 0


def test_resize_differs_only_by_the_filter(mixed):
    diff = _compare(mixed, Compose([RandomResizedCrop(32), RandomHorizontalFlip()]))
    assert diff.mean() < 2.0 and np.percentile(diff, 99) <= 10  # bilinear vs antialiased


def test_colour_jitter_on_the_batch_matches_torchvision(mixed):
    diff = _compare(mixed, Compose([CenterCrop(40), ColorJitter(0.4, 0.4, 0.4)]))
    assert diff.mean() < 0.6 and np.percentile(diff, 99.9) <= 2 and diff.max() <= 4


class _Custom(Transform):
    def apply(self, window, generator):
        return window._replace(frames=window.frames[..., :20, :20])


def test_a_users_transform_runs_in_the_batch_pipeline(mixed):
    aug = Compose([CenterCrop(40), _Custom(), RandomHorizontalFlip()])
    ds = _ds(mixed, aug)
    samples = ds.__getitems__([0, 1, 2])
    batch = collate_hyperframes(samples)
    assert batch.frames.shape == (3, T, 3, 20, 20) and isinstance(batch.meta, BatchMeta)
    slow = _per_sample(mixed, aug, [0, 1, 2])
    assert torch.equal(batch.frames, slow.frames)
    # frames of different stored sizes with no fixed-size first step cannot share a buffer
    with pytest.raises(DataError, match="different sizes"):
        _ds(mixed, Resize(30)).read_batch([0, 1, 2, 3, 4, 5])


def test_mixed_shapes_without_a_size_transform_still_explain(mixed):
    ds = _ds(mixed, None)
    with pytest.raises(DataError, match="different sizes"):
        collate_hyperframes(ds.__getitems__(list(range(len(ds)))))


def _normalised(batch):
    from hyperframes.data.transforms._normalize import normalize

    return normalize(batch.frames, (0.5, 0.5, 0.5), (0.25, 0.25, 0.25))


def test_prefetch_on_the_cpu_hands_batches_through_prepared(mixed):
    dl = loader(_ds(mixed, CenterCrop(36)), batch_size=4, workers=0, shuffle=False)
    want = [b.frames.clone() for b in dl]
    pf = PrefetchLoader(dl, "cpu", prepare=_normalised)
    got = list(pf)
    assert len(pf) == len(dl) == len(got) and pf.dataset is dl.dataset
    for (batch, x), frames in zip(got, want):
        assert torch.equal(batch.frames, frames)
        assert torch.allclose(x, (frames.float() / 255 - 0.5) / 0.25)


needs_cuda = pytest.mark.skipif(
    not torch.cuda.is_available(),
    reason="GPU prefetch (pinned memory, side CUDA stream) needs a CUDA GPU; none here",
)


@needs_cuda
def test_prefetch_to_the_gpu_on_a_side_stream_gives_the_cpu_results(mixed):
    dl = loader(_ds(mixed, AUG), batch_size=4, workers=2, shuffle=False, pin_memory=True)
    want = [_normalised(b) for b in dl]
    got = list(PrefetchLoader(dl, "cuda", prepare=_normalised))
    assert len(got) == len(want)
    for (batch, x), w in zip(got, want):
        assert batch.frames.is_cuda and x.is_cuda
        torch.testing.assert_close(x.cpu(), w)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the refusal without a GPU")
def test_prefetch_to_a_missing_gpu_is_refused_with_the_way_out(mixed):
    dl = loader(_ds(mixed, CenterCrop(36)), batch_size=4, workers=0)
    with pytest.raises(ConfigError, match="no CUDA GPU here; give device='cpu'"):
        PrefetchLoader(dl, "cuda")


def test_bench_reads_mixed_shapes_through_the_crop_path(mixed):
    from hyperframes.bench import format_bench, run_bench

    result = run_bench(mixed.path, frames=T, batch=3, windows=6, decoders=[], budget_seconds=0.1)
    assert result["crop"] == [40, 40]  # the smallest frame's short side
    assert result["window_bytes"] == T * 3 * 40 * 40  # memcpy of the crop path's output
    assert result["rows"]["store:raw"]["windows_per_s"] > 0
    assert "crop path" in format_bench(result)


def test_a_crop_larger_than_some_frames_names_the_sizes(mixed):
    ds = _ds(mixed, CenterCrop(46))  # the 64x40 and 44x44 videos cannot give it
    with pytest.raises(
        DataError, match=r"CenterCrop: crop 46x46 is larger than the (64x40|44x44) frames"
    ):
        ds.__getitems__(list(range(len(ds))))
