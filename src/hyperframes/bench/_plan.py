"""``hyperframes plan DATA``: which codec to build a store with, measured on a sample of DATA.

A few of DATA's videos (``sample``, spread across the codecs and the sizes their headers give)
are built into a store per codec (:func:`hyperframes.store.list_codecs`) in a temporary folder,
with the build options given (size, fps, ...; one decoding process). Each store is measured:
its bytes, its build time, and the windows/s one core reads through the standard augmentation
(``RandomResizedCrop(crop)`` + ``RandomHorizontalFlip()``, batches of ``batch``, the loader in
this process, one torch thread). The same windows decoded on the fly by the fastest installed
decoder give the anchor.

Bytes and build time are extrapolated to the whole of DATA by the stored pixels its headers
promise (frames x stored height x width, decoding nothing: :func:`hyperframes.build.header_sizes`).
How well a store compresses varies from video to video far more than with the frame size (a
still shot stores in a third of the zstd bytes of an action clip), so the sample is stratified
by what each source spends per stored pixel (source bytes / header pixels, a proxy for how hard
its frames compress): each picked video stands for the videos nearest it in that order, and a
codec's bytes are the sum over picks of its measured bytes per header pixel times the header
pixels it stands for (plus the store's per-video overhead times the videos). Build time is the
sample's, scaled by the header pixels. ``budget`` (bytes) picks the fastest codec whose
predicted bytes fit.

A store pays for itself when building it once costs less than decoding on the fly every epoch:
after ``build_seconds / (epoch_on_the_fly - epoch_from_store)`` epochs, an epoch being one
window per video (as the ``random`` sampler draws them).
"""

from __future__ import annotations

import csv
import dataclasses
import math
import os
import tempfile
import time
from pathlib import Path

import numpy as np

from .._core._errors import ConfigError, DataError
from .._core._progress import Progress
from ..build import BuildOptions, build_store, header_sizes
from ..store import list_codecs, open_store
from ._onthefly import available_window_decoders
from ._run import augmented_rate, one_thread, plan_windows, time_onthefly

__all__ = ["PlanRow", "StorePlan", "format_plan", "pick_sample", "plan_store", "plan_verdict"]


@dataclasses.dataclass
class PlanRow:
    """One codec's store, predicted for the whole of DATA from the sample's measurements."""

    codec: str
    store_bytes: int  # predicted for DATA
    build_seconds: float  # predicted for DATA, with the build's workers
    windows_per_s_per_core: float  # measured on the sample's store
    vs_on_the_fly: float | None  # windows/s over the best on-the-fly decoder's (None: none ran)
    pays_off_after_epochs: float | None  # None: never (not faster than on the fly), or unknown
    fits: bool  # within the budget (True without one)
    recommended: bool
    sample_store_bytes: int  # measured
    sample_build_seconds: float  # measured


@dataclasses.dataclass
class StorePlan:
    """What :func:`plan_store` measured and recommends (``rows``: one per codec)."""

    rows: list[PlanRow]
    videos: int  # in DATA, readable
    sample: list[str]  # the paths built
    frames: int  # header frames in DATA
    source_bytes: int  # of DATA
    budget: int | None
    recommended: str | None
    decoder: str | None  # the on-the-fly anchor
    on_the_fly_windows_per_s: float | None
    unreadable: list[dict]
    note: str

    def to_rows(self) -> list[dict]:
        """The rows as dicts (``plan --json``)."""
        return [dataclasses.asdict(r) for r in self.rows]


def pick_sample(sizes, n: int) -> list:
    """``n`` of ``sizes`` (:class:`hyperframes.build._build.HeaderSize`) spread across how hard they
    compress, sizes and codecs: ordered by source bytes per header pixel (:func:`_spend`), the
    video at the middle of each of ``n`` equal shares of the total header pixels (frames x
    stored size: the store's bytes follow the pixels, so the large videos weigh most); then
    the median video of each codec left out, added (so every codec is built once; it stands
    for few videos in :func:`stand_for`, where replacing a pick of the spread with it made the
    predicted bytes miss by half)."""
    order = _ordered(sizes)
    if n >= len(order):
        return order
    mass = np.cumsum([_pixels([h]) for h in order], dtype=np.float64)
    chosen: list = []
    for k in range(n):
        i = int(np.searchsorted(mass, (k + 0.5) / n * mass[-1]))
        free = [j for j in range(len(order)) if order[j] not in chosen]
        chosen.append(order[min(free, key=lambda j: (abs(j - i), -j))])
    by_codec: dict[str, list] = {}
    for h in order:
        by_codec.setdefault(h.codec, []).append(h)
    for _, group in sorted(by_codec.items(), key=lambda kv: -len(kv[1])):
        if not any(h in chosen for h in group):  # a codec the spread missed: its median too
            chosen.append(group[len(group) // 2])
    return sorted(chosen, key=order.index)


def _pixels(sizes) -> int:
    return sum(h.frames * h.height * h.width for h in sizes)


def _spend(h) -> float:
    """Source bytes per header pixel: what the source's encoder needed for each stored pixel,
    high for detailed, moving footage that compresses badly, low for still or flat shots."""
    return h.source_bytes / max(_pixels([h]), 1)


def _ordered(sizes) -> list:
    return sorted(sizes, key=lambda h: (_spend(h), h.source.path))


def stand_for(sizes, picks) -> dict[str, list]:
    """Each pick's path -> the videos of ``sizes`` it stands for: every video goes to the pick
    nearest it in :func:`_ordered` order (the stratum it was picked from)."""
    order = _ordered(sizes)
    at = {h.source.path: i for i, h in enumerate(order)}
    where = sorted(at[h.source.path] for h in picks)
    groups: dict[str, list] = {order[i].source.path: [] for i in where}
    for i, h in enumerate(order):
        nearest = min(where, key=lambda j: (abs(j - i), j))
        groups[order[nearest].source.path].append(h)
    return groups


def predict_bytes(sizes, picks, per_video: dict[str, int], store_bytes: int) -> int:
    """A whole store's bytes from the sample's: ``per_video`` (a built pick's path -> its
    payload bytes) times the header pixels each pick stands for, plus the sample store's
    bytes beyond its payloads (index, manifest) per video, times the videos of ``sizes``."""
    built = [h for h in picks if h.source.path in per_video]
    payload = 0.0
    for path, group in stand_for(sizes, built).items():
        own = next(h for h in built if h.source.path == path)
        payload += per_video[path] / max(_pixels([own]), 1) * _pixels(group)
    overhead = max(store_bytes - sum(per_video.values()), 0) / max(len(built), 1)
    return round(payload + overhead * len(sizes))


def plan_store(
    data: str | os.PathLike,
    options=None,
    *,
    sample: int = 4,
    budget: int | None = None,
    codecs: tuple[str, ...] | None = None,
    frames: int = 16,
    batch: int = 32,
    crop: int = 112,
    seconds: float = 2.0,
    input_format: str | None = None,
    root: str | os.PathLike | None = None,
    progress: bool = False,
) -> StorePlan:
    """Measure a store per codec on ``sample`` of ``data``'s videos, predict it for all of
    ``data`` (module doc). ``options``: the build's :class:`~hyperframes.build.BuildOptions`
    (its codec is replaced by each of ``codecs``, default every registered one); ``seconds``:
    how long each store's reads, and the on-the-fly decoders together, are timed."""

    if sample < 1:
        raise ConfigError(f"plan: sample={sample}: allowed: a number of videos >= 1")
    if budget is not None and budget <= 0:
        raise ConfigError(f"plan: budget={budget}: allowed: a number of bytes > 0")
    options = options or BuildOptions()
    codecs = tuple(list_codecs()) if codecs is None else tuple(codecs)
    unknown = [c for c in codecs if c not in list_codecs()]
    if unknown or not codecs:
        raise ConfigError(f"plan: unknown codec(s) {unknown}; allowed: {list_codecs()}")
    if not os.path.exists(data):
        raise DataError(f"{data}: no such file or folder; give the videos to plan a store for")
    sizes, unreadable = header_sizes(data, options, input_format=input_format, root=root)
    sizes = [h for h in sizes if h.frames > 0]
    if not sizes:
        raise DataError(
            f"{data}: no video whose header can be read ({len(unreadable)} unreadable); "
            "give a folder, annotation file or video that `hyperframes build` takes"
        )
    chosen = pick_sample(sizes, sample)
    with tempfile.TemporaryDirectory(prefix="hyperframes-plan-") as tmp:
        listing = _sample_csv(Path(tmp), chosen)
        bar = Progress(len(codecs), unit="stores", enabled=progress, desc="plan")
        measured, decoded = {}, None
        try:
            for codec in codecs:
                measured[codec] = _measure_codec(
                    listing, Path(tmp) / codec, options, codec, frames, batch, crop, seconds
                )
                if decoded is None:
                    decoded = _on_the_fly(Path(tmp) / codec, frames, seconds)
                bar.advance()
        finally:
            bar.close()
    name, otf = decoded or (None, None)
    rows = []
    for codec, (nbytes, built, rate, per_video) in measured.items():
        # scaled by the pixels of the videos the sample's build stored (a failed one is not)
        scale = _pixels(sizes) / _pixels([h for h in chosen if h.source.path in per_video])
        predicted = predict_bytes(sizes, chosen, per_video, nbytes)
        build = built * scale / options.workers
        rows.append(
            PlanRow(
                codec=codec,
                store_bytes=predicted,
                build_seconds=build,
                windows_per_s_per_core=rate,
                vs_on_the_fly=rate / otf if otf else None,
                pays_off_after_epochs=_pays_off(build, len(sizes), rate, otf),
                fits=budget is None or predicted <= budget,
                recommended=False,
                sample_store_bytes=nbytes,
                sample_build_seconds=built,
            )
        )
    fitting = [r for r in rows if r.fits]
    best = max(fitting, key=lambda r: r.windows_per_s_per_core) if fitting else None
    if best is not None:
        best.recommended = True
    return StorePlan(
        rows=rows,
        videos=len(sizes),
        sample=[h.source.path for h in chosen],
        frames=sum(h.frames for h in sizes),
        source_bytes=sum(h.source_bytes for h in sizes),
        budget=budget,
        recommended=best.codec if best else None,
        decoder=name,
        on_the_fly_windows_per_s=otf,
        unreadable=unreadable,
        note=f"measured on {len(chosen)} of {len(sizes)} videos, scaled by the stored pixels "
        "their headers give, each pick for the videos that spend as much source per pixel",
    )


def _sample_csv(tmp: Path, chosen) -> Path:
    """The sampled sources as a ``csv`` listing (absolute paths) that a build reads."""
    path = tmp / "sample.csv"
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["path", "label"])
        for h in chosen:
            w.writerow([h.source.path, h.source.label or ""])
    return path


def _measure_codec(listing, out, options, codec, frames, batch, crop, seconds):
    """(store bytes, build seconds, windows/s on one core, {built source path: its payload
    bytes}) of ``codec`` on the sample."""

    opts = options.model_copy(
        update={"codec": codec, "workers": 1, "format": "store", "allow_outside_root": True}
    )
    t0 = time.perf_counter()
    report = build_store(listing, out, opts, progress=False, input_format="csv", root="/")
    built = time.perf_counter() - t0
    if not report.videos:
        said = "; ".join(f"{f['path']}: {f['error']}" for f in report.failed[:3])
        raise DataError(
            f"plan: no video of the sample could be built as {codec} ({said}); `hyperframes "
            "build` lists why each failed"
        )
    with open_store(out) as s:
        nbytes = int(s.manifest.get("store_bytes", 0))
        per_video: dict[str, int] = {}
        for v, n in zip(s.videos, np.asarray(s.videos.nbytes).tolist()):
            per_video[v.path] = per_video.get(v.path, 0) + int(n)
    return nbytes, built, augmented_rate(out, frames, batch, crop, seconds), per_video


def _on_the_fly(store, frames, seconds) -> tuple[str, float] | None:
    """(name, windows/s) of the fastest installed decoder decoding random windows of the
    sample from the source files (each given ``seconds`` over the number of decoders)."""
    names = available_window_decoders()
    with open_store(store) as s:
        longest = int(np.max(np.asarray(s.videos.num_frames)))
        plan = plan_windows(s, windows=64, frames=min(frames, longest), seed=0)
        rates = {}
        for name in names:
            with one_thread():
                row = time_onthefly(name, s, plan, budget_seconds=seconds / max(len(names), 1))
            if "windows_per_s" in row:
                rates[name] = row["windows_per_s"]
    if not rates:
        return None
    best = max(rates, key=rates.__getitem__)
    return best, rates[best]


def _pays_off(build_seconds, videos, rate, otf) -> float | None:
    """Epochs (one window per video) after which building and reading beats decoding on the
    fly every epoch; None when the store reads no faster or nothing decoded on the fly."""
    if not otf or rate <= otf:
        return None
    saved = videos / otf - videos / rate  # seconds saved per epoch
    return build_seconds / saved


def format_plan(plan: StorePlan) -> str:
    """The table ``hyperframes plan`` prints, the recommendation and when a store pays off."""
    gb = 1e9
    anchor = (
        f"{plan.decoder} on the fly: {plan.on_the_fly_windows_per_s:.1f} windows/s per core"
        if plan.decoder
        else "no installed decoder decoded the sample on the fly"
    )
    lines = [
        f"{plan.videos} videos, {plan.frames} frames, {plan.source_bytes / gb:.3f} GB of source; "
        f"{plan.note}; {anchor}",
        f"{'codec':<8}{'store GB':>10}{'x source':>10}{'build s':>10}{'windows/s/core':>16}"
        f"{'x on the fly':>14}{'pays off after':>16}",
    ]
    for r in plan.rows:
        vs = "n/a" if r.vs_on_the_fly is None else f"{r.vs_on_the_fly:.1f}"
        pays = "never" if r.pays_off_after_epochs is None else f"{r.pays_off_after_epochs:.1f} ep"
        mark = " *" if r.recommended else ("  (over budget)" if not r.fits else "")
        lines.append(
            f"{r.codec:<8}{r.store_bytes / gb:>10.3f}"
            f"{r.store_bytes / max(plan.source_bytes, 1):>10.2f}{r.build_seconds:>10.1f}"
            f"{r.windows_per_s_per_core:>16.1f}{vs:>14}{pays:>16}{mark}"
        )
    lines.append(plan_verdict(plan))
    best = next((r for r in plan.rows if r.recommended), None)
    if best is not None and plan.decoder:
        if best.pays_off_after_epochs is None:
            lines.append(
                f"a {best.codec} store reads no faster than {plan.decoder} on the fly here: it "
                "does not pay off; decode on the fly"
            )
        else:
            lines.append(
                f"the {best.codec} store pays for itself after "
                f"{math.ceil(best.pays_off_after_epochs)} epoch(s) (one window per video each); "
                "for fewer epochs decode on the fly"
            )
    return "\n".join(lines)


def plan_verdict(plan: StorePlan) -> str:
    """The recommendation, or why there is none (a budget no codec fits)."""
    if plan.recommended is not None:
        within = "" if plan.budget is None else f" within the budget of {plan.budget} bytes"
        return f"recommended (*): {plan.recommended}, the fastest{within}"
    smallest = min(plan.rows, key=lambda r: r.store_bytes)
    return (
        f"no codec fits the budget of {plan.budget} bytes; the smallest is {smallest.codec} "
        f"at about {smallest.store_bytes} bytes: raise the budget, or store smaller frames "
        "(--size) or fewer (--fps)"
    )
