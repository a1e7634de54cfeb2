"""How an exported graph's input is prepared, written beside the graph.

``<model>.onnx.json`` next to the ``.onnx`` (:func:`write_sidecar`) records the contract
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

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._core._contract import InputContract
from ._load import InferenceModel

if TYPE_CHECKING:
    from ._export import ExportReport

__all__ = ["METADATA_KEYS", "preprocessing_recipe", "recipe_text", "sidecar_path", "write_sidecar"]

#: the plain metadata keys written beside ``hyperframes.contract``
METADATA_KEYS = ("classes", "task", "layout", "frames", "frame_stride", "fps", "mean", "std")

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


def write_sidecar(path: Path, report: ExportReport, loaded: InferenceModel | None) -> Path:
    """Write ``<model>.onnx.json`` for the export ``report`` describes (with a checkpoint: its
    contract, classes and recipe, also recorded in the ONNX file's metadata)."""
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
    import onnx  # deferred: optional/heavy dependency

    proto = onnx.load(str(path), load_external_data=False)
    values = _onnx_metadata(loaded, recipe)
    kept = [(p.key, p.value) for p in proto.metadata_props if p.key not in values]
    del proto.metadata_props[:]
    for key, value in [*kept, *values.items()]:
        entry = proto.metadata_props.add()
        entry.key, entry.value = key, value
    onnx.save(proto, str(path))
