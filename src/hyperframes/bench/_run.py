"""``hyperframes bench``: windows/s for one window plan, read from stores (per codec) and decoded on
the fly (per installed decoder), with a plain memcpy of the same bytes as the ceiling."""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from ._onthefly import available_window_decoders, window_decoder


def plan_windows(
    store, *, windows: int, frames: int, seed: int = 0
) -> list[tuple[int, np.ndarray]]:
    """Random windows of ``frames`` consecutive stored frames, videos drawn uniformly."""
    rng = np.random.default_rng(seed)
    nf = np.asarray(store.videos.num_frames)
    eligible = np.nonzero(nf >= frames)[0]
    if not len(eligible):
        from .._errors import DataError

        raise DataError(f"no video in {store.path} has {frames} frames; lower --frames")
    plan = []
    for _ in range(windows):
        v = int(rng.choice(eligible))
        s = int(rng.integers(0, nf[v] - frames + 1))
        plan.append((v, np.arange(s, s + frames)))
    return plan


def _batches(plan, batch):
    return [plan[i : i + batch] for i in range(0, len(plan) - batch + 1, batch)] or [plan]


def time_store(store, plan, *, batch: int, repeats: int = 3) -> float:
    """Windows/s reading ``plan`` in batches with one ``read_batch`` call each (median)."""
    import torch

    batches = _batches(plan, batch)
    v0, ix0 = batches[0][0]
    c, h, w = store.videos[v0].shape
    out = torch.empty((len(batches[0]), len(ix0), c, h, w), dtype=torch.uint8)
    for b in batches[:2]:
        store.read_batch(b, out=out if len(b) == len(out) else None)
    rates = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for b in batches:
            store.read_batch(b, out=out if len(b) == len(out) else None)
        rates.append(sum(len(b) for b in batches) / (time.perf_counter() - t0))
    return statistics.median(rates)


def time_memcpy(window_bytes: int, windows: int, *, batch: int, repeats: int = 3, seed: int = 0):
    """Windows/s of copying ``window_bytes`` per window from random places of a large buffer
    (larger than the caches) into one preallocated batch buffer: the ceiling for any reader."""
    rng = np.random.default_rng(seed)
    src = np.ones(max(256 << 20, window_bytes * 64), np.uint8)
    dst = np.empty((batch, window_bytes), np.uint8)
    starts = rng.integers(0, len(src) - window_bytes, size=windows)
    n_batches = max(1, windows // batch)
    rates = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for b in range(n_batches):
            for k in range(batch):
                s = int(starts[(b * batch + k) % windows])
                dst[k] = src[s : s + window_bytes]
        rates.append(n_batches * batch / (time.perf_counter() - t0))
    return statistics.median(rates)


def time_onthefly(name: str, store, plan, *, budget_seconds: float = 10.0) -> dict:
    """Windows/s decoding the same windows from the source files with decoder ``name``."""
    fn = window_decoder(name)
    done, t0 = 0, time.perf_counter()
    for v, idx in plan:
        rec = store.videos[v]
        fn(
            rec.path,
            rec.pts_seconds[idx],
            indices=rec.source_frame_indices[idx],
            stream=rec.stream,
            size=rec.shape[1:],
        )
        done += 1
        if time.perf_counter() - t0 > budget_seconds and done >= 4:
            break
    return {"windows": done, "windows_per_s": done / (time.perf_counter() - t0)}


def run_bench(
    data_or_store: str | os.PathLike,
    *,
    frames: int = 16,
    batch: int = 32,
    windows: int = 512,
    codecs: tuple[str, ...] = ("raw", "lz4", "zstd", "jpeg"),
    size: str = "none",
    decoders: list[str] | None = None,
    budget_seconds: float = 10.0,
    seed: int = 0,
    workdir: str | os.PathLike | None = None,
    progress: bool = False,
) -> dict:
    """Measure one window plan every way; returns a dict (the same as ``bench --json``).

    Given a store, it is measured as it is; given data, a store per codec is built first (at
    ``size``). On-the-fly decoders produce the same windows: decoded, converted to RGB and
    resized to the store's frame size.
    """
    from ..store import BuildOptions, build_store, open_store
    from ..store._format import MANIFEST

    path = Path(data_or_store)
    stores = {}
    tmp = None
    if (path / MANIFEST).exists() or path.suffix in (".h5", ".hdf5"):
        s = open_store(path)
        stores[s.codec_name] = s
    else:
        tmp = Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix="hyperframes-bench-"))
        for codec in codecs:
            out = tmp / f"store-{codec}"
            build_store(path, out, BuildOptions(size=size, codec=codec), progress=progress)
            stores[codec] = open_store(out)
    first = next(iter(stores.values()))
    plan = plan_windows(first, windows=windows, frames=frames, seed=seed)
    c, h, w = first.videos[plan[0][0]].shape
    window_bytes = frames * c * h * w * first.dtype.itemsize
    source_bytes = sum(int(v.source_bytes) for v in first.videos)
    rows = {}
    ceiling = time_memcpy(window_bytes, len(plan), batch=batch, seed=seed)
    rows["memcpy"] = {"kind": "ceiling", "windows_per_s": ceiling}
    for codec, s in stores.items():
        rows[f"store:{codec}"] = {
            "kind": "store",
            "windows_per_s": time_store(s, plan, batch=batch),
            "store_bytes": int(s.manifest.get("store_bytes", 0)),
            "store_over_source_bytes": int(s.manifest.get("store_bytes", 0)) / max(source_bytes, 1),
        }
    for name in decoders if decoders is not None else available_window_decoders():
        try:
            rows[f"decode:{name}"] = {
                "kind": "on-the-fly",
                **time_onthefly(name, first, plan, budget_seconds=budget_seconds),
            }
        except Exception as e:  # a decoder that cannot read these files is reported, not fatal
            rows[f"decode:{name}"] = {"kind": "on-the-fly", "error": f"{type(e).__name__}: {e}"}
    decoded = [
        r["windows_per_s"]
        for r in rows.values()
        if r["kind"] == "on-the-fly" and "windows_per_s" in r
    ]
    fastest = max(decoded) if decoded else float("nan")
    for r in rows.values():
        if "windows_per_s" in r:
            r["vs_memcpy"] = r["windows_per_s"] / ceiling
            r["vs_fastest_decoder"] = r["windows_per_s"] / fastest
    return {
        "frames": frames,
        "batch": batch,
        "windows": len(plan),
        "frame_shape": [c, h, w],
        "window_bytes": window_bytes,
        "source_bytes": source_bytes,
        "workdir": str(tmp) if tmp else None,
        "rows": rows,
    }


def format_bench(result: dict) -> str:
    c, h, w = result["frame_shape"]
    lines = [
        f"{result['windows']} random windows of {result['frames']} frames ({c}x{h}x{w}), "
        f"batches of {result['batch']}",
        f"{'path':<20}{'windows/s':>12}{'x memcpy':>10}{'x fastest decoder':>19}{'bytes/source':>14}",
    ]
    for name, r in result["rows"].items():
        if "error" in r:
            lines.append(f"{name:<20}  failed: {r['error']}")
            continue
        ratio = r.get("store_over_source_bytes")
        lines.append(
            f"{name:<20}{r['windows_per_s']:>12.1f}{r['vs_memcpy']:>10.3f}"
            f"{r['vs_fastest_decoder']:>19.1f}{'' if ratio is None else f'{ratio:.2f}':>14}"
        )
    return "\n".join(lines)
