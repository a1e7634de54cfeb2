"""Linear probe of masked video pretraining (issue 38, item 5): did the encoder learn motion?

``bench_masked_finetune.py`` found fine-tuning from ``video_mae`` pretraining no better than
from scratch on the demo's motion set (0.281 against 0.344, chance 0.25). A fine-tuning run
mixes what the encoder learned with what 16 labelled videos can teach, so this measures the
encoder alone: its features, **frozen**, with a linear classifier on top.

The demo's motion set (``make_motion_dataset``: four classes left/right/up/down, a textured
disc moving on a torus over a textured background, H.264, 32x32) of ``--per-class`` videos
each is built into one store. Per seed:

  * ``video_mae`` (the encoder ``video_vit_tiny``: patch 8, dim 64, 2 blocks) is pretrained on
    every video of the store, labels unused (``train.task: masked_video``, the config of
    ``bench_masked_finetune.py``, that seed);
  * the same model **at its random initialisation** (that seed) is the control.

Both encoders see every token of ``--windows`` windows per video (T=8, stride 2, evenly
spaced, no augmentation). Features of a window: the tokens averaged (what a fine-tuned head
pools, ``pooled``: D values) and the tokens averaged per frame, frames side by side
(``per_frame``: T x D). A logistic regression (scikit-learn, standardised features) is
trained on the windows of half the videos of each class and scored on the windows of the
other half (the split drawn from the seed). Reported: held-out accuracy per seed, mean and
spread, for each encoder and feature; a difference of the means with its per-seed values.
A benchmark (minutes on 2 CPU cores), not a test.
Run: OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_masked_probe.py [--seeds 0 1 2]
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

from _common import write_result
from bench_masked_finetune import (
    CLASSES,
    PRETRAIN,
    VIT,
    WINDOWS,
    motion_videos,
    parse_options,
    pretrain_config,
)

FEATURES = ("pooled", "per_frame")


def build(root: Path, per_class: int, seed: int, scene: str = "disc") -> Path:
    """One store of the motion set, every video labelled, split ``all``."""
    from hyperframes.build import BuildOptions, build_store

    rows = [
        f"{v},{v.parent.name},all" for v in motion_videos(root / "motion", per_class, seed, scene)
    ]
    csv = root / "all.csv"
    csv.write_text("path,label,split\n" + "\n".join(rows) + "\n")
    store = root / "store"
    build_store(csv, store, BuildOptions(size="none"), progress=False)
    return store


def windows(store: Path, count: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(frames (W, T, C, H, W) uint8, labels (W,), video ids (W,))``: ``count`` windows per
    video, evenly spaced, of the pretraining's T and stride."""
    from hyperframes.store import open_store

    t, stride = WINDOWS["frames"], WINDOWS["sampler_options"]["stride"]
    span = (t - 1) * stride + 1
    frames, labels, vids = [], [], []
    with open_store(store) as st:
        for v in st.videos:
            for start in np.linspace(0, v.num_frames - span, count).round().astype(int):
                frames.append(st.read_numpy(v, start + stride * np.arange(t)))
                labels.append(v.label_id)
                vids.append(v.id)
    return np.stack(frames), np.asarray(labels), np.asarray(vids)


def features(model, contract, frames: np.ndarray) -> dict[str, np.ndarray]:
    """The frozen encoder of a ``video_mae`` model on every token of each window: the tokens'
    mean (``pooled``) and each frame's mean, frames side by side (``per_frame``)."""
    import torch

    model.eval()
    out = {k: [] for k in FEATURES}
    with torch.no_grad():
        for lo in range(0, len(frames), 32):
            x = contract.prepare(torch.from_numpy(frames[lo : lo + 32]), device="cpu")
            b, places = x.shape[0], model.places(x)
            keep = torch.arange(places).expand(b, places)
            tokens = model.encode(x, keep, None)  # (B, T, N, D)
            out["pooled"].append(tokens.mean((1, 2)).numpy())
            out["per_frame"].append(tokens.mean(2).flatten(1).numpy())
    return {k: np.concatenate(v) for k, v in out.items()}


def order_sensitivity(model, contract, frames: np.ndarray) -> float:
    """How far the pooled features move when each window is played backwards (left becomes
    right), over how far they lie between different windows: 0 = blind to the frames' order."""
    reverse = features(model, contract, frames[:, ::-1].copy())["pooled"]
    forward = features(model, contract, frames)["pooled"]
    between = np.linalg.norm(forward - np.roll(forward, 1, axis=0), axis=1).mean()
    return float(np.linalg.norm(forward - reverse, axis=1).mean() / between)


#: the encoder's outputs as they are, replaced by zeros, shuffled between windows
ENCODER_MODES = ("encoder", "zeros", "shuffled")


@contextlib.contextmanager
def encoder_replaced(model, mode: str):
    """``model.encode`` giving its outputs as they are (``"encoder"``), zeros (``"zeros"``) or
    each window's outputs given to the next window (``"shuffled"``), restored after."""
    import torch

    encode = model.encode

    def replaced(x, keep, mask):
        v = encode(x, keep, mask)
        if mode == "zeros":
            return torch.zeros_like(v)
        return v.roll(1, dims=0) if mode == "shuffled" else v

    model.encode = replaced
    try:
        yield
    finally:
        model.encode = encode


def encoder_dependence(model, contract, frames: np.ndarray) -> dict[str, float]:
    """The masked-patch loss of the pretrained model on the probe's windows (masks seeded
    by ``mask_seed``) with the encoder's outputs as they are, replaced by zeros, and shuffled
    between windows: equal losses mean the decoder predicts from positions alone."""
    import torch

    from hyperframes.models import masked_patch_errors

    out: dict[str, float] = {}
    model.eval()
    for mode in ENCODER_MODES:
        with encoder_replaced(model, mode), torch.no_grad():
            f = torch.from_numpy(frames)
            loss, _, n = masked_patch_errors(model(contract.prepare(f, device="cpu")), f)
        out[mode] = float((loss * n).sum() / n.sum())
    return out


def flow_statistics(frames: np.ndarray) -> np.ndarray:
    """The positive control: two numbers per window, the sums of I_t * I_x and I_t * I_y
    over its pixels (brightness constancy: their signs give the direction of motion)."""
    x = frames.astype(np.float32) / 255.0  # (W, T, C, H, W)
    it = x[:, 1:, :, 1:, 1:] - x[:, :-1, :, 1:, 1:]
    ix = x[:, :-1, :, 1:, 1:] - x[:, :-1, :, 1:, :-1]
    iy = x[:, :-1, :, 1:, 1:] - x[:, :-1, :, :-1, 1:]
    return np.stack([(it * ix).sum((1, 2, 3, 4)), (it * iy).sum((1, 2, 3, 4))], 1)


def supervised_encoder(per_class: int, steps: int, seed: int, opts: dict):
    """The other control: the same ``video_mae`` encoder trained **with labels** (cross
    entropy on its pooled tokens through a linear head) on another ``per_class`` videos of
    each class (generated with seed 1, in memory: the probe's videos are seed 0's), for
    ``steps`` batches of 16 windows. Shows whether this encoder and probe can carry the
    direction of motion at all."""
    import torch

    from hyperframes.demo._synthetic import make_motion_frames
    from hyperframes.models import create

    t, stride = WINDOWS["frames"], WINDOWS["sampler_options"]["stride"]
    clips, labels = [], []
    for c, label in enumerate(CLASSES):
        for i in range(per_class):
            rng = np.random.default_rng([1, c, i])
            video = make_motion_frames(label, frames=24, size=32, rng=rng)
            for start in (0, 4, 8):
                clips.append(video[start : start + t * stride : stride])
                labels.append(c)
    x = torch.from_numpy(np.stack(clips)).permute(0, 1, 4, 2, 3).float()
    x = (x / 255.0 - 0.5) / 0.25  # the contract's mean and std (bench_masked_finetune)
    y = torch.as_tensor(labels)
    torch.manual_seed(seed)
    model = create("video_mae", num_classes=1, frames=t, **opts)
    head = torch.nn.Linear(opts["dim"], len(CLASSES))
    params = [*model.parameters(), *head.parameters()]
    opt = torch.optim.AdamW(params, lr=0.002, weight_decay=0.05)
    places = model.places(x[:1])
    model.train()
    for _ in range(steps):
        idx = torch.randint(0, len(x), (16,))
        keep = torch.arange(places).expand(16, places)
        logits = head(model.encode(x[idx], keep, None).mean((1, 2)))
        loss = torch.nn.functional.cross_entropy(logits, y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
    return model


def split(labels_per_video: dict[int, int], seed: int) -> set[int]:
    """Half the videos of each class (drawn from ``seed``): the probe's training videos."""
    rng = np.random.default_rng(seed)
    train: set[int] = set()
    for c in sorted(set(labels_per_video.values())):
        ids = sorted(v for v, lab in labels_per_video.items() if lab == c)
        train.update(int(i) for i in rng.permutation(ids)[: len(ids) // 2])
    return train


def probe(x: np.ndarray, y: np.ndarray, train: np.ndarray) -> float:
    """Held-out accuracy of a logistic regression on standardised ``x`` (train rows ``train``)."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    clf = make_pipeline(StandardScaler(), LogisticRegression(C=0.1, max_iter=5000))
    clf.fit(x[train], y[train])
    return float((clf.predict(x[~train]) == y[~train]).mean())


def summary(values: list[float]) -> dict:
    return {"mean": float(np.mean(values)), "std": float(np.std(values)), "per_seed": values}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--per-class", type=int, default=12)
    ap.add_argument("--windows", type=int, default=4, help="windows per video")
    ap.add_argument("--pretrain-epochs", type=int, default=20)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--options", default="", help="extra video_mae options, k=v,k=v")
    ap.add_argument("--supervised-steps", type=int, default=800)
    ap.add_argument("--supervised-per-class", type=int, default=64)
    ap.add_argument("--scene", default="disc", choices=("disc", "pan"), help="what moves")
    ap.add_argument("--out", default="masked_probe", help="results/NAME.json")
    args = ap.parse_args()
    import torch

    from hyperframes.models import create
    from hyperframes.train import load_checkpoint, rebuild_model, run_training

    extra = parse_options(args.options)
    tmp = Path(tempfile.mkdtemp(prefix="hf-bench-probe-"))
    try:
        store = build(tmp, args.per_class, seed=0, scene=args.scene)
        frames, labels, vids = windows(store, args.windows)
        per_video = dict(zip(vids.tolist(), labels.tolist(), strict=False))
        encoders = ("random_init", "pretrained", "supervised")
        acc: dict[str, dict[str, list[float]]] = {
            enc: {f: [] for f in FEATURES} for enc in encoders
        }
        order: dict[str, list[float]] = {enc: [] for enc in encoders}
        control: list[float] = []
        dependence: list[dict[str, float]] = []
        pretraining = []
        for seed in args.seeds:
            cfg = pretrain_config(store, args.pretrain_epochs, extra)
            cfg["train"]["seed"] = seed
            t0 = time.perf_counter()
            run = run_training(cfg, tmp / f"pre_{seed}", progress=False)
            pretraining.append(
                {
                    "seed": seed,
                    "seconds": time.perf_counter() - t0,
                    "val_masked_loss": run["masked_loss"],
                    "val_psnr": run["val_metrics"].get("psnr"),
                }
            )
            trained, contract = rebuild_model(load_checkpoint(tmp / f"pre_{seed}" / "best.pt"))
            torch.manual_seed(seed)
            opts = cfg["model"]["options"]
            fresh = create("video_mae", num_classes=1, frames=WINDOWS["frames"], **opts)
            supervised = supervised_encoder(
                args.supervised_per_class, args.supervised_steps, seed, opts
            )
            train = np.isin(vids, sorted(split(per_video, seed)))
            control.append(probe(flow_statistics(frames), labels, train))
            dependence.append(encoder_dependence(trained, contract, frames))
            for name, model in zip(encoders, (fresh, trained, supervised), strict=True):
                feats = features(model, contract, frames)
                for f in FEATURES:
                    acc[name][f].append(probe(feats[f], labels, train))
                order[name].append(order_sensitivity(model, contract, frames))
            print(seed, pretraining[-1], {k: {f: v[f][-1] for f in v} for k, v in acc.items()})
            print(
                "control",
                control[-1],
                "dependence",
                dependence[-1],
                "order",
                {k: v[-1] for k, v in order.items()},
                flush=True,
            )
        result = {enc: {f: summary(v) for f, v in per.items()} for enc, per in acc.items()}
        write_result(
            args.out,
            {
                "data": f"demo motion set (scene {args.scene!r}), classes {', '.join(CLASSES)}, {args.per_class} videos "
                "per class (24 +- 4 frames, 32x32, H.264)",
                "windows_per_video": args.windows,
                "window": {"frames": WINDOWS["frames"], "stride": 2},
                "probe": "logistic regression (C=0.1, standardised) on the frozen encoder's "
                "features; trained on half the videos of each class, scored on the others' "
                "windows",
                "features": {
                    "pooled": "every token averaged (D=64)",
                    "per_frame": "tokens averaged per token frame (a frame, or a tubelet of "
                    "frames), side by side (T / tubelet x D)",
                },
                "model": "video_mae, encoder video_vit_tiny",
                "model_options": {**VIT, **PRETRAIN, **extra},
                "pretraining": pretraining,
                "pretrain_epochs": args.pretrain_epochs,
                "held_out_accuracy": result,
                "supervised_control": f"the same encoder trained with labels on "
                f"{args.supervised_per_class} other videos per class, "
                f"{args.supervised_steps} steps of 16 windows",
                "flow_statistics_control": summary(control),
                "encoder_dependence": {
                    "what": "masked-patch loss of the pretrained model on the probe's windows "
                    "with the encoder's outputs as they are, zeroed, and shuffled between windows",
                    **{k: summary([d[k] for d in dependence]) for k in dependence[0]},
                },
                "order_sensitivity": {k: summary(v) for k, v in order.items()},
                "pretrained_minus_random": {
                    f: float(np.mean(acc["pretrained"][f]) - np.mean(acc["random_init"][f]))
                    for f in FEATURES
                },
                "chance": 1 / len(CLASSES),
                "torch_threads": torch.get_num_threads(),
                "load_average": list(os.getloadavg()),
            },
        )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
