"""The bounded YAML a config is read from: a SafeLoader that refuses absurd documents.

A config is small and asks for finite work: the file is at most :data:`MAX_CONFIG_BYTES`,
at most :data:`MAX_CONFIG_DEPTH` levels deep and at most :data:`MAX_CONFIG_VALUES` values once
YAML aliases are expanded, so a few aliases are fine and an alias bomb ("billion laughs") is
refused while the document is composed, before anything is built. :func:`check_value_tree`
applies the same bounds to Python values given directly (a mapping, a checkpoint's config).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

import yaml

from ._errors import ConfigError

__all__ = [
    "MAX_CONFIG_BYTES",
    "MAX_CONFIG_DEPTH",
    "MAX_CONFIG_VALUES",
    "Refused",
    "check_value_tree",
    "load_yaml_text",
    "read_yaml",
]

MAX_CONFIG_BYTES = 1 << 20  # a config file; real ones are a few hundred bytes
MAX_CONFIG_DEPTH = 32  # nesting levels (real configs: 4)
MAX_CONFIG_VALUES = 10_000  # values after alias expansion (real configs: ~100)


class Refused(yaml.YAMLError):
    """A document beyond the bounds (size, depth, alias expansion); the text says which."""


def _value_children(value) -> Iterable:
    if isinstance(value, Mapping):
        return [x for kv in value.items() for x in kv]
    if isinstance(value, list | tuple):
        return value
    return ()


def _node_children(node: yaml.Node) -> Iterable:
    if isinstance(node, yaml.MappingNode):
        return [x for kv in node.value for x in kv]
    if isinstance(node, yaml.SequenceNode):
        return node.value
    return ()


def _check_tree(root, children: Callable[[object], Iterable], what: str) -> None:
    """Refuse a tree (YAML nodes or Python values, shared by aliases or references) that
    expands to more than :data:`MAX_CONFIG_VALUES` values, is deeper than
    :data:`MAX_CONFIG_DEPTH` or contains itself. Each shared part is visited once, so the
    work is bounded by the distinct parts, not by the expansion."""
    done: dict[int, tuple[int, int]] = {}  # id -> (expanded values, height)
    open_: set[int] = set()

    def visit(node, depth: int) -> tuple[int, int]:
        key = id(node)
        if key in open_:
            raise Refused(f"{what} contains itself (a cycle)")
        if key not in done:
            if depth > MAX_CONFIG_DEPTH:
                raise Refused(f"{what} is nested deeper than {MAX_CONFIG_DEPTH} levels")
            open_.add(key)
            count, height = 1, 1
            for child in children(node):
                n, h = visit(child, depth + 1)
                count, height = count + n, max(height, h + 1)
                if count > MAX_CONFIG_VALUES:
                    raise Refused(
                        f"{what} expands to more than {MAX_CONFIG_VALUES} values (aliases or "
                        "shared parts repeated)"
                    )
            open_.discard(key)
            done[key] = (count, height)
        count, height = done[key]
        if depth + height - 1 > MAX_CONFIG_DEPTH:
            raise Refused(f"{what} is nested deeper than {MAX_CONFIG_DEPTH} levels")
        return count, height

    visit(root, 1)


def check_value_tree(raw) -> None:
    """:func:`_check_tree` over Python values (a mapping given directly, a checkpoint's)."""
    try:
        _check_tree(raw, _value_children, "the config")
    except Refused as e:
        raise ConfigError(
            f"{e}; allowed: at most {MAX_CONFIG_VALUES} values, {MAX_CONFIG_DEPTH} levels "
            "deep, no cycles"
        ) from None


class _BoundedLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that refuses, while composing and before constructing anything, a
    document nested deeper than :data:`MAX_CONFIG_DEPTH` or whose aliases expand beyond
    :data:`MAX_CONFIG_VALUES` values (a "billion laughs")."""

    def __init__(self, stream) -> None:
        super().__init__(stream)
        self._depth = self._nodes = 0

    def compose_node(self, parent, index):
        # Checked before recursing (no RecursionError) and as nodes come (the pure-Python
        # parser takes ~30 us a node: a 1 MiB flat list would take seconds to compose).
        self._nodes += 1
        if self._depth >= MAX_CONFIG_DEPTH or self._nodes > MAX_CONFIG_VALUES:
            line = self.peek_event().start_mark.line + 1
            if self._depth >= MAX_CONFIG_DEPTH:
                why = f"is nested deeper than {MAX_CONFIG_DEPTH} levels"
            else:
                why = f"has more than {MAX_CONFIG_VALUES} values"
            raise Refused(f"the document {why} (line {line})")
        self._depth += 1
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def compose_document(self):
        node = super().compose_document()
        _check_tree(node, _node_children, "the document")
        return node


def load_yaml_text(text: str):
    return yaml.load(text, Loader=_BoundedLoader)  # a SafeLoader: builds plain values only


def read_yaml(path: str | os.PathLike) -> dict:
    """The mapping in the YAML file ``path``, refused beyond the bounds (module doc)."""
    p = Path(path)
    allowed = (
        f"allowed: a config of at most {MAX_CONFIG_BYTES >> 20} MiB, {MAX_CONFIG_DEPTH} levels "
        f"deep and {MAX_CONFIG_VALUES} values after alias expansion"
    )
    try:
        with open(p, "rb") as f:
            data = f.read(MAX_CONFIG_BYTES + 1)
    except OSError as e:
        raise ConfigError(f"{p}: cannot read the config ({e.strerror or e})") from None
    if len(data) > MAX_CONFIG_BYTES:
        raise ConfigError(
            f"{p}: refused: the file is larger than {MAX_CONFIG_BYTES} bytes; {allowed}"
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ConfigError(
            f"{p}: not UTF-8 text (byte {e.start}); allowed: a YAML config in UTF-8"
        ) from None
    try:
        raw = load_yaml_text(text)
    except Refused as e:
        raise ConfigError(f"{p}: refused: {e}; {allowed}") from None
    except yaml.YAMLError as e:
        raise ConfigError(f"{p}: not valid YAML ({e})") from None
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{p}: a config is a mapping with sections data, model, train")
    return raw
