"""A plain PyTorch training loop on a store: windows in, a video model, AdamW, no framework.

hyperframes build videos/ --out store --size 128
python examples/train_loop.py store --epochs 10
"""

from __future__ import annotations

import argparse

import torch
import torch.nn.functional as F

import hyperframes
from hyperframes import models
from hyperframes.data import transforms as T


def main(argv: list[str] | None = None) -> float:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("store", help="a store folder or URL (hyperframes build ... --out STORE)")
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--frames", type=int, default=8, help="frames per window (T)")
    p.add_argument("--size", type=int, default=112, help="crop size fed to the model")
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--out", default=None, help="save the weights here (a .pt file)")
    args = p.parse_args(argv)

    # every window: T frames 2 apart from a random start, one crop box and flip per window
    aug = T.Compose([T.RandomResizedCrop(args.size), T.RandomHorizontalFlip()])
    ds = hyperframes.HyperframeDataset(
        args.store,
        sampler="random",
        frames=args.frames,
        seed=0,
        layout="conv3d",  # (C, T, H, W): what a 3D CNN eats
        transform=aug,
        sampler_options={"stride": 2},
    )
    dl = hyperframes.loader(ds, batch_size=args.batch_size, drop_last=False)
    model = models.create(
        "r2plus1d_tiny", num_classes=len(ds.classes), frames=args.frames, base_width=8
    )
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    mean = torch.tensor([0.45, 0.45, 0.45]).view(1, 3, 1, 1, 1)
    std = torch.tensor([0.225, 0.225, 0.225]).view(1, 3, 1, 1, 1)

    loss = torch.tensor(float("nan"))
    for epoch in range(args.epochs):
        dl.set_epoch(epoch)  # a new, seeded order and new windows every epoch
        model.train()
        for batch in dl:  # batch.frames: (B, 3, T, size, size) uint8
            x = (batch.frames.float() / 255 - mean) / std
            loss = F.cross_entropy(model(x), batch.labels)
            opt.zero_grad()
            loss.backward()
            opt.step()
        print(f"epoch {epoch}: loss {loss.item():.3f}")
    if args.out:
        torch.save(model.state_dict(), args.out)
    return loss.item()


if __name__ == "__main__":
    main()
