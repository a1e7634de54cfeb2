"""Why masked video pretraining learns no motion on the demo (issue 38, item 5): the checks.

``bench_masked_probe.py`` finds the pretrained ``video_mae`` encoder no better than its
random initialisation under a linear probe of the motion classes. This benchmark takes the
pretraining apart, in memory (the demo's generator ``make_motion_frames``: left/right/up/down,
32x32, windows of T=8 frames at stride 2, the probe benchmark's tiny ViT), one ``--options``
set per run:

  * **overfit**: one fixed batch of 8 clips, the same masks every step, ``--overfit-steps``
    Adam steps: the masked-patch loss must fall far below a zero prediction's (1.0);
  * **pretrain** on ``--per-class`` clips per class (AdamW, lr 2e-3, weight decay 0.05,
    warmup, cosine; batches of 16) for ``--steps`` steps, then on 32 held-out clips:
    the masked-patch loss with the encoder's outputs as they are, replaced by zeros, and
    shuffled between clips (equal: the decoder predicts from positions alone); that loss
    split into masked patches where something moves (the patch changes by more than 0.02 to
    the frame before or after) and still ones; and a **copy oracle** without any learning:
    each masked patch predicted by the same place in the nearest frame where it is visible
    (a tube-masked place is never visible: it scores 1.0, the zero prediction);
  * **probe**: a logistic regression (standardised, C=0.1) on the frozen encoder's features
    (every token averaged, ``pooled``; tokens averaged per token frame, side by side,
    ``per_frame``) of 64 clips, scored on 64 others: pretrained against the same encoder at
    its random initialisation.

A benchmark (a minute or more per option set on one CPU thread), not a test.
Run: .venv/bin/python benchmarks/bench_masked_diagnose.py --options 'mask_ratio=0.75' \
    'mask_ratio=0.75,masking=random' [--steps 400] [--per-class 12]
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import write_result
from bench_masked_finetune import CLASSES, STATS, VIT, parse_options
from bench_masked_probe import ENCODER_MODES, encoder_replaced

T, STRIDE = 8, 2
#: a patch "moves" where it changes by more than this (pixels in [0, 1]) to a neighbour frame
MOVING = 0.02


def clips(per_class: int, seed: int):
    """``(frames (n, T, C, H, W) uint8 tensor, labels (n,) array)``: one window per clip."""
    import torch

    from hyperframes.demo._synthetic import make_motion_frames

    xs, ys = [], []
    span = (T - 1) * STRIDE + 1
    for c, label in enumerate(CLASSES):
        for i in range(per_class):
            video = make_motion_frames(
                label, frames=24, size=32, rng=np.random.default_rng([seed, c, i])
            )
            start = int(np.random.default_rng([seed, c, i, 1]).integers(0, 24 - span + 1))
            xs.append(video[start : start + span : STRIDE])
            ys.append(c)
    frames = torch.from_numpy(np.stack(xs)).permute(0, 1, 4, 2, 3).contiguous()
    return frames, np.asarray(ys)


def prepare(frames):
    """uint8 frames as the model sees them (the benchmarks' mean and std)."""
    return (frames.float() / 255.0 - STATS["mean"][0]) / STATS["std"][0]


def masked_loss(out, frames) -> float:
    from hyperframes.models import patch_errors

    per_patch, _, masked = patch_errors(out, frames)
    return float(per_patch[masked].mean())


def build(options: dict, seed: int):
    import torch

    from hyperframes.models import create

    torch.manual_seed(seed)
    return create("video_mae", num_classes=1, frames=T, **{**VIT, **options})


def overfit(options: dict, steps: int) -> dict:
    """The masked-patch loss on one fixed batch, the same masks each step."""
    import torch

    x, _ = clips(2, 100)
    model = build(options, 0).train()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    losses = []
    for _ in range(steps):
        torch.manual_seed(123)  # the same masks every step
        out = model(prepare(x))
        loss = _loss(out, x)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss))
    return {"steps": steps, "first": losses[0], "last": losses[-1], "zero_prediction": 1.0}


def _loss(out, frames):
    from hyperframes.models import patch_errors

    per_patch, _, masked = patch_errors(out, frames)
    return per_patch[masked].mean()


def pretrain(options: dict, per_class: int, steps: int, seed: int):
    import torch

    x, _ = clips(per_class, 1000 + seed)
    model = build(options, seed)
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=0.05)
    warm = max(1, steps // 10)

    def factor(s: int) -> float:
        return min(1.0, (s + 1) / warm) * 0.5 * (1 + math.cos(math.pi * s / steps))

    sched = torch.optim.lr_scheduler.LambdaLR(opt, factor)
    g = torch.Generator().manual_seed(seed)
    model.train()
    for _ in range(steps):
        xb = x[torch.randint(0, len(x), (16,), generator=g)]
        loss = _loss(model(prepare(xb)), xb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
    return model, float(loss)


def moving_patches(frames):
    """(B, T*N) bool: the patch changes by more than ``MOVING`` to the frame before or after."""
    from hyperframes.models._mae import patchify

    b = frames.shape[0]
    p = patchify(frames.float() / 255.0, VIT["patch_size"]).reshape(b, T, -1, 3 * 8 * 8)
    before = (p[:, 1:] - p[:, :-1]).abs().amax(-1) > MOVING  # (B, T-1, N)
    moved = np.zeros(p.shape[:3], bool)
    moved[:, 1:] |= before.numpy()
    moved[:, :-1] |= before.numpy()
    return moved.reshape(b, -1)


def copy_oracle(out, frames) -> float:
    """The loss of predicting each masked patch by the same place in the nearest frame where
    it is visible (normalised by its own statistics; never visible: zero)."""
    import torch

    from hyperframes.models._mae import patchify

    b = frames.shape[0]
    p = patchify(frames.float() / 255.0, VIT["patch_size"]).reshape(b, T, -1, 3 * 8 * 8)
    mean, var = p.mean(-1, keepdim=True), p.var(-1, keepdim=True, unbiased=False)
    norm = (p - mean) / (var + 1e-6).sqrt()
    masked = out[..., -1].reshape(b, T, -1) > 0.5
    pred = torch.zeros_like(p)
    for i, t, n in masked.nonzero().tolist():
        seen = [s for s in range(T) if not masked[i, s, n]]
        if seen:
            pred[i, t, n] = norm[i, min(seen, key=lambda s: abs(s - t)), n]
    oracle = torch.cat([pred.reshape(b, -1, p.shape[-1]), out[..., -1:]], -1)
    return masked_loss(oracle, frames)


def dependence(model, frames) -> dict:
    """Held-out masked-patch losses: the encoder's outputs kept, zeroed, shuffled; the kept
    one split into moving and still patches; the copy oracle on the same masks."""
    import torch

    from hyperframes.models import patch_errors

    model.eval()  # masks seeded by mask_seed: the same in every variant
    res: dict = {}
    for mode in ENCODER_MODES:
        with encoder_replaced(model, mode), torch.no_grad():
            out = model(prepare(frames))
        res[mode] = masked_loss(out, frames)
        if mode == "encoder":
            per_patch, _, masked = patch_errors(out, frames)
            moving = torch.from_numpy(moving_patches(frames))
            res["encoder_moving_patches"] = float(per_patch[masked & moving].mean())
            res["encoder_still_patches"] = float(per_patch[masked & ~moving].mean())
            res["moving_share_of_masked"] = float((masked & moving).sum() / masked.sum())
            res["copy_oracle"] = copy_oracle(out, frames)
    return res


def features(model, frames) -> dict[str, np.ndarray]:
    import torch

    model.eval()
    with torch.no_grad():
        x = prepare(frames)
        b, places = x.shape[0], model.places(x)
        tokens = model.encode(x, torch.arange(places).expand(b, places), None)
    return {"pooled": tokens.mean((1, 2)).numpy(), "per_frame": tokens.mean(2).flatten(1).numpy()}


def probe(models: dict, seed: int) -> dict:
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    xtr, ytr = clips(16, 3000 + seed)
    xte, yte = clips(16, 4000 + seed)
    out: dict[str, dict[str, float]] = {}
    for name, model in models.items():
        ftr, fte = features(model, xtr), features(model, xte)
        out[name] = {}
        for key in ftr:
            clf = make_pipeline(StandardScaler(), LogisticRegression(C=0.1, max_iter=5000))
            clf.fit(ftr[key], ytr)
            out[name][key] = float((clf.predict(fte[key]) == yte).mean())
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--options", nargs="+", default=["mask_ratio=0.75"])
    ap.add_argument("--per-class", type=int, default=12)
    ap.add_argument("--steps", type=int, default=400)
    ap.add_argument("--overfit-steps", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="masked_diagnose", help="results/NAME.json")
    args = ap.parse_args()
    import torch

    torch.set_num_threads(1)
    held_out, _ = clips(8, 2000)
    runs = []
    for text in args.options:
        options = parse_options(text)
        t0 = time.perf_counter()
        row: dict = {"options": options}
        row["overfit_one_batch"] = overfit(options, args.overfit_steps)
        model, last = pretrain(options, args.per_class, args.steps, args.seed)
        row["final_train_loss"] = last
        row["held_out"] = dependence(model, held_out)
        row["probe"] = probe({"random_init": build(options, args.seed), "pretrained": model}, 0)
        row["seconds"] = time.perf_counter() - t0
        print(row, flush=True)
        runs.append(row)
    write_result(
        args.out,
        {
            "data": f"demo motion generator in memory, classes {', '.join(CLASSES)}, 32x32, "
            f"windows of {T} frames at stride {STRIDE}; pretraining on {args.per_class} clips "
            "per class, 32 held-out clips, probe on 64 clips scored on 64 others",
            "model": "video_mae, encoder video_vit_tiny",
            "encoder_options": VIT,
            "pretraining": f"{args.steps} AdamW steps of 16 clips, lr 2e-3, weight decay 0.05, "
            "10% warmup, cosine",
            "moving_patch": f"changes by more than {MOVING} to the frame before or after",
            "seed": args.seed,
            "runs": runs,
            "chance": 1 / len(CLASSES),
            "torch_threads": torch.get_num_threads(),
        },
    )


if __name__ == "__main__":
    main()
