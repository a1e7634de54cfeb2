"""Text from files shown to people: file names and labels may hold any byte."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

__all__ = ["did_you_mean", "model_name", "printable", "printable_lines", "unlisted_line"]


def printable(text: str, *, keep: str = "\n") -> str:
    """``text`` with every character a terminal would not show as itself written as an
    escape: control characters (an ESC from a file name would drive the terminal) as
    ``\\x1b``, and a byte of a file name that is not UTF-8 (decoded by Python as a lone
    surrogate) as ``\\xff``. The characters of ``keep`` stay as they are. The result is
    valid UTF-8 (HDF5 attributes need it too)."""
    if all(c.isprintable() or c in keep for c in text):
        return text
    out = []
    for c in text:
        if c.isprintable() or c in keep:
            out.append(c)
        elif "\udc80" <= c <= "\udcff":  # os.fsdecode's surrogateescape of byte 0x80..0xff
            out.append(f"\\x{ord(c) - 0xDC00:02x}")
        else:
            out.append(c.encode("unicode_escape").decode("ascii"))
    return "".join(out)


def printable_lines(lines: Iterable[str]) -> str:
    """``lines`` joined by newlines, each made :func:`printable` whole: a newline (or an ESC)
    inside a line, from a file name or a label, is written as an escape, so a name can neither
    drive the terminal nor forge a line of a report."""
    return "\n".join(printable(line, keep="") for line in lines)


def model_name(model: object) -> str:
    """The name a message gives ``model``: its registry name, else its class name."""
    return getattr(model, "registry_name", None) or type(model).__name__


def unlisted_line(count: int, listed: int, file: str | None) -> list[str]:
    """The line after the first ``listed`` of ``count`` rows (a build's failures), saying how
    many more there are and where ``file`` lists every one; none when every one is listed."""
    if count <= listed:
        return []
    where = f"every one is in {file}" if file else f"the first {listed} are listed"
    return [f"  ... and {count - listed} more ({where})"]


def did_you_mean(name, choices, prefix: str = "", *, n: int = 1) -> str:
    """``"; did you mean <prefix><close>?"`` for the closest of ``choices`` (the ``n``
    closest, joined by "or"), or ``""``."""
    close = difflib.get_close_matches(str(name), [str(c) for c in choices], n=n)
    return f"; did you mean {' or '.join(prefix + c for c in close)}?" if close else ""
