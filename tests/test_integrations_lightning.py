"""``HyperframeDataModule`` in a real ``lightning.Trainer`` on CPU: a tiny model fitted on a
tiny store reads every window of an epoch once, in the order ``hyperframes train`` reads them,
reshuffled each epoch; a fit resumed from a mid-epoch checkpoint reads the rest of that epoch."""

from __future__ import annotations

import shutil

import pytest
import torch
from torch import nn

from hyperframes import ConfigError, DataError
from hyperframes.data import loader

L = pytest.importorskip("lightning", reason="lightning is an optional extra")
from hyperframes.integrations.lightning import HyperframeDataModule  # noqa: E402

pytestmark = [
    # Lightning's advice for real runs (more loader workers...), not about the data module
    pytest.mark.filterwarnings("ignore::lightning.fabric.utilities.warnings.PossibleUserWarning"),
    # Lightning 2.6 on torch 2.14's pytree: Lightning's to fix
    pytest.mark.filterwarnings("ignore:`isinstance.treespec, LeafSpec.` is deprecated"),
]

OPTIONS = {
    "frames": 4,
    "batch_size": 2,
    "workers": 0,
    "clips_per_video": 2,
    "drop_last": False,
    "sampler_options": {"stride": 2},
    "augmentation": {"size": 24, "hflip": 0.5},
}


class Tiny(L.LightningModule):
    """A linear layer on each window's mean colour; records the (epoch, item) it trains on."""

    def __init__(self, dm: HyperframeDataModule) -> None:
        super().__init__()
        self.dm = dm
        self.net = nn.Linear(3, dm.num_classes)
        self.seen: list[tuple[int, int]] = []

    def _loss(self, batch):
        x = self.dm.contract.prepare(batch.frames)  # (B, C, T, H, W) floats for conv3d
        return nn.functional.cross_entropy(self.net(x.flatten(2).mean(-1)), batch.labels)

    def training_step(self, batch, index):
        self.seen += list(zip(batch.meta["epoch"].tolist(), batch.meta["item"].tolist()))
        return self._loss(batch)

    def validation_step(self, batch, index):
        self.log("val_loss", self._loss(batch), batch_size=len(batch.labels))

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


def _fit(store, root, ckpt_path=None, callbacks=()):
    dm = HyperframeDataModule(store, model="r2plus1d_tiny", **OPTIONS)
    model = Tiny(dm)
    trainer = L.Trainer(
        max_epochs=2,
        accelerator="cpu",
        logger=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        enable_checkpointing=bool(callbacks),
        callbacks=list(callbacks),
        default_root_dir=str(root),
    )
    trainer.fit(model, datamodule=dm, ckpt_path=ckpt_path)
    return trainer, model, dm


def test_a_fit_reads_each_epoch_once_in_the_hyperframes_order_and_resumes_mid_epoch(
    tiny_motion_store, tmp_path
):
    from lightning.pytorch.callbacks import ModelCheckpoint

    saves = ModelCheckpoint(dirpath=tmp_path / "ck", every_n_train_steps=2, save_top_k=-1)
    trainer, model, dm = _fit(tiny_motion_store, tmp_path, callbacks=[saves])
    # 6 training videos x 2 windows = 12 items, batches of 2: 6 steps an epoch
    assert trainer.global_step == 12 and len(dm.train_dataloader()) == 6
    assert torch.isfinite(trainer.callback_metrics["val_loss"])
    assert dm.classes == ["left", "right", "up"]
    for epoch in (0, 1):
        items = [i for e, i in model.seen if e == epoch]
        assert sorted(items) == list(range(12))  # every window of the epoch, once
        # the order of hyperframes.loader (what `hyperframes train` reads), for that epoch
        ours = loader(dm.bundle.train, batch_size=2, shuffle=True, workers=0, seed=0)
        ours.set_epoch(epoch)
        assert items == [i for b in ours for i in b.meta["item"].tolist()]
    assert model.seen[:12] != [(0, i) for _, i in model.seen[12:]]  # reshuffled
    # resumed from the checkpoint after step 2 (mid epoch 0): the rest, not the epoch again
    mid = tmp_path / "mid.ckpt"
    shutil.move(tmp_path / "ck" / "epoch=0-step=2.ckpt", mid)
    shutil.rmtree(tmp_path / "ck")  # Lightning warns of a checkpoint folder not empty
    state = torch.load(mid, weights_only=False)["HyperframeDataModule"]["train_loader"]
    assert (state["epoch"], state["samples_yielded"]) == (0, 4)
    again = ModelCheckpoint(dirpath=tmp_path / "ck", every_n_train_steps=2, save_top_k=-1)
    _, resumed, _ = _fit(tiny_motion_store, tmp_path / "again", ckpt_path=mid, callbacks=[again])
    assert resumed.seen == model.seen[4:]


def test_options_are_checked_as_a_config_data_section(tiny_motion_store):
    with pytest.raises(ConfigError, match=r"unknown key data\.frams; did you mean data\.frames"):
        HyperframeDataModule(tiny_motion_store, frams=4)
    with pytest.raises(ConfigError, match=r"data\.batch_size: out of range: 0"):
        HyperframeDataModule(tiny_motion_store, batch_size=0)
    dm = HyperframeDataModule(tiny_motion_store, frames=4, test_split="test")
    with pytest.raises(DataError, match="has no splits"):
        dm.test_dataloader()
