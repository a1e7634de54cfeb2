"""One registry for the open sets of hyperframes: models, tasks, samplers, codecs, decoders,
input formats and transforms.

A :class:`Registry` maps names to entries (a class, a factory, a record). Each set keeps its
own ``register_*`` decorator, ``create_*`` factory and ``list_*`` on top of one::

    SAMPLERS: Registry[type[Sampler]] = Registry("sampler")

    @SAMPLERS.register("random")
    class RandomSampler(Sampler): ...

    SAMPLERS.get("randm")   # ConfigError: unknown sampler 'randm'; known: dense, random,
                            # ...; did you mean random?
    SAMPLERS.names()        # registration order

A name registered twice is refused (a :class:`ConfigError`) unless the registry was made with
``replace=True``; names are listed in registration order, or sorted (``sort=True``). ``load``
is called before the first look-up, for a registry whose built-in entries live in modules that
import it (the tasks)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Generic, TypeVar, overload

from ._errors import ConfigError
from ._text import did_you_mean

__all__ = ["Registry"]

T = TypeVar("T")
_MISSING: object = object()


class Registry(Generic[T]):
    """Names to entries of one kind (``kind``: what the error messages call them)."""

    def __init__(
        self,
        kind: str,
        *,
        hint: str = "",
        replace: bool = False,
        sort: bool = False,
        load: Callable[[], None] | None = None,
    ) -> None:
        self.kind = kind
        #: names listed sorted (else in registration order)
        self.sort = sort
        #: said after the known names of an unknown one (e.g. how to register one)
        self.hint = hint
        self.replace = replace
        self._load = load
        self._entries: dict[str, T] = {}

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}: {', '.join(self._entries)})"

    # -- registering ------------------------------------------------------------------------
    @overload
    def register(self, name: str) -> Callable[[T], T]: ...
    @overload
    def register(self, name: str, entry: T) -> T: ...
    def register(self, name, entry=_MISSING):
        """Add ``entry`` as ``name``; without ``entry``, a decorator that adds what it wraps
        (and returns it unchanged)."""
        if entry is _MISSING:
            return lambda wrapped: self.register(name, wrapped)
        if not isinstance(name, str) or not name:
            raise ConfigError(f"a {self.kind} name must be a non-empty string, got {name!r}")
        if name in self._entries and not self.replace:
            raise ConfigError(
                f"{self.kind} {name!r} is already registered ({_label(self._entries[name])}); "
                "allowed: a name not in use"
            )
        self._entries[name] = entry
        return entry

    # -- looking up -------------------------------------------------------------------------
    def get(self, name: str, default=_MISSING) -> T:
        """The entry of ``name``; unknown: ``default`` when given, else a :class:`ConfigError`
        naming the known ones (and the closest, when one is close)."""
        self._loaded()
        try:
            return self._entries[name]
        except (KeyError, TypeError):
            if default is not _MISSING:
                return default
            raise self.unknown(name) from None

    def unknown(self, name: object) -> ConfigError:
        """The error for a name this registry does not know."""
        self._loaded()
        known = self.names()
        guess = did_you_mean(name, known, n=3)
        hint = f" ({self.hint})" if self.hint else ""
        return ConfigError(
            f"unknown {self.kind} {name!r}; known: {', '.join(known) or 'none'}{hint}{guess}"
        )

    def names(self) -> list[str]:
        """The registered names, sorted or in registration order (``sort``)."""
        self._loaded()
        return sorted(self._entries) if self.sort else list(self._entries)

    def items(self) -> list[tuple[str, T]]:
        self._loaded()
        return list(self._entries.items())

    def values(self) -> list[T]:
        self._loaded()
        return list(self._entries.values())

    def __contains__(self, name: object) -> bool:
        self._loaded()
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        self._loaded()
        return len(self._entries)

    # -- as a mapping (tests swap an entry for a while: ``monkeypatch.setitem``) -------------
    def __getitem__(self, name: str) -> T:
        self._loaded()
        return self._entries[name]

    def __setitem__(self, name: str, entry: T) -> None:
        self._entries[name] = entry

    def __delitem__(self, name: str) -> None:
        del self._entries[name]

    def pop(self, name: str, *default):
        """Remove ``name`` and give its entry (``default`` when it is not there)."""
        return self._entries.pop(name, *default)

    def copy(self) -> Registry[T]:
        """A registry of the same kind holding the same entries (changed apart from this one)."""
        self._loaded()
        other: Registry[T] = Registry(
            self.kind, hint=self.hint, replace=self.replace, sort=self.sort
        )
        other._entries = dict(self._entries)
        return other

    def _loaded(self) -> None:
        if self._load is not None:
            load, self._load = self._load, None
            load()


def _label(entry: object) -> str:
    """What an entry is, in an error: a class or function by its name."""
    return str(getattr(entry, "__qualname__", None) or type(entry).__name__)
