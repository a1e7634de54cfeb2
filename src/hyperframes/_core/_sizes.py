"""Frame sizes as a user gives them, and the size they give a source frame.

``"128"`` is a short side (the other side keeps the aspect ratio), ``"112x96"`` an exact
height x width, ``"none"`` (or None) the frames as decoded. The store builds with it, the input
contract and the predictor resize with it: one reading of the text everywhere.
"""

from __future__ import annotations

import re

from ._errors import ConfigError

__all__ = [
    "DEFAULT_MAX_FRAMES",
    "DEFAULT_MAX_GAP_SECONDS",
    "DEFAULT_MAX_PIXELS",
    "DEFAULT_SIZE",
    "parse_size",
    "target_size",
]

#: the store's default frame size (``build_store``'s ``size``, ``hyperframes build --size``)
DEFAULT_SIZE = "128"
#: default decode pixel cap: passes 8K (7680x4320 = 33.2 MP) with room, refuses absurd frames
DEFAULT_MAX_PIXELS = 8192 * 8192
#: default per-video frame budget: a video that would store more fails (9 h at 30 fps)
DEFAULT_MAX_FRAMES = 1_000_000
#: default bound, in seconds, on the time between two frames that resampling bridges with
#: repeated frames; a longer gap is skipped and listed
DEFAULT_MAX_GAP_SECONDS = 5.0


def parse_size(size, *, where: str = "size") -> tuple[str, int, int] | None:
    """``"128"`` → ("short", 128, 128); ``"112x96"`` → ("exact", 112, 96); ``"none"``/None → None."""
    text = "none" if size is None else str(size).strip().lower()
    if text in ("none", "native", ""):
        return None
    if re.fullmatch(r"\d+", text) and int(text) > 0:
        return ("short", int(text), int(text))
    m = re.fullmatch(r"(\d+)x(\d+)", text)
    if m and int(m[1]) > 0 and int(m[2]) > 0:
        return ("exact", int(m[1]), int(m[2]))
    raise ConfigError(
        f"{where} {size!r} is not understood; use a short side (128), HxW (112x112) or none"
    )


def target_size(height: int, width: int, size: str | None) -> tuple[int, int] | None:
    """(H, W) of stored frames for a source of ``height`` × ``width``; None = unchanged."""
    spec = parse_size(size)
    if spec is None:
        return None
    kind, a, b = spec
    if kind == "exact":
        return (a, b)
    if height <= width:
        return (a, max(1, round(width * a / height)))
    return (max(1, round(height * a / width)), a)
