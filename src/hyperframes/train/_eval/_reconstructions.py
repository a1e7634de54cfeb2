"""PNG reconstructions of a ``masked_video`` checkpoint (``hyperframes eval --reconstructions``):
rows of a window's frames, the patches the encoder saw (masked ones grey), the reconstruction.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from ..._core._atomic import write_bytes_atomic
from ..._core._device import resolve_device
from ..._core._errors import ConfigError
from ..._core._tasks import task_traits
from ...checkpoint import load_checkpoint, rebuild_model
from ...data import loader
from ...data.transforms import contract_transform
from ...models import picture_png, reconstruction_rows
from ...store import open_store
from .._config._data import make_dataset
from .._config._load import config_from_dict
from .._config._splits import resolve_split
from .._tasks._masked import window_frames

__all__ = ["write_reconstructions"]


def _reconstructed(model, contract, batch, device) -> list[np.ndarray]:
    """The batch's frames, visible patches (masked ones grey) and reconstruction (the
    prediction de-normalised with each true patch's statistics; visible patches as they
    were): three (B, T, H, W, 3) uint8 arrays."""
    frames = window_frames(batch)
    out = model(contract.prepare(frames, device=device), mask=batch.mask.to(device)).float()
    return reconstruction_rows(out, frames)


def write_reconstructions(
    checkpoint: str | Path,
    out: str | Path,
    *,
    store: str | Path | None = None,
    split: str | None = "val",
    windows: int = 4,
    device: str = "auto",
) -> list[Path]:
    """PNG reconstructions of a ``masked_video`` checkpoint: the first ``windows`` windows of
    ``split`` of ``store`` (default: the run's; ``None``/``"all"``: every video), one centred
    window per video, ``recon_<k>.png`` in ``out``: rows of the window's frames, the visible
    patches, the reconstruction. Returns the paths."""
    ck = load_checkpoint(checkpoint)
    if not task_traits(ck.get("task") or "classification").reconstructs:
        raise ConfigError(
            f"{ck['path']}: a {ck.get('task') or 'classification'} checkpoint; reconstructions "
            "are written for masked_video checkpoints only"
        )
    raw = ck["config"]
    if store is not None:
        raw = {**raw, "data": {**raw["data"], "store": str(store)}}
    cfg = config_from_dict(raw)
    dev = resolve_device(device)
    model, contract = rebuild_model(ck, device=dev)
    st = open_store(cfg.data.store, cache_dir=cfg.data.cache_dir, cache_limit=cfg.data.cache_limit)
    every = split in (None, "all")
    role = "all" if every else ("train" if split == cfg.data.train_split else "val")
    ids, _ = resolve_split(st, None if every else split, cfg.data, role=role)
    ds = make_dataset(cfg, st, ids, train=False, transform=contract_transform(contract, "centre"))
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    paths: list[Path] = []
    with torch.no_grad():
        for batch in loader(ds, batch_size=max(1, min(windows, 8)), shuffle=False, workers=0):
            rows = _reconstructed(model, contract, batch, dev)
            for b in range(len(batch)):
                if len(paths) >= windows:
                    return paths
                png = picture_png(rows, b)
                paths.append(write_bytes_atomic(folder / f"recon_{len(paths)}.png", png))
    return paths
