"""The input contract: how raw frames become a model's input, in one object that travels with
the model (in the spirit of timm's ``PretrainedCfg`` + ``resolve_data_config``).

Training writes an :class:`InputContract` into every checkpoint (``state["contract"]``) and
the ONNX sidecar; evaluation, :class:`~hyperframes.infer.Predictor`, ``predict`` and
``export`` read it back and prepare input with it and nothing else, so train and serve
cannot disagree. From a source frame to the model, in order:

1. **store** -- what ``hyperframes build`` did: resample to ``fps`` (None: every decoded
   frame) and resize to ``size`` (``"128"`` short side, ``"112x96"`` exact, None native).
   Predict does it as frames arrive (:meth:`InputContract.store_size`);
2. **window** -- ``frames`` (T) stored frames, ``frame_stride`` apart;
3. **geometry** -- with a ``crop`` s: the central square of the short side resized to s x s
   (:meth:`InputContract.crop_box` / :meth:`InputContract.resize_crop`: OpenCV's resize on the
   CPU, the batch pipeline's, so the dataset's eval crop and predict give the same pixels;
   torchvision's antialiased bilinear on a GPU; eval's extra views take the square at the
   start or end of the longer side instead);
4. **values** -- uint8 to float32 in [0, 1], then ``(x - mean) / std`` per channel
   (a ``dtype="float16"`` store holds frames normalised at build time: only cast);
5. **layout** -- the batch rearranged for the model (:mod:`hyperframes._core._layouts`), once per
   batch, at the model boundary.
6. **tracks** -- with ``flow`` the window's optical flow (B, T-1, 2, H, W), in pixels, is
   appended after the channel layout's frames (B, C*T + 2*(T-1), H, W); with ``audio`` (the
   log-mel parameters the model was trained with) the input is ``(video, audio)``, the
   batch's log-mel (B, n_mels, T*k) beside the video. ``register`` records the registration
   the windows had (``"homography"``/``"flow"``). These come from a store's tracks: eval and
   training prepare them; a raw video cannot (the predictor refuses such a contract).
7. **frame task** -- ``frame_task`` records what a restoring model (interpolation,
   super-resolution) is given: ``{"kind": "interpolation"}`` (the window's middle frame is the
   target, zeroed in the input) or ``{"kind": "super_resolution", "factor": f, "filter":
   "bicubic" | "area"}`` (the window is downscaled f times with that filter at load, before
   step 3; :func:`hyperframes.models.downscale`). Such a model undoes step 4 itself (it gets
   ``mean``/``std`` as options, :meth:`InputContract.model_options`) and outputs RGB in [0, 1].

Two records travel with it, neither changing how input is prepared: ``decoder`` (the decoder
and version that built the store, which ``predict`` decodes with by default) and
``calibration`` (set by ``hyperframes recalibrate``: the model was trained at
``trained_frames`` and its BatchNorm statistics re-estimated at ``frames``);
:mod:`~hyperframes._core._contract_checks` checks them, as it checks every field.

Steps 3-5 are :meth:`InputContract.prepare`, the one function every path calls on a uint8
batch (B, T, C, H, W). Geometry is idempotent (a frame already s x s is left as it is), so
eval datasets and the predictor may apply step 3 earlier, per window or per frame (to batch
frames of mixed sizes, or to resize each streamed frame once), and ``prepare`` does the rest.

``resolve_contract`` derives a contract from a training config (+ its store), from a
checkpoint (its ``contract`` entry, or for older checkpoints their config and ``input``
entry), or from a contract with overrides. A checkpoint is untrusted input: every value is
bounded (:meth:`InputContract.from_dict`).

This module imports no torch at import time (the store imports its ImageNet constants).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import BeforeValidator, Field, ValidationInfo, field_validator, model_validator

from ._contract_checks import (
    DOWNSCALE_FILTERS,
    Dtype,
    Finite,
    Layout,
    Positive,
    Register,
    check_frame_size,
    check_record,
)
from ._errors import ConfigError, DataError
from ._limits import MAX_CLASSES, MAX_FPS, MAX_FRAMES, MAX_SIDE
from ._sizes import DEFAULT_SIZE, parse_size, target_size
from ._validate import Number, Options, as_tuple

__all__ = [
    "DOWNSCALE_FILTERS",
    "IMAGENET_MEAN",
    "IMAGENET_STD",
    "POSITIONS",
    "InputContract",
    "check_frame_size",
]

#: ImageNet statistics on the [0, 1] scale: the one definition (config, store and infer use it)
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
#: where a crop sits along the longer side of a frame
POSITIONS = ("start", "centre", "end")
VERSION = 1
_FIELDS = (
    "frames",
    "frame_stride",
    "fps",
    "size",
    "crop",
    "mean",
    "std",
    "dtype",
    "layout",
    "classes",
    "flow",
    "audio",
    "register",
    "decoder",
    "calibration",
    "frame_task",
)
#: fields written by ``to_dict`` only when they differ from their default (older readers and
#: checkpoints without them stay readable)
_OPTIONAL = {
    "flow": False,
    "audio": None,
    "register": None,
    "decoder": None,
    "calibration": None,
    "frame_task": None,
}


#: ``register`` (the registration a model's windows had) is a contract key checkpoints hold; it
#: shares its name with ``BaseModel.register`` (abc's), which no contract calls
warnings.filterwarnings("ignore", 'Field name "register" in "InputContract" shadows', UserWarning)


def _rgb(value: Any, info: ValidationInfo) -> Any:
    """``mean``/``std``: three values, one per RGB channel (their type is the field's)."""
    value = as_tuple(value)
    if not isinstance(value, tuple) or len(value) != 3:
        raise ConfigError(
            f"{info.field_name}: expected 3 numbers (one per RGB channel), got {value!r:.80}"
        )
    return value


def _record(name: str):
    """A before-validator: the record ``name`` checked by its model (:func:`check_record`)."""
    return field_validator(name, mode="before")(lambda cls, v: check_record(name, v))


class InputContract(Options):
    """How frames become model input (module doc): ``frames`` T, ``frame_stride`` (stored
    frames between consecutive frames of a window), ``fps`` (the store's rate, None: every
    decoded frame), ``size`` (the store's frame size, None: native), ``crop`` (side of the
    square the model sees, None: the whole stored frame), ``mean``/``std`` (on the [0, 1]
    scale), ``dtype`` (of the frames a store holds: ``"uint8"`` RGB 0..255, or ``"float16"``
    normalised at build time), ``layout`` and ``classes``.

    ``source`` says where ``size``/``fps`` came from; it is not part of the contract (not
    compared, not saved). A copy with some fields changed is :meth:`replace`."""

    frames: int = Field(ge=1, le=MAX_FRAMES, description="T, frames a window holds")
    layout: Layout
    frame_stride: int = Field(1, ge=1, le=MAX_FRAMES, description="stored frames between two")
    fps: Number | None = Field(
        None, gt=0, le=MAX_FPS, allow_inf_nan=False, description="the store's rate"
    )
    size: str | None = DEFAULT_SIZE
    crop: int | None = Field(None, ge=1, le=MAX_SIDE, description="side of the model's square")
    mean: Annotated[tuple[Finite, Finite, Finite], BeforeValidator(_rgb)] = IMAGENET_MEAN
    std: Annotated[tuple[Positive, Positive, Positive], BeforeValidator(_rgb)] = IMAGENET_STD
    dtype: Dtype = "uint8"
    classes: Annotated[tuple[str, ...], BeforeValidator(as_tuple)] = Field(
        (), max_length=MAX_CLASSES, description="class names, in the model's output order"
    )
    flow: bool = False
    audio: dict | None = None
    register: Register | None = None
    #: the decoder that built the store, ``{"name", "version"}`` (None: not recorded)
    decoder: dict | None = None
    #: set by ``hyperframes recalibrate``: ``{"clips", "frames", "store", "trained_frames"}``
    calibration: dict | None = None
    frame_task: dict | None = None
    source: str = Field("defaults", exclude=True, repr=False)

    _audio = _record("audio")
    _decoder = _record("decoder")
    _calibration = _record("calibration")
    _frame_task = _record("frame_task")

    @field_validator("size")
    @classmethod
    def _size(cls, value: str | None) -> str | None:
        check_frame_size(value, "size")
        return value

    @model_validator(mode="after")
    def _flow_needs_channels(self) -> InputContract:
        if self.flow and self.layout != "channel":
            raise ConfigError(
                f"flow: the flow planes are appended in the channel layout; layout "
                f"{self.layout!r} takes frames only (use a channel model, or flow: false)"
            )
        return self

    def __eq__(self, other: object) -> bool:  # every field but ``source``
        if not isinstance(other, InputContract):
            return NotImplemented
        return all(getattr(self, k) == getattr(other, k) for k in _FIELDS)

    @property
    def downscale(self) -> int:
        """The factor a super-resolution window is downscaled by at load (1: none)."""
        ft = self.frame_task
        return int(ft["factor"]) if ft is not None and ft["kind"] == "super_resolution" else 1

    def __hash__(self) -> int:  # audio is a dict: hash what identifies the contract
        return hash((self.frames, self.layout, self.frame_stride, self.size, self.classes))

    def __repr__(self) -> str:
        shown = {
            k: getattr(self, k)
            for k in _FIELDS
            if k != "classes" and (k not in _OPTIONAL or getattr(self, k) != _OPTIONAL[k])
        }
        args = ", ".join(f"{k}={v!r}" for k, v in shown.items())
        return f"InputContract({args}, classes=<{len(self.classes)} names>)"

    # -- (de)serialisation -------------------------------------------------------------------
    def to_dict(self) -> dict:
        """Plain values (``torch.load(weights_only=True)`` and JSON read them back)."""
        d = {
            k: getattr(self, k)
            for k in _FIELDS
            if k not in _OPTIONAL or getattr(self, k) != _OPTIONAL[k]
        }
        d.update(mean=list(self.mean), std=list(self.std), classes=list(self.classes))
        for k in ("audio", "decoder", "calibration", "frame_task"):
            if getattr(self, k) is not None:
                d[k] = dict(getattr(self, k))
        return {"version": VERSION, **d}

    @classmethod
    def from_dict(cls, d: Any, *, where: str = "contract") -> InputContract:
        """The contract ``d`` describes (what :meth:`to_dict` wrote), every value checked;
        :class:`ConfigError` naming ``where`` and the key."""
        if not isinstance(d, Mapping):
            raise ConfigError(f"{where}: expected a mapping, got {type(d).__name__}")
        if d.get("version", VERSION) != VERSION:
            raise ConfigError(
                f"{where}: version {d.get('version')!r:.40} is not readable by this hyperframes, "
                f"which reads version {VERSION}"
            )
        unknown = sorted(str(k) for k in d if k not in (*_FIELDS, "version"))
        if unknown:
            raise ConfigError(f"{where}: unknown keys {unknown[:5]}; allowed: {', '.join(_FIELDS)}")
        for key in ("frames", "layout"):
            if key not in d:
                raise ConfigError(f"{where}: the {key!r} entry is missing")
        kw = {k: d[k] for k in _FIELDS if k in d}
        if "fps" in kw and kw["fps"] == 0 and not isinstance(kw["fps"], bool):
            kw["fps"] = None
        try:
            return cls(**kw, source=where)
        except ConfigError as e:  # the key, under where the contract came from
            text = str(e)
            if text.startswith("unknown key "):
                raise ConfigError(f"unknown key {where}.{text[len('unknown key ') :]}") from None
            raise ConfigError(f"{where}.{text}") from None

    # -- sizes -------------------------------------------------------------------------------
    def store_size(self, height: int, width: int) -> tuple[int, int]:
        """(H, W) the store makes of a ``height`` x ``width`` source frame."""
        return target_size(height, width, self.size) or (height, width)

    def input_size(self, height: int, width: int) -> tuple[int, int]:
        """(H, W) of the model input for a ``height`` x ``width`` source frame."""
        h, w = self.store_size(height, width)
        return (h, w) if self.crop is None else (self.crop, self.crop)

    def example_size(self) -> tuple[int, int]:
        """A representative input size when no source frame is known (export): the crop, the
        exact size, or a square of the short side (64 for native-size stores)."""
        if self.crop is not None:
            return (self.crop, self.crop)
        spec = parse_size(self.size)
        h, w = (64, 64) if spec is None else (spec[1], spec[2])
        f = self.downscale  # a super-resolution model takes the downscaled window
        return (max(h // f, 1), max(w // f, 1))

    def model_options(self) -> dict:
        """Model options the tracks imply: ``extra_channels`` 2*(T-1) with flow (the channel
        family's first conv reads them), ``n_mels``/``columns_per_frame`` with audio."""
        out: dict = {}
        if self.flow:
            out["extra_channels"] = 2 * (self.frames - 1)
        if self.audio is not None:
            out["n_mels"] = self.audio["n_mels"]
            out["columns_per_frame"] = self.audio["columns_per_frame"]
        if self.frame_task is not None:  # a restoring model undoes step 4 itself
            out["mean"], out["std"] = list(self.mean), list(self.std)
            if self.downscale > 1:
                out["scale"] = self.downscale
        return out

    def window_span(self) -> int:
        """Stored frames a window covers: ``(frames - 1) * frame_stride + 1``."""
        return (self.frames - 1) * self.frame_stride + 1

    # -- preparing input ---------------------------------------------------------------------
    def crop_box(self, height: int, width: int, position: str = "centre"):
        """Step 3 as a box of a ``height`` x ``width`` stored frame: ``((top, left, h, w),
        (out_h, out_w))``. With ``crop`` s, the square of the short side at ``position`` along
        the longer side, resized to s x s; without, the whole frame (a ``position`` other than
        centre then takes the square of the short side there, unresized: eval's extra
        views)."""
        if position not in POSITIONS:
            raise ConfigError(f"position {position!r}: allowed: {', '.join(POSITIONS)}")
        h, w = int(height), int(width)
        if self.crop is None and position == "centre":
            return (0, 0, h, w), (h, w)
        side = min(h, w)

        def offset(length: int, along: bool) -> int:
            if not along or position == "centre":
                return (length - side) // 2
            return 0 if position == "start" else length - side

        box = (offset(h, h > w), offset(w, w >= h), side, side)
        return box, (self.crop, self.crop) if self.crop is not None else (side, side)

    def resize_crop(self, frames, *, position: str = "centre"):
        """Step 3 on a (..., C, H, W) tensor: the box of :meth:`crop_box` resized to its size
        (uint8 or float32 on the CPU: OpenCV's resize, the batch pipeline's, so eval and
        predict see the same pixels; elsewhere torchvision's antialiased bilinear). Frames
        already of the output size come back as they are."""
        import torch  # deferred: optional/heavy dependency

        h, w = frames.shape[-2:]
        (top, left, bh, bw), size = self.crop_box(h, w, position)
        if (top, left, bh, bw) == (0, 0, h, w) and size == (h, w):
            return frames
        if (bh, bw) == size:
            return frames[..., top : top + bh, left : left + bw]
        if frames.device.type == "cpu" and frames.dtype in (torch.uint8, torch.float32):
            from ._resize import resize_planes  # deferred: pulls numpy

            out = torch.empty((*frames.shape[:-2], *size), dtype=frames.dtype)
            resize_planes(frames.numpy(), (top, left, bh, bw), out.numpy())
            return out
        import torchvision.transforms.v2.functional as F  # deferred: optional/heavy dependency

        return F.resized_crop(frames, top, left, bh, bw, list(size), antialias=True)

    def check_store_frames(self, manifest: Mapping, where: object) -> None:
        """Refuse a store whose frames :meth:`normalize` would misread: a ``float16`` store
        holds frames normalised at build with its own mean/std, which only a ``float16``
        contract of the same mean/std takes (a ``uint8`` contract would take them as [0, 1]
        and normalise them again: wrong pixels, no error). A ``uint8`` store suits any
        contract (its frames are normalised with the contract's own mean/std)."""
        build = manifest.get("build") if isinstance(manifest, Mapping) else None
        if not isinstance(build, Mapping) or build.get("dtype") != "float16":
            return
        norm = manifest.get("normalize")
        norm = norm if isinstance(norm, Mapping) else {}
        mean, std = norm.get("mean"), norm.get("std")
        same = (
            self.dtype == "float16"
            and mean is not None
            and std is not None
            and all(abs(float(a) - b) <= 1e-6 for a, b in zip(mean, self.mean, strict=True))
            and all(abs(float(a) - b) <= 1e-6 for a, b in zip(std, self.std, strict=True))
        )
        if not same:
            raise DataError(
                f"{where}: holds float16 frames normalised at build (mean {mean}, std {std}), "
                f"but the model takes {self.dtype} frames normalised with mean "
                f"{list(self.mean)}, std {list(self.std)}: its pixels would be misread. "
                "Evaluate on a uint8 store of the same videos (hyperframes build without "
                "--dtype float16)"
            )

    def normalize(self, frames, *, device=None):
        """Step 4 on a (..., C, H, W) tensor (moved to ``device`` first): uint8 to float32,
        ``(x / 255 - mean) / std``; float frames are taken as [0, 1] (as ``to_float`` makes
        them), except that a ``float16`` contract's float frames are already normalised."""
        import torch  # deferred: optional/heavy dependency

        from ._normalize import normalize  # (torch, imported on first use)

        if device is not None:
            frames = frames.to(device, non_blocking=True)
        if frames.is_floating_point() and self.dtype == "float16":
            return frames.to(torch.float32)
        if frames.ndim < 3 or frames.shape[-3] != len(self.mean):
            raise DataError(
                f"frames of shape {tuple(frames.shape)}: expected (..., {len(self.mean)}, H, W)"
                " RGB frames"
            )
        return normalize(frames, self.mean, self.std)

    def prepare(self, frames, *, device=None, position: str = "centre", flow=None, audio=None):
        """Steps 3-6 on a uint8 window (T, C, H, W) or batch (B, T, C, H, W): the model's
        input (a tensor, a :class:`~hyperframes._core._layouts.KeyframeWindow`, or with
        ``audio`` a ``models.AudioVisual(video, audio)``). ``flow`` (…, T-1, 2, H, W) and
        ``audio`` (…, n_mels, T*k): the window's tracks, required when the contract has
        them (step 6), ignored otherwise."""
        if getattr(frames, "ndim", 0) not in (4, 5):
            shape = tuple(frames.shape) if hasattr(frames, "shape") else type(frames).__name__
            raise DataError(
                f"prepare needs a window (T, C, H, W) or a batch (B, T, C, H, W) of frames in "
                f"the temporal layout, got {shape}"
            )
        if frames.shape[-4] != self.frames:
            raise DataError(
                f"prepare: the model takes windows of {self.frames} frames, got "
                f"{frames.shape[-4]} (shape {tuple(frames.shape)})"
            )
        x = self.normalize(self.resize_crop(frames, position=position), device=device)
        if self.flow:
            flow = self._check_flow(flow, frames.shape[-4], tuple(x.shape[-2:]))
        out = model_frames(x, self.layout, flow=flow if self.flow else None)
        if self.audio is not None:
            out = self._with_audio(out, audio, device)
        return out

    def _check_flow(self, flow, t: int, size: tuple):
        want = (t - 1, 2, *size)
        return _ending_in(
            flow,
            want,
            f"this contract appends optical flow (…, {want[0]}, 2, {want[2]}, {want[3]}) to the "
            "frames (the model was trained with flow channels)",
            "Flow comes from a store built with --flow and a dataset with flow=True",
        )

    def _with_audio(self, video, audio, device):
        import torch  # deferred: optional/heavy dependency

        from ._layouts import AudioVisual  # (torch, imported on first use)

        assert self.audio is not None
        k = self.audio["columns_per_frame"]
        want = (self.audio["n_mels"], self.frames * k)
        audio = _ending_in(
            audio,
            want,
            f"the model takes audio beside the video, a log-mel (…, {want[0]}, {want[1]})",
            f"Audio comes from a store built with --audio and a dataset with audio={self.audio!r}",
        )
        # non-blocking: from pinned memory, prepared on a side stream (PrefetchLoader)
        audio = audio.to(device=video.device, dtype=torch.float32, non_blocking=True)
        return AudioVisual(video, audio)


def _ending_in(value, want: tuple[int, ...], takes: str, comes: str):
    """``value`` if it is a tensor whose shape ends in ``want``; else the :class:`DataError`
    saying what the contract ``takes``, what came, and where it ``comes`` from."""
    import torch  # deferred: optional/heavy dependency

    if not isinstance(value, torch.Tensor) or tuple(value.shape[-len(want) :]) != want:
        raise DataError(f"prepare: {takes}; got {_shape_or_type(value)}. {comes}")
    return value


def _shape_or_type(x) -> tuple | str:
    """How a message shows a value that should have been a tensor: its shape, else its type."""
    import torch  # deferred: optional/heavy dependency

    return tuple(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__


def model_frames(frames, layout: Layout, dtype: str = "uint8", flow=None, *, alloc=None):
    """Dtype, layout and flow planes of a window (T, C, H, W) or a batch (B, T, C, H, W) of
    frames: the one function that lays frames out for a model. :meth:`InputContract.prepare`
    calls it at the model boundary (training, eval, predict and export keep batches temporal
    until then, so the model's layout is applied once); the dataset's output calls it once per
    batch only to honour its own ``layout=``/``dtype=`` (a temporal uint8 dataset's frames
    pass through unchanged). Nothing else arranges frames (pinned by
    ``tests/test_one_path.py``). uint8 frames become ``dtype`` (a float dtype: scaled to [0, 1]), float frames are kept;
    in the channel layout ``flow`` (…, T-1, 2, H, W) is appended as 2*(T-1) planes (frames
    made float first). Other layouts leave the flow beside the frames.

    ``alloc(shape, torch_dtype)``: where a new float tensor comes from (the dataset's pooled
    batch buffers: a fresh 60 MB tensor per batch is fresh pages to fault in, which made
    ``torch.cat`` of the flow planes cost 4x its copy); frames are converted straight into
    it and the flow planes copied beside them."""
    import torch  # deferred: optional/heavy dependency

    from ._layouts import to_layout  # deferred: pulls torch

    new = alloc or (lambda shape, dt: torch.empty(shape, dtype=dt, device=frames.device))
    float_dt = torch.float32 if dtype == "uint8" else getattr(torch, dtype)
    if flow is not None and layout == "channel":
        window = to_layout(frames, layout)
        assert isinstance(window, torch.Tensor)  # the channel layout is a tensor
        planes = flow.flatten(-4, -3)
        dt = window.dtype if window.is_floating_point() else float_dt
        shape = (*window.shape[:-3], window.shape[-3] + planes.shape[-3], *window.shape[-2:])
        out = new(shape, dt)
        n = window.shape[-3]
        head = out.narrow(-3, 0, n)
        head.copy_(window)
        if not window.is_floating_point():
            head.div_(255.0)
        out.narrow(-3, n, planes.shape[-3]).copy_(planes, non_blocking=True)
        return out
    if dtype != "uint8" and frames.dtype == torch.uint8:
        frames = new(tuple(frames.shape), float_dt).copy_(frames).div_(255.0)
    return to_layout(frames, layout)
