"""What the aligned tracks cost (issue 12): store bytes each track adds, and windows/s of
``HyperframeDataset`` serving audio, flow and registered frames next to frames only.

Sources (made here, real encoded files): 8 clips of 4 s at 25 fps, 112x112 H.264 (keyframe
every 25 frames), each a smooth grey texture panning along its own wandering path (a hand-held
camera: flow and homographies have motion to follow), with an AAC audio track (48 kHz mono:
a tone over noise).

Stores (Python API, ``build_store``, codec raw, 112x112, 2 build workers), one per added track:
frames only; + audio (16 kHz mono float32); + audio + flow (DIS, float16); + audio + flow
(DIS, int8). Reported: each store's bytes on disk (every file of the folder), the bytes of
each track as ``describe_store`` counts them (flow bytes include the 3x3 homography per frame
pair) and those relative to the frames' bytes.

Reading: windows of T=8 frames, random windows (the ``random`` sampler; items of several
epochs mixed into each batch), batches of 32 through ``dataset.__getitems__`` and
``collate_hyperframes`` in the main process, store in the page cache. Every variant reads the
same store (audio + float16 flow) and the same list of windows:

  frames              frames only (temporal layout: the anchor of the ratios)
  audio_logmel        + ``audio="logmel"`` (64 mels, 4 columns per frame; torch.stft)
  flow                + ``flow=True`` (T-1, 2, H, W) float32, temporal layout
  frames_channel      frames only, channel layout (uint8 (C*T, H, W))
  flow_channel        ``flow=True`` in the channel layout: frames as float in [0, 1] with the
                      2*(T-1) flow planes appended (what the channel models train on)
  register_homography ``register="homography"``: frames 1..T-1 warped onto frame 0
  register_flow       ``register="flow"``: warped by the chained stored flow

Reading runs with one torch intra-op thread (``--torch-threads``), as torch's DataLoader gives
each worker process: the track variants are torch work (stft, grid_sample, stacking float
planes), and with torch's default of one thread per core on this 2-core box shared with other
processes, OpenMP contention made them 10-25x slower than with one thread (frames only: no
change), which measures the machine's load, not the tracks.

Variants are measured in interleaved rounds (each round runs every variant once, so all see
the same machine load); windows/s is the median over rounds and the ratio to frames only the
median of the per-round ratios (same run, same round). The machine's load average is recorded.
Run: .venv/bin/python benchmarks/bench_tracks.py [--quick: a smoke run, about 30 s, that
prints its table and writes nothing]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from fractions import Fraction
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import write_result
from hyperframes.build import BuildOptions, build_store
from hyperframes.data import HyperframeDataset, collate_hyperframes
from hyperframes.store import describe_store, open_store

FRAMES, BATCH, SIZE, FPS, RATE = 8, 32, 112, 25, 48000

VARIANTS = {
    "frames": {},
    "audio_logmel": {"audio": "logmel"},
    "flow": {"flow": True},
    "frames_channel": {"layout": "channel"},
    "flow_channel": {"layout": "channel", "flow": True},
    "register_homography": {"register": "homography"},
    "register_flow": {"register": "flow"},
}

STORES = {
    "frames": {},
    "audio": {"audio": True},
    "audio_flow_float16": {"audio": True, "flow": "dis"},
    "audio_flow_int8": {"audio": True, "flow": "dis", "flow_dtype": "int8"},
}


def write_clip(path: Path, *, seconds: float, seed: int) -> None:
    """A panning textured clip with an AAC track (see the module docstring)."""
    import av
    import cv2

    rng = np.random.default_rng(seed)
    n = round(seconds * FPS)
    # a wandering camera path: velocity (px/frame) drifting slowly, up to ~3 px/frame
    vel = np.cumsum(rng.normal(0, 0.3, (n, 2)), axis=0).clip(-3, 3) + rng.uniform(-1.5, 1.5, 2)
    pos = np.cumsum(vel, axis=0)
    pos -= pos.min(0)
    pad = 8
    hw = (
        int(np.ceil(pos[:, 1].max())) + SIZE + 2 * pad,
        int(np.ceil(pos[:, 0].max())) + SIZE + 2 * pad,
    )
    noise = rng.random(hw).astype(np.float32)
    tex = cv2.GaussianBlur(noise, (0, 0), 2.5)
    tex = (tex - tex.min()) / max(float(tex.max() - tex.min()), 1e-6) * 255
    t = np.arange(round(seconds * RATE)) / RATE
    tone = 0.3 * np.sin(2 * np.pi * (300 + 100 * seed) * t)
    samples = (tone + 0.05 * rng.standard_normal(len(t))).astype(np.float32)
    path.parent.mkdir(parents=True, exist_ok=True)
    with av.open(str(path), "w") as out:
        vs = out.add_stream("libx264", rate=FPS)
        vs.width, vs.height, vs.pix_fmt = SIZE, SIZE, "yuv420p"
        vs.options = {"crf": "20", "preset": "veryfast", "g": str(FPS)}
        aus = out.add_stream("aac", rate=RATE, layout="mono")
        packets = []
        for k in range(n):
            x, y = pos[k] + pad
            m = np.float32([[1, 0, x], [0, 1, y]])  # frame k shows the canvas at (x, y)
            grey = cv2.warpAffine(
                tex, m, (SIZE, SIZE), flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP
            )
            img = np.repeat(np.clip(grey + 0.5, 0, 255).astype(np.uint8)[:, :, None], 3, 2)
            f = av.VideoFrame.from_ndarray(img, format="rgb24")
            f.pts = k
            f.time_base = Fraction(1, FPS)
            packets += vs.encode(f)
        packets += vs.encode()
        block = aus.codec_context.frame_size or 1024
        for start in range(0, len(samples), block):
            af = av.AudioFrame.from_ndarray(
                samples[None, start : start + block], format="fltp", layout="mono"
            )
            af.sample_rate, af.pts, af.time_base = RATE, start, Fraction(1, RATE)
            packets += aus.encode(af)
        packets += aus.encode()
        packets.sort(key=lambda p: float((p.dts if p.dts is not None else 0) * p.time_base))
        for p in packets:
            out.mux(p)


def make_clips(root: Path, *, clips: int, seconds: float) -> str:
    for i in range(clips):
        write_clip(root / ("a" if i % 2 else "b") / f"clip_{i:02d}.mp4", seconds=seconds, seed=i)
    return (
        f"{clips} synthetic clips of {seconds:g} s, {FPS} fps, {SIZE}x{SIZE} H.264 (panning "
        f"texture) + AAC {RATE} Hz mono"
    )


def folder_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def build_stores(data: Path, root: Path) -> tuple[dict, dict]:
    """Builds each store of ``STORES``; returns their paths and the size table."""
    paths, sizes = {}, {}
    for name, extra in STORES.items():
        out = root / f"store-{name}"
        t0 = time.perf_counter()
        opts = BuildOptions(size=f"{SIZE}x{SIZE}", codec="raw", workers=2, **extra)
        build_store(data, out, opts, progress=False)
        seconds = time.perf_counter() - t0
        store = open_store(out)
        d = describe_store(store)
        store.close()
        tracks = d["tracks"]
        sizes[name] = {
            "build_seconds": seconds,
            "folder_bytes": folder_bytes(out),
            "store_bytes": d["store_bytes"],  # shards: frames and tracks
            "audio_bytes": (tracks["audio"] or {}).get("bytes", 0),
            "flow_bytes": (tracks["flow"] or {}).get("bytes", 0),
            "flow_dtype": (tracks["flow"] or {}).get("dtype"),
        }
        sizes[name]["frames_bytes"] = (
            sizes[name]["store_bytes"] - sizes[name]["audio_bytes"] - sizes[name]["flow_bytes"]
        )
        paths[name] = out
        print(f"built {name:20s} {sizes[name]}", flush=True)
    base = sizes["frames"]
    for s in sizes.values():
        s["added_bytes_vs_frames_store"] = s["folder_bytes"] - base["folder_bytes"]
        for k in ("audio", "flow"):
            s[f"{k}_over_frames"] = s[f"{k}_bytes"] / base["frames_bytes"]
    return paths, sizes


def plan_batches(n_items: int, *, batches: int, seed: int = 0) -> list[list[tuple[int, int]]]:
    """``batches`` batches of ``BATCH`` random (epoch, item) keys: random videos, and the
    random sampler draws a new start for each (epoch, item)."""
    rng = np.random.default_rng(seed)
    keys = [
        (int(e), int(i))
        for e, i in zip(
            rng.integers(0, 1 << 20, batches * BATCH), rng.integers(0, n_items, batches * BATCH)
        )
    ]
    return [keys[b * BATCH : (b + 1) * BATCH] for b in range(batches)]


def rate(ds, batches, *, min_seconds: float) -> float:
    """Windows/s of reading and collating ``batches`` (cycled), after one warm-up batch, for
    at least ``min_seconds`` and at least 4 batches."""
    collate_hyperframes(ds.__getitems__(batches[0]))
    n, b, t0 = 0, 1, time.perf_counter()
    while True:
        batch = collate_hyperframes(ds.__getitems__(batches[b % len(batches)]))
        n += len(batch)
        b += 1
        dt = time.perf_counter() - t0
        if dt >= min_seconds and n >= 4 * BATCH:
            return n / dt


def measure(path: Path, *, rounds: int, min_seconds: float) -> dict:
    store = open_store(path)
    datasets = {
        k: HyperframeDataset(store, sampler="random", frames=FRAMES, seed=0, **kw)
        for k, kw in VARIANTS.items()
    }
    batches = plan_batches(len(datasets["frames"]), batches=64)
    # what each variant gives (shapes of one collated batch), checked before timing
    shapes = {}
    for k, ds in datasets.items():
        b = collate_hyperframes(ds.__getitems__(batches[0]))
        shapes[k] = {
            "frames": list(b.frames.shape),
            "dtype": str(b.frames.dtype).replace("torch.", ""),
            **({"audio": list(b.audio.shape)} if b.audio is not None else {}),
            **({"flow": list(b.flow.shape)} if b.flow is not None else {}),
        }
    rates: dict[str, list[float]] = {k: [] for k in VARIANTS}
    for r in range(rounds):
        for k, ds in datasets.items():
            rates[k].append(rate(ds, batches, min_seconds=min_seconds))
        print(f"round {r + 1}/{rounds}:", {k: round(v[-1]) for k, v in rates.items()}, flush=True)
    out = {}
    for k in VARIANTS:
        out[k] = {
            "windows_per_s": statistics.median(rates[k]),
            "vs_frames": statistics.median(a / f for a, f in zip(rates[k], rates["frames"])),
            "rounds": rates[k],
            "batch_shapes": shapes[k],
        }
    store.close()
    return out


# -- tracks per batch (issue 20): what the batch pipeline calls, vs frames through the crop ----

#: the crops every batched variant goes through: (name, output side, RandomResizedCrop + flip?)
CROPS = {"center": (96, False), "rrc_flip": (96, True)}
BATCHED = ("frames", "audio_logmel", "flow", "flow_channel", "register_homography", "register_flow")


def plan_crops(ds, batches, *, side: int, random_crop: bool) -> list[dict]:
    """Each batch's (B,) videos, (B, T) stored indices and masks, (B, 4) crop boxes and (B,)
    flips, planned before timing (pure planning, the same for every variant): a centred
    ``side`` box, or a RandomResizedCrop(side) box and a coin flip drawn from the window's
    own seed."""
    import torch

    from hyperframes.data.transforms import RandomResizedCrop

    rrc = RandomResizedCrop(side)
    out = []
    for keys in batches:
        plans = [ds.plan(k) for k in keys]
        videos = np.array([p.video for p in plans], np.int64)
        shapes = np.asarray(ds.store.videos.shapes)[videos]
        boxes, flips = [], []
        for n, (e, i) in enumerate(keys):
            h, w = int(shapes[n][-2]), int(shapes[n][-1])
            if random_crop:
                g = torch.Generator().manual_seed(e * 1_000_003 + i)
                boxes.append(rrc.box(h, w, g))
                flips.append(bool(torch.rand((), generator=g) < 0.5))
            else:
                boxes.append(((h - side) // 2, (w - side) // 2, side, side))
                flips.append(False)
        out.append(
            {
                "videos": videos,
                "idx": np.stack([np.asarray(p.frame_indices, np.int64) for p in plans]),
                "mask": np.stack([np.asarray(p.mask, bool) for p in plans]),
                "boxes": np.array(boxes, np.int64),
                "flip": np.array(flips, bool),
            }
        )
    return out


class CropReader:
    """Frames only through the crop: one ``read_batch`` into a reused (B, T, C, H, W)
    buffer, each window's box resized into a reused (B, T, C, side, side) uint8 buffer
    (OpenCV's SIMD bilinear per plane, 2.5-3x faster here than torchvision's antialiased
    uint8 resize per window; a plain copy where the box is the output size), flips as index
    operations."""

    def __init__(self, store, side: int):
        self.store, self.side = store, side
        self.read_buf = None
        self.out_buf = None

    def frames(self, plan: dict):
        import cv2
        import torch

        videos, idx = plan["videos"], plan["idx"]
        requests = list(zip(videos.tolist(), idx))
        c, h, w = (int(x) for x in self.store.videos.shapes[int(videos[0])])
        shape = (len(videos), idx.shape[1], c, h, w)
        if self.read_buf is None or tuple(self.read_buf.shape) != shape:
            self.read_buf = torch.empty(shape, dtype=torch.uint8)
            self.out_buf = torch.empty(*shape[:3], self.side, self.side, dtype=torch.uint8)
        read = self.store.read_batch(requests, out=self.read_buf)
        out = self.out_buf
        src, dst, size = read.numpy(), out.numpy(), (self.side, self.side)
        for b, (y, x, bh, bw) in enumerate(plan["boxes"].tolist()):
            if (bh, bw) == size:
                dst[b] = src[b, :, :, y : y + bh, x : x + bw]
            else:  # OpenCV's SIMD bilinear, plane by plane, straight into the batch
                for f in range(shape[1]):
                    for ch in range(shape[2]):
                        box = src[b, f, ch, y : y + bh, x : x + bw]
                        cv2.resize(box, size, dst=dst[b, f, ch], interpolation=cv2.INTER_LINEAR)
            if plan["flip"][b]:
                dst[b] = dst[b, ..., ::-1].copy()
        return out


def run_batched(variant: str, reader: CropReader, tracks, plan: dict, channel_buf) -> int:
    """One batch of ``variant`` through the crop; returns its windows."""

    frames = reader.frames(plan)
    videos, idx, mask = plan["videos"], plan["idx"], plan["mask"]
    out_size = (reader.side, reader.side)
    if variant == "audio_logmel":
        v = reader.store.videos
        rows = np.asarray(v.frame_start)[videos][:, None] + idx
        pts = np.asarray(v.pts_seconds_all)[rows]
        tracks["audio"].read_audio_batch(videos, pts, np.asarray(v.fps)[videos], mask)
    elif variant == "flow":
        tracks["flow"].window_flow_batch(videos, idx, plan["boxes"], out_size, plan["flip"])
    elif variant == "flow_channel":  # the channel layout: frames in [0, 1], then the planes
        b, t, c = frames.shape[:3]
        planes = channel_buf[:, t * c :].view(b, t - 1, 2, *out_size)
        tracks["flow"].window_flow_batch(
            videos, idx, plan["boxes"], out_size, plan["flip"], out=planes
        )
        channel_buf[:, : t * c].copy_(frames.view(b, t * c, *out_size)).mul_(1 / 255.0)
    elif variant.startswith("register_"):
        key = 0
        tracks[variant].registered_batch(frames, videos, idx, plan["boxes"], key, flip=plan["flip"])
    return len(videos)


def measure_batched(path: Path, *, rounds: int, min_seconds: float) -> dict:
    """Windows/s of each batched variant over the same planned batches, through each crop of
    ``CROPS``, and the ratio to frames only through the same crop (same round)."""
    import torch

    from hyperframes.data._tracks import WindowTracks

    store = open_store(path)
    ds = HyperframeDataset(store, sampler="random", frames=FRAMES, seed=0)
    keys = plan_batches(len(ds), batches=32, seed=1)
    tracks = {
        "audio": WindowTracks(store, audio="logmel"),
        "flow": WindowTracks(store, flow=True),
        "register_homography": WindowTracks(store, register="homography"),
        "register_flow": WindowTracks(store, register="flow"),
    }
    result: dict = {}
    for crop, (side, random_crop) in CROPS.items():
        plans = plan_crops(ds, keys, side=side, random_crop=random_crop)
        reader = CropReader(store, side)
        c = int(store.videos.shapes[0][0])
        channel = torch.empty(BATCH, c * FRAMES + 2 * (FRAMES - 1), side, side)
        rates: dict[str, list[float]] = {k: [] for k in BATCHED}
        for _ in range(rounds):
            for k in BATCHED:
                run_batched(k, reader, tracks, plans[0], channel)  # warm-up
                n, b, t0 = 0, 1, time.perf_counter()
                while True:
                    n += run_batched(k, reader, tracks, plans[b % len(plans)], channel)
                    b += 1
                    dt = time.perf_counter() - t0
                    if dt >= min_seconds and n >= 4 * BATCH:
                        break
                rates[k].append(n / dt)
            print(f"batched {crop}:", {k: round(v[-1]) for k, v in rates.items()}, flush=True)
        result[crop] = {
            k: {
                "windows_per_s": statistics.median(rates[k]),
                "vs_frames": statistics.median(a / f for a, f in zip(rates[k], rates["frames"])),
                "rounds": rates[k],
            }
            for k in BATCHED
        }
        result[crop]["output"] = [BATCH, FRAMES, c, side, side]
    store.close()
    return result


def format_table(sizes: dict, reads: dict) -> str:
    lines = [
        f"{'store':22s} {'MB on disk':>10s} {'frames MB':>10s} {'audio MB':>9s} {'flow MB':>8s} "
        f"{'audio/frames':>12s} {'flow/frames':>11s}"
    ]
    for k, s in sizes.items():
        lines.append(
            f"{k:22s} {s['folder_bytes'] / 1e6:10.2f} {s['frames_bytes'] / 1e6:10.2f} "
            f"{s['audio_bytes'] / 1e6:9.2f} {s['flow_bytes'] / 1e6:8.2f} "
            f"{s['audio_over_frames']:12.3f} {s['flow_over_frames']:11.3f}"
        )
    lines.append("")
    lines.append(f"{'read variant':22s} {'windows/s':>10s} {'vs frames':>10s}  batch")
    for k, r in reads.items():
        lines.append(
            f"{k:22s} {r['windows_per_s']:10.0f} {r['vs_frames']:9.2f}x  {r['batch_shapes']}"
        )
    return "\n".join(lines)


#: issue 20's targets for the batched tracks, as ratios to frames only through the same crop
TARGETS = {
    "audio_logmel": 0.7,
    "flow_channel": 0.5,
    "register_homography": 0.3,
    "register_flow": 0.3,
}


def batched_targets(batched: dict) -> dict:
    return {
        f"{k}_{crop}": {
            "value": batched[crop][k]["vs_frames"],
            "at_least": want,
            "met": batched[crop][k]["vs_frames"] >= want,
        }
        for crop in batched
        for k, want in TARGETS.items()
    }


def format_batched(batched: dict) -> str:
    lines = [f"{'batched, through the crop':26s} {'windows/s':>10s} {'vs frames':>10s}"]
    for crop, rows in batched.items():
        for k in BATCHED:
            r = rows[k]
            lines.append(f"{crop + ' ' + k:26s} {r['windows_per_s']:10.0f} {r['vs_frames']:9.2f}x")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="a fast smoke run (2 s clips, 1 round)")
    ap.add_argument("--clips", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=4.0)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--min-seconds", type=float, default=1.5, help="per variant and round")
    ap.add_argument(
        "--torch-threads",
        type=int,
        default=1,
        help="torch intra-op threads while reading (1: as in a DataLoader worker process)",
    )
    args = ap.parse_args()
    import torch

    torch.set_num_threads(args.torch_threads)
    import cv2

    cv2.setNumThreads(args.torch_threads)  # the batched crop's resize: one thread as well
    if args.quick:
        args.seconds, args.rounds, args.min_seconds = 2.0, 1, 0.2
    tmp = Path(tempfile.mkdtemp(prefix="hf-bench-tracks-"))
    load = [os.getloadavg()[0]]
    t_start = time.perf_counter()
    try:
        sources = make_clips(tmp / "data", clips=args.clips, seconds=args.seconds)
        paths, sizes = build_stores(tmp / "data", tmp)
        load.append(os.getloadavg()[0])
        reads = measure(
            paths["audio_flow_float16"], rounds=args.rounds, min_seconds=args.min_seconds
        )
        load.append(os.getloadavg()[0])
        batched = measure_batched(
            paths["audio_flow_float16"], rounds=args.rounds, min_seconds=args.min_seconds
        )
        load.append(os.getloadavg()[0])
        table = format_table(sizes, reads) + "\n\n" + format_batched(batched)
        result = {
            "sources": sources,
            "quick": args.quick,
            "window": {"frames": FRAMES, "batch": BATCH, "size": [SIZE, SIZE]},
            "read_from": "store-audio_flow_float16 (every variant), page cache, main process",
            "torch_threads": args.torch_threads,
            "load_average_1min": load,
            "seconds_total": time.perf_counter() - t_start,
            "stores": sizes,
            "reads": reads,
            "batched": batched,
            "batched_targets": batched_targets(batched),
        }
        if args.quick:  # a smoke run does not replace the full run's numbers
            print("--quick: results/tracks.json not written")
        else:
            write_result("tracks", result)
        print(table)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
