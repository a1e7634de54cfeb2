"""Predict over a video file: decode it once, streaming, and write the timeline outputs.

``hyperframes predict RUN_DIR/best.pt VIDEO [--stride S] [--ema W] [--out DIR] [--annotate]``
is :func:`predict_video`; :func:`iter_predictions` is the same loop as a generator.
"""

from __future__ import annotations

import csv
import io
import os
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from .._core._atomic import write_bytes_atomic, write_json_atomic
from .._core._device import resolve_device
from .._core._errors import ConfigError, InputError
from ..decode import create_decoder
from ..models import hidden_picture, takes_recipe
from ._annotate import VideoAnnotator
from ._frames import predict_frames
from ._load import load_inference_model
from ._options import ReadingOptions, TimelineOptions, predict_groups
from ._prediction import Prediction, box_row
from ._predictor import Predictor, check_options
from ._reconstruct import predict_reconstructions
from ._report import PredictReport, choose_decoder
from ._timeline import TimelineWriter

__all__ = ["PredictReport", "iter_predictions", "predict_video"]


def iter_predictions(
    predictor: Predictor,
    video: str | os.PathLike,
    *,
    decoder: str = "pyav",
    on_frame: Callable[[Any], None] | None = None,
) -> Iterator[Prediction]:
    """Decode ``video`` once and yield ``predictor``'s predictions as they become ready.

    ``on_frame(decoded_frame)`` is called for every decoded frame before it is pushed.
    """

    dec = create_decoder(decoder)
    predictor.reset()
    try:
        for frame in dec.frames(os.fspath(video)):
            if on_frame is not None:
                on_frame(frame)
            yield from predictor.push(frame)
        yield from predictor.flush(name=os.fspath(video))
    finally:
        predictor.reset()


#: predict_video's own parameters (a misspelt keyword may have meant one)
_PREDICT_PARAMETERS = ("out", "stride", "batch_size", "device")


def predict_video(
    checkpoint: str | os.PathLike,
    video: str | os.PathLike,
    *,
    out: str | os.PathLike | None = None,
    stride: int = 1,
    batch_size: int = 8,
    device: str = "cpu",
    reading: ReadingOptions | Mapping[str, Any] | None = None,
    timeline: TimelineOptions | Mapping[str, Any] | None = None,
    **options: Any,
) -> PredictReport:
    """Predict over ``video`` with a checkpoint; write ``timeline.csv/.json/.png`` (and
    ``annotated.mp4`` with ``annotate``) into ``out`` (default ``<video stem>_predict``).

    ``size``/``fps`` override the checkpoint's frame size / rate (see ``_load``), ``frames``
    its T (models that take any T); ``decoder`` (None: the one that built the model's store,
    as its contract records, else pyav; another one is used with a warning: its pixels
    differ); ``device`` ``"auto"`` picks CUDA when available; ``progress`` shows a bar on
    stderr. An interpolation or super-resolution model writes frames as PNG instead
    (:func:`~hyperframes.infer._frames.predict_frames`; ``reconstruct``: its mode), a
    masked_video model its reconstructions of ``reconstructions`` windows (None: up to 16;
    :func:`~hyperframes.infer._reconstruct.predict_reconstructions`). ``short``: a video
    shorter than a window is refused (``"error"``, as training refuses it) or predicted as one
    window with its last frame repeated (``"pad"``, said in the report's notes); see
    :class:`~hyperframes.infer.Predictor`. The pictures of a masked-video or frame-task model
    need whole windows: a short video writes nothing and is refused either way.
    ``max_gap_seconds``: as the build's ``max_gap``, frames further apart are not bridged
    (see :class:`Predictor`).

    The options after ``device`` come in two groups (:mod:`hyperframes.infer._options`):
    ``reading`` (size, fps, frames, decoder, reuse, short, max_gap_seconds) and ``timeline``
    (ema, top_k, annotate, progress, reconstruct, reconstructions); each may also be given on
    its own as a keyword (``ema=0.7``). An unknown keyword is a ConfigError.
    """
    r, tl = predict_groups(reading, timeline, options, others=_PREDICT_PARAMETERS)
    size, fps, frames, decoder, short = r.size, r.fps, r.frames, r.decoder, r.short
    ema, top_k, annotate = tl.ema, tl.top_k, tl.annotate
    check_options(stride, ema, batch_size, short)
    device = resolve_device(device)

    video = Path(video)
    loaded = load_inference_model(checkpoint, size=size, fps=fps, device=device, frames=frames)
    if tl.reconstructions is not None and not loaded.traits.reconstructs:
        raise ConfigError(f"{loaded.path}: reconstructions are written for masked_video models")
    if loaded.traits.pictures or loaded.contract.frame_task is not None:
        return _predict_pictures(
            loaded, video, out, stride, batch_size, decoder, tl.reconstruct, tl.reconstructions
        )
    predictor = Predictor.from_checkpoint(
        loaded,
        size=size,
        fps=fps,
        device=device,
        frames=frames,
        stride=stride,
        ema=ema,
        batch_size=batch_size,
        reuse=r.reuse,
        short=short,
        max_gap_seconds=r.max_gap_seconds,
    )
    decoder, said = choose_decoder(predictor.contract.decoder, decoder)
    predictor.notes += said
    info = create_decoder(decoder).probe(os.fspath(video))  # unreadable video: fail early
    out = Path(out) if out is not None else Path(f"{video.stem}_predict")

    meta = _timeline_meta(predictor, video, decoder, info, stride=stride, ema=ema)
    writer = TimelineWriter(out, predictor.classes, task=predictor.task, meta=meta, top_k=top_k)
    annotator = VideoAnnotator(out / "annotated.mp4", fps=info.fps) if annotate else None
    total = info.num_frames_from_header if tl.progress else None
    return _write_timeline(predictor, video, decoder, out, writer, annotator, total, top_k)


def _predict_pictures(
    loaded, video: Path, out, stride, batch_size, decoder, reconstruct, reconstructions
) -> PredictReport:
    """What :func:`predict_video` writes for a model that predicts no classes: a masked_video
    model's reconstructions, an interpolation or super-resolution model's frames, as PNG."""
    if loaded.traits.reconstructs:
        return predict_reconstructions(
            loaded, video, out=out, stride=stride, decoder=decoder, windows=reconstructions
        )

    decoder, _ = choose_decoder(loaded.contract.decoder, decoder)
    create_decoder(decoder).probe(os.fspath(video))  # unreadable video: fail early
    return predict_frames(
        loaded,
        video,
        out=out,
        stride=stride,
        batch_size=batch_size,
        decoder=decoder,
        reconstruct=reconstruct,
    )


def _timeline_meta(predictor: Predictor, video: Path, decoder: str, info, *, stride, ema) -> dict:
    """What ``timeline.json`` records of the run beside the predictions."""
    contract = predictor.contract
    return {
        "title": f"{video.name} - {Path(predictor.path or '').name}",
        "video": str(video),
        "checkpoint": predictor.path,
        "task": predictor.task,
        "classes": predictor.classes,
        "frames_per_window": predictor.frames,
        "stride": stride,
        "ema": ema,
        "reuse": predictor.reuse,
        "contract": contract.to_dict(),
        "decoder": decoder,
        "input_size": list(contract.input_size(info.height, info.width)),
        "video_fps": info.fps,
    }


class _FrameCounter:
    """Counts the decoded frames, moves the progress bar (``total`` frames; None: no bar)
    and hands each frame to the annotator."""

    def __init__(self, annotator, total: int | None) -> None:
        self.decoded, self.annotator, self.bar = 0, annotator, None
        if total is not None:
            from tqdm import tqdm  # deferred: optional/heavy dependency

            self.bar = tqdm(total=total, unit="frame", desc="predict", file=sys.stderr)

    def __call__(self, frame) -> None:
        self.decoded += 1
        if self.bar is not None:
            self.bar.update(1)
        if self.annotator is not None:
            self.annotator.add_frame(frame.to_rgb(), frame.pts_seconds)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _write_timeline(
    predictor: Predictor, video: Path, decoder: str, out: Path, writer, annotator, total, top_k
) -> PredictReport:
    """Run ``predictor`` over ``video`` into ``writer`` (and ``annotator``); every output is
    written whole or not at all (both are aborted on any error)."""
    counter = _FrameCounter(annotator, total)
    t0 = time.perf_counter()
    last = None
    prob_sum = None
    frames_seen = 0
    boxes: list[dict] | None = [] if predictor.traits.boxes else None
    try:
        for pred in iter_predictions(predictor, video, decoder=decoder, on_frame=counter):
            prob_sum = pred.probs if prob_sum is None else prob_sum + pred.probs
            writer.add(pred)
            if boxes is not None and pred.boxes is not None:
                boxes += box_rows(pred)
            if annotator is not None:
                annotator.add_prediction(pred)
            last = pred
        if last is None:
            raise InputError(f"{video}: no frames decoded; nothing to predict")
        assert prob_sum is not None  # set with last
        if last.padded:  # short="pad": the one window repeats the last frame
            predictor.notes.append(
                f"{video} is shorter than a window ({predictor.frames_added} frames, a window "
                f"spans {predictor.span}): its one window repeats the last frame (padded)"
            )
        frames_seen = predictor.frames_added
        outputs = writer.close(
            {"windows": writer.count, "frames": frames_seen, "decoded_frames": counter.decoded}
        )
        if boxes is not None:
            outputs += write_boxes(out, boxes)
        if annotator is not None:
            outputs.append(annotator.close())
        picture = _hidden_picture(predictor, out)
        if picture is not None:
            outputs.append(picture)
    except BaseException:
        writer.abort()
        if annotator is not None:
            annotator.abort()
        raise
    finally:
        counter.close()
    return PredictReport(
        video=str(video),
        checkpoint=predictor.path,
        windows=writer.count,
        frames=frames_seen,
        decoded=counter.decoded,
        seconds=time.perf_counter() - t0,
        reuse=predictor.reuse,
        outputs=outputs,
        last=last,
        notes=list(predictor.notes),
        top=_top(predictor.classes, prob_sum / max(writer.count, 1), top_k),
    )


#: the columns of ``boxes.csv`` (and the keys of each row of ``boxes.json``)
BOX_FIELDS = ("frame", "time", "x1", "y1", "x2", "y2", "label", "score")


def box_rows(pred) -> list[dict]:
    """A detection's boxes on its key frame: ``frame`` (source number), ``time`` (seconds),
    the corners normalised to [0, 1], ``label`` and ``score`` (after the EMA)."""
    return [
        {
            "frame": pred.key_source_frame,
            "time": round(pred.key_seconds, 6),
            **box_row(pred.classes, b),
        }
        for b in pred.boxes
    ]


def write_boxes(out: Path, rows: list[dict]) -> list[Path]:
    """``out/boxes.csv`` and ``out/boxes.json`` (:data:`BOX_FIELDS`), each written whole."""
    text = io.StringIO()
    w = csv.DictWriter(text, fieldnames=BOX_FIELDS, lineterminator="\n")
    w.writeheader()
    w.writerows({k: r[k] for k in BOX_FIELDS} for r in rows)
    csv_path = write_bytes_atomic(out / "boxes.csv", text.getvalue().encode())
    json_path = write_json_atomic(out / "boxes.json", [{k: r[k] for k in BOX_FIELDS} for r in rows])
    return [Path(csv_path), Path(json_path)]


def _hidden_picture(predictor, out: Path) -> Path | None:
    """For a keyframe model: ``out/hidden.png``, the first window's K_t beside the PCA
    picture of its H_t (what G makes of the context; see ``train._keyframe_recipe``)."""
    window = getattr(predictor, "first_window", None)
    if window is None or not takes_recipe(predictor.model):
        return None
    c = predictor.contract
    x = c.prepare(window.to(predictor.device))
    return hidden_picture(predictor.model, x, None, out / "hidden.png", mean=c.mean, std=c.std)


def _top(classes: list[str], probs, k: int) -> list[tuple[str, float]]:
    """The ``k`` classes of highest ``probs``, by name, best first."""
    order = sorted(range(len(classes)), key=lambda i: -float(probs[i]))[: max(1, k)]
    return [(classes[i], float(probs[i])) for i in order]
