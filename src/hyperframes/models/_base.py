"""What every hyperframes model shares: the four layouts, the keyframe input, the base class.

Layouts (batch first, ``T`` frames of ``C`` channels)::

    temporal   (B, T, C, H, W)
    channel    (B, C*T, H, W)     frame-major: [f0c0, f0c1, f0c2, f1c0, ...]
    conv3d     (B, C, T, H, W)
    keyframe   Keyframes(key=(B, C, H, W), context=(B, T, C, H, W))

The keyframe layout is a :class:`Keyframes` named tuple: ``key`` is the middle frame
``T // 2`` and ``context`` holds all ``T`` frames (the key included). Being a tuple it
also travels through ``torch.onnx.export`` and ``DataLoader`` collation; a plain
``(key, context)`` tuple or a ``{"key": ..., "context": ...}`` dict is accepted too.
"""

from __future__ import annotations

import contextvars
import functools
import inspect
import typing
import warnings
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

import torch
from torch import Tensor, nn
from torch.utils.checkpoint import checkpoint
from typing_extensions import Required, TypedDict, Unpack

from .._core._errors import ConfigError, DataError
from .._core._layouts import LAYOUTS, KeyframeWindow, Layout
from .._core._layouts import to_layout as _to_layout
from .._core._limits import MAX_CLASSES, MAX_FRAMES, MAX_MODEL_WIDTH
from .._core._tasks import TASK_TRAITS
from .._core._text import model_name
from ._weights import adapt_state_dict

__all__ = [
    "LAYOUTS",
    "Keyframes",
    "ModelArgs",
    "VideoModel",
    "as_keyframes",
    "preset",
    "to_layout",
]

#: the tasks a model registers for: those whose outputs a model gives itself (multilabel takes
#: a classification model's logits)
TASKS = tuple(name for name, traits in TASK_TRAITS.items() if traits.model_task is None)


#: input of the ``keyframe`` layout: ``key`` K_t (B, C, H, W), the middle frame ``T // 2`` of
#: ``context`` (B, T, C, H, W); the same named tuple as :class:`hyperframes._core._layouts.KeyframeWindow`
Keyframes = KeyframeWindow


def as_keyframes(x: Any) -> Keyframes:
    """Accept a :class:`Keyframes`, a ``(key, context)`` pair or a dict with those keys."""
    if isinstance(x, KeyframeWindow):  # Keyframes is this class
        kf = x
    elif isinstance(x, Mapping):
        if "key" not in x or "context" not in x:
            raise DataError(
                f"keyframe input dict has keys {sorted(x)}; expected 'key' (B,C,H,W) and "
                "'context' (B,T,C,H,W)"
            )
        kf = Keyframes(x["key"], x["context"])
    elif isinstance(x, (tuple, list)) and len(x) == 2:
        kf = Keyframes(x[0], x[1])
    else:
        raise DataError(
            f"keyframe models take Keyframes(key, context), a (key, context) tuple or a dict; "
            f"got {type(x).__name__}. Build one with hyperframes.models.to_layout(x, 'keyframe')"
        )
    if not isinstance(kf.key, Tensor) or kf.key.dim() != 4:
        raise DataError(f"keyframe 'key' must be a (B, C, H, W) tensor, got {_shape(kf.key)}")
    if not isinstance(kf.context, Tensor) or kf.context.dim() != 5:
        raise DataError(
            f"keyframe 'context' must be a (B, T, C, H, W) tensor, got {_shape(kf.context)}"
        )
    return kf


def to_layout(x: Tensor, layout: Layout) -> Tensor | Keyframes:
    """Turn a temporal batch (B, T, C, H, W) into ``layout`` (see :mod:`hyperframes._core._layouts`)."""
    if not isinstance(x, Tensor) or x.dim() != 5:
        raise DataError(f"to_layout expects a (B, T, C, H, W) tensor, got {_shape(x)}")
    return _to_layout(x, layout)


def _shape(x: Any) -> str:
    return f"shape {tuple(x.shape)}" if isinstance(x, Tensor) else type(x).__name__


#: the five-dimensional layouts: the axis of their channels, their shape with C as ``{}``
_FIVE_DIMS = {"temporal": (2, "(B, T, {}, H, W)"), "conv3d": (1, "(B, {}, T, H, W)")}


class ModelArgs(TypedDict, total=False):
    """The keywords every model takes, declared once: a model's constructor takes its own
    options and ``**base: Unpack[ModelArgs]``, handed to :class:`VideoModel` (whose signature
    gives their defaults; :func:`preset` lists them among a builder's options)."""

    num_classes: Required[int]
    frames: Required[int]
    checkpointing: bool


class VideoModel(nn.Module):
    """Base class of the registered models.

    Subclasses set ``layout`` (one of :data:`LAYOUTS`) and ``task`` and implement
    ``forward(x, mask=None)``; ``mask`` is a (B, T) bool tensor of valid frames, used where
    ``uses_mask`` is true and ignored otherwise. ``fixed_frames`` says why the model takes
    only the T it was built for (empty: it takes any T, :func:`other_frames_refusal`).

    Pretrained weights are mapped by :meth:`map_pretrained`, driven by these attributes:
    ``pretrained_prefix`` (put before keys of a plain 2D/3D state dict),
    ``pretrained_rename`` ((source prefix, model prefix) pairs, tried before the prefix),
    ``pretrained_drop`` (source key prefixes that the model has no use for),
    ``pretrained_inflate`` (model keys whose 3-channel source weights are repeated T times
    and divided by T), ``pretrained_optional`` (model key prefixes that may stay freshly
    initialised or be skipped on a shape mismatch: classifier heads, new layers).
    """

    layout: Layout = "temporal"
    task: str = "classification"
    uses_mask: bool = False
    fixed_frames: str = ""
    pretrained_prefix: str = ""
    pretrained_rename: tuple[tuple[str, str], ...] = ()
    pretrained_drop: tuple[str, ...] = ()
    pretrained_inflate: tuple[str, ...] = ()
    pretrained_optional: tuple[str, ...] = ()

    def __init__(
        self,
        num_classes: int,
        frames: int,
        in_channels: int = 3,
        checkpointing: bool = False,
    ) -> None:
        super().__init__()
        _check_int("num_classes", num_classes)
        _check_int("frames", frames)
        _check_int("in_channels", in_channels)
        self.num_classes = num_classes
        self.frames = frames
        self.in_channels = in_channels
        self._checkpointing = False
        self._ckpt_only: frozenset[str] | None = None
        self._stage_names: dict[int, str] | None = None
        self.checkpointing = checkpointing
        self.registry_name: str | None = None

    # -- inputs ---------------------------------------------------------------------------
    def example_input(
        self, batch: int = 2, size: int = 64, *, generator: torch.Generator | None = None
    ) -> Tensor | Keyframes:
        """A random float input of this model's layout: ``batch`` clips, T = ``self.frames``."""
        device = next((p.device for p in self.parameters()), torch.device("cpu"))
        x = torch.randn(batch, self.frames, self.in_channels, size, size, generator=generator).to(
            device
        )
        return to_layout(x, self.layout)

    def _temporal(self, x: Tensor) -> Tensor:
        return self._five_dims(x, "temporal")

    def _five_dims(self, x: Tensor, layout: Layout) -> Tensor:
        """``x`` if it is a batch of ``layout`` (temporal or conv3d) with this model's channels."""
        axis, dims = _FIVE_DIMS[layout]
        if not isinstance(x, Tensor) or x.dim() != 5 or x.shape[axis] != self.in_channels:
            raise DataError(
                f"{self._who()} takes the {layout} layout {dims.format(self.in_channels)}; "
                f"got {_shape(x)}"
            )
        return x

    def _who(self) -> str:
        return f"model {model_name(self)!r}"

    # -- gradient checkpointing -------------------------------------------------------------
    @property
    def checkpointing(self) -> bool:
        """Recompute the heavy blocks' activations in backward (less memory, more time).

        Results and gradients are unchanged; BatchNorm running statistics are updated once
        more per step by the recomputation.
        """
        return self._checkpointing

    @checkpointing.setter
    def checkpointing(self, value: bool | Iterable[str]) -> None:
        """True: every stage; a list of stage names (``layer3``, ``backbone.net.layer4``: a
        module's qualified name or its end after a dot): only those; False or []: none."""
        if isinstance(value, bool) or value is None:
            self._ckpt_only = None
            self._checkpointing = bool(value)
        else:
            names = frozenset(str(v) for v in value)
            known = [n for n, _ in self.named_modules() if n]
            bad = sorted(n for n in names if not any(stage_match(k, n) for k in known))
            if bad:
                raise ConfigError(
                    f"checkpointing: {self._who()} has no stage {', '.join(map(repr, bad))}; "
                    "`hyperframes estimate CONFIG` lists the stages it checkpoints"
                )
            self._ckpt_only = names
            self._checkpointing = bool(names)
        self._set_checkpointing(self._checkpointing)

    @property
    def checkpoint_stages(self) -> frozenset[str] | None:
        """The stage names ``checkpointing`` was given (None: all stages, or checkpointing off)."""
        return self._ckpt_only

    def _set_checkpointing(self, enabled: bool) -> None:
        """Hook for wrapped third-party networks with their own switch."""

    def stage_name(self, fn: Any) -> str:
        """The qualified module name of a stage passed to :meth:`_ckpt` ("" if not a module)."""
        if self._stage_names is None:
            self._stage_names = {id(m): n for n, m in self.named_modules()}
        return self._stage_names.get(id(fn), "")

    def _ckpt(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Run ``fn(*args)``, through activation checkpointing when enabled and training (and
        ``fn`` is a selected stage, when stages were named)."""
        probe = STAGE_PROBE.get()
        if probe is not None:  # hyperframes.train estimate: measuring each stage
            return probe(self, fn, args)
        if self.checkpointing and torch.is_grad_enabled():
            only = self._ckpt_only
            if only is None or any(stage_match(self.stage_name(fn), n) for n in only):
                return checkpoint(fn, *args, use_reentrant=False)
        return fn(*args)

    # -- pretrained weights -----------------------------------------------------------------
    def map_pretrained(self, state_dict: Mapping[str, Tensor]) -> dict[str, Tensor]:
        """Rename / inflate a foreign state dict into this model's keys (see class doc)."""
        return adapt_state_dict(
            state_dict,
            self.state_dict(),
            prefix=self.pretrained_prefix,
            rename=self.pretrained_rename,
            drop=self.pretrained_drop,
            inflate=self.pretrained_inflate,
            frames=self.frames,
        )


def other_frames_refusal(model: nn.Module, frames: int) -> str | None:
    """Why ``model`` cannot take windows of ``frames`` frames instead of the T it was built
    for, or None when it can (CNN+LSTM, TSN, the 3D CNNs, the transformers (their temporal
    embedding interpolated), the keyframe model)."""
    built = getattr(model, "frames", frames)
    if frames == built:
        return None
    reason = getattr(model, "fixed_frames", "")
    if not isinstance(model, VideoModel):
        reason = "it is not a hyperframes VideoModel, which would say whether it takes any T"
    if not reason:
        return None
    who = model_name(model)
    return (
        f"model {who!r} takes only T={built} frames ({reason}); T={frames} needs a model "
        "that takes any T (cnn_lstm, tsn_*, r2plus1d_tiny and the other 3D CNNs, "
        f"video_vit_tiny, timesformer_tiny) or one trained at T={frames}"
    )


#: set by the memory estimate (``hyperframes.train._loop._estimate``): called as
#: ``probe(model, fn, args)`` in place of every checkpointable stage
STAGE_PROBE: contextvars.ContextVar[Callable[..., Any] | None] = contextvars.ContextVar(
    "hyperframes_stage_probe", default=None
)


M = TypeVar("M", bound=nn.Module)


def preset(
    cls: type[M],
    *,
    omit: Iterable[str] = (),
    defaults: Mapping[str, Any] | None = None,
    **fixed: Any,
) -> Callable[[Callable[[], None]], Callable[..., M]]:
    """Make a registry builder of ``cls`` from a stub that holds only its name and docstring,
    declaring a variant once instead of restating the constructor's keywords (in the spirit of
    timm's ``build_model_with_cfg``)::

        @register_model("tsm_resnet18", layout="temporal", family="tsm")
        @preset(TSM, backbone="resnet18")
        def tsm_resnet18():
            \"\"\"TSM: ResNet-18 with residual temporal shift.\"\"\"

    ``fixed`` keywords (a backbone, a mode) are always passed and are not options; ``omit``
    names constructor keywords the variant does not offer (their constructor defaults apply);
    ``defaults`` gives the variant defaults of its own. The builder's signature, what the
    registry lists as options and checks a model's options against, is the constructor's less
    those: ``num_classes``, ``frames``, then the options in the constructor's order."""
    own = dict(defaults or {})
    params, hints = constructor_parameters(cls)
    kept = [p for p in params if p.name not in fixed and p.name not in set(omit)]
    kept = [p.replace(default=own[p.name]) if p.name in own else p for p in kept]
    first = [p for p in kept if p.name in ("num_classes", "frames")]
    signature = inspect.Signature(
        first + [p for p in kept if p not in first], return_annotation=cls.__name__
    )

    def wrap(stub: Callable[[], None]) -> Callable[..., M]:
        @functools.wraps(stub)
        def build(*args: Any, **kwargs: Any) -> M:
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            call = dict(fixed)
            for name, value in bound.arguments.items():
                if signature.parameters[name].kind is inspect.Parameter.VAR_KEYWORD:
                    call.update(value)
                else:
                    call[name] = value
            return cls(**call)

        del build.__wrapped__  # the signature is the constructor's, not the stub's
        build.__signature__ = signature  # type: ignore[attr-defined]
        # and so are the annotations (the registry checks option values against them)
        build.__annotations__ = {p.name: hints[p.name] for p in kept if p.name in hints}
        return build

    return wrap


def old_order(*order: str) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """A constructor ``__init__(self, backbone, *, ...)`` that still takes the arguments after
    the backbone by position, in the ``order`` it had before its model keywords were declared
    once (:class:`ModelArgs`): they are passed on as keywords, with a DeprecationWarning that
    says how to pass them now; a TypeError for more than that order holds or a name given both
    ways. The signature the registry reads stays the constructor's."""

    def wrap(init: Callable[..., None]) -> Callable[..., None]:
        owner = init.__qualname__.split(".")[0]

        @functools.wraps(init)
        def __init__(self, backbone, *given, **keywords) -> None:
            if given:
                if len(given) > len(order):
                    raise TypeError(
                        f"{owner}() takes at most {len(order) + 1} positional arguments"
                    )
                moved = dict(zip(order, given))
                both = sorted(set(moved) & set(keywords))
                if both:
                    raise TypeError(f"{owner}() got {', '.join(both)} by position and by keyword")
                warnings.warn(
                    f"{owner}(backbone, {', '.join(moved)}) by position is deprecated; pass "
                    f"{', '.join(f'{k}=' for k in moved)} by keyword",
                    DeprecationWarning,
                    stacklevel=2,
                )
                keywords.update(moved)
            init(self, backbone, **keywords)

        return __init__

    return wrap


def constructor_parameters(cls: type[nn.Module]) -> tuple[list[inspect.Parameter], dict[str, Any]]:
    """``cls.__init__``'s parameters (less ``self``) and their resolved annotations, with a
    ``**base: Unpack[ModelArgs]`` spelled out as :class:`VideoModel`'s parameters of those names
    (``num_classes`` and ``frames`` without defaults, the others keyword-only)."""
    try:
        hints = typing.get_type_hints(cls.__init__)
    except Exception:  # an annotation that does not resolve: those options take any value
        hints = {}
    params = []
    for p in list(inspect.signature(cls.__init__).parameters.values())[1:]:  # less self
        if p.kind is p.VAR_KEYWORD and hints.get(p.name) == Unpack[ModelArgs]:
            del hints[p.name]
            base = inspect.signature(VideoModel.__init__).parameters
            base_hints = typing.get_type_hints(VideoModel.__init__)
            for name in ModelArgs.__annotations__:
                q = base[name]
                params.append(q if q.default is q.empty else q.replace(kind=q.KEYWORD_ONLY))
                hints[name] = base_hints[name]
        else:
            params.append(p)
    return params, hints


def stage_match(qualified: str, name: str) -> bool:
    return bool(qualified) and (qualified == name or qualified.endswith("." + name))


#: the bound of a size option whose own bound is not :data:`MAX_MODEL_WIDTH`
_MOST = {"num_classes": MAX_CLASSES, "frames": MAX_FRAMES}


def _check_int(name: str, value: Any) -> None:
    """A size option of a model: a positive integer, at most :data:`MAX_MODEL_WIDTH` (widths,
    depths, heads; ``num_classes`` and ``frames`` have the config's bounds), so an option of
    10**8 is refused by value before a layer of it is allocated."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"{name} must be a positive integer, got {value!r}")
    most = _MOST.get(name, MAX_MODEL_WIDTH)
    if value > most:
        raise ConfigError(f"{name} must be at most {most}, got {value}")


def masked_mean(x: Tensor, mask: Tensor | None, dim: int = 1) -> Tensor:
    """Mean of ``x`` over ``dim`` counting only entries where ``mask`` (B, T) is true."""
    if mask is None:
        return x.mean(dim)
    shape = list(mask.shape) + [1] * (x.dim() - mask.dim())
    w = mask.reshape(shape).to(x.dtype)
    return (x * w).sum(dim) / w.sum(dim).clamp_min(1.0)


def check_mask(model: VideoModel, mask: Tensor | None, batch: int, frames: int) -> Tensor | None:
    if mask is None:
        return None
    if not isinstance(mask, Tensor) or tuple(mask.shape) != (batch, frames):
        raise DataError(
            f"{model._who()}: mask must be a ({batch}, {frames}) bool tensor of valid frames, "
            f"got {_shape(mask)}"
        )
    return mask.bool()


def resnet_features(net: Any, x: Tensor, ckpt: Callable[..., Any]) -> Tensor:
    """Pooled features of a torchvision ResNet; ``ckpt`` wraps the four stages.

    ``net`` is Any: its stages are reached by name (torchvision ships no types)."""
    x = net.maxpool(net.relu(net.bn1(net.conv1(x))))
    for layer in (net.layer1, net.layer2, net.layer3, net.layer4):
        x = ckpt(layer, x)
    return torch.flatten(net.avgpool(x), 1)


def mobilenet_features(net: Any, x: Tensor, ckpt: Callable[..., Any]) -> Tensor:
    """Pooled features of a torchvision MobileNetV3; ``ckpt`` wraps each inverted block.

    ``net`` is Any: its blocks are reached by name (torchvision ships no types)."""
    feats = net.features
    x = feats[0](x)
    for block in list(feats)[1:]:
        x = ckpt(block, x)
    return torch.flatten(net.avgpool(x), 1)
