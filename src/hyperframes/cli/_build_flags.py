"""``hyperframes build``'s options: one per field of :class:`~hyperframes.build.BuildOptions`,
generated from it (``_from_model``), and the few that are the command's own: what to read,
where the store goes, where videos are decoded, what to print.

A new build option is a new field of ``BuildOptions``; nothing here changes. Here is only what
the command line takes differently from the library: ``--stream v:K``, ``--max-gap none``, and
the codecs and decoders, read from their registries when first needed.
"""

from __future__ import annotations

import argparse

from ._choices import CODECS, DECODERS, INPUT_FORMATS
from ._from_model import add_model_options

__all__ = ["add_build_options", "add_plan_options", "byte_count", "seconds_or_none", "video_stream"]


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


def seconds_or_none(text: str) -> float | None:
    """``--max-gap``: a positive, finite number of seconds, or ``none`` (no bound)."""
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


#: what the command line takes differently from BuildOptions (keywords of ``add_argument``)
AS_TYPED: dict[str, dict] = {
    "codec": {"choices": CODECS, "metavar": "CODEC"},
    "decoder": {"choices": DECODERS, "metavar": "DECODER"},
    "stream": {"type": video_stream, "metavar": "v:K"},
    "max_gap": {"type": seconds_or_none, "metavar": "SECONDS"},
}


def add_build_options(b: argparse.ArgumentParser) -> None:
    """Every option of ``hyperframes build`` (imports the build package: BuildOptions)."""
    from ..build import BuildOptions  # deferred: the CLI loads a command's code when it runs

    b.add_argument("data", help=DATA_HELP)
    b.add_argument(
        "--out",
        required=True,
        help="store folder (or .h5 file with --format hdf5), or a URL (s3://bucket/prefix): "
        "built in a local staging folder, then uploaded, manifest last",
    )
    _input_options(b)
    add_model_options(b, BuildOptions, overrides=AS_TYPED)
    _engine_options(b)
    b.add_argument("--dry-run", action="store_true", help="estimate the store's size only")
    b.add_argument("--json", action="store_true", help="with --dry-run: print JSON")
    b.add_argument("--quiet", action="store_true", help="no progress bar")


DATA_HELP = "folder root/<label>/<video>, annotation file, frame folder or video"

#: build options a plan does not take: it tries every codec, and measures a store folder
NOT_PLANNED = frozenset({"codec", "format", "hdf5_compression"})


def add_plan_options(p: argparse.ArgumentParser) -> None:
    """``hyperframes plan``'s options: what to read and how to build, as build takes them
    (every option of build that shapes the stored frames), and the plan's own."""
    from ..build import BuildOptions  # deferred: the CLI loads a command's code when it runs

    p.add_argument("data", help=DATA_HELP + " (as build takes it)")
    p.add_argument(
        "--sample",
        type=int,
        default=4,
        metavar="N",
        help="videos to build the trial stores from, spread across codecs and sizes (default 4)",
    )
    p.add_argument(
        "--budget",
        type=byte_count,
        default=None,
        metavar="BYTES",
        help="bytes the store may take (e.g. 500GB, 2.5e12); the fastest codec that fits is "
        "recommended (default: no limit)",
    )
    p.add_argument("--frames", type=int, default=16, help="frames per window (default 16)")
    p.add_argument("--batch", type=int, default=32, help="windows per batch (default 32)")
    p.add_argument(
        "--crop", type=int, default=112, help="RandomResizedCrop's output side (default 112)"
    )
    p.add_argument(
        "--seconds",
        type=float,
        default=2.0,
        help="seconds each store's reads (and the on-the-fly decoders together) are timed "
        "(default 2)",
    )
    p.add_argument("--json", action="store_true", help="print the rows as JSON")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    _input_options(p)
    add_model_options(p, BuildOptions, overrides=AS_TYPED, skip=NOT_PLANNED)


def byte_count(text: str) -> int:
    """``--budget``: bytes, as a number (``2.5e12``) or with a unit (``500GB``, ``2TB``,
    ``800MiB``)."""
    value = text.strip().upper().removesuffix("B")
    scale = 1
    for unit, factor in (("KI", 1 << 10), ("MI", 1 << 20), ("GI", 1 << 30), ("TI", 1 << 40)):
        if value.endswith(unit):
            value, scale = value[: -len(unit)], factor
            break
    else:
        if value[-1:] in _DECIMAL:
            value, scale = value[:-1], _DECIMAL[value[-1]]
    try:
        number = float(value) * scale
    except ValueError:
        number = float("nan")
    if not (number > 0 and number != float("inf")):
        raise argparse.ArgumentTypeError(
            f"expected a number of bytes > 0 (e.g. 500GB, 2TB, 800MiB, 2.5e12), got {text!r}"
        )
    return int(number)


_DECIMAL = {"K": 10**3, "M": 10**6, "G": 10**9, "T": 10**12}


def _input_options(b: argparse.ArgumentParser) -> None:
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


def _engine_options(b: argparse.ArgumentParser) -> None:
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
