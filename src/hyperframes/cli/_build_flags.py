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

__all__ = ["add_build_options", "seconds_or_none", "video_stream"]


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
    add_model_options(b, BuildOptions, overrides=AS_TYPED)
    _engine_options(b)
    b.add_argument("--dry-run", action="store_true", help="estimate the store's size only")
    b.add_argument("--json", action="store_true", help="with --dry-run: print JSON")
    b.add_argument("--quiet", action="store_true", help="no progress bar")


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
