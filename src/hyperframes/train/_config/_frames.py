"""T that changes between batches (``data.frames: [8, 16]``) and the padding rule.

**Several T** (seed 001 section 6.4, remedy 3). ``data.frames: [8, 16]`` is read as
``data.frames: 16`` (the largest: what the loader reads, the model is built for and validation,
eval and the input contract use) with ``data.frame_choices: [8, 16]``. Each training batch
then takes one T of the choices, drawn from (seed, epoch, batch) only -- the same for any
number of data workers or processes, and on resume -- and keeps T consecutive frames of each
window, from an offset drawn the same way (:func:`narrow_batch`), so a T=8 batch sees frames
``frame_stride`` apart as an 8-frame window at evaluation does. Only models that take any T
can (CNN+LSTM, TSN, the 3D CNNs, the transformers); windows with flow, audio or registration
keep their T.

**Padding** (seed 001 section 6.3). A window padded under ``short="pad"`` repeats its last real
frame and marks it False in the batch's mask; the models of the ``temporal`` and ``keyframe``
layouts read the mask (masked means, attention masks, the LSTM's last real step). A 3D CNN or
a channel model cannot: its convolutions mix the repeated frames into every feature and
there is no place the mask could act without changing the network, so for them the config
(:func:`pad_refusal`) and the dataset refuse ``short="pad"``, saying why.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import torch

from ..._core._config_values import split_frame_list
from ..._core._errors import ConfigError
from ..._core._layouts import PAD_LEAKS
from ..._core._tasks import task_traits
from ...models import create, other_frames_refusal

__all__ = ["draw_frames", "narrow_batch", "pad_refusal", "split_frame_list"]


def check_frame_choices(cfg: Any, spec: Any) -> None:
    """``data.frame_choices`` against the model and the data (module doc)."""
    d = cfg.data
    choices = d.frame_choices
    if choices is None:
        return
    if not choices or max(choices) != d.frames:
        raise ConfigError(
            f"data.frame_choices: {choices} must end at data.frames={d.frames} (give the list "
            "in data.frames: [8, 16])"
        )
    tracks = [k for k in ("flow", "audio", "register") if getattr(d, k)]
    if tracks or not task_traits(spec.task).single_label:
        what = f"data.{tracks[0]}" if tracks else f"a {spec.task} model"
        raise ConfigError(
            f"data.frames: several T {choices} with {what}: the tracks and per-frame targets "
            "are made for one T; allowed: one integer"
        )

    options = {k: v for k, v in cfg.model.options.items() if k != "checkpointing"}
    with torch.device("meta"):  # shapes only: the model's own word on other T
        model = create(cfg.model.name, num_classes=2, frames=d.frames, **options)
    why = other_frames_refusal(model, choices[0])
    if why is not None:
        raise ConfigError(f"data.frames: {choices}: {why}")


def pad_refusal(cfg: Any, spec: Any) -> None:
    """:class:`ConfigError` when a sampler pads short videos (``short: pad``) for a model
    that ignores the mask (:data:`~hyperframes._core._layouts.PAD_LEAKS`)."""

    reason = PAD_LEAKS.get(spec.layout)
    if reason is None:
        return
    for key in ("sampler_options", "val_sampler_options"):
        opts = getattr(cfg.data, key)
        if isinstance(opts, Mapping) and opts.get("short") == "pad":
            raise ConfigError(
                f"data.{key}.short: pad: model {cfg.model.name!r} would learn from the padding "
                f"({reason}); allowed for it: error or drop (or a model that reads the mask: "
                "tsn_*, tsm_*, cnn_lstm, video_vit_tiny, timesformer_tiny)"
            )


def draw_frames(choices: list[int], seed: int, epoch: int, batch: int) -> tuple[int, float]:
    """(T, offset fraction in [0, 1)) of training batch ``batch`` of ``epoch``: a function of
    where training stands only (not of workers, processes or resuming)."""
    import numpy as np  # deferred: optional/heavy dependency

    seq = np.random.SeedSequence([seed, epoch, batch], spawn_key=(11,))
    rng = np.random.default_rng(seq)
    return int(choices[int(rng.integers(len(choices)))]), float(rng.random())


def narrow_batch(batch: Any, frames: int, offset: float) -> Any:
    """``batch`` (a :class:`~hyperframes.data.HyperframeBatch`, frames (B, T, C, H, W)) with
    ``frames`` consecutive frames of each window, starting at ``offset`` of the room left."""

    t = int(batch.frames.shape[1])
    if frames >= t:
        return batch
    start = min(int(offset * (t - frames + 1)), t - frames)
    span = slice(start, start + frames)
    return dataclasses.replace(batch, frames=batch.frames[:, span], mask=batch.mask[:, span])
