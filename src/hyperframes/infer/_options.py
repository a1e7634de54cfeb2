""":func:`~hyperframes.infer.predict_video`'s options beyond the everyday ones, in two groups.

``predict_video(checkpoint, video, out=..., stride=..., batch_size=..., device=...)`` takes
what most calls set by name; the rest is grouped by what it is about, one frozen, strict
model each (as the dataset's options are, :mod:`hyperframes.data`)::

    predict_video("best.pt", "long.mp4", stride=4,
                  reading=ReadingOptions(size="112", decoder="pyav"),
                  timeline=TimelineOptions(ema=0.7, annotate=True))

A group may be given as a mapping of its fields, and each option on its own as a keyword
(``ema=0.7``, as ``predict_video`` always took it): it goes to its group, replacing that field
of a group given beside it. An unknown keyword is a :class:`ConfigError` with a "did you
mean". The values are checked where they are used (the same messages as before).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import Field

from .._core._sizes import DEFAULT_MAX_GAP_SECONDS
from .._core._validate import Options, resolve_groups
from ._predictor import Short

__all__ = ["PREDICT_GROUPS", "ReadingOptions", "TimelineOptions", "predict_groups"]


class ReadingOptions(Options):
    """How the video is read into the model's windows."""

    size: Any = Field(None, description="frame size (None: the checkpoint's; '128', '112x112')")
    fps: Any = Field(None, description="frame rate (None: the checkpoint's; 0: every frame)")
    frames: Any = Field(
        None, description="the window's T (None: the model's; models that take any T)"
    )
    decoder: str | None = Field(None, description="the decoder (None: the model's store's)")
    reuse: Any = Field("auto", description="reuse frame features between windows (auto, False)")
    short: Short = Field(
        "error",
        description="a video shorter than a window: error or pad",
        json_schema_extra={
            "error": "short {value}: allowed: 'error' (refuse a video shorter than a window, as "
            "training does) or 'pad' (one window, its last frame repeated)"
        },
    )
    max_gap_seconds: float | None = Field(
        DEFAULT_MAX_GAP_SECONDS, description="frames further apart are not bridged"
    )


class TimelineOptions(Options):
    """What is written of the predictions."""

    ema: Any = Field(0.0, description="the weight of the past in the moving average of logits")
    top_k: int = Field(3, description="classes per row of the timeline")
    annotate: bool = Field(False, description="also write annotated.mp4")
    progress: bool = Field(False, description="a progress bar on stderr")
    reconstruct: bool = Field(False, description="a frame-task model's reconstruct mode")
    reconstructions: int | None = Field(
        None, description="windows a masked_video model reconstructs (None: up to 16)"
    )


#: keyword of predict_video -> its group's model
PREDICT_GROUPS: dict[str, type[Options]] = {"reading": ReadingOptions, "timeline": TimelineOptions}


def predict_groups(
    reading: Any, timeline: Any, keywords: Mapping[str, Any], *, others: tuple[str, ...]
) -> tuple[ReadingOptions, TimelineOptions]:
    """The two groups from what was given for them and the options given one by one."""
    groups = resolve_groups(
        PREDICT_GROUPS, {"reading": reading, "timeline": timeline}, keywords, others=others
    )
    r, t = groups["reading"], groups["timeline"]
    assert isinstance(r, ReadingOptions) and isinstance(t, TimelineOptions)
    return r, t
