"""``hyperframes bench``: windows/s for one window plan, read from stores (per codec) and decoded on
the fly (per installed decoder), with a plain memcpy of the same bytes as the ceiling."""

from __future__ import annotations

import contextlib
import math
import os
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from .._core._errors import DataError
from ..build import BuildOptions, build_store
from ..store import is_store, list_codecs, open_store
from ._onthefly import StderrTap, available_window_decoders, cannot_decode, window_decoder


def plan_windows(
    store, *, windows: int, frames: int, seed: int = 0
) -> list[tuple[int, np.ndarray]]:
    """Random windows of ``frames`` consecutive stored frames, videos drawn uniformly."""
    rng = np.random.default_rng(seed)
    nf = np.asarray(store.videos.num_frames)
    eligible = np.nonzero(nf >= frames)[0]
    if not len(eligible):
        raise DataError(f"no video in {store.path} has {frames} frames; ask for fewer frames")
    plan = []
    for _ in range(windows):
        v = int(rng.choice(eligible))
        s = int(rng.integers(0, nf[v] - frames + 1))
        plan.append((v, np.arange(s, s + frames)))
    return plan


def _batches(plan, batch):
    return [plan[i : i + batch] for i in range(0, len(plan) - batch + 1, batch)] or [plan]


def window_bytes(store, plan) -> np.ndarray:
    """Bytes of each planned window as the store holds it (videos differ in frame size)."""
    shapes = store.videos.shapes
    return np.array(
        [len(ix) * int(np.prod(shapes[v])) * store.dtype.itemsize for v, ix in plan], np.int64
    )


def crop_size(store, plan) -> tuple[int, int] | None:
    """The centred square the crop path reads windows of mixed frame shapes as (the side the
    smallest frame allows), or None when every planned window has one shape."""
    shapes = {tuple(int(x) for x in store.videos.shapes[v]) for v, _ in plan}
    if len(shapes) == 1:
        return None
    side = min(min(s[1], s[2]) for s in shapes)
    return (side, side)


def time_store(store, plan, *, batch: int, repeats: int = 3, crop=None) -> float:
    """Windows/s reading ``plan`` in batches with one ``read_batch`` call each (median); a batch
    whose windows share one shape is read into a buffer allocated once per shape. With
    ``crop`` (h, w), the crop path: each window's centred box read into one (B, T, C, h, w)
    buffer (``read_batch(..., size=crop)``), whatever the stored shapes."""
    import torch  # deferred: optional/heavy dependency

    batches = _batches(plan, batch)
    shapes = store.videos.shapes
    buffers: dict[tuple, torch.Tensor] = {}
    outs: list[torch.Tensor | None] = []
    channels = int(shapes[plan[0][0]][0]) if plan else 3
    for b in batches:
        kinds = {(len(ix), *map(int, shapes[v])) for v, ix in b}
        if crop is not None:
            kinds = {(len(ix), channels, *crop) for _, ix in b}
        if len(kinds) == 1:
            (kind,) = kinds
            key = (len(b), *kind)
            if key not in buffers:
                buffers[key] = torch.from_numpy(np.empty(key, store.dtype))
            outs.append(buffers[key])
        else:
            outs.append(None)  # a list of tensors, allocated per read
    kw = {} if crop is None else {"size": crop}
    for b, out in list(zip(batches, outs))[:2]:
        store.read_batch(b, out=out, **kw)
    rates = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for b, out in zip(batches, outs):
            store.read_batch(b, out=out, **kw)
        rates.append(sum(len(b) for b in batches) / (time.perf_counter() - t0))
    return statistics.median(rates)


def time_memcpy(window_bytes, windows: int, *, batch: int, repeats: int = 3, seed: int = 0):
    """Windows/s of copying each window's bytes (``window_bytes``: one size for all, or one per
    window of the plan) from random places of a large buffer (larger than the caches) into one
    preallocated batch buffer: the ceiling for any reader of the same bytes."""
    rng = np.random.default_rng(seed)
    sizes = np.resize(np.asarray(window_bytes, np.int64).reshape(-1), windows)
    largest = int(sizes.max())
    src = np.ones(max(256 << 20, largest * 64), np.uint8)
    dst = np.empty((batch, largest), np.uint8)
    starts = rng.integers(0, len(src) - sizes + 1)
    n_batches = max(1, windows // batch)
    rates = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for b in range(n_batches):
            for k in range(batch):
                w = (b * batch + k) % windows
                s, n = int(starts[w]), int(sizes[w])
                dst[k, :n] = src[s : s + n]
        rates.append(n_batches * batch / (time.perf_counter() - t0))
    return statistics.median(rates)


@contextlib.contextmanager
def one_thread():
    import torch  # deferred: optional/heavy dependency

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def augmented_rate(store, frames, batch, crop, seconds) -> float:
    """Windows/s of the store at ``store`` (a path) through the standard augmentation,
    ``RandomResizedCrop(crop)`` + flip, batches of ``batch``, the loader in this process on
    one thread (per core): at least two batches after a warm-up one, for ``seconds``."""
    from ..data import HyperframeDataset, loader  # deferred: pulls torch
    from ..data import transforms as T  # deferred: pulls torch

    aug = T.Compose([T.RandomResizedCrop(crop), T.RandomHorizontalFlip()])
    with open_store(store) as s:
        videos = len(s.videos)
    ds = HyperframeDataset(
        store,
        "random",
        frames=frames,
        transform=aug,
        sampler_options={"short": "pad"},
        clips_per_video=max(1, math.ceil(4 * batch / videos)),
    )
    done, spent, epoch = 0, 0.0, 0
    with one_thread():
        while True:
            ds.set_epoch(epoch)
            it = iter(loader(ds, batch, workers=0, pin_memory=False))
            if epoch == 0:
                next(it)  # warm-up: page cache, first allocations
            while True:
                t0 = time.perf_counter()
                b = next(it, None)
                if b is None:
                    break
                spent += time.perf_counter() - t0
                done += len(b)
                if spent >= seconds and done >= 2 * batch:
                    return done / spent
            epoch += 1


def time_onthefly(name: str, store, plan, *, budget_seconds: float = 10.0) -> dict:
    """Windows/s decoding the same windows from the source files with decoder ``name``.

    A video the decoder cannot open, cannot pick the store's stream of, or fails on is skipped
    (listed with the reason under ``skipped``; its windows are not counted). What the decoder's
    libraries write to stderr meanwhile is kept off the terminal and counted (``log_lines``).
    Only the successful windows' time counts, up to ``budget_seconds``.
    """
    fn = window_decoder(name)
    reasons: dict[int, str | None] = {}
    done, spent = 0, 0.0
    with StderrTap() as tap:
        for v, idx in plan:
            rec = store.videos[v]
            if v not in reasons:
                reason = cannot_decode(name, rec)
                if reason is not None:
                    reason = _with_log(reason, tap.take())
                reasons[v] = reason
            if reasons[v] is not None:
                continue
            tap.take()
            t0 = time.perf_counter()
            try:
                fn(
                    rec.path,
                    rec.pts_seconds[idx],
                    indices=rec.source_frame_indices[idx],
                    stream=rec.stream,
                    size=rec.shape[1:],
                )
            except Exception as e:  # this video is skipped from here on, with the reason
                reasons[v] = _with_log(f"{type(e).__name__}: {e}", tap.take())
                continue
            spent += time.perf_counter() - t0
            done += 1
            if spent > budget_seconds and done >= 4:
                break
    skipped = [
        {"video": v, "path": (path := store.videos[v].path), "reason": r.removeprefix(f"{path}: ")}
        for v, r in sorted(reasons.items())
        if r is not None
    ]
    row: dict = {"windows": done, "skipped": skipped, "log_lines": tap.lines}
    if done:
        row["windows_per_s"] = done / spent
    else:
        row["error"] = f"no window decoded: {name} skipped every video it met"
    return row


def _with_log(reason: str, log: list[str]) -> str:
    return reason + (f" (its log: {' / '.join(log[:3])})" if log else "")


def run_bench(
    data_or_store: str | os.PathLike,
    *,
    frames: int = 16,
    batch: int = 32,
    windows: int = 512,
    codecs: tuple[str, ...] | None = None,
    size: str | None = None,
    decoders: list[str] | None = None,
    budget_seconds: float = 10.0,
    seed: int = 0,
    workdir: str | os.PathLike | None = None,
    progress: bool = False,
    augment: int | None = None,
    augment_seconds: float = 2.0,
) -> dict:
    """Measure one window plan every way; returns a dict (the same as ``bench --json``).

    Given a store, it is measured as it is; given data, a store per codec of ``codecs`` (None:
    every codec) is built first (at ``size``; None: build's default, 128) in ``workdir``, which
    keeps them, or else in a temporary folder removed at the end. On-the-fly decoders produce
    the same windows: decoded, converted to RGB and resized to the store's frame size.

    ``augment`` (a crop side, e.g. 112): each store is also read through the standard
    augmentation, ``RandomResizedCrop(augment)`` + flip, by the loader on one core for
    ``augment_seconds`` (``augmented_windows_per_s_per_core``). Every row with bytes is marked
    ``frontier`` when no other is both no larger and no slower (:func:`mark_frontier`).
    """
    codecs = tuple(list_codecs()) if codecs is None else tuple(codecs)
    how = {
        "frames": frames,
        "batch": batch,
        "windows": windows,
        "decoders": decoders,
        "budget_seconds": budget_seconds,
        "seed": seed,
        "augment": augment,
        "augment_seconds": augment_seconds,
    }
    path = Path(data_or_store)
    if is_store(path):
        with open_store(path) as s:
            return {**_measure({s.codec_name: s}, kept_in=None, **how), "built": False}
    if workdir is not None:
        return _build_and_measure(path, Path(workdir), codecs, size, progress, how)
    with tempfile.TemporaryDirectory(prefix="hyperframes-bench-") as tmp:
        result = _build_and_measure(path, Path(tmp), codecs, size, progress, how)
    return {**result, "kept_in": None}


def _build_and_measure(data, where: Path, codecs, size, progress, how: dict) -> dict:

    stores = {}
    try:
        for codec in codecs:
            out = where / f"store-{codec}"
            options = BuildOptions(codec=codec, **({} if size is None else {"size": size}))
            build_store(data, out, options, progress=progress)
            stores[codec] = open_store(out)
        return {**_measure(stores, kept_in=where, **how), "built": True}
    finally:
        for s in stores.values():
            s.close()


def mark_frontier(rows: dict) -> None:
    """Mark each row with bytes and windows/s ``frontier``: no other row stores no more bytes
    per source byte and reads no fewer windows/s, one of them strictly (decoding on the fly
    stores nothing but the source: 1x)."""
    done = [r for r in rows.values() if "windows_per_s" in r and "store_over_source_bytes" in r]
    for r in done:
        b, w = r["store_over_source_bytes"], r["windows_per_s"]
        r["frontier"] = not any(
            o is not r
            and o["store_over_source_bytes"] <= b
            and o["windows_per_s"] >= w
            and (o["store_over_source_bytes"] < b or o["windows_per_s"] > w)
            for o in done
        )


def _measure(
    stores,
    *,
    kept_in,
    frames,
    batch,
    windows,
    decoders,
    budget_seconds,
    seed,
    augment=None,
    augment_seconds=2.0,
) -> dict:
    first = next(iter(stores.values()))
    plan = plan_windows(first, windows=windows, frames=frames, seed=seed)
    sizes = window_bytes(first, plan)
    shapes = sorted({tuple(int(x) for x in first.videos.shapes[v]) for v, _ in plan})
    crop = crop_size(first, plan)
    if crop is not None:  # mixed shapes: the crop path, against memcpy of its output bytes
        sizes = np.full(len(plan), frames * shapes[0][0] * crop[0] * crop[1], np.int64)
        sizes *= first.dtype.itemsize
    source_bytes = sum(int(v.source_bytes) for v in first.videos)
    rows = {}
    ceiling = time_memcpy(sizes, len(plan), batch=batch, seed=seed)
    rows["memcpy"] = {"kind": "ceiling", "windows_per_s": ceiling}
    for codec, s in stores.items():
        rows[f"store:{codec}"] = {
            "kind": "store",
            "windows_per_s": time_store(s, plan, batch=batch, crop=crop),
            "store_bytes": int(s.manifest.get("store_bytes", 0)),
            "store_over_source_bytes": int(s.manifest.get("store_bytes", 0)) / max(source_bytes, 1),
        }
        if augment:  # the standard augmentation through the loader, one core
            rows[f"store:{codec}"]["augmented_windows_per_s_per_core"] = augmented_rate(
                s.path, frames, batch, augment, augment_seconds
            )
    for name in decoders if decoders is not None else available_window_decoders():
        try:
            row = time_onthefly(name, first, plan, budget_seconds=budget_seconds)
        except Exception as e:  # a decoder that fails outright is reported, not fatal
            row = {"error": f"{type(e).__name__}: {e}"}
        rows[f"decode:{name}"] = {"kind": "on-the-fly", "store_over_source_bytes": 1.0, **row}
    decoded = [
        r["windows_per_s"]
        for r in rows.values()
        if r["kind"] == "on-the-fly" and "windows_per_s" in r
    ]
    fastest = max(decoded) if decoded else None
    for r in rows.values():
        if "windows_per_s" in r:
            r["vs_memcpy"] = r["windows_per_s"] / ceiling
            r["vs_fastest_decoder"] = r["windows_per_s"] / fastest if fastest else None
    mark_frontier(rows)
    return {
        "frames": frames,
        "batch": batch,
        "windows": len(plan),
        "augment": f"RandomResizedCrop({augment}) + RandomHorizontalFlip" if augment else None,
        "frame_shapes": [list(x) for x in shapes],
        "crop": None if crop is None else list(crop),  # the crop path's output size
        "window_bytes": int(sizes.mean()),
        "plan_bytes": int(sizes.sum()),
        "source_bytes": source_bytes,
        "kept_in": str(kept_in) if kept_in else None,  # where the built stores are
        "rows": rows,
    }


def format_bench(result: dict) -> str:
    shapes = ["x".join(map(str, x)) for x in result["frame_shapes"]]
    shown = shapes[0] if len(shapes) == 1 else f"{shapes[0]} to {shapes[-1]}, {len(shapes)} sizes"
    augmented = bool(result.get("augment"))
    lines = [
        f"{result['windows']} random windows of {result['frames']} frames ({shown}; "
        f"{result['window_bytes'] / 1e6:.2f} MB per window on average), "
        f"batches of {result['batch']}",
        *(
            [
                f"mixed frame shapes: stores read through the crop path, each window's centred "
                f"{result['crop'][0]}x{result['crop'][1]} into one batch buffer (memcpy: of "
                "those bytes)"
            ]
            if result.get("crop")
            else []
        ),
        f"{'path':<20}{'windows/s':>12}{'x memcpy':>10}{'x fastest decoder':>19}{'bytes/source':>14}"
        + (f"{'aug w/s/core':>14}" if augmented else "")
        + "  frontier",
    ]
    for name, r in result["rows"].items():
        if "windows_per_s" in r:
            ratio = r.get("store_over_source_bytes")
            fastest = r["vs_fastest_decoder"]
            aug = r.get("augmented_windows_per_s_per_core")
            lines.append(
                f"{name:<20}{r['windows_per_s']:>12.1f}{r['vs_memcpy']:>10.3f}"
                f"{'n/a' if fastest is None else f'{fastest:.1f}':>19}"
                f"{'' if ratio is None else f'{ratio:.2f}':>14}"
                + (f"{'' if aug is None else f'{aug:.1f}':>14}" if augmented else "")
                + ("  *" if r.get("frontier") else "")
            )
        else:
            lines.append(f"{name:<20}  failed: {r['error']}")
        for k in r.get("skipped", []):
            lines.append(f"    skipped video {k['video']} {k['path']}: {k['reason']}")
        if r.get("log_lines"):
            lines.append(
                f"    (its libraries wrote {r['log_lines']} lines to stderr: kept off the terminal)"
            )
    lines.append(
        "frontier (*): no other row stores fewer bytes per source byte and reads more windows/s"
        " (on the fly: 1x, the source itself)"
        + (
            f"; aug w/s/core: through {result['augment']}, the loader on one core"
            if augmented
            else ""
        )
    )
    if result.get("built"):
        kept = result["kept_in"]
        lines.append(
            f"the stores built for this are kept in {kept}"
            if kept
            else "the stores built for this were removed (bench --keep DIR keeps them)"
        )
    return "\n".join(lines)
