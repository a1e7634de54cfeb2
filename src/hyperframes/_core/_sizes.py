"""Frame sizes as a user gives them, and the size they give a source frame.

``"128"`` is a short side (the other side keeps the aspect ratio), ``"112x96"`` an exact
height x width, ``"none"`` (or None) the frames as decoded. The store builds with it, the input
contract and the predictor resize with it: one reading of the text everywhere.
"""

from __future__ import annotations

import re

from ._errors import ConfigError
from ._limits import MAX_SIDE

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
    """``"128"`` → ("short", 128, 128); ``"112x96"`` → ("exact", 112, 96); ``"none"``/None → None.
    Sides are at most :data:`~hyperframes._core._limits.MAX_SIDE` (``where`` names the option
    in errors)."""
    text = "none" if size is None else str(size).strip().lower()
    if text in ("none", "native", ""):
        return None
    m = re.fullmatch(r"0*(\d+)(?:x0*(\d+))?", text)
    if m and int(m[1][:12]) > 0 and int((m[2] or "1")[:12]) > 0:
        sides = m[1], m[2] or m[1]
        if max(len(sides[0]), len(sides[1])) > 9 or max(map(int, sides)) > MAX_SIDE:
            # every size drives an allocation: bounded here, before anything is made
            raise ConfigError(
                f"{where}: {str(size)[:40]!r} asks for frames of {sides[0][:12]} x "
                f"{sides[1][:12]} pixels; allowed: sides of at most {MAX_SIDE} (a short side "
                "128, HxW 112x112, or none)"
            )
        return ("exact" if m[2] else "short", int(sides[0]), int(sides[1]))
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
