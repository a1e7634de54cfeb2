"""Predict throughput on a long video: per-frame feature reuse vs re-running every window vs
re-decoding every window from the file.

One synthetic H.264 video (300 frames of a moving textured disc, 128x128 at 30 fps, x264's
keyframe interval of 250 frames as in most real footage), predicted with windows of T=8
frames at stride 1 (every window: each frame is in 8 of them), frames resized to 64 px,
8 windows per model call, on the CPU:

* ``reuse``     decode once, streaming; each frame's per-frame features computed once
                (hyperframes.infer.Predictor, reuse="auto");
* ``naive``     decode once, streaming; the whole model on every window (reuse=False);
* ``redecode``  per window, open the file, seek, decode its T frames (as an on-the-fly
                loader does) and run the whole model.

Throughput is video frames per second of wall time, decoding included (the best of
``--repeats`` runs; decoding and resizing alone are measured too, the ceiling of every
mode). One torch thread by default (``--threads``). Models: TSN (late fusion, ResNet-18), CNN+LSTM, TSM ResNet-18 (only
its stem is per-frame); re-decoding is measured for the first model. Random weights: the
speed does not depend on them; the predictions of the modes are compared (max |diff| of
probabilities) as a check.

Run: .venv/bin/python benchmarks/bench_predict.py  (writes benchmarks/results/predict.json)
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import write_result
from hyperframes import models
from hyperframes.decode import create_decoder
from hyperframes.demo._synthetic import make_motion_frames, write_h264
from hyperframes.infer import InputContract, Predictor, iter_predictions


def make_video(path: Path, frames: int, size: int, fps: int, gop: int) -> Path:
    clip = make_motion_frames("right", frames=frames, size=size, rng=np.random.default_rng(0))
    return write_h264(path, clip, fps=fps, gop=gop)


def build(name: str, frames: int) -> torch.nn.Module:
    torch.manual_seed(0)
    return models.create(name, num_classes=6, frames=frames).eval()


def predict_redecode(model, pre, video, *, stride, batch) -> tuple[float, np.ndarray]:
    """Every window decoded from the file on its own (keyframe seek + decode + resize)."""
    from hyperframes.bench._onthefly import pyav_window

    info = create_decoder("pyav").probe(str(video))
    pts = np.array([f.pts_seconds for f in create_decoder("pyav").frames(str(video))])  # index
    t = pre.frames
    size = pre.store_size(info.height, info.width)
    starts = list(range(0, len(pts) - t + 1, stride))
    if starts[-1] != len(pts) - t:
        starts.append(len(pts) - t)
    out = []
    t0 = time.perf_counter()
    with torch.inference_mode():
        for b in range(0, len(starts), batch):
            wins = [
                torch.from_numpy(pyav_window(str(video), pts[s : s + t], size=size))
                for s in starts[b : b + batch]
            ]
            logits = model(pre.prepare(torch.stack(wins))).float()  # (B, T, C, H, W) uint8
            out.append(torch.softmax(logits, 1).numpy())
    return time.perf_counter() - t0, np.concatenate(out)


def decode_only(video: Path, size: str) -> float:
    """Seconds to decode and resize every frame, no model: the ceiling of any mode."""
    pre = InputContract(frames=1, layout="temporal", size=size)
    t0 = time.perf_counter()
    native = None
    for f in create_decoder("pyav").frames(str(video)):
        native = native or f.to_rgb().shape[:2]
        f.to_rgb(size=pre.store_size(*native))
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--frames", type=int, default=300, help="video length")
    ap.add_argument("--video-size", type=int, default=128)
    ap.add_argument("--gop", type=int, default=250, help="keyframe interval of the video")
    ap.add_argument("--size", default="64", help="model input: short side")
    ap.add_argument("--window", type=int, default=8, help="T")
    ap.add_argument("--stride", type=int, default=1)
    ap.add_argument("--batch", type=int, default=8, help="windows per model call")
    ap.add_argument("--models", default="tsn_resnet18,cnn_lstm,tsm_resnet18")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch threads (0: torch's default); 1 gives "
        "steady numbers on a shared machine, where busy-waiting threads collide",
    )
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        video = make_video(Path(tmp) / "long.mp4", args.frames, args.video_size, 30, args.gop)
        decode_s = min(decode_only(video, args.size) for _ in range(args.repeats))
        for k, name in enumerate(args.models.split(",")):
            model = build(name, args.window)
            pre = InputContract(frames=args.window, layout=model.layout, size=args.size)
            runs = {}
            for mode in ("reuse", "naive") + (("redecode",) if k == 0 else ()):
                best, probs, computed = None, None, None
                for _ in range(args.repeats):
                    if mode == "redecode":
                        sec, pr = predict_redecode(
                            model, pre, video, stride=args.stride, batch=args.batch
                        )
                        comp = None
                    else:
                        p = Predictor(
                            model,
                            pre,
                            stride=args.stride,
                            batch_size=args.batch,
                            reuse="auto" if mode == "reuse" else False,
                        )
                        if mode == "reuse" and not p.reuse:
                            break
                        t0 = time.perf_counter()
                        pr = np.stack([pred.probs for pred in iter_predictions(p, video)])
                        sec = time.perf_counter() - t0
                        comp = p.frames_computed
                    if best is None or sec < best:
                        best, probs, computed = sec, pr, comp
                if best is None:
                    continue
                runs[mode] = (best, probs, computed)
            base = runs["naive"]
            for mode, (sec, probs, computed) in runs.items():
                rows.append(
                    {
                        "model": name,
                        "mode": mode,
                        "seconds": round(sec, 3),
                        "frames_per_second": round(args.frames / sec, 1),
                        "speedup_vs_naive": round(base[0] / sec, 2),
                        "images_through_per_frame_part": computed,
                        "windows": len(probs),
                        "max_prob_diff_vs_naive": float(np.abs(probs - base[1]).max())
                        if probs.shape == base[1].shape
                        else None,
                    }
                )
    print(f"\ndecode + resize only (no model): {args.frames / decode_s:.1f} frames/s")
    head = f"{'model':<14} {'mode':<9} {'s':>7} {'frames/s':>9} {'x naive':>8} {'images':>7} {'max|dp|':>9}"
    print(head)
    print("-" * len(head))
    for r in rows:
        imgs = r["images_through_per_frame_part"]
        diff = r["max_prob_diff_vs_naive"]
        print(
            f"{r['model']:<14} {r['mode']:<9} {r['seconds']:>7.2f} {r['frames_per_second']:>9.1f}"
            f" {r['speedup_vs_naive']:>8.2f} {imgs if imgs is not None else '-':>7}"
            f" {f'{diff:.1e}' if diff is not None else '-':>9}"
        )
    print()
    write_result(
        "predict",
        {
            "video": f"synthetic H.264 {args.video_size}x{args.video_size}, {args.frames} frames "
            f"at 30 fps, keyframe interval {args.gop}",
            "window": args.window,
            "stride": args.stride,
            "batch_windows": args.batch,
            "input_short_side": int(args.size),
            "device": "cpu",
            "torch_threads": torch.get_num_threads(),
            "decode_only_frames_per_second": round(args.frames / decode_s, 1),
            "rows": rows,
        },
    )


if __name__ == "__main__":
    main()
