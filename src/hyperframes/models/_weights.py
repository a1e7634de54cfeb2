"""Pretrained weights from a local file, mapped into any registered model.

Accepted files (always read with ``torch.load(..., weights_only=True)``, never downloaded):

* a plain state dict: torchvision / timm 2D or 3D networks, or a hyperframes model;
* a hyperframes checkpoint: a dict whose ``"model"`` (or ``"state_dict"``) entry is one; its
  checksum is checked first (:mod:`hyperframes._core._checksum`), a damaged one refused.

A state dict of the very same model loads as is. A foreign one goes through
``model.map_pretrained``: keys get the model's prefix (``backbone.`` ...), a 2D network's
3-channel first conv is inflated for channel-fusion models (repeated T times, divided by
T), classifier heads whose class count differs stay freshly initialised. Anything else
that does not fit -- keys the model lacks, keys the file lacks, shapes that differ --
raises :class:`~hyperframes.ConfigError` naming the file and the first offending keys.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, runtime_checkable

import torch
from torch import Tensor, nn

from .._core._checksum import (
    CHECKPOINT_FORMAT,
    checkpoint_file_problem,
    checksum_problem,
    note_unchecked,
)
from .._core._errors import ConfigError
from .._core._text import model_name

__all__ = ["LoadReport", "adapt_state_dict", "inflate_weight", "load_pretrained", "read_state_dict"]

_SHOW = 5  # how many offending keys an error lists


@runtime_checkable
class _MapsPretrained(Protocol):
    """A model with its own ``map_pretrained`` (``VideoModel`` has one; any module may)."""

    def map_pretrained(self, state_dict: Mapping[str, Tensor]) -> dict[str, Tensor]: ...


@dataclass(frozen=True)
class LoadReport:
    """What :func:`load_pretrained` did."""

    path: Path
    loaded: int
    skipped: list[str] = field(default_factory=list)  # optional keys whose shape differed
    initialised: list[str] = field(default_factory=list)  # model keys the file did not hold


def read_state_dict(path: str | Path) -> dict[str, Tensor]:
    """Read a state dict (or a checkpoint holding one under ``"model"``) from a local file."""
    p = Path(path).expanduser()
    if not p.is_file():
        raise ConfigError(
            f"pretrained weights file not found: {p}. Give the path of a local state dict "
            "(.pt/.pth saved with torch.save); hyperframes never downloads weights"
        )
    costly = checkpoint_file_problem(p)  # bounded before torch.load inflates anything
    if costly is not None:
        raise ConfigError(f"pretrained weights {p}: {costly}; they are not loaded")
    try:
        obj = torch.load(p, map_location="cpu", weights_only=True)
    except Exception as e:
        raise ConfigError(
            f"cannot read pretrained weights from {p}: {e}. Expected a state dict or a "
            "checkpoint dict saved with torch.save (loaded with weights_only=True)"
        ) from e
    if isinstance(obj, Mapping) and obj.get("format") == CHECKPOINT_FORMAT:
        problem = checksum_problem(obj)  # a hyperframes checkpoint: its weights are checked
        if problem is not None:
            raise ConfigError(
                f"pretrained weights {p}: {problem}; they are not loaded. Use another "
                "checkpoint of that run (last.prev.pt, best.pt) or copy this one again"
            )
        if "checksum" not in obj:
            note_unchecked(p)
    if isinstance(obj, Mapping):
        for key in ("model", "state_dict"):
            if isinstance(obj.get(key), Mapping):
                obj = obj[key]
                break
    if (
        not isinstance(obj, Mapping)
        or not obj
        or not all(isinstance(k, str) and isinstance(v, Tensor) for k, v in obj.items())
    ):
        raise ConfigError(
            f"{p} holds no state dict (a non-empty mapping of names to tensors, or a "
            f"checkpoint with one under 'model'); found {type(obj).__name__}"
        )
    sd = dict(obj)
    for wrapper in ("module.", "_orig_mod."):  # DistributedDataParallel, torch.compile
        if all(k.startswith(wrapper) for k in sd):
            sd = {k[len(wrapper) :]: v for k, v in sd.items()}
    return sd


def inflate_weight(weight: Tensor, frames: int) -> Tensor:
    """A (O, C, k, k) conv weight made to read C*T frame-major channels: repeat T, divide T.

    On T identical frames the inflated conv answers exactly as the original on one frame.
    """
    return weight.repeat(1, frames, *([1] * (weight.dim() - 2))) / frames


def adapt_state_dict(
    state_dict: Mapping[str, Tensor],
    own: Mapping[str, Tensor],
    *,
    prefix: str = "",
    rename: Iterable[tuple[str, str]] = (),
    drop: Iterable[str] = (),
    inflate: Iterable[str] = (),
    frames: int = 1,
) -> dict[str, Tensor]:
    """Map ``state_dict`` keys onto the model keys ``own`` (see the module doc)."""
    rename = tuple(rename)
    drop = tuple(drop)
    inflate = set(inflate)
    out: dict[str, Tensor] = {}
    for key, value in state_dict.items():
        target = key
        if key not in own:
            if key.startswith(drop):
                continue
            for src, dst in rename:
                if key.startswith(src):
                    target = dst + key[len(src) :]
                    break
            else:
                target = prefix + key
        mine = own.get(target)
        if (
            target in inflate
            and mine is not None
            and value.dim() == mine.dim() >= 3
            and mine.shape[1] == value.shape[1] * frames
            and mine.shape[0] == value.shape[0]
            and mine.shape[2:] == value.shape[2:]
        ):
            value = inflate_weight(value, frames)
        out[target] = value
    return out


def load_pretrained(model: nn.Module, path: str | Path) -> LoadReport:
    """Load the weights in ``path`` into ``model`` (in place) or raise ConfigError."""
    p = Path(path).expanduser()
    sd = read_state_dict(p)
    own = model.state_dict()
    if set(sd) == set(own):
        candidate = dict(sd)
    elif isinstance(model, _MapsPretrained):  # hasattr(model, "map_pretrained")
        candidate = model.map_pretrained(sd)
    else:
        candidate = dict(sd)
    optional = tuple(getattr(model, "pretrained_optional", ()))

    def is_optional(key: str) -> bool:
        return bool(optional) and key.startswith(optional)

    unexpected = [k for k in candidate if k not in own]
    mismatched = [
        k for k in candidate if k in own and tuple(candidate[k].shape) != tuple(own[k].shape)
    ]
    skipped = [k for k in mismatched if is_optional(k)]
    bad_shapes = [k for k in mismatched if not is_optional(k)]
    missing = [k for k in own if k not in candidate and not is_optional(k)]
    if unexpected or bad_shapes or missing:
        name = model_name(model)
        layout = getattr(model, "layout", "?")
        parts = []
        if bad_shapes:
            shown = ", ".join(
                f"{k}: file {list(candidate[k].shape)} vs model {list(own[k].shape)}"
                for k in bad_shapes[:_SHOW]
            )
            parts.append(f"{len(bad_shapes)} with mismatched shapes ({shown})")
        if unexpected:
            parts.append(f"{len(unexpected)} the model lacks ({_first(unexpected)})")
        if missing:
            parts.append(f"{len(missing)} the file lacks ({_first(missing)})")
        raise ConfigError(
            f"pretrained weights {p} do not fit model {name!r} (layout {layout}): "
            + "; ".join(parts)
            + ". Was the file saved from another architecture, or with other options "
            "(frames, in_channels, backbone)?"
        )
    for k in skipped:
        del candidate[k]
    model.load_state_dict(candidate, strict=False)
    initialised = [k for k in own if k not in candidate]
    return LoadReport(path=p, loaded=len(candidate), skipped=skipped, initialised=initialised)


def _first(keys: list[str]) -> str:
    more = f", ... {len(keys) - _SHOW} more" if len(keys) > _SHOW else ""
    return ", ".join(keys[:_SHOW]) + more
