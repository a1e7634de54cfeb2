"""Command lines of ``hyperframes train`` and ``hyperframes eval``.

Wire them into the main parser with ``add_train_parser(sub)`` / ``add_eval_parser(sub)``
(each sets ``func`` to a handler returning an exit code), or call ``train_main(argv)`` /
``eval_main(argv)``.

``train`` stopped by Ctrl-C or SIGTERM saves ``last.pt`` where it stands, prints one line
saying where and the command that resumes, and exits with 130 (SIGINT) or 143 (SIGTERM).
"""

from __future__ import annotations

import argparse
import shlex
import sys

from .._errors import HyperframesError

__all__ = ["add_eval_parser", "add_train_parser", "eval_main", "train_main"]


def _train_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("config", help="a YAML config (sections data, model, train, eval)")
    p.add_argument(
        "--set",
        dest="overrides",
        metavar="KEY=VALUE",
        action="append",
        default=[],
        help="override a config value, e.g. --set train.lr=0.1 (repeatable)",
    )
    p.add_argument("--out", default=None, help="run folder (default runs/<model>-<time>)")
    p.add_argument(
        "--resume",
        action="store_true",
        help="continue from RUN_DIR/last.pt (with --set train.epochs=N to train longer: the "
        "learning-rate schedule continues where it stands); a complete run says so",
    )
    p.add_argument("--quiet", action="store_true", help="no progress output")


def _eval_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("checkpoint", help="RUN_DIR/best.pt (or last.pt) written by train")
    p.add_argument("--store", default=None, help="store to evaluate on (default: the run's)")
    p.add_argument(
        "--split",
        default="val",
        help="a split the store records, or for a store without any the run's generated "
        "train/val split; 'all' for every video (default val)",
    )
    p.add_argument(
        "--clips",
        type=int,
        default=10,
        help="windows per video: evenly spaced, or at seeded random times on a store at "
        "another frame rate than the model's (default 10)",
    )
    p.add_argument("--crops", type=int, default=3, choices=[1, 3], help="spatial crops")
    p.add_argument(
        "--batch-size", type=int, default=None, help="clips per batch (default: the config's)"
    )
    p.add_argument("--workers", type=int, default=0, help="data loader workers (default 0)")
    p.add_argument("--device", default="auto", help="auto, cpu, cuda or cuda:N")
    p.add_argument(
        "--out",
        default=None,
        help="metrics JSON to write (default RUN_DIR/eval/<store>/<split>/metrics.json); the "
        "per-video CSV (path, label, prediction, score) goes beside it",
    )


def _resume_command(args, run_dir) -> str:
    sets = [a for kv in args.overrides for a in ("--set", kv)]
    argv = ["hyperframes", "train", args.config, *sets, "--out", str(run_dir), "--resume"]
    return shlex.join(argv)


def _train(args) -> int:
    from ._trainer import TrainingInterrupted, run_training

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
    return 0


def _eval(args) -> int:
    from ._eval import evaluate

    evaluate(
        args.checkpoint,
        args.store,
        split=args.split,
        clips=args.clips,
        crops=args.crops,
        batch_size=args.batch_size,
        workers=args.workers,
        device=args.device,
        out=args.out,
    )
    return 0


def add_train_parser(sub) -> argparse.ArgumentParser:
    """Add ``train`` to an ``argparse`` subparsers object."""
    p = sub.add_parser("train", help="train a model on a store from a YAML config")
    _train_arguments(p)
    p.set_defaults(func=_train)
    return p


def add_eval_parser(sub) -> argparse.ArgumentParser:
    """Add ``eval`` to an ``argparse`` subparsers object."""
    p = sub.add_parser("eval", help="evaluate a checkpoint (multi-clip, multi-crop)")
    _eval_arguments(p)
    p.set_defaults(func=_eval)
    return p


def _main(name: str, add, argv) -> int:
    parser = argparse.ArgumentParser(prog="hyperframes")
    sub = parser.add_subparsers(dest="command", required=True)
    add(sub)
    args = parser.parse_args([name, *(sys.argv[1:] if argv is None else argv)])
    try:
        return args.func(args)
    except HyperframesError as e:
        print(f"hyperframes {name}: error: {e}", file=sys.stderr)
        return 1


def train_main(argv: list[str] | None = None) -> int:
    """``hyperframes train CONFIG [--set k=v ...] [--out RUN_DIR] [--resume]``."""
    return _main("train", add_train_parser, argv)


def eval_main(argv: list[str] | None = None) -> int:
    """``hyperframes eval CHECKPOINT [--store S] [--split val] [--clips 10 --crops 3]``."""
    return _main("eval", add_eval_parser, argv)
