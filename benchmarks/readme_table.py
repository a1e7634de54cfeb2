"""The performance page of the docs, generated from benchmarks/results/*.json.

The docs build (``docs/_hooks.py``) calls :func:`performance_page`, so the site always shows the
result files as they are; run as a script (``make bench`` does, after the benchmarks) it prints
the page and refreshes the README's frontier picture block (the picture, when
``benchmarks/results/codecs.png`` exists; nothing, and no error, when it does not).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RES = ROOT / "benchmarks" / "results"


TEMPLATE = """## The measurements

Measured on this project's 2-core, no-GPU machine by the stand-alone scripts in `benchmarks/`
(each measures its anchor in the same run and writes `benchmarks/results/NAME.json`; `make bench`
runs them all; this page is generated from those files at every docs build). Sources: 12 copies of a real Kinetics-style clip (H.264
340x256, 30 fps, 300 frames, keyframes at 0 and 235); windows of 16 frames of 3x112x112, batches
of 32, store in the page cache. Targets not met are marked **missed**.

| what (`benchmarks/…`) | measured | target |
|---|---|---|
| raw store reads vs plain memcpy of the same bytes (`bench_read.py`) | RAW_MEMCPY | ≥ 0.5x |
| raw store vs fastest on-the-fly decoder (open, seek, decode, resize) | RAW_DEC | ≥ 300x |
| jpeg store vs fastest on-the-fly decoder, one process each | JPEG_DEC | ≥ 30x |
| jpeg loader (2 threads) vs the fastest decoder run as 2 processes, one thread each, resizing in the decoder | JPEG_PAR | ≥ 60x |
| jpeg store size / source video bytes | JPEG_SIZE | ≤ 2x |
| loader, 2 worker threads vs `workers=0`: raw, lz4, zstd, jpeg | SCALING | raw ≥ 1x; others ≥ 1.6x |
| uncompressed HDF5 vs the raw folder store; lzf HDF5 | H5_ROW | ≥ 0.3x |
| `open_store(check="video")` vs unchecked, raw: first read of every video / 1024 random windows | CHECK | reported |
| training data-wait share, channel ResNet-18 T=16 112² batch 32 (`bench_train_wait.py`): raw store, jpeg store, on the fly | WAIT | < 2% (stores) |
| build time / decode-only time, same decoder and 2 workers (`bench_build.py`) | BUILD | ≤ 1.25x |
| store size / source bytes: raw, lz4, zstd, jpeg | SIZES | reported |
| start-up of `--help`, `info`, `verify`, `show` (fresh process; `bench_startup.py`; importing torch alone: TORCH_S) | STARTUP | < 0.5 s each |
| open a 300k-video, 100M-frame store, every index check included (`bench_open.py`) | OPEN (measured before the index files' checksums were checked at open; hashing its 1.6 GB index adds ~0.25 s of CPU time: 0.47 s vs 0.23 s CPU per open, same busy machine) | about 1 s |
| `HyperframeDataset` over it: create / plan one item (random, sliding, duration) | DATASET | < 1 s / < 100 µs |
| predict, TSN-ResNet18, per-frame feature reuse vs full windows (`bench_predict.py`) | PRED | speed-up shown |
| windows/s with audio (log-mel), flow planes, registration vs frames only; store bytes each track adds (`bench_tracks.py`) | TRACKS | reported |
| tracks per batch (`WindowTracks.*_batch`) vs frames only through the same crop, T=8, batches of 32 to 96², one thread (`bench_tracks.py`) | BATCHED_TRACKS | log-mel ≥ 0.7x, flow planes ≥ 0.5x, registration ≥ 0.3x |
| lz4 store on S3 (SeaweedFS on 127.0.0.1), windows/s: cold (range GETs) / warm node cache / local disk (`bench_s3.py`) | S3_ROW | reported |
| the same windows from the peers (`bench_peers.py`, same server, same run), windows/s local / cold / warm and MB stored for the plan: hyperframes (lz4) vs LitData `read_window` (TemporalArrayLoader), LitData `optimize` of decoded windows, MosaicML Streaming (MDS) | PEERS_ROW | ahead on all |
| the same: cold with the loader's read-ahead vs plain concurrent ranged GETs of the same bytes; warm node cache vs local disk; bytes fetched per window vs the window's compressed frames (`bench_s3.py`) | S3_TARGETS | ≥ 0.7x; ≥ 0.9x; ≤ 1.3x |
| batch pipeline (`bench_pipeline.py`; 13 real clips of 4:3 and 16:9, short side 128; loader 2 threads, T=16, batches of 32, sliding windows every 4th start, shuffled): `CenterCrop(112)` vs a memcpy of the same output bytes through the loader | PIPE_CENTER | ≥ 0.5x |
| `RandomResizedCrop(112)` + `RandomHorizontalFlip()` vs `CenterCrop(112)`; the same + `ColorJitter(0.4, 0.4, 0.4)` | PIPE_AUG | ≥ 0.7x; ≥ 0.5x |
| uniform 112x112 store, no transform, vs a memcpy through the loader | PIPE_UNIFORM | ≥ 0.8x |

Windows/s in that run: STORE_ROWS. On-the-fly decoders: DEC_ROWS.
The batch pipeline rows come from one run (load average PIPE_LOAD on 2 cores while it ran: a
memcpy of the batches managed PIPE_MEMCPY windows/s through the loader), so their ratios,
measured in interleaved rounds, are what counts; ratios close to their target move across it
from run to run (CenterCrop vs memcpy measured 0.46-0.52x, uniform windows 0.67-0.89x, log-mel
through RandomResizedCrop + flip 0.68-0.76x over the earlier runs). Since this run each variant
is measured over 80 batches (several epochs of the store) in 5 rounds: one epoch of ~20 batches,
as before, lasted ~40 ms for the memcpy anchor and moved it 1.5x from round to round, which had
put CenterCrop at 0.55x (met) in the run before against 0.44x here. The batch pipeline's random
resized crops resize with `INTER_LINEAR` below a 2x shrink (OpenCV's non-integer `INTER_AREA`
took 3.7 ms per 16-frame 112x112 window, `INTER_LINEAR` 0.65 ms), flips are mirrored in the
read's pass (torch's gather/flip/scatter cost ~1 ms a window), colour jitter is OpenCV's
saturating SIMD arithmetic (a lookup table took 0.19 ms a pass, `convertScaleAbs` 0.06 ms),
the sliding sampler plans a batch as columns, and the flow is cropped by `cv2.warpAffine` and
chained by `cv2.remap` (`grid_sample` took 3.4 ms a window): before them RandomResizedCrop +
flip gave 530 windows/s, with jitter 320, CenterCrop 4,329, uniform windows 5,851. Where they
still miss, the limit measured: a resizing crop is compute, not a copy. The read's bilinear
resize is one C call a window (`resize_linear`, `_core/_pixels.c`: OpenCV's `INTER_LINEAR`
weights and integer steps, so its pixels, the tables computed once for the window's 48 planes,
each source row resized horizontally once, the next rows prefetched, the flip in that pass;
RandomResizedCrop + flip went from 0.22x to 0.60x of CenterCrop at a load of ~3), and the
per-sample generators are hashed for the batch at once. Measured on one thread per batch of 32
out of the store's map: the resize 5.4 ms (OpenCV plane by plane: 16.6 ms; half of the kernel's
time waits on its source loads) against CenterCrop's 3.6-4.1 ms copy of the same boxes, the crop
box and flip draws 0.9 ms (~20 us of torch calls a sample), the whole batch 7.3-8.0 ms against
CenterCrop's 4.6-5.3, so 0.7x would need the resize at about the copy's cost and no draws (and
every gain in the copy path moves the anchor too); colour
jitter adds brightness (one pass), contrast (a pass per frame around its own mean) and
saturation (five `addWeighted` passes for the grey and the blend), ~0.45 ms a window at best.
A CenterCrop of mixed shapes copies 112-byte rows out of 170-228-byte frame rows: numpy's own
strided copy of the same centred boxes takes 3.3-3.9 ms a batch of 32 in one thread out of the
store's map (3.0 out of an array in RAM, torch alike) against 1.37 ms for the flat copy, 0.35-0.46x
before any pipeline work (the pipeline's CenterCrop: 4.3 ms). Uniform windows are read from the
plan's columns (`Store.read_windows`: ~2 µs of Python a window, where the per-request checks
spent ~15; 0.61x before it), one flat copy each out of the store's map: in one thread 1.75 ms a
batch against the anchor's 1.37, of which the copies take 1.46 (1.41 out of an array the process
holds: the map's 4 KiB pages) and planning, meta and labels ~0.25. Flow planes write 6x the frames'
bytes as float32; registration by flow chains T-1 flow samplings and warps the frames. The GPU
jitter run was not measured (no GPU here). `make demo`'s six-class run with flow planes waits for
data 0.5% of its training time (0.9% frames only; 8% before the batch pipeline), in one full
`hyperframes demo` (target < 2%). The uniform ratio moves most with the machine: on another
2-core machine, uniform windows rose from 10,762 to 11,830 windows/s while its faster memcpy
anchor (18,632 windows/s against 12,669) took the ratio from 0.89x to 0.57x; the latest run here
measured PIPE_UNIFORM_RATE against PIPE_UNIFORM_MEMCPY.
`hyperframes bench` on four of those clips (three frame shapes, read through the crop path,
`--codecs raw`) measured raw reads at 0.61x a memcpy of the crop's bytes in the same session
(target ≥ 0.5x; 0.17x before, when mixed shapes were read as a list of tensors).
Numbers move with the machine's load (the read benchmark records its load average). raw and lz4
do not gain from a second thread here: raw reads are memory copies already at the machine's
memory bandwidth, and an lz4 chunk decodes in ~20 µs, so the GIL changes hands that often; jpeg is
bound by libjpeg-turbo (~70 µs per 112² frame, ~1,750 windows/s on two cores). On the fly, decoding
shows up in training as slower steps (the decoder processes take the model's cores) rather than
as waiting.

"""


def load(name: str, res: Path = RES) -> dict:
    return json.loads((res / f"{name}.json").read_text())


def _met(target: dict, fmt: str) -> str:
    text = fmt.format(target["value"])
    return text if target["met"] else f"{text} **missed**"


def _tracks_cell(tracks: dict) -> str:
    """Read ratios to frames only (same run) and each track's bytes over the frames' bytes."""
    r, s = tracks["reads"], tracks["stores"]
    ratio = {k: f"{v['vs_frames']:.2f}x" for k, v in r.items()}
    return (
        f"log-mel {ratio['audio_logmel']}, flow {ratio['flow']}, flow planes (channel layout) "
        f"{ratio['flow_channel']}, registered by homography {ratio['register_homography']} / "
        f"by flow {ratio['register_flow']} of {r['frames']['windows_per_s']:,.0f} frames-only "
        f"windows/s (T={tracks['window']['frames']}); bytes over the frames': audio "
        f"+{s['audio']['audio_over_frames']:.0%}, flow float16 "
        f"+{s['audio_flow_float16']['flow_over_frames']:.0%}, int8 "
        f"+{s['audio_flow_int8']['flow_over_frames']:.0%}"
    )


def _batched_tracks_cell(tracks: dict) -> str:
    """Per crop: the batched tracks' ratios to frames only through that crop (same run)."""
    targets = tracks.get("batched_targets")
    if not targets:
        return "not measured"
    names = {"center": "CenterCrop", "rrc_flip": "RandomResizedCrop + flip"}
    parts = []
    for crop, rows in tracks["batched"].items():

        def cell(k: str, crop: str = crop) -> str:
            return _met(targets[f"{k}_{crop}"], "{:.2f}x")

        parts.append(
            f"{names.get(crop, crop)} ({rows['frames']['windows_per_s']:,.0f} frames-only "
            f"windows/s): log-mel {cell('audio_logmel')}, flow planes {cell('flow_channel')}, "
            f"registered by homography {cell('register_homography')} / by flow "
            f"{cell('register_flow')}"
        )
    return "; ".join(parts)


def peers_row(res: Path = RES) -> str:
    """Each reader's windows/s local / cold / warm and MB stored; a peer hyperframes is not
    ahead of is marked."""
    if not (res / "peers.json").exists():
        return "not measured"
    peers = load("peers", res)
    rates, stored = peers["windows_per_s"], peers["bytes_stored"]
    hf = rates["hyperframes"]
    cells = []
    for name, r in rates.items():
        key = "hyperframes_lz4" if name == "hyperframes" else name
        cell = f"{name} {r['local']:,.0f} / {r['cold']:,.0f} / {r['warm']:,.0f}, "
        cell += f"{stored[key] / 1e6:,.0f} MB"
        behind = [m for m in ("cold", "warm") if name != "hyperframes" and r[m] >= hf[m]]
        if name != "hyperframes" and stored[key] <= stored["hyperframes_lz4"]:
            behind.append("bytes")
        cells.append(cell + (f" (**missed**: not ahead on {', '.join(behind)})" if behind else ""))
    return "; ".join(cells) + f" (load {peers['load_average'][0]:.0f})"


def s3_targets(s3: dict) -> str:
    """The three S3 ratios against their targets (a miss marked)."""
    if "cold_ahead_over_plain_get" not in s3:
        return "not measured"
    r = s3["ratio_to_local"]["cache_warm"]
    parts = [
        (s3["cold_ahead_over_plain_get"], 0.7, True),
        (r, 0.9, True),
        (s3["cold_fetched_over_payload"], 1.3, False),
    ]
    return (
        "; ".join(
            f"{v:.2f}x" + ("" if (v >= t if at_least else v <= t) else " **missed**")
            for v, t, at_least in parts
        )
        + f" (load {s3['load_average'][0]:.0f})"
    )


def table_section(res: Path = RES) -> str:
    """The measurements table and its notes, filled from the result files in ``res``."""
    read, build = load("read", res), load("build", res)
    opened, pred = load("open", res), load("predict", res)
    s3 = load("s3", res)
    wait = load("train_wait", res)
    startup = load("startup", res)
    tracks = load("tracks", res)
    pipe = load("pipeline", res)
    pr = pipe["ratios"]

    def pipe_ratio(name: str) -> str:
        r = pr[name]
        text = f"{r['ratio']:.2f}x"
        return text if r["met"] in (True, None) else f"{text} **missed**"

    rows, t = read["rows"], read["targets"]
    sizes = build["store_size_by_codec"]
    tsn = {r["mode"]: r for r in pred["rows"] if r["model"] == "tsn_resnet18"}
    values = {
        "RAW_MEMCPY": f"{t['raw_vs_memcpy']['value']:.2f}x",
        "JPEG_PAR": _met(t["jpeg_loader_vs_fastest_parallel_decoder"], "{:.1f}x")
        + f" ({read['fastest_parallel_decoder']})",
        "SCALING": ", ".join(
            _met(t[f"loader_{c}_workers_2_vs_workers_0"], "{:.2f}x")
            for c in ("raw", "lz4", "zstd", "jpeg")
        ),
        "H5_ROW": _met(t["hdf5_uncompressed_vs_raw_folder"], "{:.2f}x")
        + f"; lzf {read['hdf5']['hdf5_lzf']['vs_raw_folder']:.2f}x",
        "WAIT": ", ".join(
            f"{wait['runs'][k]['data_wait_share']:.1%} ({wait['runs'][k]['steps_per_s']:.2f} steps/s)"
            for k in wait["runs"]
        ),
        "STARTUP": ", ".join(
            _met(startup["targets"][f"{c}_seconds_at_most"], "{:.2f} s")
            for c in ("--help", "info", "verify", "show")
        ),
        "TORCH_S": "{:.1f} s".format(startup["seconds"]["python -c 'import torch'"]),
        "DATASET": f"{opened['dataset']['random']['create_seconds_median']:.2f} s / "
        + ", ".join(
            f"{opened['dataset'][n]['plan_microseconds']:.0f} µs"
            for n in ("random", "sliding", "duration")
        ),
        "RAW_DEC": f"{t['raw_vs_fastest_decoder']['value']:.0f}x",
        "JPEG_DEC": f"{t['jpeg_vs_fastest_decoder']['value']:.0f}x",
        "JPEG_SIZE": f"{t['jpeg_store_over_source_bytes_at_most']['value']:.2f}x",
        "BUILD": f"{build['build_over_decode']:.2f}x ({build['build_seconds']:.1f} s vs "
        f"{build['decode_only_seconds']:.1f} s)",
        "SIZES": ", ".join(
            f"{sizes[c]['ratio_to_source']:.2f}x" for c in ("raw", "lz4", "zstd", "jpeg")
        ),
        "CHECK": "{:.2f}x / {:.2f}x (jpeg {:.2f}x / {:.2f}x)".format(
            *(
                read["check_video_cost"][codec][plan]["check_video_over_plain"]
                for codec in ("raw", "jpeg")
                for plan in ("first_read", "windows")
            )
        ),
        "OPEN": f"{opened['open_seconds_median']:.2f} s",
        "S3_ROW": "{s3_cold:.0f} / {cache_warm:.0f} / {local:.0f}".format(**s3["windows_per_s"])
        + f" (warm cache {s3['cache_warm_over_cold']:.1f}x cold)",
        "S3_TARGETS": s3_targets(s3),
        "PEERS_ROW": peers_row(res),
        "PLAN": "; ".join(
            f"{name} {p['count_seconds'] * 1e3:.1f} ms / {p['plan_microseconds']:.0f} µs"
            for name, p in opened["planning"].items()
        ),
        "PRED": f"{tsn['reuse']['frames_per_second']:.0f} vs {tsn['naive']['frames_per_second']:.0f} "
        f"frames/s ({tsn['reuse']['speedup_vs_naive']:.1f}x; re-decoding every window: "
        f"{tsn['redecode']['frames_per_second']:.0f})",
        "TRACKS": _tracks_cell(tracks),
        "PIPE_CENTER": pipe_ratio("center_vs_memcpy"),
        "PIPE_AUG": pipe_ratio("rrc_flip_vs_center")
        + "; "
        + pipe_ratio("rrc_flip_jitter_vs_center"),
        "PIPE_UNIFORM": pipe_ratio("uniform_none_vs_memcpy"),
        "PIPE_LOAD": f"{max(pipe['load_average_1min']):.0f}",
        "PIPE_MEMCPY": f"{pipe['windows_per_s']['mixed/memcpy']:,.0f}",
        "PIPE_UNIFORM_RATE": f"{pipe['windows_per_s']['uniform/none']:,.0f}",
        "PIPE_UNIFORM_MEMCPY": f"{pipe['windows_per_s']['uniform/memcpy']:,.0f}",
        "BATCHED_TRACKS": _batched_tracks_cell(tracks),
        "STORE_ROWS": ", ".join(
            f"{k.split(':')[1]} {v['windows_per_s']:.0f}"
            for k, v in rows.items()
            if k.startswith("store:")
        )
        + f" (memcpy {rows['memcpy']['windows_per_s']:.0f})",
        "DEC_ROWS": ", ".join(
            f"{k.split(':')[1]} {v['windows_per_s']:.1f}"
            for k, v in rows.items()
            if k.startswith("decode:") and "windows_per_s" in v
        )
        + " windows/s",
    }
    section = TEMPLATE
    for key, value in values.items():
        section = re.sub(rf"\b{key}\b", value, section)
    return section


FRONTIER = "codecs"  # benchmarks/results/codecs.png (the picture) and codecs.json (its rows)


def _cell(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.3g}"
    if isinstance(value, (list, dict)):
        return json.dumps(value)
    return str(value).replace("|", "\\|")


def frontier_rows(res: Path = RES) -> list[dict]:
    """The rows of ``codecs.json`` (a list of objects, or an object holding one under ``rows``);
    [] when the file is absent or holds no such rows."""
    path = res / f"{FRONTIER}.json"
    if not path.exists():
        return []
    data = json.loads(path.read_text())
    rows = data.get("rows") if isinstance(data, dict) else data
    if not isinstance(rows, list):
        return []
    return [r for r in rows if isinstance(r, dict)]


def frontier_section(res: Path = RES, image: str | None = None) -> str:
    """The frontier of bytes stored vs windows/s (the picture and its rows), or "" when
    ``codecs.png`` is not there yet. ``image``: the picture's link (default its path here)."""
    if not (res / f"{FRONTIER}.png").exists():
        return ""
    link = image or f"benchmarks/results/{FRONTIER}.png"
    out = [
        "## The frontier: bytes stored vs windows/s",
        "",
        f"![bytes stored against windows/s, hyperframes' codecs and the peers]({link})",
        "",
    ]
    rows = frontier_rows(res)
    if rows:
        keys = list(dict.fromkeys(k for r in rows for k in r))
        out += ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
        out += ["| " + " | ".join(_cell(r.get(k, "")) for k in keys) + " |" for r in rows]
        out.append("")
        out.append(f"Rows: `benchmarks/results/{FRONTIER}.json`.")
        out.append("")
    return "\n".join(out)


def _verdict(value: float, target: float, *, at_most: bool = False) -> str:
    met = value <= target if at_most else value >= target
    return f"{value:.2f}x" + ("" if met else " **missed**")


def compact_section(res: Path = RES) -> str:
    """Issue 34's targets for compact stores, from jpeg_crop.json, yuv420.json and
    plan_accuracy.json (a row each where its file exists)."""
    rows = []
    if (res / "jpeg_crop.json").exists():
        fps = load("jpeg_crop", res)["frames_per_s"]
        anchor = fps["anchor"]
        rows.append(
            "| jpeg `CenterCrop(112)`, crop during decode, vs decoding the same JPEGs whole "
            f"(one thread; `bench_jpeg_crop.py`) | {_verdict(fps['center'] / anchor, 1.3)} "
            f"(whole-frame path {fps['center_whole'] / anchor:.2f}x) | >= 1.3x |"
        )
        rows.append(
            "| jpeg `RandomResizedCrop(112)` + flip, same anchor | "
            f"{_verdict(fps['rrc_flip'] / anchor, 1.0)} "
            f"(whole-frame path {fps['rrc_flip_whole'] / anchor:.2f}x) | >= 1.0x |"
        )
    if (res / "yuv420.json").exists():
        y = load("yuv420", res)
        rows.append(
            "| yuv420 store bytes / raw store bytes (`bench_yuv420.py`) | "
            f"{_verdict(y['bytes_vs_raw']['ratio'], 0.55, at_most=True)} | <= 0.55x |"
        )
        rr = y["ratios"]["yuv420_rrc_flip_vs_raw"]["ratio"]
        rows.append(
            "| yuv420 `RandomResizedCrop(112)` + flip windows/s vs raw, through the loader | "
            f"{_verdict(rr, 1.0)} | >= 1.0x |"
        )
    if (res / "plan_accuracy.json").exists():
        plan = load("plan_accuracy", res)["rows"]
        err = max(abs(r["bytes_error"]) for r in plan.values())
        speed = [r["windows_per_s_ratio"] for r in plan.values()]
        rows.append(
            "| `plan`: worst bytes error / windows/s predicted vs built (`bench_plan.py`) | "
            f"{err:.1%} / {min(speed):.2f}-{max(speed):.2f}x | 25% / within 2x |"
        )
    if not rows:
        return ""
    head = ["## Compact stores", "", "| what | measured | target |", "|---|---|---|"]
    return "\n".join(head + rows) + "\n\n"


def latency_section(res: Path = RES) -> str:
    """Latency per output frame, the keyframe model against 3D CNNs (``latency.json``,
    ``bench_latency.py``), or "" when the file is absent."""
    if not (res / "latency.json").exists():
        return ""
    lat = load("latency", res)
    seed = lat["seed_claim_ms"]
    out = [
        "## Latency per output frame: keyframe model vs 3D CNNs",
        "",
        f"`bench_latency.py`: {lat['setup']}; median over interleaved rounds (25th-75th "
        f"percentile), {lat['torch_threads']} torch thread(s) on the CPU, load average "
        f"{lat['load_average_before'][0]:.1f} before and {lat['load_average_after'][0]:.1f} "
        f"after the run. The seed (004 §6) reports {seed['keyframe']:.0f} ms for its keyframe "
        f"model against {seed['i3d']:.0f} ms for an I3D of the same parameter scale (RTX 3090, "
        "224x224, T=7).",
        "",
        "| device | size | model | parameters | GFLOPs | ms per frame | vs keyframe_unet |",
        "|---|---|---|---|---|---|---|",
    ]
    for device, sizes in lat["devices"].items():
        for size, rows in sizes.items():
            for name, r in rows.items():
                out.append(
                    f"| {device} | {size} | `{name}` | {r['parameters'] / 1e6:.2f}M | "
                    f"{r['gflops_per_output_frame']:.2f} | {r['median_ms']:.1f} "
                    f"({r['p25_ms']:.1f}-{r['p75_ms']:.1f}) | {r.get('vs_keyframe_unet', 0):.2f}x |"
                )
    out += [
        "",
        "The seed's ratio depends on what the keyframe model is set against. Against a 3D CNN "
        "of the same parameter scale (`r2plus1d_tiny`) it does not hold: that model shrinks "
        "the frames at its stem, while the keyframe model's G and F run at full resolution "
        "(about 5x its FLOPs). Against a full-size 3D ResNet (`r3d_18`, 3x3x3 convolutions "
        "throughout, the registry's closest to I3D; no I3D is registered) the keyframe model "
        "is the faster one by the factor in the last column. CPU times on a shared machine: the "
        "ratios, measured in interleaved rounds, are what counts.",
    ]
    return "\n".join(out) + "\n\n"


PAGE_HEAD = """# Performance

Every figure on this page is read from `benchmarks/results/*.json` when the site is built; the
scripts that write them are in `benchmarks/` (`make bench`, `make bench-peers`). Each measures
its anchor (a memcpy of the same bytes, decoding on the fly, a peer) in the same run, so the
ratios are what counts; the absolute rates move with the machine and its load.

"""


CLAIMS_KEYS = ("claim", "seed_article", "setup", "measured", "verdict")


def claims_section(res: Path = RES) -> str:
    """The seed articles' claims as ``bench_claims.py`` measured them (``claims.json``: one
    row per claim), or "" when that file is absent."""
    path = res / "claims.json"
    if not path.exists():
        return ""
    data = json.loads(path.read_text())
    rows = data.get("rows") if isinstance(data, dict) else data
    if not isinstance(rows, list) or not rows:
        return ""
    when = f" on {data['date']}" if isinstance(data, dict) and data.get("date") else ""
    out = [
        "## The seeds' claims, measured",
        "",
        f"`benchmarks/bench_claims.py`{when}: each claim of the seed articles measured with "
        "the project's own trainer on the demo's synthetic clips, tiny models, few epochs, "
        "several seeds (mean ± sample standard deviation); how the verdicts are reached and "
        "what such small runs can and cannot say: [the claims guide](guides/claims.md).",
        "",
    ]
    if isinstance(data, dict) and data.get("partial"):
        out += ["**Partial results**: the run stopped before every claim was measured.", ""]
    out += ["| claim | seed | setup | measured | verdict |", "|---|---|---|---|---|"]
    for r in rows:
        if isinstance(r, dict):
            out.append("| " + " | ".join(_cell(r.get(k, "")) for k in CLAIMS_KEYS) + " |")
    out += ["", "Rows, with every seed's value: `benchmarks/results/claims.json`.", "", ""]
    return "\n".join(out)


def performance_page(res: Path = RES, image: str | None = None) -> str:
    """The docs' performance page: the frontier picture (when present), the tables and the
    seeds' claims (when measured)."""
    return (
        PAGE_HEAD
        + frontier_section(res, image)
        + "\n"
        + compact_section(res)
        + latency_section(res)
        + table_section(res)
        + "\n"
        + claims_section(res)
    )


README_START, README_END = "<!-- frontier:start -->", "<!-- frontier:end -->"


def refresh_readme(res: Path = RES, readme: Path = ROOT / "README.md") -> None:
    """Put the frontier picture between the README's frontier markers when it exists (else
    leave the block empty)."""
    text = readme.read_text()
    start, end = text.index(README_START) + len(README_START), text.index(README_END)
    block = ""
    if (res / f"{FRONTIER}.png").exists():
        block = (
            f"\n![bytes stored against windows/s: hyperframes' codecs and the peers]"
            f"(benchmarks/results/{FRONTIER}.png)\n"
        )
    readme.write_text(text[:start] + block + text[end:])


def main() -> None:
    refresh_readme()
    print(performance_page())


if __name__ == "__main__":
    main()
