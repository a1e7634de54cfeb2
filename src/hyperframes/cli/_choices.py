"""Choices the command line takes from the library's registries instead of restating them.

A :class:`Registered` is the list a registry function returns, read the first time argparse asks
for it (to check a value given, or to print the command's ``--help``), so that building the
parser imports neither the store nor the decoders.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Sequence
from typing import Any

__all__ = ["CODECS", "DECODERS", "INPUT_FORMATS", "Registered"]


class Registered(Sequence[str]):
    """``getattr(import_module(module), function)(**kwargs)``, called once, when first needed."""

    def __init__(self, module: str, function: str, **kwargs: Any) -> None:
        self.module, self.function, self.kwargs = module, function, kwargs
        self._names: tuple[str, ...] | None = None

    def _load(self) -> tuple[str, ...]:
        if self._names is None:
            registry = getattr(importlib.import_module(self.module), self.function)
            self._names = tuple(registry(**self.kwargs))
        return self._names

    def __getitem__(self, i):
        return self._load()[i]

    def __len__(self) -> int:
        return len(self._load())

    def __iter__(self) -> Iterator[str]:
        return iter(self._load())

    def __contains__(self, name: object) -> bool:
        return name in self._load()

    def __repr__(self) -> str:
        return f"Registered({self.module}.{self.function})"


#: how the store keeps frames (``hyperframes.store.list_codecs``)
CODECS = Registered("hyperframes.store", "list_codecs")
#: the backends that decode video files (``hyperframes.decode.list_decoders``)
DECODERS = Registered("hyperframes.decode", "list_decoders", reads="video")
#: how a build reads its data (``hyperframes.inputs.list_input_formats``)
INPUT_FORMATS = Registered("hyperframes.inputs", "list_input_formats")
