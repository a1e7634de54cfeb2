"""One handler per command: call the library, print what it returns, give the exit status.

Each imports what it needs when it runs, so ``info``, ``verify`` and ``show`` never import torch.
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

from .._core._text import printable
from ._from_model import model_values

EXIT_OK, EXIT_FATAL, EXIT_FAILURES = 0, 1, 2


def _same_names(args, *names: str) -> dict[str, Any]:
    """The command line's values of ``names``, for the library's keywords of the same names."""
    return {name: getattr(args, name) for name in names}


def build(args) -> int:
    # deferred: the CLI loads a command's code when it runs
    from ..build import BuildOptions, build_store, dry_run

    options = BuildOptions(**model_values(args, BuildOptions))
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
                print(printable(f"  unreadable: {u['path']}: {u['error']}", keep=""))
            more = est["unreadable_count"] - len(est["unreadable"])
            if more:
                print(f"  and {more} more unreadable")
        return EXIT_OK
    report = build_store(
        args.data,
        args.out,
        options,
        progress=not args.quiet,
        **_same_names(args, "input_format", "root", "engine", "ray_address"),
    )
    print(report.summary())
    return report.exit_code


def info(args) -> int:
    # deferred: the CLI loads a command's code when it runs
    from ..store import describe_store, format_store_info, open_store

    data = describe_store(open_store(args.store))
    print(json.dumps(data, indent=1) if args.json else format_store_info(data))
    return EXIT_OK


def verify(args) -> int:
    from ..store import verify_store  # deferred: the CLI loads a command's code when it runs

    if args.resign:
        return _resign(args.store)
    problems = verify_store(args.store)
    for p in problems:
        print(printable(f"BAD  {p}", keep=""))
    if problems:
        print(f"{len(problems)} problem(s) in {args.store}")
        return EXIT_FATAL
    print(f"{args.store}: every checksum matches")
    return EXIT_OK


def gc(args) -> int:
    from .._core._errors import ConfigError  # deferred: the CLI loads a command's code when it runs
    from ..build import gc_store  # deferred: the CLI loads a command's code when it runs

    try:
        found = gc_store(args.store, delete=args.delete)
    except ConfigError as e:
        print(e, file=sys.stderr)
        return EXIT_FATAL
    for rel, size in found:
        print(
            printable(f"{'deleted' if args.delete else 'unlisted'}  {rel}  {size} bytes", keep="")
        )
    total = sum(size for _, size in found)
    if args.delete:
        print(f"{args.store}: {len(found)} object(s) deleted, {total} bytes")
    elif found:
        print(f"{args.store}: {len(found)} object(s), {total} bytes; --delete deletes them")
    else:
        print(f"{args.store}: every object is listed by its manifest")
    return EXIT_OK


def _resign(store) -> int:
    from ..store import resign_store  # deferred: the CLI loads a command's code when it runs

    signed, problems = resign_store(store)
    for p in problems:
        print(printable(f"BAD  {p}", keep=""))
    if problems:
        print(f"{len(problems)} problem(s) in {store}: nothing re-signed")
        return EXIT_FATAL
    for f in signed:
        print(f"signed  {f}")
    print(
        f"{store}: {len(signed)} checksum(s) recorded" if signed else f"{store}: nothing to re-sign"
    )
    return EXIT_OK


def show(args) -> int:
    # deferred: the CLI loads a command's code when it runs
    from .._core._pictures import show_window
    from ..store import open_store  # deferred: the CLI loads a command's code when it runs

    shown = show_window(
        open_store(args.store, cache_dir=args.cache_dir, cache_limit=args.cache_limit),
        args.video,
        args.out,
        **_same_names(args, "start", "frames", "stride"),
    )
    print(printable(shown.summary()))
    return EXIT_OK


def report(args) -> int:
    from ..store import open_store  # deferred: the CLI loads a command's code when it runs
    from ..viz import write_report  # deferred: the CLI loads a command's code when it runs

    store = open_store(args.store)
    dataset = note = None
    if args.config is not None:  # the config's training dataset in the sampler preview
        from ..train import config_dataset  # deferred: the CLI loads a command's code when it runs

        dataset, note = config_dataset(args.config, store)
    path = write_report(
        store,
        args.out,
        dataset=dataset,
        dataset_note=note,
        **_same_names(args, "sampler", "frames", "videos", "preview"),
    )
    print(f"wrote {path}: open it in a browser (one file, no server)")
    return EXIT_OK


def convert(args) -> int:
    from .._core._errors import ConfigError  # deferred: the CLI loads a command's code when it runs

    # deferred: the CLI loads a command's code when it runs
    from ..build import conversion_summary, convert_codec, convert_to_hdf5

    fmt = args.format or ("folder" if args.codec else "hdf5")
    if fmt == "folder":
        if args.codec is None:
            raise ConfigError("convert --format folder needs --codec (as build --codec takes)")
        out = convert_codec(
            args.store,
            args.out,
            args.codec,
            jpeg_quality=args.jpeg_quality,
            chunk_frames=args.chunk_frames,
            progress=not args.quiet,
        )
        print(conversion_summary(out))
        return EXIT_OK
    if args.codec is not None:
        raise ConfigError(
            f"convert --format hdf5 stores decoded frames and takes no --codec (got "
            f"{args.codec}); convert to a folder with --codec, or leave --codec out"
        )
    out = convert_to_hdf5(
        args.store, args.out, compression=args.compression, progress=not args.quiet
    )
    print(conversion_summary(out))  # what the conversion changed (the codec), and the sizes
    return EXIT_OK


def bench(args) -> int:
    # deferred: the CLI loads a command's code when it runs
    from ..bench import format_bench, run_bench

    result = run_bench(
        args.data,
        **_same_names(args, "frames", "batch", "windows", "size"),
        codecs=None
        if args.codecs is None
        else tuple(c.strip() for c in args.codecs.split(",") if c.strip()),
        budget_seconds=args.budget,
        workdir=args.keep,
        progress=not args.json,
        augment=args.augment or None,
        augment_seconds=1.0,
    )
    print(json.dumps(result, indent=1) if args.json else format_bench(result))
    return EXIT_OK


def plan(args) -> int:
    # deferred: the CLI loads a command's code when it runs
    from ..bench import format_plan, plan_store, plan_verdict
    from ..build import BuildOptions  # deferred: the CLI loads a command's code when it runs

    result = plan_store(
        args.data,
        BuildOptions(**model_values(args, BuildOptions)),
        **_same_names(args, "sample", "budget", "frames", "batch", "crop", "seconds"),
        **_same_names(args, "input_format", "root"),
        progress=not (args.quiet or args.json),
    )
    print(json.dumps(result.to_rows(), indent=1) if args.json else format_plan(result))
    if result.recommended is None:  # a budget nothing fits: said, and not a success
        print(f"hyperframes plan: {plan_verdict(result)}", file=sys.stderr)
        return EXIT_FATAL
    return EXIT_OK


def models(args) -> int:
    from ..models import describe  # deferred: the CLI loads a command's code when it runs

    rows = describe()
    if args.json:
        print(json.dumps([r._asdict() for r in rows], indent=1))
        return EXIT_OK
    table = [("name", "layout", "params", "family", "task", "summary")]
    for r in rows:
        params = f"{r.params / 1e6:.2f}M" if r.params else ("n/a" if r.available else "missing")
        table.append((r.name, r.layout, params, r.family, r.task, r.summary))
    # each column as wide as its widest cell, two spaces apart (params right-aligned)
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]) - 1)]
    for row in table:
        cells = [c.rjust(w) if i == 2 else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths))]
        print("  ".join([*cells, row[-1]]))
    return EXIT_OK


def predict(args) -> int:
    from ..infer import predict_video  # deferred: the CLI loads a command's code when it runs

    report = predict_video(
        args.checkpoint,
        args.video,
        **_same_names(args, "stride", "ema", "out", "annotate", "batch_size", "device", "frames"),
        **_same_names(args, "decoder", "reconstruct", "reconstructions", "short"),
        reuse=False if args.no_reuse else "auto",
        max_gap_seconds=args.max_gap,
        progress=not args.quiet,
    )
    print(printable(report.summary()))  # (ESC in a video name: written as an escape)
    return EXIT_OK


def export(args) -> int:
    from ..infer import export_onnx  # deferred: the CLI loads a command's code when it runs

    print(export_onnx(args.checkpoint, args.onnx).summary())
    return EXIT_OK


def estimate(args) -> int:
    # deferred: the CLI loads a command's code when it runs
    from ..train import estimate as estimate_config

    # deferred: the CLI loads a command's code when it runs
    from ..train import format_estimate, load_config, precheck_config

    precheck_config(args.config, args.overrides)
    result = estimate_config(load_config(args.config, args.overrides))
    if args.json:
        print(json.dumps(result.to_dict(), indent=1))
    else:
        print(format_estimate(result))
    return EXIT_OK


def train(args) -> int:
    """Stopped by Ctrl-C or SIGTERM, training saves ``last.pt`` where it stands; this prints one
    line saying where and the command that resumes, and exits with 130 (SIGINT) or 143.
    The config is checked before torch is imported: a refused one fails in milliseconds."""
    from ..train import precheck_config  # deferred: the CLI loads a command's code when it runs

    precheck_config(args.config, args.overrides)
    # deferred: the CLI loads a command's code when it runs
    from ..train import TrainingInterrupted, run_training

    try:
        run_training(
            args.config,
            args.out,
            resume=args.resume,
            overrides=args.overrides,
            progress=not args.quiet,
        )
    except TrainingInterrupted as e:
        if e.world_size == 1:  # several processes: rank 0 has said it already
            print(
                f"hyperframes train: {e.where}; continue with: {_resume_command(args, e.run_dir)}",
                file=sys.stderr,
                flush=True,
            )
        return e.exit_code
    except KeyboardInterrupt:  # Ctrl-C twice: stopped at once, nothing new saved
        print(
            "hyperframes train: interrupted again; stopped at once without saving "
            "(last.pt keeps the previous save; continue with --resume)",
            file=sys.stderr,
            flush=True,
        )
        return 130
    return EXIT_OK


def _resume_command(args, run_dir) -> str:
    sets = [a for kv in args.overrides for a in ("--set", kv)]
    argv = ["hyperframes", "train", args.config, *sets, "--out", str(run_dir), "--resume"]
    return shlex.join(argv)


def evaluate(args) -> int:
    # deferred: the CLI loads a command's code when it runs
    from ..train import evaluate as evaluate_checkpoint

    result = evaluate_checkpoint(
        args.checkpoint,
        args.store,
        **_same_names(args, "split", "clips", "crops", "batch_size", "workers", "device", "out"),
        **_same_names(args, "classes_by_index", "frames"),
    )
    if args.reconstructions:
        # deferred: the CLI loads a command's code when it runs
        from ..train import write_reconstructions

        folder = Path(result["metrics_json"]).parent / "reconstructions"
        paths = write_reconstructions(
            args.checkpoint,
            folder,
            store=args.store,
            split=args.split,
            windows=args.reconstructions,
            device=args.device,
        )
        print(f"  reconstructions: {len(paths)} PNG in {folder}")
    return EXIT_OK


def recalibrate(args) -> int:
    # deferred: the CLI loads a command's code when it runs
    from ..train import recalibrate as recalibrate_checkpoint

    report = recalibrate_checkpoint(
        args.checkpoint,
        args.store,
        **_same_names(args, "frames", "split", "batches", "batch_size", "device", "out"),
    )
    print(printable(report.summary()))  # (ESC in a video name: written as an escape)
    return EXIT_OK


def demo(args) -> int:
    from ..demo import run_demo  # deferred: the CLI loads a command's code when it runs

    if getattr(args, "task", "classification") == "detection":
        from ..demo import run_detection_demo  # deferred: the CLI loads a command's code

        run_detection_demo(args.out, quick=args.quick)
        return 0
    return run_demo(args.out, quick=args.quick)
