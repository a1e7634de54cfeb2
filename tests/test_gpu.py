"""The GPU paths: the store held on the GPU (``memory="cuda"``), augmentation of a batch on the
GPU, and a jpeg store decoded on the GPU (``decode_device="cuda"``, batched nvJPEG). Each runs
where a CUDA GPU is present (``benchmarks/gpu_check.sh`` runs them there) and is skipped here;
what needs no GPU (refusals, messages) runs everywhere."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from hyperframes import ConfigError
from hyperframes.build import BuildOptions, build_store
from hyperframes.data import HyperframeDataset, loader
from hyperframes.data.transforms import (
    Compose,
    RandomHorizontalFlip,
    RandomResizedCrop,
    transform_generator,
)
from hyperframes.data.transforms._base import apply_batch
from hyperframes.store import StoreReader

needs_cuda = pytest.mark.skipif(
    not torch.cuda.is_available(), reason="the GPU path needs a CUDA GPU; none on this machine"
)


@pytest.fixture(scope="module")
def stores(class_folder, tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("gpu")
    out = {}
    for codec in ("raw", "jpeg"):
        out[codec] = root / codec
        build_store(
            class_folder, out[codec], BuildOptions(size="none", codec=codec), progress=False
        )
    return out


@needs_cuda
def test_memory_cuda_serves_the_disk_windows_on_the_gpu(stores):
    disk = HyperframeDataset(stores["raw"], frames=6, seed=4)
    gpu = HyperframeDataset(stores["raw"], frames=6, seed=4, memory="cuda")
    assert gpu.device.type == "cuda"
    dl = loader(gpu, batch_size=3, drop_last=True)
    for batch in dl:
        assert batch.frames.is_cuda
        want = disk.__getitems__([(m["epoch"], m["item"]) for m in batch.meta])
        assert torch.equal(batch.frames.cpu(), torch.stack([h.frames for h in want]))


@needs_cuda
def test_batch_augmentation_on_the_gpu_matches_the_cpu(stores):
    ds = HyperframeDataset(stores["raw"], frames=6, seed=1)
    frames = torch.stack([h.frames for h in ds.__getitems__(range(4))]).float()
    aug = Compose([RandomResizedCrop(32), RandomHorizontalFlip()])

    def run(x):
        gens = [transform_generator(0, 0, i) for i in range(4)]
        return apply_batch(aug, x, generators=gens).frames

    cpu, gpu = run(frames), run(frames.cuda())
    assert gpu.is_cuda and gpu.shape == cpu.shape == (4, 6, 3, 32, 32)
    assert (gpu.cpu() - cpu).abs().max() < 1.0  # same parameters; interpolation rounding only


@needs_cuda
def test_jpeg_store_decoded_on_the_gpu_matches_the_cpu_decode(stores):
    cpu = HyperframeDataset(stores["jpeg"], frames=6, seed=2)
    gpu = HyperframeDataset(stores["jpeg"], frames=6, seed=2, decode_device="cuda")
    assert gpu.device.type == "cuda"
    batch = next(iter(loader(gpu, batch_size=4, drop_last=True)))
    assert batch.frames.is_cuda and batch.frames.dtype == torch.uint8
    want = cpu.__getitems__([(m["epoch"], m["item"]) for m in batch.meta])
    want = torch.stack([h.frames for h in want]).float()
    # nvJPEG and libjpeg-turbo differ in IDCT and chroma upsampling: close, not equal
    assert (batch.frames.cpu().float() - want).abs().mean() < 3.0


def test_batched_jpeg_decode_path_on_the_cpu(stores):
    """The GPU path's code (stored JPEGs in one batched torchvision call) with device="cpu"."""
    plain = HyperframeDataset(stores["jpeg"], frames=6, seed=2)
    batched = HyperframeDataset(stores["jpeg"], frames=6, seed=2, decode_device="cpu")
    got = torch.stack([h.frames for h in batched.__getitems__(range(len(batched)))])
    want = torch.stack([h.frames for h in plain.__getitems__(range(len(plain)))])
    assert got.shape == want.shape and got.dtype == torch.uint8
    assert (got.float() - want.float()).abs().mean() < 3.0
    assert batched.reader.read(0, [2, 0]).shape == (2, 3, 48, 64)
    assert isinstance(batched.reader, StoreReader)


def test_decode_device_is_refused_clearly(stores):
    if torch.cuda.is_available():
        with pytest.raises(ConfigError, match="needs a jpeg store"):
            HyperframeDataset(stores["raw"], frames=6, decode_device="cuda")
    else:
        with pytest.raises(ConfigError, match="decoding on the GPU needs a CUDA GPU"):
            HyperframeDataset(stores["jpeg"], frames=6, decode_device="cuda")
    with pytest.raises(ConfigError, match="give one or the other"):
        HyperframeDataset(stores["jpeg"], frames=6, memory="ram", decode_device="cuda")
    np.testing.assert_equal(len(HyperframeDataset(stores["jpeg"], frames=6)), 6)
