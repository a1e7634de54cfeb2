"""``build_store``, the entry of every build: which way a build goes (to a folder, to an HDF5
file, to a URL; on this machine or on Ray), and :func:`dry_run`, its estimate from headers.

- a store folder: ``_folder.build_folder`` (resumable, crash-safe: see there), its videos
  decoded here or by the Ray engine (``_ray.run_on_ray``);
- ``format="hdf5"``: a folder store built beside the file, converted (``_hdf5``), removed;
- a URL (``s3://...``): built in the URL's staging folder, then uploaded (``_publish``), or,
  with ``engine="ray"``, published by the Ray actors themselves (``_ray_publish``).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Literal, get_args

import xxhash

from .._core._errors import ConfigError, HyperframesError
from .._core._sizes import target_size
from .._core._urls import is_url
from ..inputs import scan_inputs, source_stat
from ..remote import RemoteFiles, bare_url
from ..store.format import MANIFEST
from ._folder import build_folder
from ._hdf5 import convert_to_hdf5
from ._options import BuildOptions
from ._publish import check_write_access, publish_file, publish_store, staging_dir
from ._ray import run_on_ray
from ._ray_url import build_ray_to_url
from ._report import BuildReport, as_given
from ._url_lock import UrlLock
from ._workers import decoder_for, error_text

__all__ = ["ENGINES", "BuildReport", "HeaderSize", "build_store", "dry_run", "header_sizes"]

#: where the videos are decoded: ``local`` worker processes, or a Ray cluster (``_ray``)
#: where a build decodes: worker processes here, or actors on a Ray cluster
Engine = Literal["local", "ray"]
ENGINES: tuple[Engine, ...] = get_args(Engine)


def build_store(
    data: str | os.PathLike,
    out: str | os.PathLike,
    options: BuildOptions | None = None,
    *,
    progress: bool = True,
    input_format: str | None = None,
    root: str | os.PathLike | None = None,
    engine: Engine = "local",
    ray_address: str | None = None,
) -> BuildReport:
    """Build (or resume) the store ``out`` from ``data``: a folder, an HDF5 file or a URL (see
    the module docstring; resuming and crashes: ``_folder``).
    ``input_format`` / ``root``: how to read ``data`` and the folder its listed paths are
    relative to (see :func:`hyperframes.inputs.scan_inputs`). ``engine``: ``local``
    (``options.workers`` processes here) or ``ray`` (``options.workers`` actors on the Ray
    cluster at ``ray_address``, a new one on this machine when None; see ``_ray``)."""
    options = options or BuildOptions()
    if is_url(out):
        return _build_to_url(
            data,
            str(out),
            options,
            progress=progress,
            input_format=input_format,
            root=root,
            engine=engine,
            ray_address=ray_address,
        )
    dispatch = _dispatcher(engine, ray_address, options)
    if options.format == "hdf5":
        return _build_hdf5(
            data, out, options, progress=progress, input_format=input_format, root=root
        )
    return build_folder(
        data,
        out,
        options,
        progress=progress,
        input_format=input_format,
        root=root,
        dispatch=dispatch,
    )


def _dispatcher(engine: str, ray_address: str | None, options: BuildOptions):
    """None for the local engine; else a function that decodes ``todo`` elsewhere, with the
    signature ``(store, options, run, sources, todo, handle)``."""
    if engine not in ENGINES:
        raise ConfigError(f"engine must be one of {', '.join(ENGINES)}, got {engine!r}")
    if engine == "local":
        if ray_address is not None:
            raise ConfigError("ray_address is for engine 'ray'; the local engine takes none")
        return None
    if options.format == "hdf5":
        raise ConfigError("engine 'ray' builds store folders; build one, then convert it to HDF5")
    return functools.partial(run_on_ray, address=ray_address)


def _build_to_url(data, url: str, options, **build_kwargs) -> BuildReport:
    """``build_store(data, url)``: build in the URL's staging folder (``_publish.staging_dir``),
    upload, remove the staging; with ``engine="ray"`` the actors publish their own shards.
    Under the URL's build lock (``_url_lock``): a second build of the URL is refused.
    A store at the URL built from the same inputs (paths, sizes, mtimes, rows) with the same
    options is kept as it is: nothing decoded, nothing uploaded (:func:`_kept`)."""
    hdf5 = options is not None and options.format == "hdf5"
    if build_kwargs.get("engine") == "ray" and not hdf5:
        kw = {k: build_kwargs.get(k) for k in ("input_format", "root", "ray_address")}
        return build_ray_to_url(data, url, options, progress=build_kwargs["progress"], **kw)
    check_write_access(url, folder=not hdf5)
    staging = staging_dir(url)
    if hdf5:
        staging.mkdir(parents=True, exist_ok=True)
        local = staging / Path(bare_url(url)).name
        report = build_store(data, local, options, **build_kwargs)
        publish_file(local, url)
    else:
        with UrlLock(url) as lock:  # one build per URL, across machines (``_url_lock``)
            t0 = time.perf_counter()
            inputs = scan_inputs(
                data, input_format=build_kwargs.get("input_format"), root=build_kwargs.get("root")
            )
            fingerprint = _inputs_fingerprint(inputs, options)
            kept = _kept(url, fingerprint, t0)
            if kept is not None:
                return kept
            report = build_store(data, staging, options, **build_kwargs)
            publish_store(staging, url, extra={BUILT_FROM: fingerprint}, before_manifest=lock.check)
    shutil.rmtree(staging, ignore_errors=True)
    report.store = url
    report.failures_file = None  # (the staging folder is gone: the manifest lists them)
    return report


#: the manifest key, at a URL, of the fingerprint of the inputs and options it was built from
BUILT_FROM = "built_from"


def _inputs_fingerprint(inputs, options: BuildOptions) -> str:
    """A hash of what a build stores: its options' content and every input row with its
    source's size and mtime (what a folder build's resume compares)."""
    rows = []
    for s in inputs.sources:
        try:
            stat = list(source_stat(s))
        except OSError:
            stat = None
        rows.append([dataclasses.astuple(s), stat])
    what = {
        "options": options.content(),
        "sources": rows,
        "classes": inputs.classes,
        "skipped": inputs.skipped,
        "failed_rows": inputs.failed_rows,
        "input_format": inputs.input_format,
    }
    return xxhash.xxh3_128_hexdigest(json.dumps(what, sort_keys=True, default=repr).encode())


def _kept(url: str, fingerprint: str, t0: float) -> BuildReport | None:
    """The report of the store at ``url`` when it was built from ``fingerprint`` (a rerun of
    a complete build: every video kept, nothing decoded), else None."""
    files = RemoteFiles(url)
    if MANIFEST not in files.listing():
        return None
    try:
        m = json.loads(files.read(MANIFEST))
    except (HyperframesError, ValueError):
        return None
    if not isinstance(m, dict) or m.get(BUILT_FROM) != fingerprint:
        return None
    return BuildReport(
        store=url,
        videos=m["num_videos"],
        frames=m["num_frames"],
        store_bytes=m["store_bytes"],
        source_bytes=m["source_bytes"],
        failed=m.get("failed") or [],
        failed_count=m.get("failed_count"),
        reused=m["num_videos"],
        seconds=time.perf_counter() - t0,
        damaged=m.get("damaged") or [],
        skipped=m.get("skipped") or [],
        notes=m.get("notes") or [],
        gaps=m.get("gaps") or [],
    )


def _build_hdf5(data, out, options, *, progress=True, input_format=None, root=None) -> BuildReport:
    """``build --format hdf5``: build a folder store beside ``out`` (resumable), from the
    same inputs as a folder build reads (``input_format``, ``root``), convert it to one HDF5
    file, then remove the folder store."""
    out = Path(out)
    staging = out.with_name(out.name + ".staging")
    report = build_store(
        data,
        staging,
        options.replace(format="store"),
        progress=progress,
        input_format=input_format,
        root=root,
    )
    convert_to_hdf5(
        staging, out, compression=options.hdf5_compression, progress=progress, built=True
    )
    shutil.rmtree(staging, ignore_errors=True)
    report.store = str(out)
    report.store_bytes = out.stat().st_size
    report.failures_file = None  # (the staging folder is gone: the file's manifest lists them)
    return report


#: unreadable sources a dry run lists one by one (the rest are counted: ten million missing
#: files are a number, not ten million lines held in memory)
LISTED_UNREADABLE = 1000


@dataclasses.dataclass(frozen=True)
class HeaderSize:
    """What a source's header says its stored frames will be, decoding nothing: ``frames``
    stored (at the build's frame rate), each ``height`` x ``width`` (the build's size), from a
    file of ``source_bytes`` whose video is ``codec``; ``seconds`` its duration (None:
    unknown)."""

    source: object  # hyperframes.inputs.Source
    frames: int
    height: int
    width: int
    source_bytes: int
    codec: str
    seconds: float | None


def iter_header_sizes(
    data: str | os.PathLike,
    options: BuildOptions,
    *,
    input_format: str | None = None,
    root: str | os.PathLike | None = None,
) -> Iterator[HeaderSize | dict]:
    """Each source of ``data`` in turn, as its header sizes it under ``options``
    (:class:`HeaderSize`), or ``{"path", "error"}`` where its header cannot be read."""
    sources = scan_inputs(
        data,
        input_format=input_format,
        root=root,
        allow_outside_root=options.allow_outside_root,
    ).sources
    for s in sources:
        try:
            dec = decoder_for(options, s.kind)
            info = dec.probe(s.path, stream=options.stream)
            src_bytes = source_stat(s)[0]
        except (HyperframesError, OSError) as e:
            yield as_given({"path": s.path, "error": error_text(e)}, s)
            continue
        dur = info.duration_seconds
        fps = options.target_fps(info.fps)
        if fps and dur:
            n = int(dur * fps)
        else:
            n = info.num_frames_from_header or int((dur or 0) * (info.fps or 0))
        hw = target_size(info.height, info.width, options.size) or (info.height, info.width)
        yield HeaderSize(s, n, hw[0], hw[1], src_bytes, info.codec, dur)


def header_sizes(
    data: str | os.PathLike,
    options: BuildOptions | None = None,
    *,
    input_format: str | None = None,
    root: str | os.PathLike | None = None,
) -> tuple[list[HeaderSize], list[dict]]:
    """Each source of ``data`` as its header sizes it under ``options`` (:class:`HeaderSize`),
    and the sources whose header cannot be read (``{"path", "error"}``)."""
    sized: list[HeaderSize] = []
    unreadable: list[dict] = []
    for h in iter_header_sizes(
        data, options or BuildOptions(), input_format=input_format, root=root
    ):
        if isinstance(h, HeaderSize):
            sized.append(h)
        else:
            unreadable.append(h)
    return sized, unreadable


def dry_run(
    data: str | os.PathLike,
    options: BuildOptions | None = None,
    *,
    input_format: str | None = None,
    root: str | os.PathLike | None = None,
) -> dict:
    """Estimate a store's size from the sources' headers, decoding nothing."""
    options = options or BuildOptions()
    est_frames, est_bytes, src_bytes, readable, unreadable_count = 0, 0, 0, 0, 0
    unreadable: list[dict] = []
    # a codec without a rough ratio here (a registered one) is estimated at raw's size
    ratio = {"raw": 1.0, "lz4": 0.8, "zstd": 0.6, "jpeg": 0.08, "yuv420": 0.5}.get(
        options.codec, 1.0
    )
    itemsize = 2 if options.dtype == "float16" else 1
    for h in iter_header_sizes(data, options, input_format=input_format, root=root):
        if not isinstance(h, HeaderSize):
            unreadable_count += 1
            if len(unreadable) < LISTED_UNREADABLE:
                unreadable.append(h)
            continue
        readable += 1
        src_bytes += h.source_bytes
        n, hw, dur = h.frames, (h.height, h.width), h.seconds
        est_frames += n
        est_bytes += int(n * 3 * hw[0] * hw[1] * itemsize * ratio)
        if options.audio:  # float32 samples (as if every video had audio)
            est_bytes += int((dur or 0) * options.audio_rate * options.audio_channels * 4)
        if options.flow:  # per pair: 2 components at the flow size, and a 3x3 float32
            fh, fw = target_size(*hw, options.flow_size) or hw
            per = 2 * fh * fw * (1 if options.flow_dtype == "int8" else 2) + 36
            est_bytes += max(n - 1, 0) * per
    return {
        "videos": readable + unreadable_count,
        "estimated_frames": est_frames,
        "estimated_bytes": est_bytes,
        "source_bytes": src_bytes,
        "codec": options.codec,
        "unreadable": unreadable,
        "unreadable_count": unreadable_count,
        "note": "from container headers; compressed sizes are rough",
    }
