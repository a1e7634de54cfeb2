"""JSON from files a user or a store gives: a document nesting deeper than Python's parser
follows (a crafted file) is our error naming the file, never a ``RecursionError``."""

from __future__ import annotations

import json

from ._errors import HyperframesError

__all__ = ["TOO_DEEP", "loads_json"]

#: what a too-deep document is said to be
TOO_DEEP = "nests deeper than a JSON reader follows (a crafted or corrupt file)"


def loads_json(
    raw: bytes | str, where: object, error: type[HyperframesError], *, hint: str, **kwargs
):
    """``json.loads(raw, **kwargs)``; a document nesting too deep raises ``error`` saying
    ``where`` (the file), that it nests too deep, and ``hint`` (what to do). Invalid JSON is
    the caller's to say (``json.JSONDecodeError`` passes through)."""
    try:
        return json.loads(raw, **kwargs)
    except RecursionError:
        raise error(f"{where}: {TOO_DEEP}; {hint}") from None
