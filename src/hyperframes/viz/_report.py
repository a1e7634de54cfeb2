"""``hyperframes report STORE --out DIR``: one HTML page a person can look at, with no server
and no network: every picture is a ``data:`` URI in the page, the style is in the page, and a
few lines of script filter the video rows.

The page holds the counts of videos per class and split (the numbers ``info --json`` gives in
``class_counts``), the failed, damaged and skipped lists with their reasons, one row per video
(the first ``videos``) with a strip of thumbnails and a timeline of its segments, key frames
(the content changes the ``keyframes`` sampler picks) and its change or flow score, and a
sampler preview: for the first ``preview`` items of a sampler (or of a training config's
training dataset), the frames the window picked, on the timeline, and the frames after the
transform, as the model gets them.
"""

from __future__ import annotations

import base64
import html
import io
import os
from pathlib import Path

import numpy as np

from .._core._atomic import write_text_atomic
from .._core._errors import ConfigError
from ..sampling import MIN_CHANGE, MIN_FLOW, create_sampler, pick_changes, salience
from ..store import describe_store, open_store

__all__ = ["write_report"]

#: the file ``write_report`` writes in its folder
PAGE = "report.html"
_THUMBS = 8  # thumbnails per video row
_THUMB_H = 48  # pixels
_TIMELINE_W, _TIMELINE_H = 480, 56

_STYLE = """
body{font:14px system-ui,sans-serif;margin:16px;color:#222;background:#fff}
h1{font-size:20px}h2{font-size:17px;margin-top:28px;border-bottom:1px solid #ccc}
table{border-collapse:collapse;margin:6px 0}td,th{border:1px solid #ccc;padding:3px 7px;
text-align:left;vertical-align:top}th{background:#f2f2f2}td.n{text-align:right}
.reason{color:#a33}.muted{color:#777}img{image-rendering:pixelated;display:block}
.legend span{margin-right:14px}
td.path{max-width:280px;overflow-wrap:anywhere}
td.strip img,td.seen img{max-width:440px;height:auto}
svg.timeline{width:480px;max-width:100%;height:auto}
"""

# filters the video rows by a substring of their path or label; the only script on the page
_SCRIPT = """
document.getElementById('filter').addEventListener('input', function (e) {
  var q = e.target.value.toLowerCase(), shown = 0;
  document.querySelectorAll('tr.video').forEach(function (row) {
    var hit = row.dataset.key.indexOf(q) >= 0;
    row.style.display = hit ? '' : 'none';
    shown += hit ? 1 : 0;
  });
  document.getElementById('shown').textContent = shown;
});
document.body.dataset.ready = 'yes';
"""


def _esc(x) -> str:
    return html.escape(str(x), quote=True)


def _png_uri(img: np.ndarray) -> str:
    """``img`` (H, W, 3) uint8 as a ``data:image/png`` URI."""
    from PIL import Image  # deferred: optional/heavy dependency

    buf = io.BytesIO()
    Image.fromarray(np.ascontiguousarray(img)).save(buf, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def _to_uint8(frames: np.ndarray) -> np.ndarray:
    """(T, C, H, W) of any dtype as (T, H, W, 3) uint8: floats stretched to their range (a
    normalized window shows its contrast, as the model gets it), one channel repeated."""
    f = np.asarray(frames)
    if f.dtype != np.uint8:
        f = f.astype(np.float32)
        lo, hi = float(f.min()), float(f.max())
        f = ((f - lo) / max(hi - lo, 1e-6) * 255).round().astype(np.uint8)
    f = f.transpose(0, 2, 3, 1)
    return np.repeat(f, 3, axis=3) if f.shape[3] == 1 else f[..., :3]


def _strip(frames: np.ndarray, height: int = _THUMB_H) -> np.ndarray:
    """Frames (T, H, W, 3) side by side, each scaled to ``height``, 2 white pixels apart."""
    from PIL import Image  # deferred: optional/heavy dependency

    tiles = []
    for f in frames:
        h, w = f.shape[:2]
        width = max(1, round(w * height / h))
        tiles.append(
            np.asarray(Image.fromarray(f).resize((width, height), Image.Resampling.BILINEAR))
        )
        tiles.append(np.full((height, 2, 3), 255, np.uint8))
    return np.concatenate(tiles[:-1], axis=1)


def _img(uri: str, alt: str) -> str:
    return f'<img src="{uri}" alt="{_esc(alt)}">'


def _polyline(values: np.ndarray, n: int, colour: str) -> str:
    if len(values) < 2 or not np.isfinite(values).all():
        return ""
    top = float(values.max()) or 1.0
    xs = np.arange(len(values)) * (_TIMELINE_W - 1) / max(n - 1, 1)
    ys = (_TIMELINE_H - 4) - values / top * (_TIMELINE_H - 20)
    pts = " ".join(f"{x:.1f},{y:.1f}" for x, y in zip(xs, ys))
    return f'<polyline points="{pts}" fill="none" stroke="{colour}" stroke-width="1.2"/>'


def _timeline(
    n: int, *, score=None, segments=(), keyframes=(), marks=(), mark_colour="#1a7"
) -> str:
    """An SVG timeline of ``n`` stored frames: ``segments`` ``(first, last, text)`` as bands,
    ``keyframes`` and ``marks`` (frame numbers) as ticks, ``score`` per frame as a line."""
    x = lambda f: f * (_TIMELINE_W - 1) / max(n - 1, 1)  # noqa: E731
    parts = [f'<rect width="{_TIMELINE_W}" height="{_TIMELINE_H}" fill="#fafafa" stroke="#ccc"/>']
    for first, last, text in segments:
        x0, x1 = x(first), x(last)
        parts.append(
            f'<rect x="{x0:.1f}" y="2" width="{max(x1 - x0, 2):.1f}" height="14" '
            f'fill="#fc6" opacity="0.7"><title>{_esc(text)}</title></rect>'
            f'<text x="{x0 + 2:.1f}" y="13" font-size="10">{_esc(text)[:30]}</text>'
        )
    if score is not None:
        parts.append(_polyline(np.asarray(score, np.float64), n, "#36c"))
    for f in keyframes:
        parts.append(
            f'<line x1="{x(f):.1f}" x2="{x(f):.1f}" y1="18" y2="{_TIMELINE_H}" stroke="#d33"/>'
        )
    for f in marks:
        parts.append(f'<circle cx="{x(f):.1f}" cy="{_TIMELINE_H - 5}" r="3" fill="{mark_colour}"/>')
    return (
        f'<svg class="timeline" width="{_TIMELINE_W}" height="{_TIMELINE_H}" '
        f'viewBox="0 0 {_TIMELINE_W} {_TIMELINE_H}">' + "".join(parts) + "</svg>"
    )


def _score(store, video: int) -> tuple[np.ndarray | None, str]:
    flow = store.flow_scores(video) if hasattr(store, "flow_scores") else None
    if flow is not None:
        return np.asarray(flow), "flow"
    change = store.change_scores(video) if hasattr(store, "change_scores") else None
    return (None, "none") if change is None else (np.asarray(change), "change")


def _keyframes(score: np.ndarray | None, kind: str, n: int) -> np.ndarray:
    """The content changes the ``keyframes`` sampler would take first (up to 8)."""
    if score is None or n < 2:
        return np.zeros(0, np.int64)
    floor = MIN_FLOW if kind == "flow" else MIN_CHANGE
    return pick_changes(salience(score), _THUMBS, gap=max(1, n // (2 * _THUMBS)), min_change=floor)


def _segments(store, video: int, pts: np.ndarray) -> list[tuple[int, int, str]]:
    ann = store.videos.annotations
    out = []
    for row in ann.segment_rows(video).tolist():
        s = ann.segments[row]
        names = [store.classes[k] for k in ann.segment_label_ids(row).tolist()]
        first = int(np.searchsorted(pts, s["start_seconds"], side="left"))
        last = max(first, int(np.searchsorted(pts, s["end_seconds"], side="left")) - 1)
        text = f"{', '.join(names)} {s['start_seconds']:.2f}-{s['end_seconds']:.2f}s"
        out.append((first, min(last, len(pts) - 1), text))
    return out


def _video_row(store, video: int) -> str:
    rec = store.videos[video]
    n = rec.num_frames
    shown = np.unique(np.linspace(0, n - 1, min(_THUMBS, n)).round().astype(np.int64))
    strip = _strip(_to_uint8(store.read_numpy(video, shown)))
    score, kind = _score(store, video)
    keys = _keyframes(score, kind, n)
    segs = _segments(store, video, np.asarray(rec.pts_seconds))
    line = _timeline(n, score=score, segments=segs, keyframes=keys, marks=shown)
    damaged = f' <span class="reason">damaged: {rec.decode_errors} decoder errors</span>'
    key = f"{rec.path} {rec.label}".lower()
    split = "" if rec.split is None else f", split {_esc(rec.split)}"  # none: not said
    return (
        f'<tr class="video" data-key="{_esc(key)}"><td class="n">{video}</td>'
        f"<td class='path'>{_esc(rec.path)}<br><span class='muted'>label {_esc(rec.label)}"
        f"{split}, {n} frames @ {rec.fps:.3g} fps, score: {kind}</span>"
        + (damaged if rec.decode_errors else "")
        + f"</td><td class='strip'>{_img(_png_uri(strip), f'frames {shown.tolist()}')}</td>"
        f"<td>{line}</td></tr>"
    )


def _counts_table(counts: dict) -> str:
    """Videos per class (rows) and split (columns); each number's cell names its class and
    split (``data-class``, ``data-split``; ``all`` for the total column)."""
    by_split, total = counts["by_split"], counts["all"]
    splits = list(by_split)
    head = "".join(f"<th>{_esc(s)}</th>" for s in splits) + "<th>all</th>"
    rows = []
    for name, n in total.items():
        cells = "".join(
            f'<td class="n" data-class="{_esc(name)}" data-split="{_esc(s)}">'
            f"{by_split[s].get(name, 0)}</td>"
            for s in splits
        )
        rows.append(
            f"<tr><th>{_esc(name)}</th>{cells}"
            f'<td class="n" data-class="{_esc(name)}" data-split="all">{n}</td></tr>'
        )
    return f"<table id='counts'><tr><th>class</th>{head}</tr>{''.join(rows)}</table>"


def _rows_table(title: str, rows: list[dict], key: str, anchor: str) -> str:
    if not rows:
        return f"<h2 id='{anchor}'>{title}: 0</h2>"
    body = "".join(
        f"<tr><td>{_esc(r.get('path'))}</td><td class='reason'>{_esc(r.get(key))}</td></tr>"
        for r in rows
    )
    return f"<h2 id='{anchor}'>{title}: {len(rows)}</h2><table><tr><th>path</th><th>why</th></tr>{body}</table>"


def _preview_dataset(store, sampler, sampler_options, frames, seed):
    """The dataset whose windows the preview shows, and what it is (a line for the page).

    A sampler that would refuse a video shorter than its window (``short="error"``, the
    default of most) previews with ``short="pad"`` instead, and the page says so: a report
    shows every store, and a padded window is marked on its row."""
    from ..data import HyperframeDataset  # deferred: pulls pydantic, torchvision

    options = dict(sampler_options or {})
    note = ""
    if (
        "short" not in options
        and create_sampler(sampler, frames=frames, **options).short == "error"
    ):
        options["short"] = "pad"
        note = (
            "; short='pad' for this preview: a video shorter than the window repeats its "
            "last frame (the row says 'padded')"
        )
    ds = HyperframeDataset(
        store, sampler=sampler, frames=frames, seed=seed, sampler_options=options
    )
    return (
        ds,
        f"sampler {sampler} {dict(sampler_options or {})}, {frames} frames, seed {seed}, "
        f"no transform{note}",
    )


def _preview_items(ds, items: int) -> list[int]:
    """``items`` dataset items spread evenly over the dataset (the first, the last and
    between), so that a sampler giving several items per video shows several videos."""
    n = len(ds)
    if n <= items:
        return list(range(n))
    return np.unique(np.linspace(0, n - 1, items).round().astype(np.int64)).tolist()


def _label_name(store, label: int) -> str:
    """A sample's label as the class name (``-1``: none)."""
    classes = store.classes
    if label < 0:
        return "none"
    return str(classes[label]) if label < len(classes) else f"class {label}"


def _preview(store, ds, what: str, items: int) -> str:
    rows = []
    for item in _preview_items(ds, items):
        plan = ds.plan(item)
        sample = ds[item]
        frames = sample.frames
        if not hasattr(frames, "detach"):
            raise ConfigError("report: the preview shows temporal windows (T, C, H, W) only")
        seen = _strip(_to_uint8(frames.detach().cpu().numpy()), 64)
        v = int(plan.video)
        real = np.asarray(plan.mask, bool)
        picked = np.asarray(plan.frame_indices)[real]
        n = store.videos[v].num_frames
        line = _timeline(n, marks=np.unique(picked).tolist(), mark_colour="#c0c")
        shape = "x".join(str(d) for d in frames.shape)
        pad = int((~real).sum())
        padded = (
            f"; <span class='reason'>padded: the video has {n} frames, the last repeated "
            f"{pad} times</span>"
            if pad
            else ""
        )
        rows.append(
            f"<tr class='preview'><td class='n'>{item}</td><td>video {v}: "
            f"{_esc(store.videos.paths[v])}<br><span class='muted'>stored frames "
            f"{picked.tolist()}; label {_esc(_label_name(store, int(sample.label)))}; "
            f"{shape} {frames.dtype!s}</span>{padded}"
            f"<br>{line}</td><td class='seen'>"
            f"{_img(_png_uri(seen), f'item {item} as the model sees it')}"
            "</td></tr>"
        )
    return (
        f"<h2 id='preview'>Sampler preview</h2><p>{_esc(what)}. The timeline marks the "
        "stored frames the window picked; the pictures are the window after the transform."
        "</p><table><tr><th>item</th><th>window</th><th>as the model sees it</th></tr>"
        + "".join(rows)
        + "</table>"
    )


def write_report(
    store,
    out: str | os.PathLike,
    *,
    dataset=None,
    dataset_note: str | None = None,
    sampler: str = "uniform",
    sampler_options: dict | None = None,
    frames: int = 8,
    seed: int = 0,
    videos: int = 20,
    preview: int = 3,
) -> Path:
    """Write ``out/report.html`` about ``store`` (a path, URL or opened store) and return its
    path. ``videos``: how many video rows (the first ones); ``preview``: how many items of
    the sampler to show, drawn by ``sampler`` (``sampler_options``, ``frames``, ``seed``; no
    transform), or from ``dataset`` when given (``dataset_note`` says what it is; a training
    config's dataset: :func:`hyperframes.train.config_dataset`)."""
    if isinstance(store, (str, os.PathLike)):
        store = open_store(store)
    if videos < 0 or preview < 0:
        raise ConfigError(f"videos and preview count rows: >= 0, got {videos} and {preview}")
    d = describe_store(store)
    n = len(store.videos)
    rows = "".join(_video_row(store, v) for v in range(min(videos, n)))
    shown = min(videos, n)
    if preview and n:
        if dataset is not None:
            ds, what = dataset, dataset_note or "the dataset given"
        else:
            ds, what = _preview_dataset(store, sampler, sampler_options, frames, seed)
        preview_html = _preview(store, ds, what, preview)
    else:
        preview_html = "<h2 id='preview'>Sampler preview: none asked for, or no video</h2>"
    body = [
        f"<h1>{_esc(d['store'])}</h1>",
        f"<p id='summary'>{d['num_videos']} videos, {d['num_frames']} frames, "
        f"{len(d['classes'])} classes, codec {_esc((d['codec'] or {}).get('name'))}, "
        f"{d.get('failed_count', len(d['failed']))} failed, {len(d['damaged'])} damaged, {len(d['skipped'])} "
        f"skipped; hyperframes {_esc(d['hyperframes_version'])}</p>",
        "<h2 id='classes'>Videos per class and split</h2>",
        _counts_table(d["class_counts"]),
        _rows_table("Failed (not stored)", d["failed"], "error", "failed"),
        _rows_table(
            "Damaged (stored; the decoder reported errors)",
            [{"path": r["path"], "summary": r.get("summary")} for r in d["damaged"]],
            "summary",
            "damaged",
        ),
        _rows_table("Skipped (not inputs)", d["skipped"], "reason", "skipped"),
        f"<h2 id='videos'>Videos: <span id='shown'>{shown}</span> of {n} shown</h2>",
        "<p class='legend'><span>thumbnails: evenly spaced stored frames (green dots)</span>"
        "<span>blue line: change or flow score</span><span>red ticks: key frames</span>"
        "<span>yellow bands: labelled segments</span></p>",
        "<p><input id='filter' placeholder='filter by path or label'></p>",
        f"<table id='videos'><tr><th>#</th><th>video</th><th>frames</th><th>timeline</th></tr>"
        f"{rows}</table>",
        preview_html,
    ]
    page = (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        f"<title>hyperframes report: {_esc(d['store'])}</title><style>{_STYLE}</style></head>"
        f"<body>{''.join(body)}<script>{_SCRIPT}</script></body></html>\n"
    )
    path = Path(out) / PAGE
    path.parent.mkdir(parents=True, exist_ok=True)
    return write_text_atomic(path, page)
