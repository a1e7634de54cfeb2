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
    its random initialisation;
  * **patch embedding**: the spread (std over tokens) of its response to the clips'
    appearance and, with tubelets of 2, to the change inside a tubelet (the embedding split
    into its two frames' sum and difference), pretrained against random initialisation;
  * **fine-tune** (``--finetune-seeds``): ``video_vit_tiny`` trained with labels on every
    window of 4 clips per class (150 AdamW steps of 8, lr 1e-3, weight decay 0.05, the
    classifier config of ``bench_masked_finetune.py``) and scored on every window of 8 other
    clips per class: from scratch, from the pretrained encoder (``pretrained=`` a checkpoint
    of it: the product's load path) and from it with the patch embedding left at the
    scratch initialisation (which part of the encoder helps or hurts).

``--steps`` and ``--per-class`` take several values: one pretraining per pair (the fine-tune
gap as pretraining grows). A benchmark (a minute or more per option set on one CPU
thread), not a test.
``--scene pan`` renders the same classes as a camera panning over a textured scene
(``make_motion_frames(scene="pan")``): every patch moves.
Run: .venv/bin/python benchmarks/bench_masked_diagnose.py --options 'mask_ratio=0.75' \
    'mask_ratio=0.75,masking=random' [--steps 400] [--per-class 12] [--lr 2e-3] [--scene pan]
"""

from __future__ import annotations

import argparse
import itertools
import math
import sys
import time
from collections.abc import Iterable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import write_result
from bench_masked_finetune import CLASSES, STATS, VIT, parse_options
from bench_masked_probe import ENCODER_MODES, encoder_replaced

T, STRIDE = 8, 2
#: what moves in the clips (``--scene``): the demo's disc, or the whole view (``"pan"``)
SCENE = {"scene": "disc"}
#: a patch "moves" where it changes by more than this (pixels in [0, 1]) to a neighbour frame
MOVING = 0.02


def clips(per_class: int, seed: int, every: bool = False):
    """``(frames (n, T, C, H, W) uint8 tensor, labels (n,) array)``: one window per clip at a
    seeded start, or with ``every`` all its windows (starts 2 frames apart)."""
    import torch

    from hyperframes.demo._synthetic import make_motion_frames

    xs, ys = [], []
    span = (T - 1) * STRIDE + 1
    for c, label in enumerate(CLASSES):
        for i in range(per_class):
            video = make_motion_frames(
                label,
                frames=24,
                size=32,
                rng=np.random.default_rng([seed, c, i]),
                scene=SCENE["scene"],
            )
            starts: Iterable[int] = range(0, 24 - span + 1, 2)
            if not every:
                starts = [int(np.random.default_rng([seed, c, i, 1]).integers(0, 24 - span + 1))]
            for start in starts:
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


def pretrain(options: dict, per_class: int, steps: int, seed: int, lr: float = 2e-3):
    import torch

    x, _ = clips(per_class, 1000 + seed)
    model = build(options, seed)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.05)
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
    return model, float(loss.detach())


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


def embedding_gain(model, frames) -> dict:
    """The std over tokens of the patch embedding's response to the clips' appearance (the
    frames of a tubelet averaged) and, for tubelets of 2, to the change inside a tubelet (half
    their difference): ``W0 x0 + W1 x1`` split as ``(W0 + W1)(x0 + x1)/4 + (W0 - W1)(x0 - x1)/4``
    times 2 each, so the two parts add up to the embedding."""
    import torch
    import torch.nn.functional as F

    w = model.encoder.patch_embed.weight.detach()
    x = prepare(frames).transpose(1, 2)  # (B, C, T, H, W)
    p = VIT["patch_size"]
    with torch.no_grad():
        if w.dim() == 4:  # frame patches: appearance only
            b, c, t, h, wd = x.shape
            y = F.conv2d(x.transpose(1, 2).reshape(b * t, c, h, wd), w, stride=p)
            return {"appearance": float(y.std()), "change": None}
        if w.shape[2] != 2:
            return {"appearance": None, "change": None}
        x0, x1 = x[:, :, 0::2], x[:, :, 1::2]
        both, diff = (w[:, :, :1] + w[:, :, 1:]) / 2, (w[:, :, :1] - w[:, :, 1:]) / 2
        look = F.conv3d(x0 + x1, both, stride=(1, p, p))
        change = F.conv3d(x0 - x1, diff, stride=(1, p, p))
    return {"appearance": float(look.std()), "change": float(change.std())}


def train_classifier(model, data, test, seed: int, steps: int = 150) -> float:
    """Fine-tune ``model`` on ``data``; its accuracy on ``test`` (both :func:`clips`)."""
    import torch

    (x, y), (xt, yt) = ((f, torch.as_tensor(labels)) for f, labels in (data, test))
    g = torch.Generator().manual_seed(seed)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.05)
    warm = max(1, steps // 10)

    def factor(s: int) -> float:
        return min(1.0, (s + 1) / warm) * 0.5 * (1 + math.cos(math.pi * s / steps))

    sched = torch.optim.lr_scheduler.LambdaLR(opt, factor)
    model.train()
    for _ in range(steps):
        i = torch.randint(0, len(x), (8,), generator=g)
        loss = torch.nn.functional.cross_entropy(model(prepare(x[i])), y[i])
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
    model.eval()
    with torch.no_grad():
        return float((model(prepare(xt)).argmax(1) == yt).float().mean())


def finetune(mae, options: dict, seeds: list[int]) -> dict:
    """Held-out accuracy per seed of a classifier from scratch, from the pretrained encoder
    (loaded from a checkpoint file), and from it with a fresh patch embedding (module doc)."""
    import tempfile

    import torch

    from hyperframes.models import create

    data, test = clips(4, 7000, every=True), clips(8, 8000, every=True)
    opts = {**VIT, "tubelet": int(options.get("tubelet", 1))}
    out: dict[str, list[float]] = {"scratch": [], "pretrained": [], "pretrained_fresh_embed": []}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "mae.pt"
        torch.save({"model": mae.state_dict()}, path)
        for seed in seeds:
            for name in out:
                torch.manual_seed(seed)
                fresh = create("video_vit_tiny", num_classes=len(CLASSES), frames=T, **opts)
                torch.manual_seed(seed)
                model = fresh
                if name != "scratch":
                    model = create(
                        "video_vit_tiny",
                        num_classes=len(CLASSES),
                        frames=T,
                        pretrained=path,
                        **opts,
                    )
                if name == "pretrained_fresh_embed":
                    model.patch_embed.load_state_dict(fresh.patch_embed.state_dict())
                out[name].append(train_classifier(model, data, test, seed))
    return {
        "per_seed": out,
        "mean": {k: float(np.mean(v)) for k, v in out.items()},
        "windows": {"train": len(data[1]), "held_out": len(test[1])},
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--options", nargs="+", default=["mask_ratio=0.75"])
    ap.add_argument("--per-class", type=int, nargs="+", default=[12])
    ap.add_argument("--steps", type=int, nargs="+", default=[400])
    ap.add_argument("--lr", type=float, default=2e-3, help="pretraining learning rate")
    ap.add_argument("--overfit-steps", type=int, default=200, help="0: skip")
    ap.add_argument("--finetune-seeds", type=int, nargs="*", default=[0, 1, 2])
    ap.add_argument("--seed", type=int, nargs="+", default=[0], help="pretraining seeds")
    ap.add_argument("--scene", default="disc", choices=("disc", "pan"), help="what moves")
    ap.add_argument("--out", default="masked_diagnose", help="results/NAME.json")
    args = ap.parse_args()
    SCENE["scene"] = args.scene
    import torch

    torch.set_num_threads(1)
    held_out, _ = clips(8, 2000)
    runs = []
    for text in args.options:
        options = parse_options(text)
        fit = overfit(options, args.overfit_steps) if args.overfit_steps else None
        for per_class, steps, seed in itertools.product(args.per_class, args.steps, args.seed):
            t0 = time.perf_counter()
            row: dict = {"options": options, "per_class": per_class, "steps": steps}
            row["seed"] = seed
            row["overfit_one_batch"] = fit
            model, last = pretrain(options, per_class, steps, seed, args.lr)
            row["final_train_loss"] = last
            row["held_out"] = dependence(model, held_out)
            init = build(options, seed)
            row["probe"] = probe({"random_init": init, "pretrained": model}, 0)
            row["patch_embedding"] = {
                "random_init": embedding_gain(init, held_out),
                "pretrained": embedding_gain(model, held_out),
            }
            if args.finetune_seeds:
                row["finetune"] = finetune(model, options, args.finetune_seeds)
            row["seconds"] = time.perf_counter() - t0
            print(row, flush=True)
            runs.append(row)
    write_result(
        args.out,
        {
            "data": f"demo motion generator in memory (scene {args.scene!r}), classes "
            f"{', '.join(CLASSES)}, 32x32, "
            f"windows of {T} frames at stride {STRIDE}; pretraining on each run's per_class "
            "clips per class, 32 held-out clips, probe on 64 clips scored on 64 others; "
            "fine-tune on every window of 4 clips per class, scored on those of 8 others",
            "model": "video_mae, encoder video_vit_tiny",
            "encoder_options": VIT,
            "pretraining": f"each run's steps of AdamW on 16 clips, lr {args.lr:g}, weight decay "
            "0.05, 10% warmup, cosine",
            "finetune": "video_vit_tiny, 150 AdamW steps of 8 windows, lr 1e-3, weight decay "
            "0.05, 10% warmup, cosine; seeds: the head's initialisation and the batches",
            "moving_patch": f"changes by more than {MOVING} to the frame before or after",
            "seed": args.seed,
            "runs": runs,
            "chance": 1 / len(CLASSES),
            "torch_threads": torch.get_num_threads(),
        },
    )


if __name__ == "__main__":
    main()
