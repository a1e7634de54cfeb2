"""Training's wait for data: the demo's channel ResNet-18 (``channel_resnet18``, T=16, 112x112,
batches of 32) trained for a fixed number of steps, its batches read

  (a) from a raw store, (b) from a jpeg store (``hyperframes.loader``, worker threads), and
  (c) decoded on the fly from the source videos with the fastest decoder (``_decoders.py``:
      decoder-side resize, one thread per decoder) in a standard ``torch.utils.data.DataLoader``
      with the same number of workers (processes).

Per path: steps/s and the share of step time spent waiting for the next batch (time blocked in
``next(loader)`` over the time of the measured steps; warm-up steps excluded). The step itself
is the same for all three: uint8 batch to the device, to float, normalised, forward, backward,
SGD step. Target (issue: fast where users feel it, item 2): data wait < 2% for (a) and (b).

On this 2-core CPU box a step takes about a second, so few steps are measured (the run takes a
few minutes); ``--device cuda`` (``gpu_check.sh``) measures the same on a GPU, where a step is
milliseconds and the loader has to keep up with it.
Run: .venv/bin/python benchmarks/bench_train_wait.py [--steps 12 --warmup 3 --device cpu]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _decoders
from _common import make_sources, write_result

FRAMES, SIZE, BATCH = 16, 112, 32


class OnTheFly:
    """A map-style dataset of the same random windows, decoded from the source files per item
    with one of ``_decoders`` (what a loader without a store does every epoch)."""

    def __init__(self, store_path: Path, decoder: str, seed: int = 0):
        from hyperframes.store import open_store

        store = open_store(store_path)
        self.decoder = decoder
        self.items = []
        rng = np.random.default_rng(seed)
        for v in range(len(store)):
            rec = store.videos[v]
            for _ in range(rec.num_frames // 4):  # as many windows as the stores give
                s = int(rng.integers(0, rec.num_frames - FRAMES + 1))
                idx = np.arange(s, s + FRAMES)
                pts, src = rec.pts_seconds[idx], rec.source_frame_indices[idx]
                self.items.append((rec.path, pts, src, rec.stream, (SIZE, SIZE), rec.label_id))
        store.close()

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, i):
        import torch

        *window, label = self.items[i]
        return torch.from_numpy(_decoders.WINDOW[self.decoder](*window)), label


def fastest_decoder(store_path: Path, *, seconds: float = 3.0) -> tuple[str, dict]:
    """The available decoder with the most windows/s (one process each, briefly)."""
    ds = {name: OnTheFly(store_path, name) for name in _decoders.available()}
    rates = {}
    for name, d in ds.items():
        d[0]
        n, t0 = 0, time.perf_counter()
        while time.perf_counter() - t0 < seconds:
            d[1 + n % (len(d) - 1)]
            n += 1
        rates[name] = n / (time.perf_counter() - t0)
    return max(rates, key=rates.get), rates


def train(batches, *, steps: int, warmup: int, device: str, classes: int) -> dict:
    """Train for ``warmup + steps`` steps on ``batches`` (an iterable of (frames uint8
    (B, T, C, H, W), labels)); time the last ``steps``."""
    import torch

    from hyperframes import models

    torch.manual_seed(0)
    net = models.create("channel_resnet18", num_classes=classes, frames=FRAMES).to(device)
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    mean = torch.tensor([0.45, 0.45, 0.45], device=device).repeat(FRAMES).view(1, -1, 1, 1)
    std = torch.tensor([0.225, 0.225, 0.225], device=device).repeat(FRAMES).view(1, -1, 1, 1)
    it = iter(batches)
    wait = busy = 0.0
    for step in range(warmup + steps):
        t0 = time.perf_counter()
        frames, labels = next(it)
        t1 = time.perf_counter()
        x = frames.to(device, non_blocking=True).flatten(1, 2).float().div_(255).sub_(mean)
        x = x.div_(std)
        loss = torch.nn.functional.cross_entropy(net(x), labels.to(device))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        t2 = time.perf_counter()
        if step >= warmup:
            wait += t1 - t0
            busy += t2 - t1
    return {
        "steps": steps,
        "steps_per_s": steps / (wait + busy),
        "data_wait_share": wait / (wait + busy),
        "data_wait_seconds": wait,
        "step_seconds": (wait + busy) / steps,
    }


def _cycle(dl):
    if len(dl) == 0:
        raise SystemExit("no full batch in an epoch: give more --copies")
    epoch = 0
    while True:
        if hasattr(dl, "set_epoch"):
            dl.set_epoch(epoch)
        for b in dl:
            yield (b.frames, b.labels) if hasattr(b, "frames") else b
        epoch += 1


def _on_the_fly(raw_store: Path, decoder: str, args, classes: int) -> dict:
    import torch.utils.data

    dl = torch.utils.data.DataLoader(
        OnTheFly(raw_store, decoder),
        batch_size=BATCH,
        shuffle=True,
        num_workers=args.workers,
        drop_last=True,
        persistent_workers=True,
        pin_memory=args.device.startswith("cuda"),
    )
    return train(
        _cycle(dl), steps=args.steps, warmup=args.warmup, device=args.device, classes=classes
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--copies", type=int, default=12)
    ap.add_argument("--out", default="train_wait", help="results/NAME.json")
    ap.add_argument(
        "--paths",
        default="raw,jpeg,decode",
        help="which of raw, jpeg, decode, s3 (an lz4 store read cold from a SeaweedFS server on "
        "127.0.0.1, no cache, the loader's read-ahead on) to run",
    )
    args = ap.parse_args()
    import torch
    import torch.utils.data

    from hyperframes.build import BuildOptions, build_store
    from hyperframes.data import HyperframeDataset, loader

    tmp = Path(tempfile.mkdtemp(prefix="hf-bench-train-"))
    load = [os.getloadavg()[0]]
    server = contextlib.ExitStack()  # (the S3 server of the s3 path)
    try:
        sources = make_sources(tmp / "data", args.copies)
        paths = args.paths.split(",")
        stores = {}
        for codec in [c for c in ("raw", "jpeg") if c in paths] + (
            ["lz4"] if "s3" in paths else []
        ):
            stores[codec] = tmp / f"store-{codec}"
            options = BuildOptions(size=f"{SIZE}x{SIZE}", codec=codec, workers=args.workers)
            build_store(tmp / "data", stores[codec], options, progress=False)
        if "lz4" in stores:  # published to a local S3 server, trained from cold
            sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
            from _s3server import BUCKET, seaweed_s3
            from hyperframes.build._publish import publish_store

            server.enter_context(seaweed_s3(tmp / "seaweed"))
            publish_store(stores["lz4"], f"s3://{BUCKET}/train-wait")
            stores["lz4"] = f"s3://{BUCKET}/train-wait"  # type: ignore[assignment]
        runs = {}
        for codec, path in stores.items():
            # every window starting at a multiple of 4 frames, shuffled: random windows
            ds = HyperframeDataset(
                path, "sliding", FRAMES, seed=0, sampler_options={"window_stride": 4}
            )
            dl = loader(ds, batch_size=BATCH, workers=args.workers, drop_last=True)
            classes = len(ds.store.classes)
            name = "s3:lz4_cold" if codec == "lz4" else f"store:{codec}"
            runs[name] = train(
                _cycle(dl),
                steps=args.steps,
                warmup=args.warmup,
                device=args.device,
                classes=classes,
            )
            print(codec, runs[name], flush=True)
            load.append(os.getloadavg()[0])
        server.close()
        decoder_rates: dict = {}
        if "decode" in paths:
            decoder, decoder_rates = fastest_decoder(stores["raw"])
            print(f"fastest decoder: {decoder} {decoder_rates}", flush=True)
            runs[f"decode:{decoder}"] = _on_the_fly(stores["raw"], decoder, args, classes)
            print(decoder, runs[f"decode:{decoder}"], flush=True)
            load.append(os.getloadavg()[0])
        targets = {
            f"data_wait_share_{k.replace(':', '_')}_at_most": {
                "value": runs[k]["data_wait_share"],
                "target": 0.05 if k.startswith("s3") else 0.02,
                "met": runs[k]["data_wait_share"] < (0.05 if k.startswith("s3") else 0.02),
            }
            for k in ("store:raw", "store:jpeg", "s3:lz4_cold")
            if k in runs
        }
        write_result(
            args.out,
            {
                "sources": sources,
                "model": "channel_resnet18",
                "frames": FRAMES,
                "size": SIZE,
                "batch": BATCH,
                "workers": args.workers,
                "device": args.device,
                "torch_threads": torch.get_num_threads(),
                "load_average_1min": load,
                "on_the_fly_decoder_rates_one_process": decoder_rates,
                "runs": runs,
                "targets": targets,
            },
        )
    finally:
        server.close()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
