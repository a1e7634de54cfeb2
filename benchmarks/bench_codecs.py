"""The frontier (issue 34 item 5): bytes on disk over the source videos' bytes, and windows/s with
the standard augmentation, for every registered codec and for the peers, in one run.

Sources: the mixed-aspect real clips of ``bench_pipeline.py`` (test.mp4 340x256, test.avi
320x240, nasa_13013.mp4 320x180, av1_video.mkv 640x360, part_0.mp4 340x256; H.264, MPEG-4,
AV1), copied to ``--copies`` files, stored at short side 128 (``build_store``, 2 workers).

Every reader serves windows of 16 frames with ``RandomResizedCrop(112)`` +
``RandomHorizontalFlip()`` in batches of 32:

  codec:<name>    a store built with each codec of ``list_codecs()`` (a codec registered later
                  is measured by being registered), read by ``HyperframeDataset`` (``sliding``
                  windows starting every 4th frame, shuffled) through ``hyperframes.loader``
                  with 2 worker threads
  experiment:x264-chunks  issue 34 item 4: chunks of 8 stored frames as H.264 (libx264
                  ultrafast, crf 18, one GOP per chunk), decoded with PyAV, read the same way
                  (``_video_chunks.py``: registered in this process only)
  rawframes       one JPEG file per stored frame (mmaction2's layout; libjpeg-turbo q90 4:2:0,
                  as the jpeg codec), decoded with simplejpeg, cropped/resized/flipped with
                  OpenCV, the same windows, through the same loader
  litdata         LitData ``optimize`` of the decoded windows (non-overlapping: every stored
                  frame once; a sampler starting every 4th frame would store 4x), read with
                  ``StreamingDataset[i]`` + the OpenCV augmentation, through the same loader
  pyav, torchcodec, decord   decoding the source files on the fly at their fastest honest
                  setting (``_decoders.py``: decoder-side resize to the stored size, one
                  thread each, 2 processes), then the OpenCV augmentation; a decoder that does
                  not load here is listed with the reason

Also in the same run: ``hyperframes plan`` (``plan_store``, ``--plan-sample`` videos) on the same
clips against the stores built from all of them (issue 34 item 3: bytes within 25%, windows/s
per core within 2x of the same measurement on the built store).

Bytes: every file of the store / folder on disk over the source files' bytes (1 for the
on-the-fly decoders). Loader readers are measured in interleaved rounds (median windows/s);
a row is on the frontier when no other row is both no larger and no slower. Writes
results/codecs.json (a list of rows), results/codecs_run.json (how, when, the load, the
experiment's verdict) and results/codecs.png (the picture, log scales).

Run: .venv/bin/python benchmarks/bench_codecs.py [--quick: fewer clips, one short round]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _decoders
import _video_chunks
from _common import RESULTS, folder_bytes
from _frontier_peers import LitWindows, Rawframes, write_litdata, write_rawframes
from bench_pipeline import BATCH, FRAMES, SIZE, START_EVERY, loader_rate, make_sources

STORED = "128"


def frontier(rows: list[dict]) -> None:
    """Mark each measured row ``frontier``: no other row is both no larger and no slower."""
    done = [r for r in rows if r.get("windows_per_s")]
    for r in done:
        r["frontier"] = not any(
            o is not r
            and o["bytes_over_source"] <= r["bytes_over_source"]
            and o["windows_per_s"] >= r["windows_per_s"]
            and (
                o["bytes_over_source"] < r["bytes_over_source"]
                or o["windows_per_s"] > r["windows_per_s"]
            )
            for o in done
        )


def plot(rows: list[dict], path: Path, title: str) -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(8, 5.5), dpi=110)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    styles = {
        "codec": ("tab:blue", "o", "hyperframes store (codec)"),
        "experiment": ("tab:orange", "D", "experiment (not a codec)"),
        "peer": ("tab:gray", "s", "peer"),
    }
    for kind, (color, marker, label) in styles.items():
        pts = [r for r in rows if r["kind"] == kind and r.get("windows_per_s")]
        if pts:
            ax.scatter(
                [r["bytes_over_source"] for r in pts],
                [r["windows_per_s"] for r in pts],
                c=color,
                marker=marker,
                s=60,
                label=label,
                zorder=3,
            )
        for r in pts:
            ax.annotate(
                r["name"],
                (r["bytes_over_source"], r["windows_per_s"]),
                textcoords="offset points",
                xytext=(7, 4),
                fontsize=9,
            )
    edge = sorted((r for r in rows if r.get("frontier")), key=lambda r: r["bytes_over_source"])
    ax.plot(
        [r["bytes_over_source"] for r in edge],
        [r["windows_per_s"] for r in edge],
        ls="--",
        c="tab:green",
        lw=1,
        label="frontier (none smaller and faster)",
        zorder=2,
    )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("bytes on disk / source video bytes (log)")
    ax.set_ylabel("windows/s, RandomResizedCrop(112) + flip, 2 workers (log)")
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="lower right", fontsize=9)
    xs = [r["bytes_over_source"] for r in rows if r.get("windows_per_s")]
    ax.set_xlim(min(xs) / 1.6, max(xs) * 2.5)
    fig.tight_layout()
    tmp = path.with_name(f".{path.name}.tmp.png")
    fig.savefig(tmp)
    tmp.replace(path)


def sliding_windows(store) -> list[tuple[int, int]]:
    """``(video, start)`` of every window the ``sliding`` sampler draws (a start every 4th
    frame; videos shorter than a window left out)."""
    return [
        (v, s)
        for v, n in enumerate(np.asarray(store.videos.num_frames))
        for s in range(0, int(n) - FRAMES + 1, START_EVERY)
    ]


def on_the_fly(raw, windows, seconds: float) -> dict[str, dict]:
    """Each decoder of ``_decoders.DECODERS``: windows/s over the videos it can decode (the
    others listed with the reason, as ``hyperframes bench`` does), or why not at all."""
    from hyperframes.bench._onthefly import available_window_decoders, cannot_decode

    picked = windows[:: max(1, len(windows) // 64)]
    np.random.default_rng(0).shuffle(picked)
    loaded = set(_decoders.available())
    out: dict[str, dict] = {}
    for name in _decoders.DECODERS:
        if name not in loaded:
            out[name] = {"skipped": f"does not load here (loaded: {available_window_decoders()})"}
            continue
        why = {v: cannot_decode(name, raw.videos[v]) for v in {v for v, _ in picked}}
        plan = []
        for v, s in picked:
            if why[v] is None:
                rec, idx = raw.videos[v], np.arange(s, s + FRAMES)
                size = tuple(int(x) for x in raw.videos.shapes[v][1:])
                plan.append(
                    (
                        rec.path,
                        rec.pts_seconds[idx],
                        rec.source_frame_indices[idx],
                        rec.stream,
                        size,
                    )
                )
        left_out = sorted({Path(raw.videos[v].path).name: r for v, r in why.items() if r}.items())
        try:
            if not plan:
                raise RuntimeError("no video it can decode")
            got = _decoders.parallel_rate(name, plan, seconds=seconds, augment=SIZE)
            out[name] = {"windows_per_s": got["windows_per_s"], "processes": got["decoders"]}
        except Exception as e:  # a decoder that fails on these files is reported, not fatal
            out[name] = {"skipped": f"{type(e).__name__}: {e}"[:300]}
        if left_out:
            out[name]["videos_left_out"] = [f"{k}: {r[:160]}" for k, r in left_out]
        print(name, out[name], flush=True)
    return out


def plan_accuracy(data: Path, built: dict[str, Path], *, sample: int, seconds: float) -> dict:
    """``plan_store`` on ``data`` (short side 128) against the stores ``built`` from all of it:
    predicted / real bytes, and predicted windows/s per core / what the same measurement
    (``RandomResizedCrop(112)`` + flip, the loader in this process, one thread) gives on the
    built store."""
    from hyperframes.bench import plan_store
    from hyperframes.bench._run import augmented_rate
    from hyperframes.build import BuildOptions
    from hyperframes.store import open_store

    plan = plan_store(
        data, BuildOptions(size=STORED), sample=sample, codecs=tuple(built), seconds=seconds
    )
    rows = {}
    for r in plan.rows:
        with open_store(built[r.codec]) as s:
            real = int(s.manifest["store_bytes"])
        rate = augmented_rate(built[r.codec], FRAMES, BATCH, SIZE, seconds)
        rows[r.codec] = {
            "predicted_bytes": r.store_bytes,
            "real_bytes": real,
            "bytes_error": r.store_bytes / real - 1,
            "predicted_windows_per_s_per_core": r.windows_per_s_per_core,
            "built_store_windows_per_s_per_core": rate,
            "windows_per_s_ratio": r.windows_per_s_per_core / rate,
        }
        print("plan", r.codec, {k: round(v, 3) for k, v in rows[r.codec].items()}, flush=True)
    return {
        "data": str(data),
        "sample": [Path(p).name for p in plan.sample],
        "videos": plan.videos,
        "rows": rows,
        "targets": "bytes within 25%, windows/s within 2x",
        "met": all(
            abs(x["bytes_error"]) <= 0.25 and 0.5 <= x["windows_per_s_ratio"] <= 2
            for x in rows.values()
        ),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--copies", type=int, default=10, help="source clips (default 10)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--batches", type=int, default=40, help="at most, per reader and round")
    ap.add_argument("--seconds", type=float, default=4.0, help="at most, per reader and round")
    ap.add_argument("--decode-seconds", type=float, default=6.0, help="per on-the-fly decoder")
    ap.add_argument("--quick", action="store_true", help="5 clips, one short round")
    ap.add_argument("--plan-sample", type=int, default=4, help="plan's --sample (default 4)")
    ap.add_argument(
        "--replot", action="store_true", help="only draw codecs.png again from codecs.json"
    )
    ap.add_argument("--out", type=Path, default=RESULTS, help="where codecs.json/png go")
    args = ap.parse_args()
    if args.replot:
        rows = json.loads((args.out / "codecs.json").read_text())
        plot(rows, args.out / "codecs.png", _title(args.copies))
        return
    if args.quick:
        args.copies, args.rounds, args.batches, args.seconds = 5, 1, 6, 1.5
        args.decode_seconds = 2.0
    import cv2
    import torch

    from hyperframes.build import BuildOptions, build_store
    from hyperframes.data import HyperframeDataset
    from hyperframes.data import transforms as T
    from hyperframes.store import list_codecs, open_store

    torch.set_num_threads(1)
    cv2.setNumThreads(1)
    experiment = _video_chunks.register()
    codecs = [c for c in list_codecs() if c != experiment]
    load = [os.getloadavg()[0]]
    t_start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="hf-bench-codecs-") as tmp:
        root = Path(tmp)
        sources = make_sources(root / "data", copies=args.copies)
        source_bytes = folder_bytes(root / "data")
        rows: list[dict] = []
        makers = {}
        aug = T.Compose([T.RandomResizedCrop(SIZE), T.RandomHorizontalFlip()])
        for name in [*codecs, experiment]:
            out = root / f"store-{name}"
            t0 = time.perf_counter()
            # the experiment is registered in this process only: built here, one worker
            how = {"workers": 1, "chunk_frames": 8} if name == experiment else {"workers": 2}
            build_store(
                root / "data", out, BuildOptions(codec=name, size=STORED, **how), progress=False
            )
            kind = "experiment" if name == experiment else "codec"
            rows.append(
                {
                    "name": name if kind == "codec" else f"{name} (experiment)",
                    "kind": kind,
                    "bytes": folder_bytes(out),
                    "build_seconds": time.perf_counter() - t0,
                }
            )

            def make(out=out):
                return HyperframeDataset(
                    str(out),
                    "sliding",
                    frames=FRAMES,
                    seed=0,
                    transform=aug,
                    sampler_options={"window_stride": START_EVERY, "short": "pad"},
                )

            makers[rows[-1]["name"]] = make
            print(rows[-1], flush=True)
        raw = open_store(root / "store-raw")
        windows = sliding_windows(raw)
        frame_dirs = root / "rawframes"
        rows.append(
            {
                "name": "rawframes",
                "kind": "peer",
                "what": "one JPEG file per frame (mmaction2), libjpeg-turbo + OpenCV",
                "bytes": write_rawframes(raw, frame_dirs),
            }
        )
        folders = [(frame_dirs / f"video_{v:05d}", s) for v, s in windows]
        makers["rawframes"] = lambda: Rawframes(folders, FRAMES, SIZE)
        lit = root / "litdata"
        whole = [(v, s) for v, s in windows if s % FRAMES == 0]
        write_litdata(str(root / "store-raw"), whole, FRAMES, lit)
        rows.append(
            {
                "name": "litdata",
                "kind": "peer",
                "what": "LitData optimize of the decoded windows (each frame once) + OpenCV",
                "bytes": folder_bytes(lit),
            }
        )
        makers["litdata"] = lambda: LitWindows(lit, len(whole), FRAMES, SIZE)
        load.append(os.getloadavg()[0])
        for make in makers.values():  # warm-up: page cache, buffers, OpenCV's first calls
            loader_rate(make, 2)
        rates: dict[str, list[float]] = {k: [] for k in makers}
        for r in range(args.rounds):
            for k, make in makers.items():
                rates[k].append(loader_rate(make, args.batches, seconds=args.seconds))
            print(f"round {r + 1}:", {k: round(v[-1], 1) for k, v in rates.items()}, flush=True)
        load.append(os.getloadavg()[0])
        decoded = on_the_fly(raw, windows, args.decode_seconds)
        raw.close()
        planned = plan_accuracy(
            root / "data",
            {c: root / f"store-{c}" for c in codecs},
            sample=args.plan_sample,
            seconds=1.0 if args.quick else 2.0,
        )
    for r in rows:
        r["windows_per_s"] = statistics.median(rates[r["name"]])
        r["rounds"] = [round(x, 1) for x in rates[r["name"]]]
    for name, got in decoded.items():
        rows.append(
            {
                "name": name,
                "kind": "peer",
                "what": f"{name} on the fly (decoder-side resize, 1 thread, 2 processes) + OpenCV",
                "bytes": source_bytes,
                **got,
            }
        )
    for r in rows:
        r["bytes_over_source"] = r["bytes"] / source_bytes
    frontier(rows)
    by = {r["name"]: r for r in rows}
    jpeg, x264 = by.get("jpeg"), by[f"{experiment} (experiment)"]
    verdict = None
    if jpeg and jpeg.get("windows_per_s"):
        smaller = x264["bytes"] < jpeg["bytes"]
        speed = x264["windows_per_s"] / jpeg["windows_per_s"]
        verdict = {
            "bytes_vs_jpeg": x264["bytes"] / jpeg["bytes"],
            "windows_per_s_vs_jpeg": speed,
            "on_the_frontier": smaller and speed >= 0.5,
            "rule": "kept as a codec only if smaller than jpeg at >= 0.5x its windows/s",
        }
    meta = {
        "benchmark": "codecs",
        "date": time.strftime("%Y-%m-%d %H:%M:%S"),
        "sources": sources,
        "source_bytes": source_bytes,
        "stored": f"short side {STORED}",
        "setup": (
            f"windows of {FRAMES}, RandomResizedCrop({SIZE}) + RandomHorizontalFlip, batches of "
            f"{BATCH}, hyperframes.loader with 2 worker threads (on-the-fly decoders: 2 "
            f"processes), one torch thread, OpenCV one thread, {args.rounds} interleaved rounds"
        ),
        "quick": args.quick,
        "experiment_verdict": verdict,
        "plan_accuracy": planned,
        "load_average_1min": load,
        "seconds": time.perf_counter() - t_start,
    }
    print(f"{'name':<28}{'bytes/source':>14}{'windows/s':>12}  frontier")
    for r in rows:
        rate = f"{r['windows_per_s']:.1f}" if r.get("windows_per_s") else "skipped"
        print(f"{r['name']:<28}{r['bytes_over_source']:>14.2f}{rate:>12}  {r.get('frontier', '')}")
        for why in [r.get("skipped"), *r.get("videos_left_out", [])]:
            if why:
                print(f"    {why}")
    print(json.dumps(meta, indent=1))
    if args.quick and args.out == RESULTS:
        return  # a smoke run writes nothing there
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "codecs.json").write_text(json.dumps(rows, indent=1) + "\n")
    (args.out / "codecs_run.json").write_text(json.dumps(meta, indent=1) + "\n")
    plot(rows, args.out / "codecs.png", _title(args.copies))


def _title(copies: int) -> str:
    return (
        f"{copies} real clips (mixed aspect), stored at short side {STORED}\n"
        f"windows of {FRAMES}, RandomResizedCrop({SIZE}) + flip, batches of {BATCH}, "
        "2 workers (load average in codecs_run.json)"
    )


if __name__ == "__main__":
    main()
