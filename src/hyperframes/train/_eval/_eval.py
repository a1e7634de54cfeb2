"""``hyperframes eval``: a trained checkpoint on a store's split, clip- and video-level.

Classification: every video gives ``clips`` evenly spaced windows (the ``uniform`` sampler,
with the stride and short-video policy of the run's samplers; a run trained with the
``segments`` sampler gets ``clips`` segment samplings instead) times ``crops`` spatial views
(1: the model's own input, :meth:`~hyperframes._core._contract.InputContract.prepare`; 3: the
contract's crop at the start, centre and end of the longer side -- top, centre, bottom for
portrait frames -- or, for a model of whole frames, the square of the short side there); the
video's prediction averages the softmax of all its views. Reported: top-1/top-5, mean class
accuracy, per-class precision/recall/F1 and the confusion matrix, at clip level (each view
alone) and video level; top-5 only with more than 5 classes.

Segmentation: mIoU, pixel accuracy and per-class IoU over all windows' key frames.

Interpolation and super-resolution: PSNR and SSIM of the restored frames and of the task's
baseline (:mod:`hyperframes.train._tasks._frame_tasks`) over all windows.

**Splits.** ``split`` is a split the store records (a CSV annotation's ``split`` column), or
for a store without any, ``data.train_split`` / ``data.val_split`` of the run (the generated
split, as training made it; said on stderr and under ``notes``); ``"all"`` is every video. Any other name is a
:class:`ConfigError` listing the known ones.

**Frame rate.** The contract's ``fps`` is the rate the model was trained at. When the store's
videos are at another rate, eval says so (on stderr, and under ``notes``) and plans windows
at the model's rate by the frames' timestamps: the ``duration`` sampler, ``frames`` frames
``frame_stride / fps`` seconds apart, in one pass of ``clips`` windows per video evenly
spread over its frame times (one clip: the centred window), as ``uniform`` spreads them over
its frames. Runs sampled by ``segments`` cover the whole video whatever its rate and are
sampled as they were.

**Classes.** The store's class names are matched to the model's (the checkpoint's contract)
by name, so a store whose classes are numbered otherwise is scored right: an exact name
first, else the same name ignoring case (``Nasa`` is the model's ``nasa``; said under
``notes``). A class of the evaluated videos that the model does not know is a
:class:`DataError` listing both sets; ``classes_by_index=True`` (``--classes-by-index``)
scores store class k as model class k whatever the names (said on stderr and under
``notes``), and a store id past the model's classes is an error too. Videos without a label
get predictions only: a store (or split) with none writes ``predictions.csv`` and no
metrics, and says so; a split with some gets metrics over the labelled videos (said under
``notes``) and predictions for all.

**Views.** ``clips`` or ``crops`` not given: the run's ``eval:`` section's when it asked for
more than one view (the end-of-run evaluation's views; said on stderr), else 10 clips and 3
crops, 1 for a task evaluated on whole frames (segmentation, masked_video, interpolation,
super-resolution).

Input is prepared by the checkpoint's :class:`~hyperframes._core._contract.InputContract` only
(the same object predict and export use), the model rebuilt by
:func:`~hyperframes.checkpoint.rebuild_model`. The metrics are printed as a table and
written per store, split, checkpoint and settings, to
``RUN_DIR/eval/<store name>/<split>/<checkpoint stem>[_T<frames>]_<clips>clips_<crops>crops
[_by_index]/metrics.json`` (``best_10clips_3crops``, ``best_T4_10clips_3crops``,
``recalibrated_T4_10clips_3crops``: each evaluation keeps its own; a store of the same name
elsewhere gets ``<store name>-<hash of its path>``), unless ``out`` names the file; beside it, classification writes ``predictions.csv`` (``<out stem>_predictions.csv``
with ``out``): one row per video, ``path, label, prediction, score`` (the video-level
probability of the predicted class), for error analysis.
"""

from __future__ import annotations

import csv
import hashlib
import json
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ..._core._contract import InputContract
from ..._core._contract_extra import decoder_of
from ..._core._device import resolve_device
from ..._core._errors import ConfigError, DataError
from ..._core._tasks import task_traits
from ...checkpoint import load_checkpoint, rebuild_model
from ...data import loader
from ...data.transforms import contract_transform
from ...store import open_store
from .._config._data import make_dataset
from .._config._load import config_from_dict
from .._config._splits import GENERATED, resolve_split
from .._tasks._base import create_task, get_task
from ._eval_table import decoder_text, format_metrics
from ._options import EvalOptions, eval_options
from ._predict import predict

__all__ = ["evaluate", "format_metrics", "match_classes"]

POSITIONS = {1: ("centre",), 3: ("start", "centre", "end")}
DEFAULT_CLIPS = 10  # windows per video when neither the arguments nor the run's eval: say


def _segmented(cfg) -> bool:
    return "segments" in (cfg.data.val_sampler, cfg.data.sampler)


def _passes(
    cfg, clips: int, contract: InputContract, *, resample: bool = False
) -> list[tuple[str, dict, int]]:
    """(sampler, options, epoch) of each pass over the videos.

    Window samplers (the usual case): one pass of ``uniform`` with ``clips`` clips, the
    contract's ``frame_stride`` and the short-video policy of the run's samplers; with
    ``resample`` (the store is at another rate than the model), one pass of ``duration`` at the
    model's rate with ``clips`` evenly spread windows (module doc). A run sampled by
    ``segments`` (TSN/TSM) is tested as it was validated: one pass of centre frames, or
    ``clips`` passes of random frames within each segment. Random passes are epochs
    0..clips-1, so the views are reproducible.
    """
    short = cfg.data.val_sampler_options.get("short", cfg.data.sampler_options.get("short"))
    policy = {"short": short} if short else {}
    if _segmented(cfg):
        return [("segments", {"train": clips > 1, **policy}, k) for k in range(clips)]
    if "per_segment" in (cfg.data.val_sampler, cfg.data.sampler):  # a view per labelled segment
        options = {"stride": contract.frame_stride, "train": clips > 1, **policy}
        return [("per_segment", options, k) for k in range(clips)]
    if resample:
        assert contract.fps is not None  # _rate_note resamples only to a contract's rate
        rate = contract.fps / contract.frame_stride
        return [("duration", {"rate": rate, "clips": clips, "train": False, **policy}, 0)]
    return [("uniform", {"clips": clips, "stride": contract.frame_stride, **policy}, 0)]


def _known_splits(st, cfg) -> tuple[list[str], str]:
    """The split names ``eval`` accepts on ``st`` (besides ``all``), and where they come from."""
    videos = st.videos
    used = np.unique(np.asarray(videos.split_ids))
    names = sorted({videos.splits[i] for i in used if i >= 0 and videos.splits[i]})
    if names:
        return names, "the split names the store records"
    generated = list(dict.fromkeys((cfg.data.train_split, cfg.data.val_split)))
    return generated, (
        f"the store records no split names, so these are the splits the run generated "
        f"(data.val_fraction={cfg.data.val_fraction:g}, data.split_seed={cfg.data.split_seed})"
    )


def _check_split(st, split: str, cfg) -> None:
    known, where = _known_splits(st, cfg)
    if split not in known:
        raise ConfigError(
            f"split {split!r} is not a split of {st.path}; allowed: {', '.join(known)} "
            f"({where}), or all for every video"
        )


def _rate_note(contract: InputContract, rates: np.ndarray, store: str, segmented: bool):
    """``(note, resample)``: what to say when the videos' rates differ from the model's, and
    whether windows must be planned at the model's rate."""
    fps = contract.fps
    if fps is None or not len(rates):
        return None, False
    other = np.abs(rates - fps) > 1e-3 * fps
    if not other.any():
        return None, False
    distinct = np.unique(np.round(rates[other], 3))
    shown = ", ".join(f"{r:g}" for r in distinct[:5]) + " fps"
    if len(distinct) > 5:
        shown += f" and {len(distinct) - 5} more rates"
    how = (
        "segments cover each whole video whatever its rate: sampled as in training"
        if segmented
        else f"windows are planned at {fps:g} fps by the frames' timestamps (duration sampler)"
    )
    note = (
        f"the model was trained at {fps:g} fps but {int(other.sum())} of the {len(rates)} "
        f"videos in {store} are at {shown}; {how}"
    )
    return note, not segmented


def _listed(names) -> str:
    names = list(names)
    shown = ", ".join(names[:30]) + (f" ... ({len(names)} in all)" if len(names) > 30 else "")
    return shown or "none"


def match_classes(
    store_classes, model_classes, *, used=None, by_index: bool = False, where: str = "the store"
) -> tuple[np.ndarray, list[str]]:
    """``(label_map, notes)``: the model's class of each store class (-1: not used) and what
    to tell the user (module doc). ``used``: the store class ids the evaluated videos carry
    (default: every store class); only those must be known to the model."""
    store_classes, model_classes = list(store_classes), list(model_classes)
    used_ids = range(len(store_classes)) if used is None else sorted({int(k) for k in used})
    lut = np.full(len(store_classes), -1, np.int64)
    if by_index:
        past = [k for k in used_ids if k >= len(model_classes)]
        if past:
            raise DataError(
                f"{where} has classes the model has no output for by index: "
                f"{_listed(f'{k}:{store_classes[k]}' for k in past)}; the store's classes: "
                f"{_listed(store_classes)}; the model's ({len(model_classes)}): "
                f"{_listed(model_classes)}. Leave out --classes-by-index to match them by name"
            )
        lut[list(used_ids)] = list(used_ids)
        differ = [k for k in used_ids if store_classes[k] != model_classes[k]]
        note = "classes matched by index (--classes-by-index), not by name"
        if differ:
            pairs = ", ".join(f"{store_classes[k]} -> {model_classes[k]}" for k in differ[:12])
            note += f": the store's {pairs} are scored as the model's classes of the same number"
        return lut, [note]
    exact = {name: k for k, name in enumerate(model_classes)}
    folded: dict[str, list[int]] = {}
    for k, name in enumerate(model_classes):
        folded.setdefault(name.casefold(), []).append(k)
    unknown, by_case = [], []
    for k in used_ids:
        name = store_classes[k]
        if name in exact:
            lut[k] = exact[name]
        elif len(folded.get(name.casefold(), ())) == 1:
            lut[k] = folded[name.casefold()][0]
            by_case.append(f"{name} -> {model_classes[lut[k]]}")
        else:
            unknown.append(name)
    if unknown:
        raise DataError(
            f"{where} has classes the model does not know: {_listed(unknown)}; the store's "
            f"classes: {_listed(store_classes)}; the model's: {_listed(model_classes)} "
            "(names are matched exactly, else ignoring case). Evaluate on videos of the "
            "model's classes, rename the store's classes (rebuild it with a label map), or "
            "pass --classes-by-index to score store class k as model class k"
        )
    notes = []
    if by_case:
        notes.append(f"classes matched by name ignoring case: {', '.join(by_case[:12])}")
    return lut, notes


def _used_classes(st, ids: np.ndarray, cfg, task: str) -> np.ndarray | None:
    """The store class ids the evaluated items carry (None: every class, for samplers whose
    items take a segment's class)."""
    segments = "per_segment" in (cfg.data.val_sampler, cfg.data.sampler)
    if segments or not task_traits(task).single_label:
        return None  # segments' classes, or several per video (multilabel)
    labels = np.asarray(st.videos.label_ids)[ids]
    return np.unique(labels[labels >= 0])


def _labelled(views: list[dict]) -> list[dict]:
    """The views' items that have a label (classification: ``labels`` >= 0)."""
    out = []
    for v in views:
        keep = np.asarray(v["labels"]) >= 0
        out.append({k: np.asarray(a)[keep] for k, a in v.items()})
    return out


def _clean(name: str) -> str:
    return re.sub(r"[^\w.+-]", "_", name) or "_"


def _settings_tag(ck_path: str, frames, clips: int, crops: int, by_index: bool) -> str:
    """The folder of one evaluation's settings: ``<checkpoint stem>[_T<frames>]_<clips>clips_
    <crops>crops[_by_index]`` (module doc)."""
    tag = Path(ck_path).stem + (f"_T{frames}" if frames is not None else "")
    return _clean(f"{tag}_{clips}clips_{crops}crops" + ("_by_index" if by_index else ""))


def _out_path(ck_path: str, store: str, split: str, tag: str) -> Path:
    """``RUN_DIR/eval/<store name>/<split>/<tag>/metrics.json`` (module doc)."""
    base = Path(ck_path).parent / "eval"
    name = _clean(Path(store).name)
    if _recorded_store(base / name) not in (None, store):  # another store of the same name
        name = f"{name}-{hashlib.sha1(store.encode()).hexdigest()[:8]}"
    return base / name / _clean(split) / tag / "metrics.json"


def _recorded_store(folder: Path) -> str | None:
    """The store an earlier evaluation in ``folder`` (one store's) recorded, None if none."""
    for path in sorted(folder.glob("*/*/metrics.json")):
        try:
            recorded = json.loads(path.read_text()).get("store")
        except (OSError, ValueError, AttributeError):
            continue
        if isinstance(recorded, str):
            return recorded
    return None


def _write_predictions(path: Path, rows: list[dict], paths: list[str]) -> None:
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["path", "label", "prediction", "score"])
        for r in rows:
            w.writerow([paths[r["video_id"]], r["label"], r["prediction"], f"{r['score']:.6f}"])


#: evaluate's own parameters (a misspelt keyword may have meant one)
_EVAL_PARAMETERS = ("store", "split", "clips", "crops", "device", "out")


def evaluate(
    checkpoint: str | Path,
    store: str | Path | None = None,
    *,
    split: str | None = "val",
    clips: int | None = None,
    crops: int | None = None,
    device: str = "auto",
    out: str | Path | None = None,
    settings: EvalOptions | Mapping[str, Any] | None = None,
    **options: Any,
) -> dict:
    """Evaluate ``checkpoint`` (a file, or a run folder: its ``best.pt``, else ``last.pt``) on
    ``store`` (default: the run's store), split ``split`` (``None`` or ``"all"``: every
    video); metrics to ``out`` (default: per store, split, checkpoint and views, see the module
    doc). ``clips``/``crops`` (None: the module doc's Views). Classes are matched by name
    (``classes_by_index``: by number; module doc); ``frames``: windows of that T instead of the
    model's (models that take any T; others refuse it). Returns the metrics dict
    (``predictions_only``: the videos have no labels, so no metrics).

    ``batch_size``, ``workers``, ``frames``, ``classes_by_index`` and ``verbose`` are the
    group ``settings`` (:class:`~hyperframes.train._eval._options.EvalOptions`, or a mapping),
    each also taken on its own as a keyword; an unknown keyword is a ConfigError."""
    o = eval_options(settings, options, others=_EVAL_PARAMETERS)
    batch_size, workers, frames = o.batch_size, o.workers, o.frames
    classes_by_index, verbose = o.classes_by_index, o.verbose
    ck, cfg, task = _read_checkpoint(checkpoint, store)
    clips, crops = _views_asked(cfg, task, clips, crops, verbose=verbose)
    dev = resolve_device(device)
    model, contract = rebuild_model(ck, device=dev, frames=frames)
    cfg.data.frames = contract.frames  # the windows eval reads (--frames, a recalibrated T)
    st = open_store(cfg.data.store, cache_dir=cfg.data.cache_dir, cache_limit=cfg.data.cache_limit)
    contract.check_store_frames(getattr(st, "manifest", {}) or {}, cfg.data.store)
    ids, split, split_note = _split_ids(st, split, cfg)
    classes = list(contract.classes)
    kind = create_task(task, classes)
    notes, predictions_only = _label_notes(
        st, ids, cfg, task, kind, classes, by_index=classes_by_index, split=split
    )
    store_decoder, resample = _store_notes(st, ids, cfg, contract, notes)
    if split_note is not None:
        print(f"hyperframes eval: note: {split_note}", file=sys.stderr, flush=True)
        notes.append(split_note)
    passes = _passes(cfg, clips, contract, resample=resample)
    batch = batch_size or cfg.data.val_batch_size or cfg.data.batch_size
    views = _views(cfg, st, ids, model, kind, contract, dev, passes, crops, batch, workers)
    result = {
        "checkpoint": str(ck["path"]),
        "store": cfg.data.store,
        "split": split,
        "task": task,
        "model": getattr(model, "registry_name", cfg.model.name),
        "frames": contract.frames,
        "decoder": contract.decoder,
        "store_decoder": store_decoder,
        "calibration": contract.calibration,
        "videos": len(ids),
        "clips": clips,
        "crops": crops,
        "sampler": passes[0][0],
        "model_fps": contract.fps,
        "store_fps": sorted({round(float(r), 3) for r in _rates(st, ids)}),
        "classes_matched_by": "index" if classes_by_index else "name",
        "notes": notes,
    }
    if predictions_only:
        result["predictions_only"] = True
    else:
        scored = _labelled(views) if kind.traits.single_label else views
        result.update(kind.evaluate_views(scored))
    if out is not None:
        path = Path(out)
    else:
        tag = _settings_tag(ck["path"], frames, clips, crops, classes_by_index)
        path = _out_path(ck["path"], cfg.data.store, split, tag)
    _write_results(result, kind.video_predictions(views), path, st, named=out is not None)
    if verbose:
        print(format_metrics(result), flush=True)
    return result


def _views(cfg, st, ids, model, kind, contract, dev, passes, crops: int, batch: int, workers):
    """The predictions of every view: each of the ``crops`` positions on each pass."""
    views = []
    for position in POSITIONS[crops]:
        for sampler, options, epoch in passes:
            ds = make_dataset(
                cfg,
                st,
                ids,
                train=False,
                sampler=sampler,
                sampler_options=options,
                transform=contract_transform(contract, position),
            )
            dl = loader(ds, batch_size=batch, shuffle=False, workers=workers)
            dl.set_epoch(epoch)
            n = len(contract.classes)
            views.append(
                predict(model, dl, task=kind, contract=contract, device=dev, num_classes=n)
            )
    return views


def _read_checkpoint(checkpoint, store) -> tuple[dict, Any, str]:
    """``(checkpoint, config, task)``: the run's config pointed at ``store`` (when given)."""
    ck = load_checkpoint(checkpoint)
    raw = ck["config"]
    if store is not None:
        raw = {**raw, "data": {**raw["data"], "store": str(store)}}
    return ck, config_from_dict(raw), ck.get("task") or "classification"


def _views_asked(cfg, task: str, clips, crops, *, verbose: bool) -> tuple[int, int]:
    """``(clips, crops)``: each the argument, else the run's ``eval:`` section's when it asked
    for more than one view, else :data:`DEFAULT_CLIPS` and the most crops the task takes
    (module doc: Views); a task that takes no ``crops`` views refused."""
    eval_crops = get_task(task).eval_crops
    if (clips is None or crops is None) and (cfg.eval.clips > 1 or cfg.eval.crops > 1):
        clips = cfg.eval.clips if clips is None else clips
        crops = cfg.eval.crops if crops is None else crops
        if verbose:
            print(
                f"hyperframes eval: note: {clips} clips x {crops} crops per video, the run's "
                f"eval: section (clips {cfg.eval.clips}, crops {cfg.eval.crops}) where "
                "--clips/--crops are not given",
                file=sys.stderr,
                flush=True,
            )
    clips = DEFAULT_CLIPS if clips is None else clips
    crops = max(eval_crops) if crops is None else crops
    if isinstance(clips, bool) or not isinstance(clips, int) or clips < 1:
        raise ConfigError(f"clips must be an integer >= 1, got {clips!r}")
    if crops not in POSITIONS:
        raise ConfigError(f"crops must be 1 or 3, got {crops!r}")
    if crops not in eval_crops:
        how = "is evaluated on whole frames" if eval_crops == (1,) else "takes"
        allowed = " or ".join(map(str, eval_crops))
        raise ConfigError(f"crops: {task} {how}; allowed: {allowed}, got {crops}")
    return clips, crops


def _split_ids(st, split: str | None, cfg) -> tuple[np.ndarray, str, str | None]:
    """The ids of the videos of ``split`` (module doc: Splits), its name, and a note when the
    split is one the run generated (the store records none)."""
    if split in (None, "all"):
        ids, _ = resolve_split(st, None, cfg.data, role="all")
        return ids, "all", None
    _check_split(st, split, cfg)
    role = "train" if split == cfg.data.train_split else "val"
    ids, source = resolve_split(st, split, cfg.data, role=role)
    if source != GENERATED:
        return ids, split, None
    note = (
        f"{cfg.data.store} records no splits: {split} is the subset the run generated "
        f"(data.val_fraction={cfg.data.val_fraction:g}, data.split_seed={cfg.data.split_seed}), "
        f"{len(ids)} of its {len(st.videos)} videos; --split all evaluates every video"
    )
    return ids, split, note


def _label_notes(st, ids, cfg, task: str, kind, classes: list[str], *, by_index: bool, split: str):
    """``(notes, predictions_only)``: ``kind``'s label map set from the store's classes to the
    model's ``classes`` (module doc: Classes), what to say about it, and whether the videos have no
    labels to score."""
    notes: list[str] = []
    traits = task_traits(task)
    used = _used_classes(st, ids, cfg, task)
    labels = np.asarray(st.videos.label_ids)[ids]
    # per_segment items take their segment's class: the videos need no label of their own
    unlabelled = int((labels < 0).sum()) if traits.single_label and used is not None else 0
    predictions_only = traits.single_label and (not st.classes or unlabelled == len(ids))
    if traits.matches_classes and not predictions_only:
        kind.label_map, said = match_classes(
            st.classes, classes, used=used, by_index=by_index, where=cfg.data.store
        )
        notes += said
    elif predictions_only:
        kind.label_map = np.zeros(0, np.int64)  # every item unlabelled: no target
        notes.append(
            f"the {len(ids)} videos of split {split} in {cfg.data.store} have no labels: "
            "predictions only (predictions.csv), no metrics"
        )
    if unlabelled and not predictions_only:
        notes.append(
            f"{unlabelled} of the {len(ids)} videos have no label: metrics over the "
            f"{len(ids) - unlabelled} labelled ones, predictions for all"
        )
    return notes, predictions_only


def _rates(st, ids) -> np.ndarray:
    return np.asarray(st.videos.fps, dtype=np.float64)[ids]


def _store_notes(st, ids, cfg, contract: InputContract, notes: list[str]):
    """``(store decoder, resample)``: the decoder that built the store, and whether windows
    are planned at the model's rate (module doc: Frame rate); what differs from the model's
    store added to ``notes``, and every note said on stderr."""
    store_decoder = decoder_of(getattr(st, "manifest", {}) or {})
    if contract.decoder and store_decoder and store_decoder != contract.decoder:
        notes.append(
            f"the store was built by {decoder_text(store_decoder)}, the model's store by "
            f"{decoder_text(contract.decoder)}: pixels differ between decoders"
        )
    note, resample = _rate_note(contract, _rates(st, ids), cfg.data.store, _segmented(cfg))
    for n in notes:
        print(f"hyperframes eval: note: {n}", file=sys.stderr, flush=True)
    if note is not None:
        print(f"hyperframes eval: warning: {note}", file=sys.stderr, flush=True)
        notes.append(note)
    return store_decoder, resample


def _write_results(result: dict, rows, path: Path, st, *, named: bool) -> None:
    """``metrics.json`` at ``path`` (not when there are only predictions) and, for a task with
    per-video ``rows``, ``predictions.csv`` beside it (``named``: ``<stem>_predictions.csv``);
    their paths added to ``result``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if rows is not None:
        csv_path = path.with_name(f"{path.stem}_predictions.csv" if named else "predictions.csv")
        _write_predictions(csv_path, rows, st.videos.paths)
        result["predictions_csv"] = str(csv_path)
    if not result.get("predictions_only"):
        path.write_text(json.dumps(result, indent=1, default=float) + "\n")
        result["metrics_json"] = str(path)
