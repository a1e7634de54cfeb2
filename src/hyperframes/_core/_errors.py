"""The one error shape of hyperframes.

Every error says what was wrong (the value, the file), what is allowed, and what to try::

    HyperframesError
    ├── InputError      a source video / annotation / path given by the user is unusable
    ├── DecodeError     a decoder could not read a video (carries the decoder's own message)
    ├── StoreError      a store is missing, corrupt, locked, incomplete or built differently
    ├── ConfigError     an option or configuration value is unknown or out of range
    ├── DataError       a sampling / layout / batching request cannot be satisfied
    └── Interrupted     Ctrl-C or SIGTERM stopped long work; what was finished is kept
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence

__all__ = [
    "ConfigError",
    "DataError",
    "DecodeError",
    "HyperframesError",
    "InputError",
    "Interrupted",
    "StoreError",
    "require_extra",
]


class HyperframesError(Exception):
    """Base class of every error hyperframes raises on purpose."""


class InputError(HyperframesError, ValueError):
    """A user-supplied input (path, annotation line, video) cannot be used."""


class DecodeError(HyperframesError):
    """A decoder failed on a video; the message names the file and the decoder's own words."""


class StoreError(HyperframesError):
    """A store is missing, corrupt, truncated, locked, incomplete, or was built with other options."""


class ConfigError(HyperframesError, ValueError):
    """An option has an unknown name, a wrong type or a value out of range."""


class DataError(HyperframesError, ValueError):
    """A sampling, layout or batching request cannot be satisfied by the data."""


class Interrupted(HyperframesError):
    """Ctrl-C or SIGTERM stopped a build or a training run; what was finished is kept and the
    message says how to resume."""


#: the name this project is installed by: ``pip install hyperframes-video`` (the name
#: ``hyperframes`` on PyPI is an unrelated project); the package and the command are ``hyperframes``
DISTRIBUTION = "hyperframes-video"


def install_command(extra: str) -> str:
    """The pip command that installs the optional ``extra``: ``pip install
    'hyperframes-video[s3]'``."""
    return f"pip install '{DISTRIBUTION}[{extra}]'"


def require_extra(modules: Sequence[str], extra: str, what: str) -> None:
    """:class:`ConfigError` naming, in one line, every one of ``modules`` not importable here
    and the pip extra that installs them all; nothing when they all are."""
    missing = [m for m in modules if importlib.util.find_spec(m.split(".")[0]) is None]
    if missing:
        raise ConfigError(
            f"{what} needs {', '.join(modules)}; not installed here: {', '.join(missing)}. "
            f"Install them with: {install_command(extra)}"
        )
