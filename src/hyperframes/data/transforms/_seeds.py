"""The per-sample transform seeds of a whole batch at once: numpy's ``SeedSequence`` hash
(``SeedSequence([seed, epoch, item], spawn_key=(3,)).generate_state(1, np.uint64)``, what
:func:`~._base.transform_generator` computes one sample at a time, ~17 us each) as uint32
array arithmetic over the batch, the same words for every key below 2**32 (a test compares
them with ``SeedSequence``); keys at or above it take ``SeedSequence`` itself."""

from __future__ import annotations

import numpy as np
import torch

from ._base import _TRANSFORM_KEY, transform_generator

__all__ = ["transform_generators"]

# numpy's constants (numpy/random/bit_generator.pyx): a pool of four uint32 words
_POOL, _INIT_A, _MULT_A, _INIT_B, _MULT_B = 4, 0x43B0D7E5, 0x931E8875, 0x8B51F9DD, 0x58F38DED
_MIX_L, _MIX_R, _SHIFT = 0xCA01F9DD, 0x4973F715, 16


class _Hash:
    """``hashmix`` with its running constant (the same sequence for every key of the batch)."""

    def __init__(self) -> None:
        self.const = _INIT_A

    def __call__(self, value: np.ndarray) -> np.ndarray:
        value = value ^ np.uint32(self.const)
        self.const = (self.const * _MULT_A) & 0xFFFFFFFF
        value = value * np.uint32(self.const)
        return value ^ (value >> np.uint32(_SHIFT))


def _mix(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    r: np.ndarray = np.uint32(_MIX_L) * x - np.uint32(_MIX_R) * y
    return r ^ (r >> np.uint32(_SHIFT))


def seed_states(seed: int, epochs: np.ndarray, items: np.ndarray, key: int) -> np.ndarray:
    """(B,) uint64: ``SeedSequence([seed, epochs[k], items[k]], spawn_key=(key,))``'s first
    uint64 state word, every value below 2**32."""
    n = len(items)
    words = [np.full(n, seed, np.uint32), np.asarray(epochs, np.uint32)]
    words += [np.asarray(items, np.uint32), np.zeros(n, np.uint32)]  # padded to the pool
    spawn = np.full(n, key, np.uint32)
    with np.errstate(over="ignore"):
        h = _Hash()
        pool = [h(w) for w in words]
        for src in range(_POOL):
            for dst in range(_POOL):
                if src != dst:
                    pool[dst] = _mix(pool[dst], h(pool[src]))
        for dst in range(_POOL):  # the spawn key: entropy beyond the pool
            pool[dst] = _mix(pool[dst], h(spawn))
        out, const = [], _INIT_B
        for word in pool[:2]:  # generate_state: two uint32 words for one uint64
            value = word ^ np.uint32(const)
            const = (const * _MULT_B) & 0xFFFFFFFF
            value = value * np.uint32(const)
            out.append((value ^ (value >> np.uint32(_SHIFT))).astype(np.uint64))
    return out[0] | (out[1] << np.uint64(32))


def transform_generators(seed: int, epochs, items) -> tuple[torch.Generator, ...]:
    """The generators :func:`~._base.transform_generator` gives for ``(seed, epochs[k],
    items[k])``, all states hashed at once; keys of 2**32 and more (and values it refuses, for
    its message) one by one through it."""
    epochs, items = np.asarray(epochs).reshape(-1), np.asarray(items).reshape(-1)
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer):
        small = False
    else:
        small = 0 <= int(seed) < 2**32 and len(items) > 0
    small = small and bool((epochs >= 0).all() and (epochs < 2**32).all())
    small = small and bool((items >= 0).all() and (items < 2**32).all())
    if not small or epochs.dtype.kind not in "iu" or items.dtype.kind not in "iu":
        return tuple(transform_generator(seed, int(e), int(i)) for e, i in zip(epochs, items))
    states = seed_states(int(seed), epochs, items, _TRANSFORM_KEY) & np.uint64((1 << 63) - 1)
    return tuple(torch.Generator().manual_seed(int(s)) for s in states.tolist())
