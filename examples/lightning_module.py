"""A Lightning module trained on a store through ``HyperframeDataModule``.

    pip install 'hyperframes-video[lightning]'
    python examples/lightning_module.py store --epochs 10

The data module reads the windows (and their order) that ``hyperframes train`` reads for the
same ``data`` options; ``dm.contract.prepare`` turns a batch of uint8 windows into the model's
floats (mean/std, layout) exactly as eval, predict and the ONNX export will.
"""

from __future__ import annotations

import argparse

import lightning as L
import torch
import torch.nn.functional as F

from hyperframes import models
from hyperframes.integrations.lightning import HyperframeDataModule


class VideoClassifier(L.LightningModule):
    def __init__(self, dm: HyperframeDataModule, name: str, frames: int) -> None:
        super().__init__()
        self.dm = dm
        self.net = models.create(name, num_classes=dm.num_classes, frames=frames, base_width=8)

    def _loss(self, batch):
        return F.cross_entropy(self.net(self.dm.contract.prepare(batch.frames)), batch.labels)

    def training_step(self, batch, index):
        loss = self._loss(batch)
        self.log("train_loss", loss, batch_size=len(batch.labels))
        return loss

    def validation_step(self, batch, index):
        self.log("val_loss", self._loss(batch), batch_size=len(batch.labels))

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=3e-3)


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("store")
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--frames", type=int, default=8)
    p.add_argument("--size", type=int, default=112)
    p.add_argument("--out", default="lightning_runs", help="Lightning's root folder")
    args = p.parse_args(argv)

    name = "r2plus1d_tiny"
    dm = HyperframeDataModule(
        args.store,
        model=name,  # fixes the layout the contract prepares
        frames=args.frames,
        batch_size=4,
        workers=0,
        drop_last=False,
        sampler_options={"stride": 2},
        augmentation={"size": args.size, "hflip": 0.5},
    )
    trainer = L.Trainer(
        max_epochs=args.epochs,
        accelerator="cpu",
        logger=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        default_root_dir=args.out,
    )
    trainer.fit(VideoClassifier(dm, name, args.frames), datamodule=dm)
    metrics = {k: float(v) for k, v in trainer.callback_metrics.items()}
    print(metrics)
    return metrics


if __name__ == "__main__":
    main()
