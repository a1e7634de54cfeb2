"""Inference on long videos and live streams, and ONNX export.

::

    from hyperframes.infer import Predictor, predict_video, export_onnx

    report = predict_video("runs/x/best.pt", "long.mp4", stride=4, ema=0.7, out="pred")
    print(report.summary())          # pred/timeline.csv, .json, .png (+ annotated.mp4)

    p = Predictor.from_checkpoint("runs/x/best.pt", stride=4, ema=0.7)
    for rgb, t in stream:            # (H, W, 3) uint8 frames with their time in seconds
        for pred in p.push(rgb, t):
            print(f"{pred.start_seconds:.1f}s {pred.top(1)}")
    p.flush()

    streams = MultiStream(p, batch_size=16)   # K streams, one model call per step
    streams.add_stream("door")
    streams.push("door", rgb, t)
    for stream_id, preds in streams.step().items():
        ...

    export_onnx("runs/x/best.pt", "model.onnx").summary()

A video is decoded once, streaming, in bounded memory; windows of the model's T frames at
stride S are batched through the model (per-frame features computed once per frame for
TSN, CNN+LSTM and the TSM stem) and their logits smoothed over time. Input is prepared by
the checkpoint's :class:`InputContract` only, exactly as ``hyperframes eval`` prepares it.
"""

from .._core._contract import InputContract
from .._core._moved import moved_attribute
from ..checkpoint import resolve_contract
from ._export import ExportError, ExportReport, export_onnx
from ._load import InferenceModel, load_inference_model
from ._prediction import Prediction
from ._predictor import Predictor
from ._report import PredictReport
from ._streams import MultiStream
from ._video import iter_predictions, predict_video

__all__ = [
    "ExportError",
    "ExportReport",
    "InferenceModel",
    "InputContract",
    "MultiStream",
    "PredictReport",
    "Prediction",
    "Predictor",
    "export_onnx",
    "iter_predictions",
    "load_inference_model",
    "predict_video",
    "resolve_contract",
]


def __getattr__(name: str):
    return moved_attribute(__name__, name)
