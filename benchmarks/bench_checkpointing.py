"""Activation checkpointing: peak memory and step time of a training step with and without it.

The model is ``r2plus1d_tiny`` (base width 16, T=8, 96x96 frames from a motion store built
here, batch 8, SGD): a 3D CNN whose activations are most of a step's memory. Three settings of
``train.checkpointing``: off (the anchor), every stage, and the first two stages only (the
seed's advice: checkpoint where the activations are, not everything). Per setting: the
estimate (``hyperframes estimate``'s step peak), the measured peak (CPU: glibc's mallinfo2
after every aten op, ``hyperframes.train._loop._estimate.measure_step_peak``; CUDA:
``torch.cuda.max_memory_allocated``) and the median step time, each also as a ratio to the
anchor. Results: benchmarks/results/checkpointing.json (``--device cuda``:
checkpointing_cuda.json).

Run: .venv/bin/python benchmarks/bench_checkpointing.py [--steps 5 --device cpu]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import write_result

SETTINGS = {"off": False, "every stage": True, "stages 0-1": ["stages.0", "stages.1"]}
FRAMES, SIZE, BATCH = 8, 96, 8


def _config(store: Path, checkpointing, device: str) -> dict:
    return {
        "data": {
            "store": str(store),
            "frames": FRAMES,
            "batch_size": BATCH,
            "val_fraction": 0.2,
            "sampler_options": {},
        },
        "model": {"name": "r2plus1d_tiny", "options": {"base_width": 16}},
        "train": {"optimizer": "sgd", "checkpointing": checkpointing, "device": device},
    }


def _measure(cfg, device, steps: int, *, amp_dtype=None) -> tuple[int, float]:
    """(peak bytes, median step seconds) of ``steps`` training steps of ``cfg``'s model;
    ``amp_dtype``: the forward and loss under ``torch.autocast`` of that dtype (None: off)."""
    import contextlib

    import torch

    from hyperframes.data import loader
    from hyperframes.store import open_store
    from hyperframes.train._config._data import build_data
    from hyperframes.train._loop._estimate import _loss, measure_step_peak
    from hyperframes.train._loop._setup import build_model, build_optimizer
    from hyperframes.train._tasks._base import create_task

    st = open_store(cfg.data.store)
    b = build_data(cfg, st)
    model = build_model(cfg, b.num_classes, b.contract).to(device).train()
    opt = build_optimizer(cfg, model, 0.01)
    task = create_task(b.task, b.classes)
    batch = next(iter(loader(b.train, BATCH, shuffle=False, workers=0)))
    target = task.targets(batch)

    class OnDevice:  # the batch's targets and mask where the model is
        mask = batch.mask.to(device)
        labels = target.to(device)

    task_targets = task.targets
    task.targets = lambda _b: OnDevice.labels  # type: ignore[method-assign]

    def step():
        x = b.contract.prepare(batch.frames, device=device)
        amp = (
            torch.autocast(device.type, dtype=amp_dtype)
            if amp_dtype is not None
            else contextlib.nullcontext()
        )
        with amp:
            loss = _loss(model, x, OnDevice, task)
        loss.backward()
        opt.step()
        opt.zero_grad()
        if device.type == "cuda":
            torch.cuda.synchronize()

    params = sum(p.numel() * p.element_size() for p in model.parameters())
    if device.type == "cuda":
        step()
        torch.cuda.reset_peak_memory_stats()
        step()
        peak = torch.cuda.max_memory_allocated()
    else:
        peak = measure_step_peak(step) + 2 * params  # + parameters and momentum
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    task.targets = task_targets  # type: ignore[method-assign]
    st.close()
    return peak, statistics.median(times)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    args = p.parse_args()
    import torch

    from hyperframes.build import BuildOptions, build_store
    from hyperframes.demo import make_motion_dataset
    from hyperframes.train import estimate, load_config

    device = torch.device(args.device)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        make_motion_dataset(
            root / "m", classes=("left", "right"), videos_per_class=5, frames=12, size=SIZE
        )
        build_store(root / "m", root / "store", BuildOptions(size="none"), progress=False)
        for name, setting in SETTINGS.items():
            cfg = load_config(_config(root / "store", setting, args.device))
            e = estimate(cfg)
            peak, seconds = _measure(cfg, device, args.steps)
            rows.append(
                {
                    "checkpointing": name,
                    "stages": e.checkpointed_stages if setting else [],
                    "estimated_peak_mib": round(e.step_bytes(bool(setting)) / 2**20, 1),
                    "measured_peak_mib": round(peak / 2**20, 1),
                    "step_seconds": round(seconds, 4),
                }
            )
    anchor = rows[0]
    for r in rows:
        r["peak_vs_off"] = round(r["measured_peak_mib"] / anchor["measured_peak_mib"], 3)
        r["time_vs_off"] = round(r["step_seconds"] / anchor["step_seconds"], 3)
        r["estimate_vs_measured"] = round(r["estimated_peak_mib"] / r["measured_peak_mib"], 3)
    suffix = "" if args.device == "cpu" else f"_{args.device}"
    write_result(
        f"checkpointing{suffix}",
        {
            "model": "r2plus1d_tiny base_width 16",
            "input": f"batch {BATCH} x 3 x {FRAMES} x {SIZE} x {SIZE}",
            "device": args.device,
            "peak_measured_by": "torch.cuda.max_memory_allocated"
            if args.device == "cuda"
            else "glibc mallinfo2 after every aten op (+ parameters and momentum)",
            "steps": args.steps,
            "rows": rows,
        },
    )


if __name__ == "__main__":
    main()
