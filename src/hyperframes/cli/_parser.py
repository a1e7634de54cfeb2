"""The argument parser of ``hyperframes``: every command, every option described, an example each.

Building it imports nothing heavy (no torch, no decoder): the handlers (``_commands``) import the
library when they run, and the choices that come from a registry (codecs, decoders, input
formats) are read from it the first time they are needed (``_choices``).
"""

from __future__ import annotations

import argparse

from .._core._sizes import (
    DEFAULT_MAX_FRAMES,
    DEFAULT_MAX_GAP_SECONDS,
    DEFAULT_MAX_PIXELS,
    DEFAULT_SIZE,
)
from .._version import __version__
from ._choices import CODECS, DECODERS, INPUT_FORMATS
from ._frames import add_recalibrate, frames_option

COMPRESSIONS = ["lzf", "blosc", "gzip", "none"]

EXAMPLES = {
    "build": "hyperframes build videos/ --out store --size 128 --codec lz4 --workers 2",
    "info": "hyperframes info store --json | head",
    "verify": "hyperframes verify store",
    "gc": "hyperframes gc s3://bucket/store --delete",
    "show": "hyperframes show store --video 3 --start 40 --frames 16 --stride 2 --out w.png",
    "report": "hyperframes report store --out report --sampler keyframes --frames 8",
    "convert": "hyperframes convert store --format hdf5 --out store.h5",
    "bench": "hyperframes bench videos/ --codecs raw,jpeg --windows 256 --keep bench_stores",
    "models": "hyperframes models --json",
    "predict": "hyperframes predict runs/r18/best.pt video.mp4 --stride 4 --ema 0.7 --annotate",
    "export": "hyperframes export runs/r18/best.pt --onnx model.onnx",
    "train": "hyperframes train configs/channel_r18.yaml --set train.lr=0.02 --out runs/r18",
    "estimate": "hyperframes estimate configs/channel_r18.yaml --set data.batch_size=64",
    "eval": "hyperframes eval runs/r18/best.pt --store STORE --split val --clips 10 --crops 3",
    "demo": "hyperframes demo --out demo_out --quick",
    "recalibrate": "hyperframes recalibrate runs/r2p1d --store STORE --frames 8",
}


def _command(sub, name: str, summary: str, description: str | None = None):
    return sub.add_parser(
        name,
        help=summary,
        description=description or summary[0].upper() + summary[1:] + ".",
        epilog=f"example:\n  {EXAMPLES[name]}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )


def video_stream(text: str) -> int:
    """``--stream``: ``v:K`` (the K-th video stream, as ``info`` prints it) or plain ``K``."""
    value = text.strip()
    number = value[2:] if value.lower().startswith("v:") else value
    if not number.isdigit():
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a video stream; allowed: v:K or K, K >= 0 counting video streams "
            "only (v:0 is the first video stream; `hyperframes info` shows each video's)"
        )
    return int(number)


def _build_options(b) -> None:
    b.add_argument(
        "data", help="folder root/<label>/<video>, annotation file, frame folder or video"
    )
    b.add_argument(
        "--out",
        required=True,
        help="store folder (or .h5 file with --format hdf5), or a URL (s3://bucket/prefix): "
        "built in a local staging folder, then uploaded, manifest last",
    )
    b.add_argument(
        "--input-format",
        default=None,
        choices=INPUT_FORMATS,
        metavar="FORMAT",
        help="how to read DATA: %(choices)s (default: detected from names, headers and JSON "
        "shapes)",
    )
    b.add_argument(
        "--root",
        default=None,
        help="folder the annotation's paths are relative to (default: the annotation's folder)",
    )
    b.add_argument(
        "--fps",
        type=float,
        default=None,
        help="resample every video to this rate, down or up (a slower source gets repeated "
        "frames; the summary and info count them) (default: native)",
    )
    b.add_argument(
        "--fps-max",
        type=float,
        default=None,
        metavar="N",
        help="resample down to N fps only the videos whose rate is higher; never upsample",
    )
    b.add_argument(
        "--size",
        default=DEFAULT_SIZE,
        help="stored frame size: short side (128), HxW (112x112) or none (native); default "
        "%(default)s",
    )
    b.add_argument(
        "--codec",
        default="raw",
        choices=CODECS,
        metavar="CODEC",
        help="how frames are stored: %(choices)s; raw reads fastest, lz4/zstd are lossless and "
        "smaller, jpeg lossy and smallest (default %(default)s)",
    )
    b.add_argument(
        "--dtype", default="uint8", choices=["uint8", "float16"], help="stored pixel type"
    )
    b.add_argument(
        "--decoder",
        default="pyav",
        choices=DECODERS,
        metavar="DECODER",
        help="library that decodes the videos: %(choices)s (default %(default)s)",
    )
    b.add_argument(
        "--stream",
        type=video_stream,
        default=None,
        metavar="v:K",
        help="video stream to decode, v:K (or K) counting video streams only, v:0 the first "
        "(default: each file's widest)",
    )
    b.add_argument(
        "--jpeg-quality", type=int, default=90, help="with --codec jpeg: quality 1-100 (90)"
    )
    b.add_argument(
        "--chunk-frames", type=int, default=4, help="frames per lz4/zstd chunk (default 4)"
    )
    b.add_argument(
        "--frame-fps", type=float, default=30.0, help="rate of frame folders (default 30)"
    )
    b.add_argument(
        "--format",
        default="store",
        choices=["store", "hdf5"],
        help="a store folder (default) or one HDF5 file",
    )
    b.add_argument(
        "--hdf5-compression",
        default="lzf",
        choices=COMPRESSIONS,
        help="with --format hdf5: dataset compression (default lzf)",
    )
    b.add_argument(
        "--workers",
        type=int,
        default=1,
        help="decoding processes, or with --engine ray decoding actors of one CPU each (default 1)",
    )
    b.add_argument(
        "--engine",
        default="local",
        choices=["local", "ray"],
        help="where videos are decoded: local processes (default) or a Ray cluster, whose "
        "actors write their shards straight into --out (a folder every node sees)",
    )
    b.add_argument(
        "--ray-address",
        default=None,
        metavar="ADDRESS",
        help="with --engine ray: the cluster to join, HOST:PORT of its head (default: "
        "RAY_ADDRESS, else a Ray instance started on this machine for the build)",
    )
    b.add_argument(
        "--on-damaged",
        default="keep",
        choices=["keep", "fail"],
        help="a video the decoder reports errors for: keep it (listed under 'damaged', exit "
        "status 2) or fail it",
    )
    b.add_argument(
        "--max-pixels",
        type=int,
        default=DEFAULT_MAX_PIXELS,
        help=f"refuse videos whose frames exceed this many pixels (default {DEFAULT_MAX_PIXELS}, "
        "passes 8K)",
    )
    b.add_argument(
        "--max-frames",
        type=int,
        default=DEFAULT_MAX_FRAMES,
        help="a video that would store more frames than this fails, naming the count, and "
        f"nothing of it is kept (default {DEFAULT_MAX_FRAMES})",
    )
    b.add_argument(
        "--max-gap",
        type=_seconds_or_none,
        default=DEFAULT_MAX_GAP_SECONDS,
        metavar="SECONDS",
        help="with --fps: two frames further apart than this are not bridged by repeated "
        "frames; the gap is skipped (the frames after it keep their times) and listed in the "
        f"build summary; 'none' for no bound (default {DEFAULT_MAX_GAP_SECONDS:g})",
    )
    b.add_argument(
        "--audio",
        action="store_true",
        help="also store each video's first audio stream, decoded once (videos without one "
        "are stored without audio)",
    )
    b.add_argument(
        "--audio-rate", type=int, default=16000, help="with --audio: sample rate in Hz (16000)"
    )
    b.add_argument(
        "--audio-channels",
        type=int,
        default=1,
        choices=[1, 2],
        help="with --audio: 1 mono (default) or 2 stereo",
    )
    b.add_argument(
        "--flow",
        default=None,
        choices=["dis", "farneback"],
        help="also store OpenCV optical flow between consecutive stored frames, and one "
        "homography per pair (needs opencv)",
    )
    b.add_argument(
        "--flow-size",
        default=None,
        help="with --flow: flow size as --size takes it, a short side (64) or HxW (48x64) "
        "(default: the stored frame size)",
    )
    b.add_argument(
        "--flow-dtype",
        default="float16",
        choices=["float16", "int8"],
        help="with --flow: stored as float16 (default) or int8 with a scale per video",
    )
    b.add_argument("--dry-run", action="store_true", help="estimate the store's size only")
    b.add_argument("--json", action="store_true", help="with --dry-run: print JSON")
    b.add_argument("--quiet", action="store_true", help="no progress bar")


def _seconds_or_none(text: str) -> float | None:
    if text.strip().lower() == "none":
        return None
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a number of seconds or 'none', got {text!r}"
        ) from None
    if not (value > 0 and value != float("inf")):
        raise argparse.ArgumentTypeError(
            f"expected a positive, finite number of seconds or 'none', got {text!r}"
        )
    return value


def _bench_options(n) -> None:
    n.add_argument("data", help="a store, or data to build temporary stores from (as build)")
    n.add_argument("--frames", type=int, default=16, help="frames per window (default 16)")
    n.add_argument("--batch", type=int, default=32, help="windows per batch read (default 32)")
    n.add_argument(
        "--windows", type=int, default=512, help="random windows in the plan (default 512)"
    )
    n.add_argument(
        "--size",
        default=DEFAULT_SIZE,
        help="stored frame size when building from data, as build --size (default %(default)s)",
    )
    n.add_argument(
        "--codecs",
        default=None,
        help="codecs to build a store with when given data, comma-separated (default: every "
        "codec, as build --codec lists them)",
    )
    n.add_argument(
        "--budget",
        type=float,
        default=10.0,
        help="seconds of windows per on-the-fly decoder (default 10)",
    )
    n.add_argument(
        "--keep",
        metavar="DIR",
        default=None,
        help="build the stores in DIR and keep them (default: a temporary folder, removed)",
    )
    n.add_argument("--json", action="store_true", help="print the result as JSON")


def _predict_options(pr) -> None:
    pr.add_argument("checkpoint", help="a checkpoint written by train (best.pt or last.pt)")
    pr.add_argument("video", help="the video file to predict over")
    pr.add_argument(
        "--stride",
        type=int,
        default=1,
        help="frames between window starts, at the model's frame rate (default 1)",
    )
    pr.add_argument(
        "--ema", type=float, default=0.0, help="smoothing weight in [0, 1) (default 0: off)"
    )
    pr.add_argument(
        "--out",
        default=None,
        help="output folder for timeline.csv/.json/.png (default: <video>_predict); windows "
        "are named by source frame numbers and seconds",
    )
    pr.add_argument("--annotate", action="store_true", help="also write an annotated video")
    pr.add_argument(
        "--batch-size", type=int, default=8, help="windows per forward pass (default 8)"
    )
    pr.add_argument(
        "--device",
        default="cpu",
        choices=["auto", "cpu", "cuda"],
        help="where the model runs; auto picks cuda when present (default cpu)",
    )
    pr.add_argument("--no-reuse", action="store_true", help="rerun every window in full")
    frames_option(pr)
    pr.add_argument(
        "--decoder",
        default=None,
        help="decoder of the video (default: the one that built the model's store, as the "
        "checkpoint records; another one warns: its pixels differ)",
    )
    pr.add_argument(
        "--reconstruct",
        action="store_true",
        help="interpolation / super-resolution: restore the video's own frames (middle frames; "
        "downscaled windows) and score them, instead of making new ones",
    )
    pr.add_argument(
        "--reconstructions",
        type=int,
        default=None,
        metavar="N",
        help="masked_video checkpoints: write the reconstructions of the first N windows as "
        "PNG with reconstructions.json (default: up to 16)",
    )
    pr.add_argument("--quiet", action="store_true", help="no progress bar")


STORE_HELP = "a store folder, .h5 file, or URL (s3://bucket/prefix)"


def _cache_options(p) -> None:
    p.add_argument(
        "--cache-dir",
        default=None,
        help="for a store at a URL: a node-local cache of its blocks, shared by processes",
    )
    p.add_argument(
        "--cache-limit",
        type=int,
        default=None,
        metavar="BYTES",
        help="the cache's size limit in bytes (required with --cache-dir)",
    )


def _train_options(t) -> None:
    t.add_argument("config", help="a YAML config (sections data, model, train, eval)")
    t.add_argument(
        "--set",
        dest="overrides",
        metavar="KEY=VALUE",
        action="append",
        default=[],
        help="override a config value, e.g. --set train.lr=0.1 (repeatable)",
    )
    t.add_argument("--out", default=None, help="run folder (default runs/<model>-<time>)")
    t.add_argument(
        "--resume",
        action="store_true",
        help="continue from RUN_DIR/last.pt (with --set train.epochs=N to train longer: the "
        "learning-rate schedule continues where it stands); a complete run says so",
    )
    t.add_argument("--quiet", action="store_true", help="no progress output")


def _eval_options(e) -> None:
    e.add_argument("checkpoint", help="RUN_DIR/best.pt (or last.pt) written by train")
    e.add_argument("--store", default=None, help="store to evaluate on (default: the run's)")
    e.add_argument(
        "--split",
        default="val",
        help="a split the store records, or for a store without any the run's generated "
        "train/val split; 'all' for every video (default val)",
    )
    e.add_argument(
        "--clips",
        type=int,
        default=10,
        help="windows per video: evenly spaced, or at seeded random times on a store at "
        "another frame rate than the model's (default 10)",
    )
    e.add_argument("--crops", type=int, default=3, choices=[1, 3], help="spatial crops")
    e.add_argument(
        "--batch-size", type=int, default=None, help="clips per batch (default: the config's)"
    )
    e.add_argument("--workers", type=int, default=0, help="data loader workers (default 0)")
    e.add_argument("--device", default="auto", help="auto, cpu, cuda or cuda:N")
    e.add_argument(
        "--out",
        default=None,
        help="metrics JSON to write (default RUN_DIR/eval/<store>/<split>/metrics.json); the "
        "per-video CSV (path, label, prediction, score) goes beside it",
    )
    frames_option(e)
    e.add_argument(
        "--reconstructions",
        type=int,
        default=0,
        metavar="N",
        help="masked_video checkpoints: also write N windows' reconstructions as PNG (frames, "
        "visible patches, reconstruction) to reconstructions/ beside the metrics",
    )
    e.add_argument(
        "--classes-by-index",
        action="store_true",
        help="score store class k as model class k whatever their names (default: match the "
        "store's class names to the model's, exactly or ignoring case; a class the model does "
        "not know is an error)",
    )


def build_parser() -> argparse.ArgumentParser:
    """The parser of every command (importing no torch and no decoder)."""
    from . import _commands as run

    p = argparse.ArgumentParser(
        prog="hyperframes",
        description="Decode video once; serve hyperframes at memory speed.",
        epilog="Each command describes its options and gives an example:\n"
        "  hyperframes COMMAND --help",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--version",
        action="version",
        version=f"hyperframes {__version__}",
        help="print the version and exit",
    )
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    b = _command(sub, "build", "decode videos once into a store")
    _build_options(b)
    b.set_defaults(func=run.build)

    i = _command(sub, "info", "describe a store")
    i.add_argument("store", help=STORE_HELP)
    i.add_argument("--json", action="store_true", help="print everything as JSON")
    i.set_defaults(func=run.info)

    v = _command(sub, "verify", "recompute every checksum of a store")
    v.add_argument("store", help=STORE_HELP)
    v.add_argument(
        "--resign",
        action="store_true",
        help="record the checksums a store folder's manifest lacks (an edited manifest), "
        "once every file checks and the store opens; a checksum it has is never replaced",
    )
    v.set_defaults(func=run.verify)

    g = _command(
        sub,
        "gc",
        "list the objects under a store URL that its manifest does not list",
        "List the objects under a store URL that its manifest does not list (what killed "
        "builds left: shards never finished, files of an older index); --delete deletes them. "
        "Run it while no build of the URL runs.",
    )
    g.add_argument("store", help="a store URL (s3://bucket/prefix)")
    g.add_argument("--delete", action="store_true", help="delete them (default: list only)")
    g.set_defaults(func=run.gc)

    s = _command(sub, "show", "write a window of frames as a PNG")
    s.add_argument("store", help=STORE_HELP)
    s.add_argument(
        "--video", type=int, required=True, help="video number (0-based, as info lists them)"
    )
    s.add_argument("--start", type=int, default=0, help="first stored frame (default 0)")
    s.add_argument("--frames", type=int, default=8, help="frames in the window (default 8)")
    s.add_argument(
        "--stride", type=int, default=1, help="stored frames between shown ones (default 1)"
    )
    s.add_argument("--out", default="window.png", help="PNG to write (default window.png)")
    _cache_options(s)
    s.set_defaults(func=run.show)

    r = _command(sub, "report", "write one HTML page to look at a store (no server needed)")
    r.add_argument("store", help=STORE_HELP)
    r.add_argument("--out", required=True, help="folder to write report.html in")
    r.add_argument("--config", help="preview the training windows of this YAML config")
    r.add_argument("--sampler", default="uniform", help="sampler to preview (default uniform)")
    r.add_argument("--frames", type=int, default=8, help="frames per window (default 8)")
    r.add_argument("--videos", type=int, default=20, help="video rows (default 20)")
    r.add_argument("--preview", type=int, default=3, help="sampler items shown (default 3)")
    r.set_defaults(func=run.report)

    c = _command(sub, "convert", "write a store in another format")
    c.add_argument("store", help="a store folder, or its URL (s3://bucket/prefix)")
    c.add_argument("--format", default="hdf5", choices=["hdf5"], help="the format to write (hdf5)")
    c.add_argument(
        "--out", required=True, help="the file to write (store.h5, or s3://bucket/store.h5)"
    )
    c.add_argument(
        "--compression",
        default="lzf",
        choices=COMPRESSIONS,
        help="HDF5 dataset compression (default lzf)",
    )
    c.add_argument("--quiet", action="store_true", help="no progress bar")
    c.set_defaults(func=run.convert)

    n = _command(
        sub,
        "bench",
        "store reads vs on-the-fly decoding vs memcpy",
        "Windows/s for one random window plan: read from a store per codec, decoded on the fly "
        "by every installed decoder, and a plain memcpy of the same bytes. A decoder that cannot "
        "open a video skips it and says why.",
    )
    _bench_options(n)
    n.set_defaults(func=run.bench)

    m = _command(sub, "models", "registered models: name, layout, parameters")
    m.add_argument("--json", action="store_true", help="print the table as JSON")
    m.set_defaults(func=run.models)

    pr = _command(sub, "predict", "sliding-window predictions over a video")
    _predict_options(pr)
    pr.set_defaults(func=run.predict)

    ex = _command(sub, "export", "export a checkpoint to ONNX (checked by onnxruntime)")
    ex.add_argument("checkpoint", help="a checkpoint written by train")
    ex.add_argument("--onnx", required=True, help="the .onnx file to write")
    ex.set_defaults(func=run.export)

    t = _command(sub, "train", "train a model on a store from a YAML config")
    _train_options(t)
    t.set_defaults(func=run.train)

    es = _command(
        sub,
        "estimate",
        "parameters, FLOPs and memory of a config before training",
        "Builds the config's model and runs two real clips of its store through it on the "
        "CPU: parameters, forward FLOPs per clip, activation memory at data.batch_size with "
        "and without activation checkpointing, and the step's peak.",
    )
    es.add_argument("config", help="a YAML config (as train takes)")
    es.add_argument(
        "--set",
        dest="overrides",
        metavar="KEY=VALUE",
        action="append",
        default=[],
        help="override a config value, e.g. --set data.batch_size=32 (repeatable)",
    )
    es.add_argument("--json", action="store_true", help="print the estimate as JSON")
    es.set_defaults(func=run.estimate)

    e = _command(sub, "eval", "evaluate a checkpoint (multi-clip, multi-crop)")
    _eval_options(e)
    e.set_defaults(func=run.evaluate)

    add_recalibrate(sub, _command, run.recalibrate)

    d = _command(sub, "demo", "the end-to-end showcase on synthetic data")
    d.add_argument("--out", default="demo_out", help="output folder (default demo_out)")
    d.add_argument("--quick", action="store_true", help="smaller dataset (for tests)")
    d.set_defaults(func=run.demo)
    return p
