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

The contract travels with the graph: ``<model>.onnx.json`` next to the ``.onnx`` records it
(``"contract"``, :meth:`InputContract.to_dict`) with the inputs, classes, task and the
preprocessing recipe, and the ONNX file's metadata (``metadata_props``; onnxruntime's
``session.get_modelmeta().custom_metadata_map``) holds it too: ``hyperframes.contract`` (the
same dict as JSON), ``hyperframes.preprocessing`` (:func:`preprocessing_recipe` as JSON: every
step from a video file to the graph's input, in words and values), ``preprocessing`` (the same
steps as numbered text) and, for consumers that read single keys, :data:`METADATA_KEYS`:
``task`` and ``layout`` as they are, and as JSON ``classes`` (the names, in output order),
``frames`` (T), ``frame_stride``, ``fps`` (``null``: every decoded frame), ``mean`` and ``std``
(3 numbers on the [0, 1] scale) -- so a consumer prepares frames exactly as ``predict`` does.
"""

from __future__ import annotations

import importlib.util
import json
import os
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from .._core._contract import InputContract
from .._core._errors import ConfigError, HyperframesError
from ._load import InferenceModel, load_inference_model

__all__ = ["ExportError", "ExportReport", "export_onnx", "onnx_models", "preprocessing_recipe"]

ATOL = 1e-4
#: weights above this many bytes go to an external ``.onnx.data`` file (protobuf's limit is
#: 2 GiB for the whole file; the graph itself needs some room)
EXTERNAL_DATA_BYTES = 2**31 - 2**27
#: the plain metadata keys written beside ``hyperframes.contract``
METADATA_KEYS = ("classes", "task", "layout", "frames", "frame_stride", "fps", "mean", "std")


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
    from .. import models

    return [
        s.name
        for s in (models.get_spec(n) for n in models.list_models())
        if s.onnx and (s.available or not available_only)
    ]


class _AudioVisualGraph(nn.Module):
    """Takes ``input`` (video) and ``audio`` (log-mel) as two graph inputs."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, video: Tensor, audio: Tensor) -> Tensor:
        from ..models import AudioVisual

        return self.model(AudioVisual(video, audio))


def _is_audiovisual(model: nn.Module) -> bool:
    return hasattr(model, "n_mels") and hasattr(model, "columns_per_frame")


class _KeyframeGraph(nn.Module):
    """Takes ``key`` and ``context`` as two graph inputs (instead of one named tuple)."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, key: Tensor, context: Tensor) -> Tensor:
        from ..models import Keyframes

        return self.model(Keyframes(key, context))


def _inputs(
    model: nn.Module,
    layout: str,
    batch: int,
    hw: tuple[int, int],
    seed: int,
    contract: InputContract | None = None,
):
    """Example graph inputs: random uint8 frames prepared by ``contract``, or (a bare model)
    random normal values in ``layout``."""
    from ..models import to_layout

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


def _require(module: str, what: str) -> None:
    if importlib.util.find_spec(module) is None:
        raise ConfigError(f"ONNX export needs {module} ({what}): pip install {module}")


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
    _require("onnx", "the ONNX format")
    _require("onnxscript", "torch's ONNX exporter")
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise ConfigError(f"batch {batch!r}: allowed: an integer >= 1")
    loaded: InferenceModel | None = None
    if isinstance(source, InferenceModel):
        loaded = source
    elif not isinstance(source, nn.Module):
        loaded = load_inference_model(source)
    if loaded is not None:
        model = loaded.model
    else:
        assert isinstance(source, nn.Module)  # neither branch above took it
        model = source
    contract = loaded.contract if loaded is not None else None
    name = getattr(model, "registry_name", None) or type(model).__name__
    layout = contract.layout if contract is not None else getattr(model, "layout", "temporal")
    _check_onnx_flag(name)
    hw = _export_size(size, contract)
    model = model.eval().cpu()
    graph: nn.Module
    if layout == "keyframe":
        graph = _KeyframeGraph(model).eval()
    elif _is_audiovisual(model):
        graph = _AudioVisualGraph(model).eval()
    elif callable(exported := getattr(model, "export_graph", None)):
        graph = exported()  # a masked-video model: its encoder
    else:
        graph = model
    output = getattr(graph, "output_name", "logits")
    args, names = _inputs(model, layout, batch, hw, seed, contract)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    dim = torch.export.Dim("batch", min=1, max=4096)
    external = _weight_bytes(model) > EXTERNAL_DATA_BYTES
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
        if importlib.util.find_spec("onnxruntime") is None:
            report.notes.append("onnxruntime is not installed: the graph was not checked")
        else:
            diff, b = _check(
                graph, path, layout, model, batch + 1, hw, seed + 1, names, contract, output
            )
            report.max_abs_diff, report.checked_batch = diff, b
            if not diff <= atol:
                raise ExportError(
                    f"{path}: onnxruntime differs from PyTorch by up to {diff:.3g} on model "
                    f"{name!r} (allowed: {atol:g} in fp32); the exported graph is not faithful"
                )
    report.sidecar = _sidecar(path, report, loaded)
    return report


def _weight_bytes(model: nn.Module) -> int:
    """Bytes of the parameters and buffers the graph stores."""
    tensors = [*model.parameters(), *model.buffers()]
    return sum(t.numel() * t.element_size() for t in tensors)


def _check_onnx_flag(name: str) -> None:
    from .. import models

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
    import onnxruntime as ort

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


#: how each layout orders a window of T RGB frames in the graph's input (``t`` the frame of
#: the window, ``c`` the channel R=0, G=1, B=2, ``y``/``x`` the pixel)
LAYOUT_ORDER = {
    "temporal": "input[b, t, c, y, x]",
    "channel": "input[b, 3 * t + c, y, x]: frame-major, R G B of frame 0, then of frame 1, ...",
    "conv3d": "input[b, c, t, y, x]",
    "keyframe": "key[b, c, y, x] is frame T // 2 of the window; context[b, t, c, y, x] all T",
}


def preprocessing_recipe(contract: InputContract, inputs: dict[str, list] | None = None) -> dict:
    """Every step from a video file to the graph's input for ``contract``, as values and words
    (what ``predict`` does; the README's "Inference and export" says the same)."""
    crop = contract.crop
    fps = contract.fps
    order = LAYOUT_ORDER[contract.layout]
    if contract.flow:
        order += (
            f"; then 2 * (T - 1) = {2 * (contract.frames - 1)} optical-flow planes (x, y of "
            "each pair of consecutive frames, in pixels) from a store built with --flow"
        )
    steps: dict[str, Any] = {
        "decode": "decode every frame of the video stream to 8-bit RGB (FFmpeg's YUV to RGB "
        "conversion, rgb24)",
        "fps": fps,
        "resample": None
        if fps is None
        else f"frames at {fps:g} fps by timestamp: target times p0 + k / {fps:g} (p0 the first "
        "frame's time, k = 0, 1, ... while inside the video), each taking the frame of nearest "
        "time (ties: the earlier); frames may repeat or be skipped",
        "store_size": contract.size,
        "store_resize": None
        if contract.size is None
        else "to the store's size: 'N' scales the short side to N and the long side to "
        "round(long * N / short) (an exact 'HxW' is that size), with FFmpeg's area scaler "
        "(swscale SWS_AREA) in the same call as the RGB conversion (PyAV: "
        "frame.to_ndarray(format='rgb24', width=W, height=H, interpolation='AREA'); "
        "ffmpeg -vf scale=W:H:flags=area); OpenCV's INTER_AREA on the RGB frame is another "
        "filter and gives other pixels",
        "crop": crop,
        "crop_resize": None
        if crop is None
        else "the central square of side s = min(H, W): top = (H - s) // 2, left = (W - s) // 2, "
        f"resized to the central {crop} x {crop} with OpenCV's cv2.resize on the RGB frame, "
        "INTER_AREA when it shrinks, INTER_LINEAR when it enlarges (plain slicing when s = "
        f"{crop}); nothing when the frame is already {crop} x {crop}",
        "values": "float32 x / 255, then (x - mean[c]) / std[c] per RGB channel",
        "mean": list(contract.mean),
        "std": list(contract.std),
        "window": f"{contract.frames} frames {contract.frame_stride} apart (after resampling)",
        "layout": contract.layout,
        "order": order,
        "dtype": "float32",
    }
    if contract.dtype == "float16":
        steps["values"] = "the store holds float16 frames normalised at build time: cast only"
    if contract.audio is not None:
        steps["audio"] = (
            f"a second input 'audio': the window's log-mel ({contract.audio['n_mels']} mels, "
            f"{contract.frames * contract.audio['columns_per_frame']} columns) from a store "
            "built with --audio"
        )
    if contract.frame_task is not None:
        steps["frame_task"] = _frame_task_words(contract)
    if inputs is not None:
        steps["inputs"] = inputs
    return steps


def _frame_task_words(contract: InputContract) -> str:
    """What a restoring model's window holds and what it outputs (the recipe's step)."""
    ft = contract.frame_task
    assert ft is not None
    k = contract.frames // 2
    if ft["kind"] == "interpolation":
        return (
            f"interpolation: frame {k} of the window (its middle) is the one to make: set it to "
            f"0 before the values step; the output 'logits' (B, 3, H, W) is that frame, RGB in "
            "[0, 1] (clip, then x 255)"
        )
    return (
        f"super-resolution: the window is low-resolution (training made it from stored frames "
        f"{ft['factor']} times smaller with the {ft['filter']} filter, before the values step); "
        f"the output 'logits' (B, 3, {ft['factor']}h, {ft['factor']}w) is its frame {k} "
        "upscaled, RGB in [0, 1] (clip, then x 255)"
    )


def recipe_text(recipe: dict) -> str:
    """:func:`preprocessing_recipe` as numbered lines (the ``preprocessing`` metadata)."""
    order = (
        ("decode", None),
        ("resample", None),
        ("store_resize", "store_size"),
        ("crop_resize", "crop"),
        ("values", None),
        ("window", None),
        ("order", "layout"),
        ("audio", None),
        ("frame_task", None),
    )
    lines: list[str] = []
    for key, value in order:
        if recipe.get(key) is None:
            continue
        head = f"{key} {recipe[value]}" if value else key
        lines.append(f"{len(lines) + 1}. {head}: {recipe[key]}")
    lines.append(f"{len(lines) + 1}. mean {recipe['mean']}, std {recipe['std']}, dtype float32")
    return "\n".join(lines)


def sidecar_path(path: str | os.PathLike) -> Path:
    """``<model>.onnx.json``: the sidecar of the ONNX file at ``path``."""
    path = Path(path)
    return path.with_name(path.name + ".json")


def _sidecar(path: Path, report: ExportReport, loaded: InferenceModel | None) -> Path:
    meta: dict = {
        "onnx": path.name,
        "model": report.model,
        "layout": report.layout,
        "inputs": report.inputs,
        "output": {report.output_name: report.output_shape},
        "max_abs_diff": report.max_abs_diff,
        "input_note": "float32 frames, (x / 255 - mean) / std per channel, in the layout "
        f"above: {LAYOUT_ORDER.get(report.layout, report.layout)}",
    }
    if loaded is not None:
        recipe = preprocessing_recipe(loaded.contract, report.inputs)
        meta.update(
            {
                "input_note": "float32 (the graph's inputs above), prepared from RGB frames as "
                "'preprocessing' says",
                "preprocessing": recipe,
                "checkpoint": loaded.path,
                "task": loaded.task,
                "classes": loaded.classes,
                "contract": loaded.contract.to_dict(),
            }
        )
        _record_metadata(path, loaded, recipe)
    side = sidecar_path(path)
    side.write_text(json.dumps(meta, indent=1) + "\n")
    return side


def _onnx_metadata(loaded: InferenceModel, recipe: dict) -> dict[str, str]:
    """The ONNX metadata of a checkpoint's export (module doc): the contract and the
    preprocessing recipe as JSON, the recipe as text, and the plain :data:`METADATA_KEYS`."""
    c = loaded.contract
    return {
        "hyperframes.contract": json.dumps(c.to_dict()),
        "hyperframes.preprocessing": json.dumps(recipe),
        "preprocessing": recipe_text(recipe),
        "classes": json.dumps(list(loaded.classes)),
        "task": loaded.task,
        "layout": c.layout,
        "frames": json.dumps(c.frames),
        "frame_stride": json.dumps(c.frame_stride),
        "fps": json.dumps(c.fps),
        "mean": json.dumps(list(c.mean)),
        "std": json.dumps(list(c.std)),
    }


def _record_metadata(path: Path, loaded: InferenceModel, recipe: dict) -> None:
    """Write :func:`_onnx_metadata` into the ONNX file's ``metadata_props`` (replacing entries of
    the same keys); external weights stay where the exporter put them."""
    import onnx

    proto = onnx.load(str(path), load_external_data=False)
    values = _onnx_metadata(loaded, recipe)
    kept = [(p.key, p.value) for p in proto.metadata_props if p.key not in values]
    del proto.metadata_props[:]
    for key, value in [*kept, *values.items()]:
        entry = proto.metadata_props.add()
        entry.key, entry.value = key, value
    onnx.save(proto, str(path))
