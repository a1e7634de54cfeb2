"""The keyframe model's training recipe: G pre-trained on stored optical flow, F first, then both.

For a keyframe model (G, the aggregator, turns the context frames into H_t; F segments the
hyperframe concat[K_t, H_t]), three options of ``train``:

* ``flow_pretrain_epochs: N`` -- before training, G is trained for N epochs to predict, from its
  H_t through a temporary 1x1 head, the optical flow the store holds (``build --flow``) at the
  key frame (the pair K_{t-1} -> K_t), normalised by its batch's RMS: pseudo-labels that give
  G motion structure before F relies on it. Only on a fresh run (a resumed one has G's weights);
* ``f_first_epochs: N`` -- the first N epochs train F alone on a frozen G (G in eval mode, its
  gradients dropped before each step): F learns to read the hyperframe; G and F are then
  trained together;
* every validation saves ``RUN_DIR/hidden/epoch_NNN.png``: K_t beside the picture of H_t's
  first three principal components (:func:`hyperframes.models.hidden_picture`), the check the seed
  recommends (H_t a blurred copy of the frame: G does nothing; edges of what moves: it works).
"""

from __future__ import annotations

import copy
from pathlib import Path

import torch
from torch import nn

from ..._core._errors import ConfigError
from ...data import loader
from ...models import hidden_picture, takes_recipe
from .._config._data import make_dataset

__all__ = ["hidden_picture", "pretrain_on_flow", "takes_recipe"]


def g_frozen(cfg, epoch: int) -> bool:
    return epoch < cfg.train.f_first_epochs


def freeze_phase(model, cfg, epoch: int) -> None:
    """G in eval mode during F's phase (after ``model.train()``)."""
    if takes_recipe(model) and g_frozen(cfg, epoch):
        model.aggregator.eval()


def drop_g_grads(model, cfg, epoch: int) -> None:
    """During F's phase, G's gradients are dropped before the optimizer step (the optimizer
    skips a parameter without a gradient: no update, no weight decay)."""
    if takes_recipe(model) and g_frozen(cfg, epoch):
        for p in model.aggregator.parameters():
            p.grad = None


def pretrain_on_flow(cfg, model, bundle, store, device, say=None) -> list[float]:
    """``train.flow_pretrain_epochs`` epochs of G on the store's key-frame flow; the mean loss
    of each epoch."""

    epochs = cfg.train.flow_pretrain_epochs
    if not getattr(store, "has_flow", False):
        raise ConfigError(
            f"train.flow_pretrain_epochs: {store.path} holds no optical flow to pre-train G "
            "on; build the store with --flow, or allowed: 0"
        )
    flow_cfg = copy.deepcopy(cfg)
    flow_cfg.data.flow = True
    # the stored flow cannot follow a crop, a flip, an affine or frames moved in time: G is
    # pre-trained on the windows as stored (colour jitter and noise stay)
    aug = flow_cfg.data.augmentation
    aug.size, aug.hflip, aug.affine = None, 0.0, {}
    aug.reverse = aug.drop_frame = aug.duplicate_frame = 0.0
    data = make_dataset(flow_cfg, store, bundle.train_ids, train=True)
    head = nn.Conv2d(model.aggregator.spatial[-1].out_channels, 2, 1).to(device)
    params = list(model.aggregator.parameters()) + list(head.parameters())
    opt = torch.optim.AdamW(params, lr=cfg.train.lr)
    batches = loader(data, cfg.data.batch_size, workers=0, seed=cfg.train.seed, drop_last=False)
    model.train()
    losses = []
    t = cfg.data.frames
    for epoch in range(epochs):
        batches.set_epoch(epoch)
        total, n = 0.0, 0
        for batch in batches:
            x = bundle.contract.prepare(batch.frames, device=device)
            assert batch.flow is not None  # the dataset reads flow (data.flow above)
            flow = batch.flow[:, t // 2 - 1].to(device, torch.float32)  # K_{t-1} -> K_t
            target = flow / flow.pow(2).mean().sqrt().clamp_min(1e-3)
            pred = head(model.hidden(x, batch.mask.to(device)))
            loss = nn.functional.mse_loss(pred, target)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total, n = total + float(loss.detach()) * len(batch), n + len(batch)
        losses.append(total / max(n, 1))
        if say is not None:
            say(f"G pre-training on optical flow {epoch + 1}/{epochs}: loss {losses[-1]:.3f}")
    return losses


def save_epoch_picture(model, bundle, device, run_dir: Path, epoch: int) -> Path | None:
    """``run_dir/hidden/epoch_NNN.png`` (``epoch`` counted from 0) from the first validation
    window of ``bundle`` (keyframe models only; the caller is the main process)."""
    b = bundle
    if not (takes_recipe(model) and len(b.val)):
        return None
    sample = b.val[0]
    x = b.contract.prepare(sample.frames[None], device=device)
    mask = sample.mask[None].to(device)
    path = Path(run_dir) / "hidden" / f"epoch_{epoch + 1:03d}.png"
    return hidden_picture(model, x, mask, path, mean=b.contract.mean, std=b.contract.std)
