"""mmaction2 pipeline transforms that read windows from a store.

In an mmaction2 data pipeline, ``HyperframeInit`` / ``HyperframeSampleFrames`` /
``HyperframeDecode`` take the places of ``DecordInit`` / ``SampleFrames`` / ``DecordDecode``:
the frames come from the store (already decoded, resized and checked at build time), not from
the video file, and the rest of the pipeline (``Resize``, ``CenterCrop``, ``FormatShape``,
``PackActionInputs``...) is mmaction2's own::

    import hyperframes.integrations.mmaction  # registers the three transforms

    pipeline = [
        dict(type="HyperframeInit", store="store"),
        dict(type="HyperframeSampleFrames", frames=8, sampler="uniform",
             sampler_options={"clips": 2}),       # or mmaction2's SampleFrames
        dict(type="HyperframeDecode"),
        dict(type="Resize", scale=(-1, 128)), dict(type="CenterCrop", crop_size=112),
        dict(type="FormatShape", input_format="NCTHW"), dict(type="PackActionInputs"),
    ]

A sample names its video by ``filename`` (the path the store recorded, as ``hyperframes info``
lists it) or by ``video_id`` (the store's id). ``HyperframeSampleFrames`` plans with a
hyperframes sampler (``random``, ``uniform``, ``sliding``, ``keyframes``...; seeded by
``seed`` and the sample's ``epoch``, 0 when absent): the windows are exactly those a
:class:`~hyperframes.HyperframeDataset` of the same sampler and seed reads.

Only the transforms are imported from mmaction2 (``mmaction.datasets.transforms``): the
published mmaction2 1.2.0 wheel lacks ``mmaction/models/localizers/drn``, so importing
``mmaction.models`` (and ``register_all_modules``) fails there.
"""

from __future__ import annotations

import os
import threading
from typing import Any

import numpy as np

from .._core._errors import ConfigError, DataError
from ..data import HyperframeDataset
from ..store import open_store

try:  # an optional dependency: imported by this module, which only an mmaction2 user imports
    from mmaction.registry import TRANSFORMS
    from mmcv.transforms import BaseTransform
except ImportError as e:
    raise ConfigError(
        "hyperframes.integrations.mmaction needs mmaction2, mmengine and mmcv-lite (< 2.2, as "
        f"mmaction2 1.2.0 asks), which are not importable here ({e}); install them with: pip "
        "install mmaction2==1.2.0 mmengine==0.10.7 'mmcv-lite==2.1.0'"
    ) from None

__all__ = ["HyperframeDecode", "HyperframeInit", "HyperframeSampleFrames"]

_STORES: dict[str, object] = {}
_LOCK = threading.Lock()


def _store(path: str):
    """The opened store of ``path``, one per process (dataloader workers open their own)."""
    key = f"{os.getpid()}:{path}"
    with _LOCK:
        if key not in _STORES:
            _STORES[key] = open_store(path)
        return _STORES[key]


def _video_id(store, results: dict) -> int:
    videos = store.videos
    if results.get("video_id") is not None:
        vid = int(results["video_id"])
        if not 0 <= vid < len(videos):
            raise DataError(
                f"video_id {vid} is not a video of {store.path} (it holds 0..{len(videos) - 1})"
            )
        return vid
    name = results.get("filename")
    if name is None:
        raise DataError("HyperframeInit: a sample needs 'filename' (a stored path) or 'video_id'")
    paths = list(videos.paths)
    for candidate in (str(name), os.path.abspath(name)):
        if candidate in paths:
            return paths.index(candidate)
    raise DataError(
        f"HyperframeInit: {name!r} is not a video of {store.path} (its paths are as `hyperframes "
        f"info` lists them, e.g. {paths[0]!r})"
    )


@TRANSFORMS.register_module()
class HyperframeInit(BaseTransform):
    """In place of ``DecordInit``: finds the sample's video in ``store`` and sets
    ``total_frames``, ``avg_fps``, ``video_id`` and ``hf_store`` (the store's path)."""

    def __init__(self, store: str | os.PathLike) -> None:
        self.store = os.fspath(store)

    def transform(self, results: dict) -> dict:
        store = _store(self.store)
        vid = _video_id(store, results)
        results["video_id"] = vid
        results["hf_store"] = self.store
        results["total_frames"] = int(store.videos.num_frames[vid])
        results["avg_fps"] = float(store.videos.fps[vid])
        results.setdefault("start_index", 0)
        return results


@TRANSFORMS.register_module()
class HyperframeSampleFrames(BaseTransform):
    """In place of ``SampleFrames``: ``frame_inds`` of the windows a
    :class:`~hyperframes.HyperframeDataset` of ``sampler`` / ``frames`` / ``seed`` over the
    store plans for the sample's video (every item of the sampler that is of that video, in
    order: ``clip_len`` = ``frames``, ``num_clips`` = their count; module doc)."""

    def __init__(
        self,
        frames: int = 8,
        sampler: str = "uniform",
        sampler_options: dict | None = None,
        seed: int = 0,
    ) -> None:
        self.frames, self.seed = int(frames), int(seed)
        self.sampler, self.options = sampler, dict(sampler_options or {})
        self._planned: tuple[str, Any, dict[int, list[int]]] | None = None

    def _dataset(self, path: str):
        """The dataset planning the windows, and each video's items (made once per store)."""
        if self._planned is None or self._planned[0] != path:
            ds = HyperframeDataset(
                path, self.sampler, self.frames, seed=self.seed, sampler_options=self.options
            )
            items: dict[int, list[int]] = {}
            for i in range(len(ds)):  # index arithmetic only: nothing is read
                items.setdefault(ds.plan(i).video, []).append(i)
            self._planned = (path, ds, items)
        return self._planned[1], self._planned[2]

    def transform(self, results: dict) -> dict:
        ds, items = self._dataset(results["hf_store"])
        vid, epoch = int(results["video_id"]), int(results.get("epoch", 0))
        plans = [ds.plan((epoch, i)) for i in items.get(vid, [])]
        if not plans:
            raise DataError(
                f"HyperframeSampleFrames: sampler {self.sampler!r} plans no window of video "
                f"{vid} of {results['hf_store']}"
            )
        results["frame_inds"] = np.concatenate([np.asarray(p.frame_indices) for p in plans])
        results["clip_len"] = self.frames
        results["frame_interval"] = None
        results["num_clips"] = len(plans)
        return results


@TRANSFORMS.register_module()
class HyperframeDecode(BaseTransform):
    """In place of ``DecordDecode``: the frames ``frame_inds`` read from the store, as
    mmaction2 holds them: ``imgs``, a list of (H, W, 3) uint8 RGB arrays, with
    ``original_shape`` and ``img_shape``."""

    def transform(self, results: dict) -> dict:
        store = _store(results["hf_store"])
        index = np.asarray(results["frame_inds"], np.int64).reshape(-1)
        frames = store.read_numpy(int(results["video_id"]), index)  # (N, C, H, W)
        if frames.dtype != np.uint8:
            raise DataError(
                f"HyperframeDecode: {store.path} holds {frames.dtype} frames; mmaction2 "
                "pipelines take uint8 RGB (a store built with the default dtype)"
            )
        results["imgs"] = list(np.ascontiguousarray(frames.transpose(0, 2, 3, 1)))
        results["original_shape"] = results["img_shape"] = frames.shape[2:]
        return results
