"""mmaction2 pipelines reading from a store: ``HyperframeInit`` / ``HyperframeSampleFrames`` /
``HyperframeDecode`` in place of ``DecordInit`` / ``SampleFrames`` / ``DecordDecode``, in a
real mmaction2 pipeline (skipped where mmaction2 is not installed: it is not in the lock, see
the README's "Where you already work")."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip(
    "mmaction.datasets.transforms",
    reason="mmaction2 (with mmengine, mmcv-lite < 2.2) is not installed: not in the lock",
)
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")  # mmengine's own

from mmengine.dataset import Compose  # noqa: E402
from mmengine.registry import init_default_scope  # noqa: E402

import hyperframes.integrations.mmaction  # noqa: E402,F401  (registers the transforms)
from hyperframes import DataError, HyperframeDataset  # noqa: E402
from hyperframes.store import open_store  # noqa: E402


def _pipeline(store, **sample):
    init_default_scope("mmaction")
    return Compose(
        [
            dict(type="HyperframeInit", store=str(store)),
            dict(type="HyperframeSampleFrames", frames=4, sampler="uniform", **sample),
            dict(type="HyperframeDecode"),
            dict(type="Resize", scale=(-1, 28)),
            dict(type="CenterCrop", crop_size=24),
            dict(type="FormatShape", input_format="NCTHW"),
            dict(type="PackActionInputs"),
        ]
    )


def test_an_mmaction2_pipeline_reads_the_windows_of_the_store(tiny_motion_store):
    pipe = _pipeline(tiny_motion_store, sampler_options={"clips": 2})
    store = open_store(tiny_motion_store)
    path = store.videos.paths[4]
    out = pipe(dict(filename=path, label=int(store.videos.label_ids[4]), modality="RGB"))
    assert tuple(out["inputs"].shape) == (2, 3, 4, 24, 24)  # 2 clips, NCTHW
    assert int(out["data_samples"].gt_label) == int(store.videos.label_ids[4])
    # the windows a HyperframeDataset of the same sampler plans, and their stored pixels
    ds = HyperframeDataset(store, "uniform", 4, seed=0, sampler_options={"clips": 2})
    plans = [ds.plan(i) for i in range(len(ds)) if ds.plan(i).video == 4]
    raw = _pipeline(tiny_motion_store, sampler_options={"clips": 2}).transforms[:3]
    sample = dict(video_id=4, modality="RGB")
    for t in raw:
        sample = t(sample)
    want = np.concatenate([p.frame_indices for p in plans])
    assert sample["frame_inds"].tolist() == want.tolist() and sample["num_clips"] == 2
    stored = store.read_numpy(4, want).transpose(0, 2, 3, 1)
    assert np.array_equal(np.stack(sample["imgs"]), stored)
    assert sample["imgs"][0].shape == (32, 32, 3) and sample["img_shape"] == (32, 32)


def test_a_video_not_in_the_store_is_named(tiny_motion_store):
    pipe = _pipeline(tiny_motion_store)
    with pytest.raises(DataError, match=r"'nope\.mp4' is not a video of"):
        pipe(dict(filename="nope.mp4", label=0, modality="RGB"))
