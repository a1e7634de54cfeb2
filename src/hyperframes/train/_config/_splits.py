"""Which videos train and which validate: the store's named splits, or a deterministic split.

A store built from a CSV annotation ``path,label,split`` carries split names; then
``train_split`` / ``val_split`` select videos by name. A store without any split gets a
per-video split that depends only on the store's video order, the labels and
``(val_fraction, split_seed)``: within each class (unlabelled videos form one group) the
videos are permuted by ``numpy.random.default_rng([split_seed, class_id + 1])`` and the first
``round(n * val_fraction)`` -- at least one when the class has two videos or more, never all
of them -- validate; the rest train (stratified, so every class is in both).
"""

from __future__ import annotations

import numpy as np

from ..._core._errors import DataError

__all__ = ["GENERATED", "resolve_split", "split_videos"]

#: how a generated split is recorded
GENERATED = "generated"


def _has_splits(store) -> bool:
    return any(v.split for v in store.videos)


def split_videos(store, val_fraction: float, seed: int) -> dict[str, np.ndarray]:
    """The deterministic stratified split: ``{"train": ids, "val": ids}`` (sorted int64)."""
    labels = np.asarray(store.videos.label_ids, dtype=np.int64)
    val = []
    for cls in np.unique(labels):
        ids = np.flatnonzero(labels == cls)
        n = len(ids)
        k = round(n * val_fraction)
        if n >= 2:
            k = min(max(k, 1), n - 1)
        else:
            k = 0
        order = np.random.default_rng([int(seed), int(cls) + 1]).permutation(n)
        val.extend(ids[order[:k]].tolist())
    val_ids = np.asarray(sorted(val), dtype=np.int64)
    train_ids = np.setdiff1d(np.arange(len(labels), dtype=np.int64), val_ids)
    return {"train": train_ids, "val": val_ids}


def resolve_split(store, name: str | None, data_cfg, *, role: str) -> tuple[np.ndarray, str]:
    """Video ids for ``role`` ("train" or "val"; ``name`` = the split name asked for, None =
    every video) and how they were chosen ("store" or :data:`GENERATED`)."""
    n = len(store.videos)
    if name is None:
        return np.arange(n, dtype=np.int64), "all"
    if _has_splits(store):
        ids = np.asarray([i for i in range(n) if store.videos[i].split == name], np.int64)
        if not len(ids):
            have = sorted({v.split for v in store.videos if v.split})
            key = f"data.{role}_split"
            raise DataError(
                f"{key}: no video of split {name!r} in {store.path}; the store's splits are "
                f"{', '.join(have)}; set {key} to one of them"
            )
        return ids, "store"
    if role not in ("train", "val"):
        raise DataError(
            f"the store {store.path} has no splits, so only the generated 'train' and 'val' "
            f"splits exist; asked for {name!r}"
        )
    ids = split_videos(store, data_cfg.val_fraction, data_cfg.split_seed)[role]
    if not len(ids):
        raise DataError(
            f"the generated {role} split of {store.path} is empty ({n} videos, val_fraction="
            f"{data_cfg.val_fraction}); add videos or change data.val_fraction"
        )
    return ids, GENERATED
