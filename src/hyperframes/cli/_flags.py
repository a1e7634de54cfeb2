"""Library errors speak of parameters; on the command line, say the option the user typed.

A library error names the parameter it is about first (``codec must be one of raw, lz4, ...``,
``split 'tset' is not a split of ...``). When that parameter is an option of the command and the
user gave it, the command line prints it as the option (``--codec must be one of ...``); any
other message is printed as the library wrote it.
"""

from __future__ import annotations

import argparse
import re

__all__ = ["as_option"]

#: parameter names a library error starts with that differ from the option's destination
ALIASES = {"override": "overrides"}  # apply_overrides' "override 'k=v': ..." is --set


def as_option(message: str, parser: argparse.ArgumentParser, command: str, argv: list[str]):
    """``message`` with its leading parameter name said as the option of ``command`` (when
    ``argv`` gives that option)."""
    m = re.match(r"([a-z][a-z_]*)\b", message)
    if m is None:
        return message
    dest = ALIASES.get(m[1], m[1])
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for action in sub.choices[command]._actions:
        if action.dest != dest or not action.option_strings:
            continue
        given = [o for o in action.option_strings if any(a.split("=")[0] == o for a in argv)]
        return given[0] + message[m.end() :] if given else message
    return message
