"""One way to validate: settings declared as pydantic v2 models, errors in the house's words.

Configs, build options and the input contract declare their fields once, as :class:`Strict`
models (``Field`` bounds, ``Literal`` choices, no unknown keys). :func:`validate` runs a model
over a raw mapping and turns pydantic's first error into one line that names the key, what
was wrong, the value (cut short) and what is allowed, with a "did you mean" for a misspelt
key::

    train.lr: out of range: -1.0; allowed: a number > 0.0
    unknown key train.lrr; did you mean train.lr? (allowed keys in train: lr, epochs, ...)

A field's ``description`` is its help; it is quoted after what is allowed. A field that also
takes the word ``auto`` is typed ``X | Auto`` (or holds ``{"auto": True}`` in its
``json_schema_extra``); what it allows reads as X's, then ", or auto". :func:`validate_field`
checks one value as one field of a model (a partial mapping, one entry of a file).
"""

from __future__ import annotations

import types
import typing
from collections.abc import Mapping
from typing import Annotated, Any, Self

import annotated_types as at
from pydantic import BaseModel, ConfigDict, ValidationError, WrapValidator
from pydantic.fields import FieldInfo

from ._errors import ConfigError, HyperframesError
from ._text import did_you_mean

__all__ = [
    "Auto",
    "Number",
    "Options",
    "Strict",
    "allowed_text",
    "as_tuple",
    "did_you_mean",
    "error_text",
    "field_type",
    "resolve_groups",
    "show",
    "validate",
    "validate_field",
]

#: the word a field typed ``X | Auto`` takes besides an X ("decide for me")
Auto = typing.Literal["auto"]


class Strict(BaseModel):
    """A settings model: strict types (no ``"3"`` for 3, no ``true`` for 1), no unknown keys."""

    model_config = ConfigDict(strict=True, extra="forbid", arbitrary_types_allowed=False)


def show(value, limit: int = 200) -> str:
    """``repr(value)``, cut to ``limit`` characters (an error message quotes, it does not dump)."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


_TYPE_NAMES: dict[object, str] = {
    int: "an integer",
    float: "a number",
    str: "a string",
    bool: "true or false",
    dict: "a mapping",
}


def _type_name(hint) -> str:
    if hint in _TYPE_NAMES:
        return _TYPE_NAMES[hint]
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin is typing.Annotated:
        return _type_name(args[0])
    if origin is typing.Literal:
        return "one of " + ", ".join(str(c) for c in args)
    if origin in (list, tuple) and args:
        item = _type_name(args[0])
        if item.startswith("one of "):  # list[Literal[...]]
            return f"a list, each {item}"
        return f"a list of {item.split(' ', 1)[-1]}s"
    if origin in (typing.Union, types.UnionType):
        parts = [a for a in args if a is not type(None)]
        text = " or ".join(_type_name(a) for a in parts)
        return text + (" or null" if type(None) in args else "")
    if isinstance(hint, type) and issubclass(hint, BaseModel):
        return "a mapping"
    return getattr(hint, "__name__", str(hint))


def _bounds(metadata) -> list[str]:
    """``[">= 1", "<= 64"]`` from ``Ge``/``Gt``/``Le``/``Lt`` (or an ``Interval``)."""
    out = []
    for m in metadata:
        for attr, word in (("ge", ">="), ("gt", ">"), ("le", "<="), ("lt", "<")):
            if isinstance(m, at.BaseMetadata) and getattr(m, attr, None) is not None:
                out.append(f"{word} {getattr(m, attr)}")
    return out


def _length(metadata) -> int | None:
    for m in metadata:
        if isinstance(m, at.Len) and m.min_length == m.max_length:
            return m.min_length
        if isinstance(m, at.MinLen):
            return m.min_length
    return None


def _flat(metadata) -> list:
    """Constraint objects, with those inside a nested ``Field(...)`` taken out."""
    out: list = []
    for m in metadata:
        out += _flat(m.metadata) if isinstance(m, FieldInfo) else [m]
    return out


def _split(hint) -> tuple[object, list, bool]:
    """(the type without ``None`` and ``Annotated``, its constraints, whether null is allowed)."""
    nullable = False
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        args = typing.get_args(hint)
        rest = [a for a in args if a is not type(None)]
        nullable = len(rest) < len(args)
        if len(rest) == 1:
            inner, metadata, _ = _split(rest[0])
            return inner, metadata, nullable
    if origin is typing.Annotated:
        base, *metadata = typing.get_args(hint)
        return base, _flat(metadata), nullable
    return hint, [], nullable


def _without_auto(hint) -> tuple[object, bool]:
    """(``hint`` without an :data:`Auto` member, whether it had one)."""
    if typing.get_origin(hint) not in (typing.Union, types.UnionType):
        return hint, False
    args = typing.get_args(hint)
    rest = tuple(a for a in args if a != Auto)
    if len(rest) == len(args):
        return hint, False
    return (rest[0] if len(rest) == 1 else typing.Union[rest]), True  # noqa: UP007


def _describe(hint, metadata: list, extra: dict) -> str:
    hint, auto = _without_auto(hint)
    if auto:
        extra = {**extra, "auto": True}
    base, inner, nullable = _split(hint)
    metadata = _flat(metadata) + inner
    text = _type_name(base)
    is_list = typing.get_origin(base) in (list, tuple)
    length = _length(metadata) if is_list else None
    if length is not None:
        text += f" of length {length}"
    bounds = _bounds(metadata)
    if is_list:
        item = typing.get_args(base)[0] if typing.get_args(base) else None
        bounds += _bounds(_split(item)[1]) if item is not None else []
    if bounds:
        text += (" with values " if is_list else " ") + " and ".join(bounds)
    if extra.get("auto"):
        text += ", or auto"
    if nullable and "or null" not in text:
        text += ", or null"
    return text


def _list_in(hint):
    """The list type in ``hint`` (``list[str]`` of ``bool | list[str] | None``), or ``hint``."""
    base, _, _ = _split(hint)
    if typing.get_origin(base) in (typing.Union, types.UnionType):
        lists = [a for a in typing.get_args(base) if typing.get_origin(_split(a)[0]) is list]
        return _split(lists[0])[0] if lists else base
    return base


def allowed_text(field: FieldInfo, index: bool = False) -> str:
    """What a field allows, in words: ``an integer >= 1 and <= 64``, ``one of a, b``;
    ``index``: what one item of the (list) field allows."""
    extra = field.json_schema_extra if isinstance(field.json_schema_extra, dict) else {}
    if index:
        base = _list_in(field.annotation)
        args = typing.get_args(base)
        if args:
            return _describe(args[0], [], {})
    return _describe(field.annotation, list(field.metadata), extra)


_WHY = {
    "int_type": "expected an integer, got",
    "int_from_float": "expected an integer, got",
    "int_parsing": "expected an integer, got",
    "float_type": "expected a number, got",
    "float_parsing": "expected a number, got",
    "finite_number": "expected a finite number, got",
    "bool_type": "expected true or false, got",
    "bool_parsing": "expected true or false, got",
    "string_type": "expected a string, got",
    "literal_error": "not an allowed value:",
    "enum": "not an allowed value:",
    "greater_than": "out of range:",
    "greater_than_equal": "out of range:",
    "less_than": "out of range:",
    "less_than_equal": "out of range:",
    "list_type": "expected a list, got",
    "tuple_type": "expected a list, got",
    "dict_type": "expected a mapping of keys to values, got",
    "model_type": "expected a mapping of keys to values, got",
    "model_attributes_type": "expected a mapping of keys to values, got",
    "none_required": "not an allowed value:",
}


def _walk(model: type[BaseModel], loc: tuple) -> tuple[FieldInfo | None, type[BaseModel], tuple]:
    """The field a pydantic error location points at, the model holding it, and the
    location's remaining part (list indices, a union member's name)."""
    field = None
    owner = model
    rest = loc
    while rest:
        head, rest = rest[0], rest[1:]
        if isinstance(head, str) and head in owner.model_fields:
            field = owner.model_fields[head]
            sub = _model_in(field.annotation)
            if sub is None or not rest:
                return field, owner, rest
            owner = sub
        else:
            return field, owner, (head, *rest)
    return field, owner, rest


def _owner(model: type[BaseModel], loc: tuple) -> type[BaseModel]:
    """The model that the keys at ``loc`` (a path of section names) lead to."""
    for part in loc:
        field = model.model_fields.get(str(part)) if isinstance(part, str) else None
        sub = _model_in(field.annotation) if field is not None else None
        if sub is None:
            break
        model = sub
    return model


def _model_in(hint) -> type[BaseModel] | None:
    if isinstance(hint, type) and issubclass(hint, BaseModel):
        return hint
    for arg in typing.get_args(hint):
        found = _model_in(arg)
        if found is not None:
            return found
    return None


def _key(where: str, loc: tuple) -> str:
    out = where
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out = f"{out}.{part}" if out else str(part)
    return out


#: the tags pydantic puts in an error's location for a union member (``int``, ``list[str]``)
_TYPE_NAMES_BY_TAG = {
    "int",
    "float",
    "str",
    "bool",
    "dict",
    "list",
    "tuple",
    "none",
    "function-after",
    "function-before",
    "function-plain",
    "function-wrap",
    "literal",
    "is-instance",
}


def _is_tag(part) -> bool:
    text = str(part)
    return text in _TYPE_NAMES_BY_TAG or text.startswith(
        ("list[", "tuple[", "dict[", "literal[", "constrained-", "function-")
    )


def _first(errors: list) -> dict:
    """The error to report: an unknown key first (a misspelt key also shows as the right one
    missing); of the errors one value gets from the members of a union (``int | Auto``), the
    one of the member it was meant for (:func:`_rank`)."""
    err = min(errors, key=lambda e: e["type"] != "extra_forbidden")
    top = _plain_loc(err["loc"])
    same = [e for e in errors if _plain_loc(e["loc"])[: len(top)] == top]
    return min(same, key=lambda e: _rank(e, top))


def _rank(err: dict, top: tuple) -> int:
    """0: about the value (a range, an item of a list that was a list); 1: not the word a
    :data:`Auto`-like member takes, for a string or null; 2: a wrong type for a member."""
    inside = len(_plain_loc(err["loc"])) > len(top)
    if err["type"] == "literal_error" and not inside:
        return 1 if isinstance(err.get("input"), str | None) else 2
    return 2 if str(err["type"]).endswith("_type") and not inside else 0


def _plain_loc(loc) -> tuple:
    return tuple(p for p in loc if not _is_tag(p))


def _as_declared(value, field: FieldInfo | None, index: bool):
    """An integer given for a float field, shown as the float it was taken as (``-1.0``)."""
    if field is None or type(value) is not int:
        return value
    base = _split(_without_auto(field.annotation)[0])[0]
    if index:
        args = typing.get_args(base)
        base = _split(args[0])[0] if args else None
    return float(value) if base is float else value


def error_text(exc: ValidationError, model: type[BaseModel], where: str = "") -> str:
    """pydantic's first error as one line in the house's words (see the module docstring).

    Two kinds of error speak for themselves: a library error (:class:`HyperframesError`) a
    validator raised is said as it is (it names its key), and a field whose
    ``json_schema_extra`` holds ``{"error": "{key} must be ..., got {value}"}`` says that, with
    the key and the value (as :func:`show` writes it) filled in."""
    err = _first(exc.errors(include_url=False))
    raised = err.get("ctx", {}).get("error")
    if isinstance(raised, HyperframesError):
        return str(raised)
    loc = _plain_loc(err["loc"])
    kind = err["type"]
    if kind == "extra_forbidden":
        *parent, name = loc
        parent_key = _key(where, tuple(parent))
        fields = list(_owner(model, tuple(parent)).model_fields)
        prefix = f"{parent_key}." if parent_key else ""
        return (
            f"unknown key {prefix}{name}{did_you_mean(name, fields, prefix)} "
            f"(allowed keys in {parent_key or 'the mapping'}: {', '.join(fields)})"
        )
    field, _, rest = _walk(model, loc)
    key = _key(where, loc)
    extra = field.json_schema_extra if field is not None else None
    template = extra.get("error") if isinstance(extra, dict) else None
    if isinstance(template, str):
        return template.format(key=key, value=show(err.get("input")))
    index = bool(rest) and isinstance(rest[0], int)
    allowed = allowed_text(field, index) if field is not None else ""
    help_text = f" ({field.description})" if field is not None and field.description else ""
    if kind == "missing":
        return f"{key} is required: {allowed}{help_text}"
    if kind in ("too_short", "too_long"):
        want = _length(_flat(field.metadata)) if field is not None else None
        why = f"expected {want} values, got" if want is not None else "wrong number of values:"
    elif kind in _WHY:
        why = _WHY[kind]
    else:  # a validator's own words (ValueError in an after-validator)
        message = str(err.get("msg", "")).removeprefix("Value error, ")
        return f"{key}: {message}"
    value = _as_declared(err.get("input"), field, index)
    tail = f"; allowed: {allowed}{help_text}" if allowed else help_text
    return f"{key}: {why} {show(value)}{tail}"


M = typing.TypeVar("M", bound=BaseModel)


def validate(model: type[M], raw, *, where: str = "", error: type[Exception] = ConfigError) -> M:
    """``model`` validated from the mapping ``raw``; any problem is ``error`` with the text of
    :func:`error_text` (keys prefixed by ``where``, e.g. ``"train"``)."""
    if raw is None:
        raw = {}
    if not isinstance(raw, Mapping):
        name = where or "the value"
        raise error(f"{name}: expected a mapping of keys to values, got {show(raw)}")
    try:
        return model.model_validate(dict(raw))
    except ValidationError as exc:
        raise error(error_text(exc, model, where)) from None


def validate_field(
    model: type[BaseModel],
    name: str,
    value,
    *,
    where: str = "",
    error: type[Exception] = ConfigError,
):
    """``value`` checked as the field ``name`` of ``model`` (its type, bounds, choices) and
    returned as the model keeps it; a problem is ``error``, the key reported as
    ``<where>.<name>``. The other fields are neither needed nor looked at."""
    probe = model.model_construct()
    try:
        model.__pydantic_validator__.validate_assignment(probe, name, value)
    except ValidationError as exc:
        raise error(error_text(exc, model, where)) from None
    return getattr(probe, name)


# -- options made by keyword (``BuildOptions(fps=2)``) ------------------------------------------


def _keep_int(value, handler):
    checked = handler(value)
    return value if type(value) is int else checked


def as_tuple(value: Any) -> Any:
    """A list (JSON, YAML) taken as the tuple a field holds; anything else as it is (a
    ``BeforeValidator`` for tuple fields: strict mode takes only tuples)."""
    return tuple(value) if isinstance(value, list) else value


#: a number: an int given stays that int (``fps=2`` is recorded as 2, as it was given), where a
#: plain ``float`` field would make it 2.0; true and false are refused
Number = Annotated[float, WrapValidator(_keep_int)]


def field_type(field: FieldInfo) -> tuple[object, bool]:
    """The type a field takes, without ``None`` and constraints, and whether it takes ``None``:
    ``(int, True)`` for ``int | None = Field(None, ge=0)``."""
    base, _, nullable = _split(field.annotation)
    return base, nullable


class Options(Strict):
    """Settings made by keyword (``BuildOptions(fps=2)``): frozen, and any problem is a
    :class:`ConfigError` in the words of :func:`error_text`, never pydantic's
    ``ValidationError``. A copy with some fields changed is :meth:`replace`."""

    model_config = ConfigDict(frozen=True)

    def __init__(self, **values: Any) -> None:
        try:
            super().__init__(**values)
        except ValidationError as exc:
            raise ConfigError(error_text(exc, type(self))) from None

    def replace(self, **changes: Any) -> Self:
        """A copy with ``changes``, checked as a new one is (``dataclasses.replace``'s role)."""
        return type(self)(**{**self.as_dict(), **changes})

    def as_dict(self) -> dict[str, Any]:
        """Every field by name, as given, in the order they are declared."""
        return {name: getattr(self, name) for name in type(self).model_fields}


def _group(name: str, model: type[Options], value: Any) -> Options | None:
    """The group ``name`` as given: an instance of its model, a mapping of its fields, or None."""
    if value is None or isinstance(value, model):
        return value
    if isinstance(value, Mapping):
        return model(**value)
    raise ConfigError(
        f"{name}={show(value, 80)}: expected a {model.__name__} or a mapping of its fields "
        f"({', '.join(model.model_fields)})"
    )


def resolve_groups(
    models: Mapping[str, type[Options]],
    groups: Mapping[str, Any],
    keywords: Mapping[str, Any],
    *,
    others: tuple[str, ...] = (),
) -> dict[str, Options]:
    """Each group of ``models`` (keyword -> model) made from what ``groups`` gives for it (an
    instance, a mapping of its fields, or None) and from the options of ``keywords`` that
    are its fields (replacing those of the group given). A keyword that is no field of any
    group is a :class:`ConfigError` naming it and listing those allowed (and ``others``: the
    caller's own parameters, which a misspelt keyword may have meant)."""
    owner = {name: group for group, model in models.items() for name in model.model_fields}
    unknown = [k for k in keywords if k not in owner]
    if unknown:
        name = unknown[0]
        own = f"the parameters {', '.join(others)}, " if others else ""
        raise ConfigError(
            f"unknown option {name!r}{did_you_mean(name, [*others, *owner])} (allowed: {own}"
            f"the groups {', '.join(models)}, or one option of them: {', '.join(owner)})"
        )
    out = {}
    for group, model in models.items():
        given = _group(group, model, groups.get(group))
        changes = {k: v for k, v in keywords.items() if owner[k] == group}
        if given is None:
            out[group] = model(**changes)
        else:
            out[group] = given.replace(**changes) if changes else given
    return out
