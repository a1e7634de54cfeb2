"""Many streams at once: K live streams through one model, one batched call per tick
(hyperframes.infer.MultiStream), against K single-stream predictors each calling the model
on its own windows; and stored videos served from a store held in RAM (no decoding) against
predicting the same videos from their files (decoding each).

Live: K synthetic streams (a textured disc moving, 64x64 frames), each tick one new frame of
every stream; windows of T=4 frames at stride 2, so every other tick each stream completes a
window. ``multi``: push the K frames, then ``run()`` (every ready window, ``batch_size`` = K:
one model call). ``separate``: K Predictors (batch_size 1), each push running its stream's
window alone. A stream's latency is the tick's wall time from its frame's push to its
prediction (median and 95th percentile over the ticks that complete windows); throughput is
frames of all streams per second of wall time, and ``realtime_streams_25fps`` = frames/s /
25, the streams at 25 fps this CPU keeps up with.

Stored: K videos of the same kind in a raw store; ``serve_store(resident=True)`` (frames
copied into RAM once before the clock starts) against ``predict``-style decoding of each
video file (iter_predictions, one Predictor per file). Frames per second of wall time.

Model: channel_mobilenet_v3_small (early fusion, 3T-channel first conv), random weights (speed does not
depend on them), one torch thread (``--threads``).

Run: .venv/bin/python benchmarks/bench_streams.py  (writes benchmarks/results/streams.json)
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import write_result
from hyperframes import models
from hyperframes.build import BuildOptions, build_store
from hyperframes.demo import make_motion_dataset
from hyperframes.demo._synthetic import make_motion_frames
from hyperframes.infer import InputContract, MultiStream, Predictor, iter_predictions

T, STRIDE, SIZE, NAME = 4, 2, 64, "channel_mobilenet_v3_small"


def template(batch_size: int) -> Predictor:
    torch.manual_seed(0)
    model = models.create(NAME, num_classes=5, frames=T)
    contract = InputContract(frames=T, layout=model.layout, size=None)
    return Predictor(model, contract, stride=STRIDE, batch_size=batch_size, reuse=False)


def streams(k: int, ticks: int) -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    kinds = ("left", "right", "up", "down")
    return [make_motion_frames(kinds[i % 4], frames=ticks, size=SIZE, rng=rng) for i in range(k)]


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(values, q)) if values else float("nan")


def live_multi(clips: list[np.ndarray], warmup: int) -> dict:
    k, ticks = len(clips), len(clips[0])
    multi = MultiStream(template(batch_size=k), batch_size=k)
    for i in range(k):
        multi.add_stream(i)
    lat, windows, t_start = [], 0, 0.0
    for tick in range(ticks):
        if tick == warmup:
            t_start, windows = time.perf_counter(), 0
        t0 = time.perf_counter()
        for i, clip in enumerate(clips):
            multi.push(i, clip[tick], tick / 25)
        out = multi.run()
        dt = time.perf_counter() - t0
        n = sum(map(len, out.values()))
        windows += n
        if tick >= warmup and n:
            lat.append(dt)
    wall = time.perf_counter() - t_start
    return _row(k, ticks - warmup, wall, windows, lat, multi.calls)


def live_separate(clips: list[np.ndarray], warmup: int) -> dict:
    k, ticks = len(clips), len(clips[0])
    base = template(batch_size=1)
    preds = [Predictor(base.model, base.contract, stride=STRIDE, batch_size=1) for _ in clips]
    lat: list[float] = []
    windows, t_start = 0, 0.0
    for tick in range(ticks):
        if tick == warmup:
            t_start, windows = time.perf_counter(), 0
        t0 = time.perf_counter()
        n = 0
        for p, clip in zip(preds, clips):
            n += len(p.push(clip[tick], tick / 25))
        dt = time.perf_counter() - t0  # the last stream waits for all before it
        windows += n
        if tick >= warmup and n:
            lat.append(dt)
    wall = time.perf_counter() - t_start
    return _row(k, ticks - warmup, wall, windows, lat, None)


def _row(k: int, ticks: int, wall: float, windows: int, lat: list[float], calls) -> dict:
    fps = k * ticks / wall
    return {
        "streams": k,
        "ticks": ticks,
        "frames_per_second": round(fps, 1),
        "windows_per_second": round(windows / wall, 1),
        "latency_ms_median": round(1e3 * statistics.median(lat), 2) if lat else None,
        "latency_ms_p95": round(1e3 * pct(lat, 95), 2),
        "realtime_streams_25fps": round(fps / 25, 2),
        **({"model_calls": calls} if calls is not None else {}),
    }


def stored(root: Path, k: int, frames: int) -> dict:
    make_motion_dataset(
        root / "videos", classes=("left", "right"), videos_per_class=(k + 1) // 2,
        frames=frames, size=SIZE, fps=25, seed=3,
    )  # fmt: skip
    build_store(root / "videos", root / "store", BuildOptions(size="none"), progress=False)
    from hyperframes.data import InMemoryStore
    from hyperframes.store import open_store

    store = open_store(root / "store")
    videos = list(range(len(store.videos)))
    total = int(sum(store.videos[v].num_frames for v in videos))
    resident = InMemoryStore(store)  # loaded once, before the clock, as a server would

    def serve() -> int:
        multi = MultiStream(template(batch_size=len(videos)), batch_size=len(videos))
        return sum(1 for _ in multi.serve_store(resident, videos))

    def decode() -> int:
        n = 0
        for v in videos:
            p = template(batch_size=len(videos))
            n += sum(1 for _ in iter_predictions(p, store.videos[v].path))
        return n

    out: dict = {"videos": len(videos), "frames": total, "frame_size": SIZE}
    for name, fn in (("resident_store", serve), ("decode_files", decode)):
        fn()  # warm-up
        t0 = time.perf_counter()
        windows = fn()
        wall = time.perf_counter() - t0
        out[name] = {
            "frames_per_second": round(total / wall, 1),
            "windows": windows,
            "seconds": round(wall, 3),
        }
    out["ratio_resident_over_decode"] = round(
        out["resident_store"]["frames_per_second"] / out["decode_files"]["frames_per_second"], 2
    )
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--streams", default="1,4,16")
    ap.add_argument("--ticks", type=int, default=40)
    ap.add_argument("--warmup", type=int, default=8)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--stored-videos", type=int, default=8)
    ap.add_argument("--stored-frames", type=int, default=48)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    live = []
    for k in (int(x) for x in args.streams.split(",")):
        clips = streams(k, args.ticks)
        multi, separate = live_multi(clips, args.warmup), live_separate(clips, args.warmup)
        live.append(
            {
                "streams": k,
                "multi": multi,
                "separate": separate,
                "throughput_ratio_multi_over_separate": round(
                    multi["frames_per_second"] / separate["frames_per_second"], 2
                ),
            }
        )
        print(live[-1], flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        store = stored(Path(tmp), args.stored_videos, args.stored_frames)
    write_result(
        "streams",
        {
            "model": NAME,
            "frames": T,
            "stride": STRIDE,
            "frame_size": SIZE,
            "torch_threads": args.threads,
            "note": "a 2-core machine shared with other jobs: absolute rates are noisy, the "
            "ratios measured in the same run are the result",
            "live": live,
            "stored": store,
        },
    )


if __name__ == "__main__":
    main()
