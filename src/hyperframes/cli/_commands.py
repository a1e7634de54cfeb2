"""One handler per command: call the library, print what it returns, give the exit status.

Each imports what it needs when it runs, so ``info``, ``verify`` and ``show`` never import torch.
"""

from __future__ import annotations

import json

EXIT_OK, EXIT_FATAL, EXIT_FAILURES = 0, 1, 2


def build(args) -> int:
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
        est = dry_run(args.data, options, input_format=args.input_format, root=args.root)
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
    report = build_store(
        args.data,
        args.out,
        options,
        progress=not args.quiet,
        input_format=args.input_format,
        root=args.root,
    )
    print(report.summary())
    return report.exit_code


def info(args) -> int:
    from ..store import open_store
    from ._info import describe, format_info

    data = describe(open_store(args.store))
    print(json.dumps(data, indent=1) if args.json else format_info(data))
    return EXIT_OK


def verify(args) -> int:
    from ..store import verify_store

    problems = verify_store(args.store)
    for p in problems:
        print(f"BAD  {p}")
    if problems:
        print(f"{len(problems)} problem(s) in {args.store}")
        return EXIT_FATAL
    print(f"{args.store}: every checksum matches")
    return EXIT_OK


def show(args) -> int:
    from .._pictures import show_window
    from ..store import open_store

    shown = show_window(
        open_store(args.store),
        args.video,
        args.out,
        start=args.start,
        frames=args.frames,
        stride=args.stride,
    )
    print(shown.summary())
    return EXIT_OK


def convert(args) -> int:
    from ..store._hdf5 import convert_to_hdf5

    out = convert_to_hdf5(
        args.store, args.out, compression=args.compression, progress=not args.quiet
    )
    print(f"wrote {out}")
    return EXIT_OK


def bench(args) -> int:
    from ..bench import format_bench, run_bench

    result = run_bench(
        args.data,
        frames=args.frames,
        batch=args.batch,
        windows=args.windows,
        size=args.size,
        codecs=tuple(c.strip() for c in args.codecs.split(",") if c.strip()),
        budget_seconds=args.budget,
        workdir=args.keep,
        progress=not args.json,
    )
    print(json.dumps(result, indent=1) if args.json else format_bench(result))
    return EXIT_OK


def models(args) -> int:
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


def predict(args) -> int:
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


def export(args) -> int:
    from ..infer import export_onnx

    print(export_onnx(args.checkpoint, args.onnx).summary())
    return EXIT_OK


def demo(args) -> int:
    from ..demo import run_demo

    return run_demo(args.out, quick=args.quick)
