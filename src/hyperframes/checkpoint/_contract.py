"""Where an input contract comes from (:func:`resolve_contract`): a training config and its
store, a checkpoint (its ``contract`` entry, or for older checkpoints their config and
``input`` entry), or a contract with overrides. The contract's value type, its checks and
:meth:`~hyperframes._core._contract.InputContract.prepare` live in ``_core``; resolving one
needs the model registry, the store and the dataset's audio options, so it lives here.

A checkpoint is untrusted input: every value is bounded
(:meth:`~hyperframes._core._contract.InputContract.from_dict`)."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .._core._contract import _FIELDS, IMAGENET_MEAN, IMAGENET_STD, InputContract, check_frame_size
from .._core._contract_extra import decoder_of
from .._core._errors import ConfigError
from .._core._limits import MAX_FPS
from .._core._sizes import DEFAULT_SIZE, parse_size
from .._core._tasks import task_traits
from ..data import resolve_audio
from ..models import get_spec
from ..store import open_store

__all__ = ["model_takes_audio", "resolve_contract"]


def resolve_contract(source: Any, *, store: Any = None, **overrides: Any) -> InputContract:
    """The :class:`InputContract` of ``source`` with ``overrides`` (field values; ``size`` and
    ``fps`` as a user gives them: ``"128"``/``"none"``, ``0`` = every frame; None = keep).

    ``source``: an :class:`InputContract`; a training config (``hyperframes.train.Config``,
    with ``store``, the opened store or its path, for the frame size and rate it built); or a
    checkpoint dict (its ``contract`` entry; older checkpoints: their ``config`` and
    ``input`` entry, else the store at ``config.data.store`` if it is there, else defaults).
    """
    overrides = {k: v for k, v in overrides.items() if v is not None}
    if isinstance(source, InputContract):
        base = source
    elif isinstance(source, Mapping):
        base = _from_checkpoint(source)
    elif hasattr(source, "data") and hasattr(source, "model"):
        base = _from_config(source, store)
    else:
        raise ConfigError(
            f"resolve_contract takes an InputContract, a training config or a checkpoint dict, "
            f"got {type(source).__name__}"
        )
    return _override(base, overrides)


def _override(base: InputContract, overrides: dict) -> InputContract:
    if not overrides:
        return base
    unknown = sorted(set(overrides) - set(_FIELDS))
    if unknown:
        raise ConfigError(f"resolve_contract: unknown fields {unknown}; allowed: {_FIELDS}")
    sources = []
    if "size" in overrides:
        size = overrides["size"]
        check_frame_size(size, "frame size")
        overrides["size"] = None if parse_size(size) is None else str(size).strip().lower()
        sources.append("size argument")
    if "fps" in overrides:
        overrides["fps"] = _fps(overrides["fps"], "fps")
        sources.append("fps argument")
    kept = [s for s in base.source.split(", ") if s and not _names_field(s, overrides)]
    return base.replace(**overrides, source=", ".join(sources + kept))


def _names_field(source: str, overrides: dict) -> bool:
    return ("size" in overrides and "size" in source) or ("fps" in overrides and "fps" in source)


def is_frame_rate(value: Any) -> bool:
    """Whether ``value`` is a frame rate a checkpoint may record: a number from 0 (every decoded
    frame) to :data:`MAX_FPS`."""
    return (
        not isinstance(value, bool)
        and isinstance(value, int | float)
        and math.isfinite(value)
        and 0 <= value <= MAX_FPS
    )


def _fps(value: Any, where: str) -> float | None:
    if value is None:
        return None
    if not is_frame_rate(value):
        raise ConfigError(
            f"{where} must be a number >= 0 and <= {MAX_FPS:g} (0 = every decoded frame), "
            f"got {value!r:.80}"
        )
    return float(value) if value > 0 else None


def _frame_stride(options: Any, val_options: Any) -> Any:
    """The stride the run's windows were sampled at (validation's first, as eval samples)."""
    for opts in (val_options, options):
        if isinstance(opts, Mapping) and "stride" in opts:
            return opts["stride"]
    return 1


def _manifest(store: Any) -> dict:
    """The manifest of ``store`` (an opened store, or the path of one), {} if unknown."""
    if store is None:
        return {}
    manifest = getattr(store, "manifest", None)
    if isinstance(manifest, Mapping):
        return dict(manifest)
    p = Path(str(store))
    try:
        if p.is_dir():  # a store folder: its manifest, nothing else
            manifest = json.loads((p / "manifest.json").read_text())
        elif p.is_file():  # an HDF5 store keeps the manifest in its attributes
            with open_store(p) as h5:
                manifest = h5.manifest
        else:
            return {}
    except Exception:  # a store that is not there or not readable: fall back to defaults
        return {}
    return dict(manifest) if isinstance(manifest, Mapping) else {}


def _manifest_or_none(store: Any, data: Any) -> dict:
    return _manifest(store if store is not None else data.store)


def _store_entry(manifest: Mapping) -> tuple[dict, dict]:
    build = manifest.get("build")
    norm = manifest.get("normalize")
    return (
        dict(build) if isinstance(build, Mapping) else {},
        dict(norm) if isinstance(norm, Mapping) else {},
    )


def _from_config(cfg: Any, store: Any) -> InputContract:
    d = cfg.data
    spec = get_spec(cfg.model.name)
    where = getattr(store, "path", store) if store is not None else d.store
    manifest = _manifest_or_none(store, d)
    build, norm = _store_entry(manifest)
    mean, std, dtype = d.mean, d.std, "uint8"
    if build.get("dtype") == "float16":  # frames normalised at build time, with its mean/std
        dtype = "float16"
        mean, std = norm.get("mean", mean), norm.get("std", std)
    return _make(
        tracks={
            **_tracks_of(cfg, spec),
            "decoder": decoder_of(manifest),
            "frame_task": _frame_task_of(cfg, spec),
        },
        frames=d.frames,
        layout=spec.layout if d.layout == "auto" else d.layout,
        task=spec.task,
        crop=d.augmentation.size,
        stride=_frame_stride(d.sampler_options, d.val_sampler_options),
        size=str(build.get("size", "none")),  # a store that does not say: its frames as they are
        fps=build.get("fps") or 0.0,
        mean=mean,
        std=std,
        dtype=dtype,
        classes=(),
        source=f"store {where}",
    )


def _frame_task_of(cfg: Any, spec: Any) -> dict | None:
    """The contract's ``frame_task`` from a training config (None for other tasks)."""
    traits = task_traits(getattr(cfg.train, "task", None) or spec.task)
    if not traits.restores_frames:
        return None
    if traits.downscaled:
        down = cfg.data.downscale
        return {"kind": traits.name, "factor": down.factor, "filter": down.filter}
    return {"kind": traits.name}


def model_takes_audio(spec: Any) -> bool:
    """Whether a registered model takes a log-mel beside the video (its options name
    ``n_mels``: the audio-visual family)."""
    return "n_mels" in spec.options()


def _tracks_of(cfg: Any, spec: Any) -> dict:
    """The contract's tracks from a training config: ``flow``, ``register`` and (for a model
    that takes audio) the log-mel parameters of ``data.audio_options``."""
    d = cfg.data
    audio = None
    if model_takes_audio(spec) and getattr(d, "audio", None) is not None:
        opts = resolve_audio(dict(getattr(d, "audio_options", {}) or {}))
        assert opts is not None
        audio = opts.to_dict()
    return {
        "flow": bool(getattr(d, "flow", False)),
        "register": getattr(d, "register", None),
        "audio": audio,
    }


def _make(
    *,
    frames,
    layout,
    task,
    crop,
    stride,
    size,
    fps,
    mean,
    std,
    dtype,
    classes,
    source,
    tracks=None,
):
    check_frame_size(size, "frame size")
    return InputContract(
        **(tracks or {}),
        frames=frames,
        layout=layout,
        frame_stride=stride,
        fps=_fps(fps, "fps"),
        size=None if parse_size(size) is None else str(size).strip().lower(),
        # every task's eval crop (masked_video, multilabel too); segmentation sees whole
        # frames (its config refuses data.augmentation.size, as the frame tasks' do)
        crop=None if task_traits(task).per_pixel else crop,
        mean=mean,
        std=std,
        dtype=dtype,
        classes=classes,
        source=source,
    )


def _from_checkpoint(state: Mapping) -> InputContract:
    if "contract" in state:
        c = InputContract.from_dict(state["contract"])
        crop = _lost_crop(state) if c.crop is None else None
        if crop is not None:  # written before every task kept its crop (issue 35)
            return c.replace(crop=crop, source="checkpoint contract, crop from its config")
        return c.replace(source="checkpoint contract")
    return _from_old_checkpoint(state)


def _lost_crop(state: Mapping) -> Any:
    """The eval crop a masked-video checkpoint's contract left out, from its config's
    ``data.augmentation.size`` (contracts kept the crop for classification only)."""
    config = state.get("config")
    if not task_traits(state.get("task") or "classification").reconstructs:
        return None
    if not isinstance(config, Mapping):
        return None
    aug = _section(config, "data").get("augmentation")
    return aug.get("size") if isinstance(aug, Mapping) else None


def _section(config: Mapping, name: str) -> Mapping:
    sec = config.get(name) or {}
    if not isinstance(sec, Mapping):
        raise ConfigError(f"config.{name}: expected a mapping, got {type(sec).__name__}")
    return sec


def _from_old_checkpoint(state: Mapping) -> InputContract:
    """Checkpoints written before the contract: their config and ``input`` entry
    (``{"size", "fps"}``), else the store at ``config.data.store`` if it is there."""
    config = state.get("config")
    if not isinstance(config, Mapping):
        config = {}
    data, model = _section(config, "data"), _section(config, "model")
    name = model.get("name") or state.get("model_name")
    try:
        spec = get_spec(name) if isinstance(name, str) else None
    except ConfigError:
        spec = None
    layout = data.get("layout") or state.get("layout") or "auto"
    if layout == "auto":
        layout = spec.layout if spec is not None else "temporal"
    task = state.get("task") or (spec.task if spec is not None else "classification")
    aug = data.get("augmentation") or {}
    recorded = state.get("input") if isinstance(state.get("input"), Mapping) else None
    build, _ = _store_entry({} if recorded else _manifest(data.get("store")))
    if recorded and "size" in recorded:
        size, source = recorded["size"], ["checkpoint input.size"]
    elif build and "size" in build:
        size, source = build["size"], [f"store {data.get('store')}"]
    else:
        size, source = DEFAULT_SIZE, ["default size 128"]
    if recorded and "fps" in recorded:
        fps, src = _fps(recorded["fps"], "checkpoint input.fps"), "checkpoint input.fps"
    elif build and "fps" in build:
        fps, src = _fps(build["fps"], "store fps"), f"store {data.get('store')}"
    else:
        fps, src = None, "default: every frame"
    if src not in source:
        source.append(src)
    classes = state.get("classes") or ()
    return _make(
        frames=data.get("frames", state.get("frames", 8)),
        layout=layout,
        task=task,
        crop=aug.get("size") if isinstance(aug, Mapping) else None,
        stride=_frame_stride(data.get("sampler_options"), data.get("val_sampler_options")),
        size=size,
        fps=fps or 0.0,
        mean=data.get("mean", IMAGENET_MEAN),
        std=data.get("std", IMAGENET_STD),
        dtype="uint8",
        classes=[str(c) for c in classes] if isinstance(classes, list | tuple) else classes,
        source=", ".join(source),
    )
