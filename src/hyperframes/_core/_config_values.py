"""The values of a possibly partial config, checked with the types and bounds of a config
file before anything is allocated: a training config's sections, and the config a checkpoint
carries (shared by ``train``, which loads configs, and ``checkpoint``, which reads them back).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from ._config_models import MAX_CLIPS, Config
from ._errors import ConfigError
from ._limits import MAX_FRAMES
from ._validate import show, validate_field
from ._yaml import check_value_tree

__all__ = [
    "MAX_BATCH_BYTES",
    "SECTIONS",
    "check_clips",
    "check_config_values",
    "check_field",
    "split_frame_list",
]

MAX_BATCH_BYTES = 64 << 30  # one batch of uint8 frames
SECTIONS = tuple(Config.model_fields)  # data, model, train, eval


def _section_model(model: type[BaseModel], name: str) -> type[BaseModel] | None:
    hint = model.model_fields[name].annotation
    return hint if isinstance(hint, type) and issubclass(hint, BaseModel) else None


def _batch_sizes(data, prefix: str = "") -> dict[str, int]:
    get = data.get if isinstance(data, Mapping) else lambda k: getattr(data, k, None)
    out = {f"{prefix}data.batch_size": get("batch_size") or 16}
    if get("val_batch_size"):
        out[f"{prefix}data.val_batch_size"] = get("val_batch_size")
    return out


def _check_batch_bytes(
    frames: int, batches: dict[str, int], frame_size: tuple[int, int, str] | None, prefix=""
) -> None:
    """One batch of uint8 frames, ``batch x frames x 3 x H x W``, must stay within
    :data:`MAX_BATCH_BYTES`; ``frame_size``: (H, W, the key that sets them), or None when the
    store decides (nothing to check here)."""
    if not frame_size:
        return
    height, width, size_key = frame_size
    for key, batch in batches.items():
        size = batch * frames * 3 * height * width
        if size > MAX_BATCH_BYTES:
            raise ConfigError(
                f"{key} x {prefix}data.frames x 3 x H x W ({size_key}) = {batch} x {frames} x "
                f"3 x {height} x {width} = {size / 2**30:.1f} GiB of uint8 frames per batch; "
                f"allowed: at most {MAX_BATCH_BYTES >> 30} GiB (lower {key}, "
                f"{prefix}data.frames or {size_key})"
            )


def check_config_values(
    raw: Mapping, *, prefix: str = "", frame_size: tuple[int, int, str] | None = None
) -> None:
    """Check the values a possibly partial config mapping holds (a checkpoint's ``config``)
    with the types and bounds of :func:`config_from_dict`, before anything is allocated.

    Keys that are absent are not required and unknown keys are let through (an older or
    newer checkpoint), but every known value present must be valid, and one batch must fit
    :data:`MAX_BATCH_BYTES`. ``prefix`` goes before the keys in messages (``"config."``);
    ``frame_size`` is (H, W, where from) when the config does not fix the frame size.
    """
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{prefix or 'config'}: expected a mapping of sections, got {show(raw)}")
    check_value_tree(raw)
    raw = split_frame_list(raw)
    for name in SECTIONS:
        if raw.get(name) is not None:
            _check_partial(f"{prefix}{name}", raw[name], _section_model(Config, name))
    data = raw.get("data") or {}
    size = (data.get("augmentation") or {}).get("size")
    if size:
        frame_size = (size, size, f"{prefix}data.augmentation.size")
    _check_batch_bytes(data.get("frames") or 8, _batch_sizes(data, prefix), frame_size, prefix)


def _check_partial(key: str, raw, model) -> None:
    """The known keys of the section ``raw``, each checked as ``model``'s field."""
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{key}: expected a mapping of keys to values, got {show(raw)}")
    for name in model.model_fields:
        if name not in raw:
            continue
        sub = _section_model(model, name)
        if sub is None:
            check_field(f"{key}.{name}", raw[name], model, name)
        elif raw[name] is not None:
            _check_partial(f"{key}.{name}", raw[name], sub)
    for opts in ("sampler_options", "val_sampler_options"):
        if isinstance(raw.get(opts), Mapping):
            check_clips(f"{key}.{opts}", raw[opts])


def check_field(key: str, value, owner: type[BaseModel], name: str):
    """``value`` checked as field ``name`` of the config section ``owner`` (its type and
    bounds) and reported as ``key`` (which ends with ``name``); returns the value as
    :func:`config_from_dict` keeps it."""
    where = key.removesuffix(name).removesuffix(".")
    value = list(value) if isinstance(value, tuple) else value
    return validate_field(owner, name, value, where=where)


def check_clips(key: str, options: Mapping) -> None:
    """A sampler's ``clips`` option (``key``: its options' key) within :data:`MAX_CLIPS`."""
    clips = options.get("clips")
    if isinstance(clips, int) and not isinstance(clips, bool) and clips > MAX_CLIPS:
        raise ConfigError(
            f"{key}.clips: out of range: {clips}; allowed: an integer >= 1 and <= {MAX_CLIPS}"
        )


def split_frame_list(raw: Any) -> Any:
    """``raw`` (a config mapping) with a list in ``data.frames`` turned into ``data.frames``
    (the largest) and ``data.frame_choices`` (the sorted distinct values); ``raw`` itself
    when ``data.frames`` is not a list. :class:`ConfigError` naming the key otherwise."""
    if not isinstance(raw, Mapping) or not isinstance(raw.get("data"), Mapping):
        return raw
    data = raw["data"]
    frames = data.get("frames")
    if not isinstance(frames, list | tuple):
        return raw
    ok = all(isinstance(t, int) and not isinstance(t, bool) for t in frames)
    if not frames or not ok or not all(1 <= t <= MAX_FRAMES for t in frames):
        raise ConfigError(
            f"data.frames: {list(frames)!r:.80} is not a list of frame counts; allowed: an "
            f"integer or a list of integers from 1 to {MAX_FRAMES}, e.g. [8, 16]"
        )
    if data.get("frame_choices") is not None:
        raise ConfigError(
            "data.frame_choices: set by a list in data.frames; give one of them, not both"
        )
    choices = sorted(set(frames))
    new_data = {**data, "frames": choices[-1], "frame_choices": choices}
    return {**raw, "data": new_data}
