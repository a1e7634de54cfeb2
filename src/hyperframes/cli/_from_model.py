"""Command-line options generated from a settings model, so that an option is declared once.

Each field of a model (``BuildOptions``) becomes one option: ``--field-name`` (or the flag its
``json_schema_extra`` names), its default the field's, its help the field's ``description``
followed by the default, its choices the field's ``Literal`` values, its type the field's
(``int``, ``float``); a ``bool`` field is a switch (``--audio``). A field marked ``cli: False``
belongs to the library only. What the command line takes differently from the model (``--stream
v:K``, choices read from a registry) is given to :func:`add_model_options` as ``overrides``.

The model is passed in by the caller: this module imports no model, and so no pydantic, until a
command that has one is being parsed.
"""

from __future__ import annotations

import argparse
import typing
from collections.abc import Mapping
from typing import Any

__all__ = ["add_model_options", "model_values"]


def add_model_options(
    parser: argparse.ArgumentParser,
    model,
    *,
    overrides: Mapping[str, dict] | None = None,
    skip: frozenset[str] = frozenset(),
) -> None:
    """One option of ``parser`` per field of ``model`` (but those named in ``skip``);
    ``overrides`` (field name → keywords of ``add_argument``) replaces what is derived, e.g.
    ``{"stream": {"type": video_stream}}``."""
    # deferred: the CLI loads a command's code when it runs
    from .._core._validate import field_type

    for name, field in model.model_fields.items():
        extra = field.json_schema_extra if isinstance(field.json_schema_extra, dict) else {}
        if extra.get("cli") is False or name in skip:
            continue
        base, _ = field_type(field)
        kwargs: dict[str, Any] = {"dest": name, "default": field.default}
        kwargs.update(_kind(base, field.default))
        flag = extra.get("flag") or "--" + name.replace("_", "-")
        if "metavar" in extra or "flag" in extra:  # as argparse names it from the flag
            kwargs["metavar"] = extra.get("metavar", flag[2:].replace("-", "_").upper())
        kwargs.update((overrides or {}).get(name, {}))
        kwargs["help"] = _help(field.description, field.default, kwargs)
        parser.add_argument(flag, **kwargs)


def model_values(args: argparse.Namespace, model) -> dict[str, Any]:
    """The values ``args`` holds for the fields of ``model`` (those the command line offers)."""
    return {name: getattr(args, name) for name in model.model_fields if hasattr(args, name)}


def _kind(base, default) -> dict[str, Any]:
    """How argparse takes a value of the type ``base``: a switch that is off by default is
    ``--name`` alone, one that is on also has ``--no-name``."""
    if base is bool:
        return {"action": "store_true" if default is False else argparse.BooleanOptionalAction}
    if typing.get_origin(base) is typing.Literal:
        values = list(typing.get_args(base))
        kind = type(values[0])
        return {"choices": values} if kind is str else {"choices": values, "type": kind}
    if base in (int, float):
        return {"type": base}
    return {}


def _help(description: str | None, default, kwargs: dict[str, Any]) -> str:
    """The field's description, then the choices argparse does not show (a registry's, behind a
    metavar) and the default."""
    notes = []
    if kwargs.get("choices") is not None and kwargs.get("metavar"):
        notes.append("one of %(choices)s")
    if default is not None and not isinstance(default, bool):
        said = f"{default:g}" if isinstance(default, float) else str(default)
        notes.append("default " + said.replace("%", "%%"))
    text = (description or "").replace("%", "%%")
    return f"{text} ({'; '.join(notes)})" if notes else text
