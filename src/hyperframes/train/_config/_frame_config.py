"""Config checks of the frame tasks (``interpolation``, ``super_resolution``); no torch, so a
refused config fails before torch is imported."""

from __future__ import annotations

from ..._core._errors import ConfigError
from ..._core._tasks import task_traits

__all__ = ["check_frame_config"]


def check_frame_config(cfg, spec) -> None:
    """Odd T for interpolation; whole frames, no label options for both."""
    traits = task_traits(cfg.train.task or spec.task)
    if not traits.restores_frames:
        return
    task = traits.name
    t = cfg.data.frames
    if traits.middle_frame and (t < 3 or t % 2 == 0):
        raise ConfigError(
            f"data.frames: {t} but train.task interpolation needs an odd window of 3 frames or "
            "more (the middle frame is the target, the frames either side the input); "
            f"allowed: 3, 5, 7, ... (e.g. {max(3, t + 1 if t % 2 == 0 else 3)})"
        )
    if cfg.train.balanced or cfg.train.class_weights is not None:
        raise ConfigError(
            f"train.balanced / train.class_weights: the {task} task has no classes; allowed: "
            "false / null"
        )
    if cfg.data.augmentation.size is not None or cfg.data.augmentation.color_jitter:
        raise ConfigError(
            f"data.augmentation.size / color_jitter: the {task} task restores whole frames "
            "as they are stored; allowed: null / 0 (hflip is applied to input and target)"
        )
    if cfg.eval.crops != 1:
        raise ConfigError(f"eval.crops: {task} is evaluated on whole frames; allowed: 1")
    if cfg.data.flow or cfg.data.audio is not None or cfg.data.register is not None:
        raise ConfigError(
            f"data.flow / data.audio / data.register: the {task} models take frames only; "
            "allowed: false / null / null"
        )
    if cfg.model.num_classes not in (None, 3):
        raise ConfigError(
            f"model.num_classes: {cfg.model.num_classes} but a {task} model outputs the 3 RGB "
            "channels; allowed: null or 3"
        )
