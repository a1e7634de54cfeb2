"""Latency per output frame: the keyframe model against 3D CNNs (issue 38; seed 004 section 6).

The seed reports its mini keyframe model at ~25 ms per frame against ~110 ms for "an I3D of
the same parameter scale" (batch 1, one RTX 3090, 224x224, T=7). Here, on this machine's CPU
(and on the GPU when ``torch.cuda.is_available()``), batch 1, the same input size and T for
every model (112x112 and the seed's 224x224), random weights (speed does not depend on them):

* ``keyframe_unet`` (G: a 3D conv and 2D convs at full resolution giving H_t; F: a small UNet
  on concat[K_t, H_t]) and ``keyframe_unet_add`` (the deployable K_t + conv1x1(H_t) variant);
  one forward = one output frame (the key frame's mask);
* ``r2plus1d_tiny``: the registry's (2+1)D ResNet of the same parameter scale (0.11M against
  0.12M), the seed's "same parameter scale";
* ``r3d_18``: torchvision's 3D ResNet-18, 3x3x3 convolutions throughout: the registry's
  closest to I3D (an inflated Inception-v1 of 12M parameters; no I3D is registered), at its
  full size (33M). A 3D CNN gives one output per window, so run per frame it costs one
  forward per output frame, as the seed compares them; its head is a classifier (cheaper
  than a dense decoder), which if anything favours it.

Each model is warmed up, then timed in ``--rounds`` interleaved rounds (the models in turn,
``--reps`` forwards each per round, fewer for r3d_18), so a change in the machine's load
falls on every model alike. Reported per model and device: median ms per output frame, the
spread (min, 25th and 75th percentile, max), the forwards timed, parameters and FLOPs
(torch's FLOP counter, counted once: multiply-add = 2). The load average is recorded before
and after: the CPU timings are on a shared 2-core machine.
Run: .venv/bin/python benchmarks/bench_latency.py [--sizes 112 224] [--frames 7] [--threads 1]
(writes benchmarks/results/latency.json; ~1-2 minutes here)
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import write_result
from hyperframes import models

KEYFRAME = ("keyframe_unet", "keyframe_unet_add")
CNN3D = ("r2plus1d_tiny", "r3d_18")
HEAVY = ("r3d_18",)
#: the seed's figures (004 section 6: batch 1, RTX 3090, 224x224, T=7)
SEED_MS = {"keyframe": 25.0, "i3d": 110.0}


def build(name: str, frames: int, device: torch.device) -> torch.nn.Module:
    torch.manual_seed(0)
    return models.create(name, num_classes=2, frames=frames).eval().to(device)


def model_input(model, frames: int, size: int, device: torch.device):
    x = torch.rand(1, frames, 3, size, size, device=device)
    return models.to_layout(x, model.layout)


def flops(model, x) -> float:
    """FLOPs of one forward (torch's counter: a multiply-add counts 2)."""
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False) as counter, torch.inference_mode():
        model(x)
    return float(counter.get_total_flops())


def timed(model, x, device: torch.device, reps: int) -> list[float]:
    """Seconds of each of ``reps`` forwards (the device synchronised around each)."""
    out = []
    with torch.inference_mode():
        for _ in range(reps):
            if device.type == "cuda":
                torch.cuda.synchronize(device)
            t0 = time.perf_counter()
            model(x)
            if device.type == "cuda":
                torch.cuda.synchronize(device)
            out.append(time.perf_counter() - t0)
    return out


def spread(seconds: list[float]) -> dict:
    ms = np.asarray(seconds) * 1e3
    return {
        "median_ms": float(np.median(ms)),
        "min_ms": float(ms.min()),
        "p25_ms": float(np.percentile(ms, 25)),
        "p75_ms": float(np.percentile(ms, 75)),
        "max_ms": float(ms.max()),
        "forwards": len(ms),
    }


def measure(
    device: torch.device, names: tuple[str, ...], size: int, args: argparse.Namespace
) -> dict[str, dict]:
    """Each model's row at frames of ``size``: timings (interleaved rounds), parameters, FLOPs."""
    built = {n: build(n, args.frames, device) for n in names}
    inputs = {n: model_input(m, args.frames, size, device) for n, m in built.items()}
    gpu = device.type == "cuda"
    # the full-size 3D CNN takes seconds a forward on this CPU: one per round there
    reps = {n: args.reps * 10 if gpu else 1 if n in HEAVY else args.reps for n in names}
    for n, m in built.items():  # warm-up: allocator, kernels, caches
        timed(m, inputs[n], device, max(2, reps[n]))
    samples: dict[str, list[float]] = {n: [] for n in names}
    for r in range(args.rounds):
        order = names[r % len(names) :] + names[: r % len(names)]  # rotate who goes first
        for n in order:
            samples[n] += timed(built[n], inputs[n], device, reps[n])
    rows = {}
    for n, m in built.items():
        rows[n] = {
            "kind": "keyframe" if n in KEYFRAME else "3d_cnn",
            "parameters": sum(p.numel() for p in m.parameters()),
            "gflops_per_output_frame": flops(m, inputs[n]) / 1e9,
            **spread(samples[n]),
        }
    if KEYFRAME[0] in rows:
        base = rows[KEYFRAME[0]]["median_ms"]
        for row in rows.values():
            row["vs_keyframe_unet"] = row["median_ms"] / base
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[112, 224], help="the seed: 224")
    ap.add_argument("--frames", type=int, default=7, help="T (the seed: 7)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--reps", type=int, default=4, help="forwards per model per round")
    ap.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    ap.add_argument("--models", nargs="+", default=list(KEYFRAME + CNN3D))
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    names = tuple(args.models)
    load_before = list(os.getloadavg())
    t0 = time.perf_counter()
    kinds = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    devices = {
        kind: {str(s): measure(torch.device(kind), names, s, args) for s in args.sizes}
        for kind in kinds
    }
    result = {
        "setup": f"batch 1, T={args.frames}, square frames of each size, random weights, "
        "inference mode, float32; one forward per output frame",
        "frames": args.frames,
        "sizes": args.sizes,
        "rounds": args.rounds,
        "torch_threads": args.threads,
        "torch": torch.__version__,
        "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
        "devices": devices,
        "seed_claim_ms": SEED_MS,
        "seconds": time.perf_counter() - t0,
        "load_average_before": load_before,
        "load_average_after": list(os.getloadavg()),
    }
    write_result("latency", result)


if __name__ == "__main__":
    main()
