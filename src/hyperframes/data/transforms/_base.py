"""Transform protocol: a window travels with its frame indices and mask, randomness is explicit.

A transform maps a :class:`Window` -- ``frames`` (T, C, H, W), ``indices`` (T,) int64 (the
stored frame each position came from) and ``mask`` (T,) bool (False = padding) -- to a new one.
Every random parameter is drawn from the ``generator`` passed in (a ``torch.Generator`` or an
int seed; :func:`transform_generator` derives one per sample), never from the global RNG, and
one set of parameters is used for every frame of the window unless a transform says otherwise.

Transforms that reorder, repeat or drop frames set ``changes_sequence = True`` (indices may then
be unsorted or repeated); a transform that may change T must set ``changes_count = True`` or
:class:`Compose` raises :class:`DataError` naming it.

**Batch form.** Every transform is also a batch operation, which is how the dataset's batch
pipeline (:mod:`hyperframes.data._pipeline`) runs it: :meth:`Transform.draw` gives one sample's
parameters from that sample's own generator (pure: the same generator state, the same
parameters), and :meth:`Transform.batch_apply` applies a step to a whole batch (frames
(B, T, C, H, W), indices and mask (B, T)) with each sample's parameters. ``apply`` is ``draw``
then :meth:`Transform.apply_drawn`, so a sample's parameters are the same on either path. A
step's ``geometry`` says how it moves pixels (``"box"``: a crop or resize the read can do
itself, :meth:`read_box`; ``"mirror"``: parameters are left-right flips; ``"warp"``: another
geometric map; ``"none"``: pixels stay where they are; ``"unknown"``: a user's code). A plain
callable is wrapped once in :class:`PerSample`, which runs it sample by sample inside the same
pipeline.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any, ClassVar, NamedTuple

import numpy as np
import torch

from ..._core._errors import ConfigError, DataError

__all__ = [
    "Compose",
    "PerSample",
    "Transform",
    "Window",
    "apply_batch",
    "batch_steps",
    "each_sample",
    "transform_generator",
]

_TRANSFORM_KEY = 3  # SeedSequence spawn key: keeps these streams apart from the samplers'


class Window(NamedTuple):
    """A window of frames with, per position, its stored frame index and its padding mask."""

    frames: torch.Tensor
    indices: torch.Tensor
    mask: torch.Tensor


def transform_generator(seed: int, epoch: int, item: int) -> torch.Generator:
    """A CPU ``torch.Generator`` for one sample, a pure function of (seed, epoch, item)."""
    for name, v in (("seed", seed), ("epoch", epoch), ("item", item)):
        if isinstance(v, bool) or not isinstance(v, int | np.integer) or v < 0:
            raise ConfigError(f"transform_generator: {name} must be an integer >= 0, got {v!r}")
    seq = np.random.SeedSequence([int(seed), int(epoch), int(item)], spawn_key=(_TRANSFORM_KEY,))
    state = int(seq.generate_state(1, dtype=np.uint64)[0]) & ((1 << 63) - 1)
    return torch.Generator().manual_seed(state)


def as_window(frames, indices=None, mask=None) -> Window:
    """Check and convert ``frames`` (T, C, H, W) with optional indices / mask (numpy or torch)."""
    if not isinstance(frames, torch.Tensor):
        raise DataError(f"transforms need frames as a torch.Tensor, got {type(frames).__name__}")
    if frames.ndim != 4:
        hint = "; use apply_batch (or .batch) for (B, T, C, H, W)" if frames.ndim == 5 else ""
        raise DataError(
            f"transforms need a window (T, C, H, W), got shape {tuple(frames.shape)}{hint}"
        )
    t = frames.shape[0]
    if indices is None:
        indices = torch.arange(t, dtype=torch.int64)
    else:
        indices = torch.as_tensor(
            np.asarray(indices) if not isinstance(indices, torch.Tensor) else indices
        )
        indices = indices.to(torch.int64)
    if mask is None:
        mask = torch.ones(t, dtype=torch.bool)
    else:
        mask = torch.as_tensor(np.asarray(mask) if not isinstance(mask, torch.Tensor) else mask)
        mask = mask.to(torch.bool)
    if indices.shape != (t,) or mask.shape != (t,):
        raise DataError(
            f"a window of {t} frames needs indices and mask of shape ({t},), got "
            f"{tuple(indices.shape)} and {tuple(mask.shape)}"
        )
    return Window(frames, indices, mask)


def _as_generator(generator, who: str, needed: bool) -> torch.Generator | None:
    if isinstance(generator, torch.Generator):
        return generator
    if generator is None:
        if needed:
            raise ConfigError(
                f"{who} draws random parameters and needs generator= (a torch.Generator or an "
                f"int seed; transform_generator(seed, epoch, item) gives one per sample); "
                f"the global RNG is never used"
            )
        return None
    if isinstance(generator, int | np.integer) and not isinstance(generator, bool):
        return torch.Generator().manual_seed(int(generator))
    raise ConfigError(
        f"{who}: generator must be a torch.Generator, an int seed or None, got "
        f"{type(generator).__name__}"
    )


def _check_step(before: Window, after: Window, t: Transform) -> None:
    if not isinstance(after, Window):
        raise DataError(f"transform {t!r} returned {type(after).__name__}, not a Window")
    n0, n1 = before.frames.shape[0], after.frames.shape[0]
    if n1 != n0 and not t.changes_count:
        raise DataError(
            f"transform {t!r} changed the number of frames from {n0} to {n1} but does not declare "
            f"changes_count = True; fix the transform or set that attribute if intended"
        )
    if after.frames.ndim != 4 or after.indices.shape != (n1,) or after.mask.shape != (n1,):
        raise DataError(
            f"transform {t!r} returned frames {tuple(after.frames.shape)}, indices "
            f"{tuple(after.indices.shape)}, mask {tuple(after.mask.shape)}; they must agree on T"
        )


class Transform:
    """Base class: subclasses implement ``apply(window, generator) -> Window``."""

    #: draws random parameters (then ``generator`` is required)
    random: ClassVar[bool] = False
    #: reorders / repeats / drops frames (indices may be unsorted or repeated afterwards)
    changes_sequence: ClassVar[bool] = False
    #: may change the number of frames T
    changes_count: ClassVar[bool] = False
    #: how the step moves pixels (module doc): "box", "mirror", "warp", "none" or "unknown"
    geometry: ClassVar[str] = "unknown"

    def apply(self, window: Window, generator: torch.Generator | None) -> Window:
        """One window: :meth:`draw` then :meth:`apply_drawn` (a subclass may override this
        alone: the batch pipeline then runs it sample by sample with the sample's generator)."""
        if type(self).draw is Transform.draw and type(self).apply_drawn is Transform.apply_drawn:
            raise NotImplementedError(f"{type(self).__name__} implements neither apply nor draw")
        return self.apply_drawn(window, self.draw(generator, tuple(window.frames.shape)))

    def draw(self, generator: torch.Generator | None, shape: tuple[int, ...]) -> Any:
        """One sample's parameters for frames of ``shape`` (T, C, H, W), from its ``generator``.
        The default hands the generator on: a step that draws while it applies."""
        return generator

    def apply_drawn(self, window: Window, params: Any) -> Window:
        """One window with parameters from :meth:`draw` (the default: :meth:`apply` with them)."""
        return self.apply(window, params)

    def batch_apply(self, batch: Window, params: Sequence) -> Window:
        """The step over a batch (frames (B, T, C, H, W), indices and mask (B, T)), sample
        ``k`` with ``params[k]``; the default runs :meth:`apply_drawn` sample by sample."""
        return each_sample(batch, lambda w, k: self.apply_drawn(w, params[k]), self)

    def __call__(self, frames, indices=None, mask=None, *, generator=None) -> Window:
        """Transform one window (T, C, H, W); returns a :class:`Window`."""
        window = as_window(frames, indices, mask)
        gen = _as_generator(generator, repr(self), self.random)
        out = self.apply(window, gen)
        _check_step(window, out, self)
        return out

    def batch(self, frames, indices=None, mask=None, *, generators=None) -> Window:
        """Transform a batch (B, T, C, H, W) with per-sample parameters; see :func:`apply_batch`."""
        return apply_batch(self, frames, indices, mask, generators=generators)

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in vars(self).items() if not k.startswith("_"))
        return f"{type(self).__name__}({args})"


def each_sample(batch: Window, fn: Callable[[Window, int], Window], step) -> Window:
    """``fn(window_k, k)`` for every sample of ``batch``, checked (:func:`_check_step`) and
    stacked back into a batch; windows of different shapes raise :class:`DataError`."""
    frames, indices, mask = batch
    outs = []
    for k in range(frames.shape[0]):
        before = Window(frames[k], indices[k], mask[k])
        out = fn(before, k)
        _check_step(before, out, step)
        outs.append(out)
    if not outs:
        return batch
    return _stacked(outs, f"{step!r} gave windows of different shapes {{}} in one batch")


def _stacked(outs: list[Window], differ: str) -> Window:
    """The windows ``outs`` stacked into a batch; :class:`DataError` when their shapes differ
    (``differ``: what went wrong, ``{}`` standing for the shapes)."""
    shapes = sorted({tuple(o.frames.shape) for o in outs})
    if len(shapes) > 1:
        raise DataError(
            f"{differ.format(shapes)}; end with a fixed-size transform (RandomResizedCrop, "
            "Resize with (h, w), CenterCrop)"
        )
    return Window(*(torch.stack(parts) for parts in zip(*outs)))


def _arity(fn) -> int:
    """How many positional arguments ``fn`` takes (3 when it takes *args or cannot tell)."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return 3
    kinds = [p.kind for p in params]
    if inspect.Parameter.VAR_POSITIONAL in kinds:
        return 3
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return sum(k in positional for k in kinds)


class PerSample(Transform):
    """A user's callable as a transform, run sample by sample inside the batch pipeline.

    ``fn`` is either a dataset transform, ``fn(frames, indices, mask, generator=g)`` returning
    a :class:`Window` (or frames), or a function of the frames alone, ``fn(frames)`` returning
    frames (T, C, H, W); which one is read from its signature once, here. It gets the sample's
    own generator, so its draws are the same whichever path or worker runs it. A plain
    callable given as a dataset's transform, or inside a :class:`Compose`, is wrapped in this
    automatically."""

    def __init__(self, fn: Callable) -> None:
        if not callable(fn):
            raise ConfigError(f"PerSample needs a callable, got {type(fn).__name__}")
        self.fn = fn
        self._frames_only = _arity(fn) == 1

    @property
    def random(self) -> bool:  # type: ignore[override]
        return not self._frames_only  # a dataset transform gets the sample's generator

    def apply(self, window: Window, generator: torch.Generator | None) -> Window:
        if self._frames_only:
            out = self.fn(window.frames)
        else:
            out = self.fn(window.frames, window.indices, window.mask, generator=generator)
        if isinstance(out, torch.Tensor):
            return Window(out, window.indices, window.mask)
        if isinstance(out, Window) or (isinstance(out, tuple) and len(out) == 3):
            return Window(*out)
        name = getattr(self.fn, "__name__", type(self.fn).__name__)
        raise DataError(
            f"transform {name} returned {type(out).__name__}; it must return frames "
            "(a torch.Tensor (T, C, H, W)) or a Window (frames, indices, mask); wrap it in "
            "hyperframes.data.transforms.Compose or PerSample"
        )

    def __repr__(self) -> str:
        return f"PerSample({getattr(self.fn, '__name__', type(self.fn).__name__)})"


def as_transform(t) -> Transform:
    """``t`` itself when it is a :class:`Transform`, else ``t`` wrapped in :class:`PerSample`."""
    if isinstance(t, Transform):
        return t
    if not callable(t):
        raise ConfigError(
            f"a transform must be a hyperframes transform or a callable, got {type(t).__name__}"
        )
    return PerSample(t)


def batch_steps(transform) -> list[Transform]:
    """The steps the batch pipeline runs for ``transform``: none for None, a
    :class:`Compose`'s steps in order (nested ones flattened), callables wrapped in
    :class:`PerSample`."""
    if transform is None:
        return []
    if isinstance(transform, Compose):
        return [s for t in transform.transforms for s in batch_steps(t)]
    return [as_transform(transform)]


class Compose(Transform):
    """Apply transforms in order, checking after each that T is unchanged unless declared.
    A plain callable among them is wrapped in :class:`PerSample`."""

    def __init__(self, transforms: Sequence[Transform | Callable]) -> None:
        self.transforms = [as_transform(t) for t in transforms]

    @property
    def random(self) -> bool:  # type: ignore[override]
        return any(t.random for t in self.transforms)

    @property
    def changes_sequence(self) -> bool:  # type: ignore[override]
        return any(t.changes_sequence for t in self.transforms)

    @property
    def changes_count(self) -> bool:  # type: ignore[override]
        return any(t.changes_count for t in self.transforms)

    def apply(self, window: Window, generator: torch.Generator | None) -> Window:
        for t in self.transforms:
            out = t.apply(window, generator)
            _check_step(window, out, t)
            window = out
        return window

    def __repr__(self) -> str:
        return f"Compose([{', '.join(repr(t) for t in self.transforms)}])"


def apply_batch(
    transform: Transform, frames, indices=None, mask=None, *, generators=None
) -> Window:
    """Apply ``transform`` to each window of a (B, T, C, H, W) batch with its own generator
    (``generators``: B torch.Generators or int seeds; None only for non-random transforms) and
    stack the results. Works on any device; parameters are drawn on the generators' device."""
    if not isinstance(frames, torch.Tensor) or frames.ndim != 5:
        shape = tuple(frames.shape) if isinstance(frames, torch.Tensor) else type(frames).__name__
        raise DataError(f"apply_batch needs a batch (B, T, C, H, W), got {shape}")
    b = frames.shape[0]
    if generators is None:
        generators = [None] * b
    if len(generators) != b:
        raise DataError(f"apply_batch got {len(generators)} generators for a batch of {b}")
    outs = [
        transform(
            frames[i],
            None if indices is None else indices[i],
            None if mask is None else mask[i],
            generator=generators[i],
        )
        for i in range(b)
    ]
    return _stacked(outs, f"apply_batch: {transform!r} gave windows of different shapes {{}}")
