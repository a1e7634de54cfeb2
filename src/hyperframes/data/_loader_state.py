"""Where a loader stands in an epoch, as a plain dict that any world size can continue from.

**Global order.** Every epoch has one global order of items, a function of ``(seed, epoch)``
only (:func:`~hyperframes.sampling.epoch_order`, :func:`~hyperframes.sampling.balanced_order`).
``W`` ranks share it from a position ``origin`` (0 for a fresh epoch) by striding: rank ``r``
takes positions ``origin + r``, ``origin + r + W``, ... (:func:`~hyperframes.sampling.partition`
of ``order[origin:]``). Ranks consume their shares in lockstep (one batch each per step), so
once every rank has consumed ``c`` items the ranks together have consumed exactly the positions
``[origin, origin + c * W)`` of the global order. That position, ``samples_yielded``, is what the
state records; per-rank counts would not survive a change of world size.

**State** (the conventions of torchdata's ``StatefulDataLoader``: ``state_dict()`` says what has
been *yielded* so far, never what was prefetched; ``load_state_dict()`` is called before
iterating)::

    {"format": "hyperframes-loader-state", "version": 1,
     "epoch": 3, "samples_yielded": 48, "epoch_length": 100,
     "origin": 0, "world_size": 2, "seed": 0, "order": "shuffle"}

``epoch_length`` is the length of the global order and ``order`` how it is drawn (``shuffle``,
``sequential`` or ``balanced``): with ``seed`` they must match the loader that continues, or the
global order would not be the same one. ``samples_yielded == epoch_length`` means the epoch is
finished (the loader then yields nothing until ``set_epoch`` moves it on).

**Continuing** (:func:`continue_at`). With the same world size (and a position reached by it),
the ranks keep the sharing they had (the same ``origin``, each skipping the items it already
consumed): exactly what an uninterrupted run reads, padding included. With another world size
``W'`` the remainder ``order[p:]`` is shared afresh: rank ``r'`` takes ``p + r'``,
``p + r' + W'``, ...; it is padded to a multiple of ``W'`` by repeating from the start of the
remainder, as ``torch.utils.data.DistributedSampler`` pads (``drop_last``: truncated instead), so
at most ``W' - 1`` windows of the epoch are seen twice (or, with ``drop_last``, dropped).
"""

from __future__ import annotations

from collections.abc import Mapping

from .._core._errors import ConfigError

__all__ = ["FORMAT", "ORDERS", "VERSION", "continue_at", "make_state", "position", "read_state"]

FORMAT = "hyperframes-loader-state"
VERSION = 1
ORDERS = ("shuffle", "sequential", "balanced")

_INTS = ("epoch", "samples_yielded", "epoch_length", "origin", "world_size", "seed")


def position(origin: int, consumed: int, world_size: int, length: int) -> int:
    """The global position after every rank of ``world_size``, sharing the order from
    ``origin``, consumed ``consumed`` items of its share (the padding past ``length`` aside)."""
    return min(origin + consumed * world_size, length)


def make_state(
    *,
    epoch: int,
    samples_yielded: int,
    epoch_length: int,
    origin: int,
    world_size: int,
    seed: int,
    order: str,
) -> dict:
    """A state dict (module doc); plain ints and strings only."""
    return {
        "format": FORMAT,
        "version": VERSION,
        "epoch": int(epoch),
        "samples_yielded": int(samples_yielded),
        "epoch_length": int(epoch_length),
        "origin": int(origin),
        "world_size": int(world_size),
        "seed": int(seed),
        "order": str(order),
    }


def read_state(state, *, epoch_length: int, seed: int, order: str, where: str = "loader") -> dict:
    """Check ``state`` (untrusted: it comes from a checkpoint) against the loader about to
    continue it; the checked dict, or :class:`ConfigError` naming the key and what is wrong."""
    if not isinstance(state, Mapping) or state.get("format") != FORMAT:
        raise ConfigError(
            f"{where} state: expected a dict with format {FORMAT!r} (from state_dict()), got "
            f"{state!r:.80}"
        )
    if state.get("version") != VERSION:
        raise ConfigError(
            f"{where} state: version {state.get('version')!r} is not readable; this "
            f"hyperframes reads version {VERSION}"
        )
    for key in _INTS:
        value = state.get(key)
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise ConfigError(f"{where} state: {key} must be an integer >= 0, got {value!r:.40}")
    if state["world_size"] < 1:
        raise ConfigError(f"{where} state: world_size must be >= 1, got {state['world_size']}")
    if state.get("order") not in ORDERS:
        raise ConfigError(
            f"{where} state: order must be one of {', '.join(ORDERS)}, got {state.get('order')!r:.40}"
        )
    if not state["origin"] <= state["samples_yielded"] <= state["epoch_length"]:
        raise ConfigError(
            f"{where} state: expected origin <= samples_yielded <= epoch_length, got "
            f"{state['origin']}, {state['samples_yielded']}, {state['epoch_length']}"
        )
    mine = {"epoch_length": epoch_length, "seed": seed, "order": order}
    differ = [f"{k} {state[k]!r} (this loader: {v!r})" for k, v in mine.items() if state[k] != v]
    if differ:
        raise ConfigError(
            f"{where} state: saved for another epoch order: {', '.join(differ)}; a loader "
            "continues only the global order of the same items, seed and sampling"
        )
    return {k: state[k] for k in ("format", "version", *_INTS, "order")}


def continue_at(state: Mapping, world_size: int) -> tuple[int, int]:
    """``(origin, start)`` for a loader of ``world_size`` continuing the checked ``state``:
    the ranks share the global order from ``origin`` and each skips the first ``start`` items
    of its share (module doc)."""
    p, origin, saved = state["samples_yielded"], state["origin"], state["world_size"]
    if p >= state["epoch_length"]:
        return state["epoch_length"], 0  # finished: nothing left to share
    if world_size == saved and (p - origin) % saved == 0:
        return origin, (p - origin) // saved
    return p, 0
