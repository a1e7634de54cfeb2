"""Argument parsing and printing only; every command calls a library function."""

from __future__ import annotations

import argparse
import json
import sys

from .._errors import HyperframesError, Interrupted
from .._signals import exit_status_for_interrupt

EXIT_OK, EXIT_FATAL, EXIT_FAILURES = 0, 1, 2
DEFAULT_MAX_PIXELS = 8192 * 8192  # as hyperframes.store BuildOptions (not imported: start-up)


def _build(args) -> int:
    from ..store import BuildOptions, build_store, dry_run

    options = BuildOptions(
        fps=args.fps,
        size=args.size,
        codec=args.codec,
        dtype=args.dtype,
        decoder=args.decoder,
        stream=args.stream,
        jpeg_quality=args.jpeg_quality,
        chunk_frames=args.chunk_frames,
        frame_folder_fps=args.frame_fps,
        format=args.format,
        hdf5_compression=args.hdf5_compression,
        workers=args.workers,
        on_damaged=args.on_damaged,
        max_pixels=args.max_pixels,
    )
    if args.dry_run:
        est = dry_run(args.data, options)
        if args.json:
            print(json.dumps(est, indent=1))
        else:
            print(
                f"{est['videos']} videos, about {est['estimated_frames']} frames, "
                f"about {est['estimated_bytes'] / 1e6:.1f} MB as {est['codec']} "
                f"({est['source_bytes'] / 1e6:.1f} MB of source); {est['note']}"
            )
            for u in est["unreadable"]:
                print(f"  unreadable: {u['path']}: {u['error']}")
        return EXIT_OK
    report = build_store(args.data, args.out, options, progress=not args.quiet)
    print(report.summary())
    return report.exit_code


def _info(args) -> int:
    from ..store import open_store
    from ._info import describe, format_info

    store = open_store(args.store)
    data = describe(store)
    print(json.dumps(data, indent=1) if args.json else format_info(data))
    return EXIT_OK


def _verify(args) -> int:
    from ..store import verify_store

    problems = verify_store(args.store)
    for p in problems:
        print(f"BAD  {p}")
    if problems:
        print(f"{len(problems)} problem(s) in {args.store}")
        return EXIT_FATAL
    print(f"{args.store}: every checksum matches")
    return EXIT_OK


def _show(args) -> int:
    import numpy as np

    from .._pictures import window_png
    from ..store import open_store

    store = open_store(args.store)
    rec = store.videos[args.video]
    idx = args.start + args.stride * np.arange(args.frames)
    idx = idx[idx < rec.num_frames]
    if not len(idx):
        raise HyperframesError(f"--start {args.start} is past the end of video {args.video}")
    frames = store.read_numpy(args.video, idx)
    caps = [f"#{rec.source_frame_indices[i]} {rec.pts_seconds[i]:.2f}s" for i in idx]
    title = f"{rec.path} [{rec.label}] frames {idx[0]}..{idx[-1]} stride {args.stride}"
    window_png(frames, args.out, captions=caps, title=title)
    print(f"wrote {args.out} ({len(idx)} frames)")
    return EXIT_OK


def _convert(args) -> int:
    from ..store._hdf5 import convert_to_hdf5

    out = convert_to_hdf5(
        args.store, args.out, compression=args.compression, progress=not args.quiet
    )
    print(f"wrote {out}")
    return EXIT_OK


def _bench(args) -> int:
    from ..bench import format_bench, run_bench

    result = run_bench(
        args.data,
        frames=args.frames,
        batch=args.batch,
        windows=args.windows,
        size=args.size,
        codecs=tuple(args.codecs.split(",")),
        budget_seconds=args.budget,
        progress=not args.json,
    )
    print(json.dumps(result, indent=1) if args.json else format_bench(result))
    return EXIT_OK


def _models(args) -> int:
    from ..models import describe

    rows = describe()
    if args.json:
        print(json.dumps([r._asdict() for r in rows], indent=1))
        return EXIT_OK
    print(f"{'name':<28}{'layout':<10}{'params':>9}  {'family':<13}{'task':<16}summary")
    for r in rows:
        params = f"{r.params / 1e6:.2f}M" if r.params else ("n/a" if r.available else "missing")
        print(f"{r.name:<28}{r.layout:<10}{params:>9}  {r.family:<13}{r.task:<16}{r.summary}")
    return EXIT_OK


def _predict(args) -> int:
    from ..infer import predict_video

    report = predict_video(
        args.checkpoint,
        args.video,
        stride=args.stride,
        ema=args.ema,
        out=args.out,
        annotate=args.annotate,
        batch_size=args.batch_size,
        device=args.device,
        reuse=False if args.no_reuse else "auto",
        progress=not args.quiet,
    )
    print(report.summary())
    return EXIT_OK


def _export(args) -> int:
    from ..infer import export_onnx

    print(export_onnx(args.checkpoint, args.onnx).summary())
    return EXIT_OK


def _demo(args) -> int:
    from ..demo import run_demo

    return run_demo(args.out, quick=args.quick)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="hyperframes", description="Decode video once; serve hyperframes at memory speed."
    )
    sub = p.add_subparsers(dest="command", required=True)

    b = sub.add_parser("build", help="decode videos once into a store")
    b.add_argument(
        "data", help="folder root/<label>/<video>, annotation file, frame folder or video"
    )
    b.add_argument("--out", required=True, help="store folder (or .h5 file with --format hdf5)")
    b.add_argument(
        "--fps", type=float, default=None, help="resample to this rate (default: native)"
    )
    b.add_argument("--size", default="128", help="short side (128), HxW (112x112) or none")
    b.add_argument("--codec", default="raw", choices=["raw", "lz4", "zstd", "jpeg"])
    b.add_argument("--dtype", default="uint8", choices=["uint8", "float16"])
    b.add_argument("--decoder", default="pyav", choices=["pyav", "torchcodec", "decord", "opencv"])
    b.add_argument("--stream", type=int, default=None, help="video stream index (default: best)")
    b.add_argument("--jpeg-quality", type=int, default=90)
    b.add_argument("--chunk-frames", type=int, default=4, help="frames per lz4/zstd chunk")
    b.add_argument("--frame-fps", type=float, default=30.0, help="rate of frame folders")
    b.add_argument("--format", default="store", choices=["store", "hdf5"])
    b.add_argument("--hdf5-compression", default="lzf", choices=["lzf", "blosc", "gzip", "none"])
    b.add_argument("--workers", type=int, default=1, help="decoding processes")
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
    b.add_argument("--dry-run", action="store_true", help="estimate the store's size only")
    b.add_argument("--json", action="store_true", help="with --dry-run: print JSON")
    b.add_argument("--quiet", action="store_true", help="no progress bar")
    b.set_defaults(func=_build)

    i = sub.add_parser("info", help="describe a store")
    i.add_argument("store")
    i.add_argument("--json", action="store_true")
    i.set_defaults(func=_info)

    v = sub.add_parser("verify", help="recompute every checksum of a store")
    v.add_argument("store")
    v.set_defaults(func=_verify)

    s = sub.add_parser("show", help="write a window of frames as a PNG")
    s.add_argument("store")
    s.add_argument("--video", type=int, required=True)
    s.add_argument("--start", type=int, default=0)
    s.add_argument("--frames", type=int, default=8)
    s.add_argument("--stride", type=int, default=1)
    s.add_argument("--out", default="window.png")
    s.set_defaults(func=_show)

    c = sub.add_parser("convert", help="write a store in another format")
    c.add_argument("store")
    c.add_argument("--format", default="hdf5", choices=["hdf5"])
    c.add_argument("--out", required=True)
    c.add_argument("--compression", default="lzf", choices=["lzf", "blosc", "gzip", "none"])
    c.add_argument("--quiet", action="store_true")
    c.set_defaults(func=_convert)

    n = sub.add_parser("bench", help="store reads vs on-the-fly decoding vs memcpy")
    n.add_argument("data", help="a store, or data to build temporary stores from")
    n.add_argument("--frames", type=int, default=16)
    n.add_argument("--batch", type=int, default=32)
    n.add_argument("--windows", type=int, default=512)
    n.add_argument("--size", default="none", help="store frame size when building from data")
    n.add_argument("--codecs", default="raw,lz4,zstd,jpeg")
    n.add_argument("--budget", type=float, default=10.0, help="seconds per on-the-fly decoder")
    n.add_argument("--json", action="store_true")
    n.set_defaults(func=_bench)

    m = sub.add_parser("models", help="registered models: name, layout, parameters")
    m.add_argument("--json", action="store_true")
    m.set_defaults(func=_models)

    pr = sub.add_parser("predict", help="sliding-window predictions over a video")
    pr.add_argument("checkpoint")
    pr.add_argument("video")
    pr.add_argument("--stride", type=int, default=1)
    pr.add_argument("--ema", type=float, default=0.0, help="smoothing weight (0: off)")
    pr.add_argument("--out", default=None, help="output folder (default: <video>_predict)")
    pr.add_argument("--annotate", action="store_true", help="also write an annotated video")
    pr.add_argument("--batch-size", type=int, default=8)
    pr.add_argument("--device", default="cpu", choices=["auto", "cpu", "cuda"])
    pr.add_argument("--no-reuse", action="store_true", help="rerun every window in full")
    pr.add_argument("--quiet", action="store_true")
    pr.set_defaults(func=_predict)

    ex = sub.add_parser("export", help="export a checkpoint to ONNX (checked by onnxruntime)")
    ex.add_argument("checkpoint")
    ex.add_argument("--onnx", required=True)
    ex.set_defaults(func=_export)

    from ..train._cli import add_eval_parser, add_train_parser

    add_train_parser(sub)
    add_eval_parser(sub)

    d = sub.add_parser("demo", help="the end-to-end showcase on synthetic data")
    d.add_argument("--out", default="demo_out")
    d.add_argument("--quick", action="store_true", help="smaller dataset (for tests)")
    d.set_defaults(func=_demo)
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return args.func(args)
    except Interrupted as e:
        print(f"hyperframes {args.command}: {e}", file=sys.stderr)
        return exit_status_for_interrupt()
    except HyperframesError as e:
        print(f"hyperframes {args.command}: error: {e}", file=sys.stderr)
        return EXIT_FATAL
    except KeyboardInterrupt:
        print(f"hyperframes {args.command}: interrupted", file=sys.stderr)
        return 130
