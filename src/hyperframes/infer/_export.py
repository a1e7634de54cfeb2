"""ONNX export with a dynamic batch size, checked against onnxruntime.

``hyperframes export RUN_DIR --onnx model.onnx`` is :func:`export_onnx` (a run folder means
its ``best.pt``, else ``last.pt``). The graph takes what the checkpoint's
:class:`~hyperframes._core._contract.InputContract` prepares (:meth:`InputContract.prepare`: uint8
frames resized and cropped, normalised, in the model's layout):

* ``temporal`` ``input`` (B, T, 3, H, W); ``channel`` ``input`` (B, 3T, H, W);
  ``conv3d`` ``input`` (B, 3, T, H, W);
* ``keyframe`` two inputs, ``key`` (B, 3, H, W) and ``context`` (B, T, 3, H, W);

and gives ``logits`` ((B, K), or (B, K, H, W) for segmentation). Only B is dynamic: H, W
are fixed at export (the checkpoint's input size; ``size`` overrides). The exported file is
run by onnxruntime on a random input of another batch size and compared with PyTorch in
fp32 (with a checkpoint, on random uint8 frames prepared by the contract); a difference above
``atol`` raises :class:`ExportError`.

The export is one ``.onnx`` file, weights included, unless they exceed what one protobuf
may hold (:data:`EXTERNAL_DATA_BYTES`, under its 2 GiB limit): then they go to
``<model>.onnx.data`` beside it, and the summary says so.

The contract travels with the graph, in a sidecar ``<model>.onnx.json`` and in the ONNX file's
metadata, with the preprocessing recipe (:mod:`._recipe`).
"""

from __future__ import annotations

import os
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from .. import models
from .._core._contract import InputContract
from .._core._errors import ConfigError, HyperframesError, require_extra
from .._core._layouts import AudioVisual, KeyframeWindow, Layout
from .._core._limits import check_infer_values
from .._core._text import model_name
from ..models import to_layout
from ._load import InferenceModel, load_inference_model
from ._recipe import preprocessing_recipe, write_sidecar

__all__ = ["ExportError", "ExportReport", "export_onnx", "onnx_models", "preprocessing_recipe"]

ATOL = 1e-4
#: weights above this many bytes go to an external ``.onnx.data`` file (protobuf's limit is
#: 2 GiB for the whole file; the graph itself needs some room)
EXTERNAL_DATA_BYTES = 2**31 - 2**27


class ExportError(HyperframesError):
    """The exporter failed, or the exported graph does not reproduce the model."""


@dataclass
class ExportReport:
    """What :func:`export_onnx` wrote and how closely onnxruntime reproduces PyTorch."""

    path: Path
    model: str
    layout: str
    inputs: dict[str, list]  # name -> shape, "batch" for the dynamic axis
    output_shape: list
    max_abs_diff: float | None  # None: not checked (onnxruntime missing or check=False)
    checked_batch: int | None
    seconds: float
    sidecar: Path | None = None
    notes: list[str] = field(default_factory=list)
    external_data: Path | None = None  # the weights' file when they do not fit in one protobuf
    output_name: str = "logits"  # a masked-video model's encoder gives "features"

    def summary(self) -> str:
        shapes = ", ".join(f"{k} {v}" for k, v in self.inputs.items())
        check = (
            f"onnxruntime max |diff| {self.max_abs_diff:.2e} at batch {self.checked_batch}"
            if self.max_abs_diff is not None
            else "not checked against onnxruntime"
        )
        lines = [f"wrote {self.path} ({self.model}, {shapes}; {check}; {self.seconds:.1f} s)"]
        if self.external_data is not None:
            lines.append(
                f"wrote {self.external_data} (the weights: over {EXTERNAL_DATA_BYTES >> 20} MiB, "
                "more than one ONNX file holds; keep it beside the .onnx)"
            )
        if self.sidecar is not None:
            lines.append(f"wrote {self.sidecar}")
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)


def onnx_models(available_only: bool = True) -> list[str]:
    """Registered models whose registry entry says ONNX export reproduces them."""
    return [
        s.name
        for s in (models.get_spec(n) for n in models.list_models())
        if s.onnx and (s.available or not available_only)
    ]


class _TwoInputGraph(nn.Module):
    """Takes the two parts of a model's input as two graph inputs (instead of one named
    tuple): ``key`` and ``context`` of a keyframe model (``Keyframes``), ``input`` (video) and
    ``audio`` (log-mel) of an audio-visual one (``AudioVisual``)."""

    def __init__(self, model: nn.Module, pair: type[KeyframeWindow] | type[AudioVisual]) -> None:
        super().__init__()
        self.model, self.pair = model, pair

    def forward(self, first: Tensor, second: Tensor) -> Tensor:
        return self.model(self.pair(first, second))


def _is_audiovisual(model: nn.Module) -> bool:
    return hasattr(model, "n_mels") and hasattr(model, "columns_per_frame")


def _inputs(
    model: nn.Module,
    layout: Layout,
    batch: int,
    hw: tuple[int, int],
    seed: int,
    contract: InputContract | None = None,
):
    """Example graph inputs: random uint8 frames prepared by ``contract``, or (a bare model)
    random normal values in ``layout``."""
    g = torch.Generator().manual_seed(seed)
    t = getattr(model, "frames", 8)
    c = getattr(model, "in_channels", 3)
    if contract is not None:
        frames = torch.randint(0, 256, (batch, contract.frames, c, *hw), generator=g)
        tracks: dict[str, Tensor] = {}
        if contract.flow:  # the flow planes are part of the one video input
            tracks["flow"] = torch.randn(batch, contract.frames - 1, 2, *hw, generator=g)
        if contract.audio is not None:  # the graph's second input, made below
            a = contract.audio
            tracks["audio"] = torch.zeros(
                batch, a["n_mels"], contract.frames * a["columns_per_frame"]
            )
        x = contract.prepare(
            frames.to(torch.uint8), flow=tracks.get("flow"), audio=tracks.get("audio")
        )
        if contract.audio is not None:
            x = x[0]  # AudioVisual(video, audio): the video
    else:
        x = to_layout(torch.randn(batch, t, c, *hw, generator=g), layout)
    if layout == "keyframe":
        return (x.key, x.context), ["key", "context"]
    if _is_audiovisual(model):
        n_mels, k = model.n_mels, model.columns_per_frame
        assert isinstance(n_mels, int) and isinstance(k, int)  # torch types them Tensor | Module
        shape = (batch, n_mels, contract.frames if contract else t)
        audio = torch.randn(shape[0], shape[1], shape[2] * k, generator=g)
        return (x, audio), ["input", "audio"]
    return (x,), ["input"]


def export_onnx(
    source: str | os.PathLike | nn.Module | InferenceModel,
    path: str | os.PathLike,
    *,
    size: Any = None,
    batch: int = 2,
    opset: int | None = None,
    check: bool = True,
    atol: float = ATOL,
    seed: int = 0,
) -> ExportReport:
    """Export a checkpoint (or a model) to ONNX at ``path``; see the module doc.

    ``size``: an int, ``"HxW"`` or ``(H, W)`` for the input frames (default: the
    checkpoint's input size; 64 for a bare model). ``batch``: the example batch used to
    trace; the check runs at ``batch + 1`` to exercise the dynamic axis.
    """
    # torch's exporter needs onnx and onnxscript; the check of the graph, onnxruntime
    needed = ("onnx", "onnxscript", "onnxruntime") if check else ("onnx", "onnxscript")
    require_extra(needed, "export", "ONNX export" + ("" if check else " (check=False)"))
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise ConfigError(f"batch {batch!r}: allowed: an integer >= 1")
    model, loaded = _source_model(source)
    contract = loaded.contract if loaded is not None else None
    name = model_name(model)
    layout: Layout = (
        contract.layout if contract is not None else getattr(model, "layout", "temporal")
    )
    _check_onnx_flag(name)
    hw = _export_size(size, contract)
    _check_example_values(model, loaded, batch + 1 if check else batch, hw)
    model = model.eval().cpu()
    graph = _graph_of(model, layout)
    output = getattr(graph, "output_name", "logits")
    args, names = _inputs(model, layout, batch, hw, seed, contract)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    external = _weight_bytes(model) > EXTERNAL_DATA_BYTES
    _run_exporter(graph, args, path, names, output, opset=opset, external=external, name=name)
    seconds = time.perf_counter() - t0
    with torch.inference_mode():
        out_shape = list(graph(*args).shape)
    report = ExportReport(
        path=path,
        model=name,
        layout=layout,
        inputs={n: ["batch", *a.shape[1:]] for n, a in zip(names, args)},
        output_shape=["batch", *out_shape[1:]],
        max_abs_diff=None,
        checked_batch=None,
        seconds=seconds,
        external_data=path.with_name(path.name + ".data") if external else None,
        output_name=output,
    )
    if check:
        diff, b = _check(
            graph, path, layout, model, batch + 1, hw, seed + 1, names, contract, output
        )
        report.max_abs_diff, report.checked_batch = diff, b
        if not diff <= atol:
            raise ExportError(
                f"{path}: onnxruntime differs from PyTorch by up to {diff:.3g} on model "
                f"{name!r} (allowed: {atol:g} in fp32); the exported graph is not faithful"
            )
    report.sidecar = write_sidecar(path, report, loaded)
    return report


def _check_example_values(
    model: nn.Module, loaded: InferenceModel | None, batch: int, hw: tuple[int, int]
) -> None:
    """The example inputs (``batch`` clips at ``hw``; the check runs one batch larger) within
    the inference bound, before they are made: a checkpoint whose contract asks for 512 frames
    of 2048 x 2048 is refused, naming it, instead of allocating a hundred gigabytes."""
    contract = loaded.contract if loaded is not None else None
    frames = contract.frames if contract is not None else getattr(model, "frames", 8)
    channels = getattr(model, "in_channels", 3)
    if contract is not None and contract.flow:
        channels += 2  # the flow planes travel with the frames
    where = f"checkpoint {loaded.path}: export" if loaded is not None else "export"
    check_infer_values(batch, int(frames), int(channels), *hw, where)


def _source_model(source) -> tuple[nn.Module, InferenceModel | None]:
    """The model to export and, from a checkpoint, the loaded checkpoint (None: a bare model)."""
    if isinstance(source, InferenceModel):
        return source.model, source
    if isinstance(source, nn.Module):
        return source, None
    loaded = load_inference_model(source)
    return loaded.model, loaded


def _graph_of(model: nn.Module, layout: str) -> nn.Module:
    """What is traced: the model, its two-input wrapper, or a masked-video model's encoder."""
    if layout == "keyframe":
        return _TwoInputGraph(model, KeyframeWindow).eval()
    if _is_audiovisual(model):
        return _TwoInputGraph(model, AudioVisual).eval()
    if callable(exported := getattr(model, "export_graph", None)):
        return exported()  # a masked-video model: its encoder
    return model


def _run_exporter(graph, args, path: Path, names, output: str, *, opset, external, name) -> None:
    """``torch.onnx.export`` of ``graph`` with a dynamic batch axis; :class:`ExportError`
    naming the model when the exporter fails."""
    dim = torch.export.Dim("batch", min=1, max=4096)
    try:
        with warnings.catch_warnings():
            # the exporter's own chatter (deprecations inside torch, tracing notes)
            warnings.simplefilter("ignore")
            torch.onnx.export(
                graph,
                args,
                str(path),
                input_names=names,
                output_names=[output],
                dynamic_shapes=tuple({0: dim} for _ in args),
                opset_version=opset,
                dynamo=True,
                external_data=external,
                verbose=False,
            )
    except Exception as e:
        text = " ".join(str(e).split())[:600]
        raise ExportError(
            f"ONNX export of model {name!r} to {path} failed ({type(e).__name__}: {text})"
        ) from e


def _weight_bytes(model: nn.Module) -> int:
    """Bytes of the parameters and buffers the graph stores."""
    tensors = [*model.parameters(), *model.buffers()]
    return sum(t.numel() * t.element_size() for t in tensors)


def _check_onnx_flag(name: str) -> None:
    try:
        spec = models.get_spec(name)
    except ConfigError:
        return  # a model outside the registry: try it
    if not spec.onnx:
        raise ConfigError(
            f"model {name!r} does not support ONNX export (its registry entry says onnx=False); "
            f"models that do: {', '.join(onnx_models())}"
        )


def _export_size(size: Any, contract: InputContract | None) -> tuple[int, int]:
    if size is None:
        return contract.example_size() if contract is not None else (64, 64)
    if isinstance(size, (tuple, list)) and len(size) == 2:
        h, w = size
    else:
        text = str(size).strip().lower()
        h, _, w = text.partition("x")
        w = w or h
    try:
        h, w = int(h), int(w)
    except (TypeError, ValueError):
        h = w = 0
    if h < 1 or w < 1:
        raise ConfigError(
            f"size {size!r}: allowed: an int (square), 'HxW' or (H, W) of positive ints"
        )
    return (h, w)


def _check(
    graph, path, layout, model, batch, hw, seed, names, contract, output="logits"
) -> tuple[float, int]:
    import onnxruntime as ort  # deferred: optional/heavy dependency

    args, _ = _inputs(model, layout, batch, hw, seed, contract)
    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    session = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
    with torch.inference_mode():
        ref = graph(*args).float().numpy()
    got = session.run([output], {n: a.numpy() for n, a in zip(names, args)})[0]
    if got.shape != ref.shape:
        raise ExportError(
            f"{path}: onnxruntime gives logits of shape {list(got.shape)} at batch {batch}, "
            f"PyTorch {list(ref.shape)}; the batch axis is not dynamic"
        )
    return float(np.abs(got.astype(np.float64) - ref).max()), batch
