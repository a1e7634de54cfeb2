"""The argument parser of ``hyperframes``: every command, every option described, an example each.

Building it imports nothing heavy (no torch, no decoder, no pydantic): the handlers
(``_commands``) import the library when they run, the choices that come from a registry (codecs,
decoders, input formats) are read from it the first time they are needed (``_choices``), and
``build``'s options, generated from ``BuildOptions`` (``_build_flags``, ``_from_model``), are added
only when the command line being parsed is a build. ``--frames`` and ``recalibrate`` are in
``_frames``.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from .._core._sizes import DEFAULT_MAX_GAP_SECONDS, DEFAULT_SIZE
from .._version import __version__
from . import _commands as run
from ._build_flags import add_build_options, add_plan_options, seconds_or_none
from ._choices import CODECS
from ._frames import add_recalibrate, frames_option

COMPRESSIONS = ["lzf", "blosc", "gzip", "none"]

EXAMPLES = {
    "build": "hyperframes build videos/ --out store --size 128 --codec lz4 --workers 2",
    "info": "hyperframes info store --json | head",
    "verify": "hyperframes verify store",
    "gc": "hyperframes gc s3://bucket/store --delete",
    "show": "hyperframes show store --video 3 --start 40 --frames 16 --stride 2 --out w.png",
    "report": "hyperframes report store --out report --sampler keyframes --frames 8",
    "convert": "hyperframes convert store --codec yuv420 --out store-yuv  (or --format hdf5 "
    "--out store.h5)",
    "bench": "hyperframes bench videos/ --codecs raw,jpeg --windows 256 --keep bench_stores",
    "plan": "hyperframes plan videos/ --size 128 --sample 4 --budget 500GB",
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
    n.add_argument(
        "--augment",
        type=int,
        default=112,
        help="also read each store through RandomResizedCrop(N) + flip with the loader on one "
        "core, for about a second (default 112; 0: not)",
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
    pr.add_argument(
        "--short",
        choices=["error", "pad"],
        default="error",
        help="a video shorter than one window: error (refused, as training refuses it; "
        "default) or pad (one window, its last frame repeated, said in the output)",
    )
    pr.add_argument(
        "--max-gap",
        type=seconds_or_none,
        default=DEFAULT_MAX_GAP_SECONDS,
        metavar="SECONDS",
        help="as build's --max-gap: two frames further apart than this are not bridged by "
        f"repeated frames when resampling to the model's rate; 'none' for no bound (default "
        f"{DEFAULT_MAX_GAP_SECONDS:g})",
    )
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
        default=None,
        help="windows per video: evenly spaced, or at seeded random times on a store at "
        "another frame rate than the model's (default: the run's eval: section when it asks "
        "for several views, else 10)",
    )
    e.add_argument(
        "--crops",
        type=int,
        default=None,
        choices=[1, 3],
        help="spatial crops (default: the run's eval: section when it asks for several views, "
        "else 3; 1 for tasks on whole frames)",
    )
    e.add_argument(
        "--batch-size", type=int, default=None, help="clips per batch (default: the config's)"
    )
    e.add_argument("--workers", type=int, default=0, help="data loader workers (default 0)")
    e.add_argument("--device", default="auto", help="auto, cpu, cuda or cuda:N")
    e.add_argument(
        "--out",
        default=None,
        help="metrics JSON to write (default RUN_DIR/eval/<store>/<split>/<checkpoint stem>"
        "[_T<frames>]_<clips>clips_<crops>crops/metrics.json); the "
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


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser of every command (importing no torch and no decoder). ``argv``: the command
    line about to be parsed; build's options, generated from ``BuildOptions`` (the build
    package, pydantic), are added only when it names ``build`` or is not given, so that
    ``hyperframes --help`` and ``hyperframes info`` import neither."""
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
    if argv is None or next((a for a in argv if not a.startswith("-")), None) == "build":
        add_build_options(b)
    b.set_defaults(func=run.build)
    pl = _command(
        sub,
        "plan",
        "which codec to build a store with, measured on a sample of DATA",
        "Builds a store per codec from a few of DATA's videos (spread across codecs and "
        "sizes) in a temporary folder, with the build options given; measures its bytes, build "
        "time and windows/s per core through RandomResizedCrop + flip, against decoding on the "
        "fly; predicts each for all of DATA from the headers (frames x stored size) and "
        "recommends the fastest codec within --budget. Says after how many epochs the store "
        "pays for itself.",
    )
    if argv is None or next((a for a in argv if not a.startswith("-")), None) == "plan":
        add_plan_options(pl)
    pl.set_defaults(func=run.plan)
    _store_commands(sub, run)
    _model_commands(sub, run)
    d = _command(sub, "demo", "the end-to-end showcase on synthetic data")
    d.add_argument("--out", default="demo_out", help="output folder (default demo_out)")
    d.add_argument("--quick", action="store_true", help="smaller dataset (for tests)")
    d.add_argument(
        "--task",
        choices=("classification", "detection"),
        default="classification",
        help="detection: objects behind occluders, a T=1 detector against a T=4 one (mAP, "
        "flicker) on held-out clips, in OUT/detection/report.json (minutes on two cores)",
    )
    d.set_defaults(func=run.demo)
    return p


def _store_commands(sub, run) -> None:
    """info, verify, gc, show, report, convert, bench: the commands about a store."""
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
        "once every file checks and the store opens; a checksum it has is never replaced (an "
        "HDF5 file: the checksums one written by an older hyperframes lacks)",
    )
    v.set_defaults(func=run.verify)

    g = _command(
        sub,
        "gc",
        "list the objects under a store URL that its manifest does not list",
        "List the objects under a store URL that its manifest does not list (what killed "
        "builds left: shards never finished, files of an older index; the generations of "
        "earlier builds, which readers opened before the last build still read); --delete "
        "deletes them. Run it while no build of the URL runs.",
    )
    g.add_argument("store", help="a store URL (s3://bucket/prefix)")
    g.add_argument("--delete", action="store_true", help="delete them (default: list only)")
    g.set_defaults(func=run.gc)

    s = _command(sub, "show", "write a window of frames as a PNG")
    _show_options(s)
    s.set_defaults(func=run.show)
    r = _command(sub, "report", "write one HTML page to look at a store (no server needed)")
    _report_options(r)
    r.set_defaults(func=run.report)
    c = _command(sub, "convert", "write a store in another format")
    _convert_options(c)
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


def _show_options(s) -> None:
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


def _report_options(r) -> None:
    r.add_argument("store", help=STORE_HELP)
    r.add_argument("--out", required=True, help="folder to write report.html in")
    r.add_argument("--config", help="preview the training windows of this YAML config")
    r.add_argument("--sampler", default="uniform", help="sampler to preview (default uniform)")
    r.add_argument("--frames", type=int, default=8, help="frames per window (default 8)")
    r.add_argument("--videos", type=int, default=20, help="video rows (default 20)")
    r.add_argument("--preview", type=int, default=3, help="sampler items shown (default 3)")


def _convert_options(c) -> None:
    c.add_argument("store", help="a store folder, or its URL (s3://bucket/prefix)")
    c.add_argument(
        "--format",
        choices=["hdf5", "folder"],
        help="the format to write: hdf5 (decoded frames in one file; the default without "
        "--codec) or folder (a store folder in --codec; the default with it)",
    )
    c.add_argument(
        "--codec",
        choices=CODECS,
        help="write a store folder with its frames in this codec (raw, lz4, zstd, jpeg, "
        "yuv420; from RGB, yuv420 stores BT.601 full range)",
    )
    c.add_argument(
        "--jpeg-quality", type=int, default=90, help="with --codec jpeg: quality 1-100 (90)"
    )
    c.add_argument(
        "--chunk-frames", type=int, default=4, help="with --codec lz4/zstd: frames per chunk (4)"
    )
    c.add_argument(
        "--out",
        required=True,
        help="what to write: store.h5 (or s3://bucket/store.h5) for hdf5, a new folder for --codec",
    )
    c.add_argument(
        "--compression",
        default="lzf",
        choices=COMPRESSIONS,
        help="HDF5 dataset compression (default lzf)",
    )
    c.add_argument("--quiet", action="store_true", help="no progress bar")


def _model_commands(sub, run) -> None:
    """models, predict, export, train, estimate, eval, recalibrate: the commands about a model."""
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
