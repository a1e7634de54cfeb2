"""The streaming predictor: frames in one at a time, smoothed window predictions out.

::

    p = Predictor.from_checkpoint("runs/x/best.pt", stride=2, ema=0.7)
    for rgb, t in camera():                       # (H, W, 3) uint8, seconds
        for pred in p.push(rgb, t):
            print(pred.start_seconds, pred.first_source_frame, pred.top(1))
    for pred in p.flush():                        # end of stream: the last windows
        ...

Windows of T frames, ``frame_stride`` d apart (the model's :class:`InputContract`; a window
spans L = (T - 1) d + 1 frames), start at frames 0, S, 2S, ... (S = ``stride``) of the
model's frame grid: the frames kept after resampling to the contract's ``fps`` (every frame
pushed when it has none). Predictions name their frames by source number (the n-th frame
pushed) and their times in seconds (:class:`Prediction`). At the end
(:meth:`Predictor.flush`) one more window ``[N - L, N)`` is added when the regular ones miss
the last frames. A stream shorter than L frames is refused, as training refuses a video
shorter than a window (its samplers' ``short="error"``): :class:`InputError` naming the video,
its frame count and the window's need; ``short="pad"`` predicts one window of it instead, its
last frame repeated (:attr:`Prediction.padded`). Memory is bounded whatever the length: the last L frames plus those of the
windows waiting for a batch (``batch_size`` windows per model call; with reuse,
``frame_batch`` frames per call of the per-frame part): :attr:`Predictor.held_frames`.

Input is prepared by the model's :class:`InputContract` only, as evaluation prepares it:
each frame is resampled to the store's rate and resized to the store's size as it arrives
(what ``hyperframes build`` did; :meth:`Predictor.frame_size`, frames already that size are
used as they are), then resized and cropped once (:meth:`InputContract.resize_crop`); each
batch of windows goes through :meth:`InputContract.prepare` (normalisation and layout).

Smoothing: ``s_k = ema * s_{k-1} + (1 - ema) * logits_k`` over windows in order
(``ema=0``: none); probabilities are the softmax of ``s_k`` (a ``multilabel`` model's: the
sigmoid of each class's, so they need not sum to 1).

Feature reuse (``reuse="auto"``): for models with a per-frame part (:func:`split_model`:
TSN, CNN+LSTM, the TSM stem) and overlapping windows (S < T), each frame goes through that
part once (``frame_batch`` frames per call) and only the head runs per window; the
predictions equal the plain path's.

Edges of a dense task (segmentation): a window's output belongs to its key frame
(position ``T // 2``), so the regular windows leave the first ``(T // 2) d`` and the last
``(T - 1 - T // 2) d`` frames without one. Those get windows too, their key frames continuing
the grid of key frames (``S`` apart) back towards frame 0 and on towards the last frame (both
of which always get one), with the frames
before the first or after the last mirrored about it (frame ``-i`` is frame ``i``, frame
``N - 1 + i`` is frame ``N - 1 - i``), as the seed pads: with ``stride=1`` every frame gets a
mask. These windows are marked :attr:`Prediction.mirrored`.

Gaps: as in a build (``max_gap``), two frames further apart than ``max_gap_seconds`` are not
bridged by repeated frames when resampling to the contract's rate (the frames after the gap
start a new grid; :class:`~hyperframes.decode.FpsResampler`), so a clip whose timestamps jump
by a day makes a few windows, not millions. ``None``: no bound.
"""

from __future__ import annotations

import math
import os
from collections import deque
from collections.abc import Sequence
from typing import Any, Literal, get_args

import numpy as np
import torch
from torch import Tensor, nn

from .._core._contract import InputContract
from .._core._errors import ConfigError, InputError
from .._core._limits import check_infer_values
from .._core._sizes import DEFAULT_MAX_GAP_SECONDS
from .._core._tasks import task_traits
from .._core._text import model_name
from ..decode import FpsResampler, resize_rgb
from ..models import decode_detections, detection_head, other_frames_refusal
from ._load import InferenceModel, load_inference_model
from ._prediction import Prediction
from ._reuse import FrameSplit, split_model

__all__ = ["Predictor", "Short", "check_options"]

REUSE = ("auto", True, False)
#: what flush does with a stream shorter than a window: refuse it, or pad it to one window
Short = Literal["error", "pad"]
SHORT: tuple[Short, ...] = get_args(Short)

# how a window's frames were completed: not at all, the last frame repeated (a stream
# shorter than a window), or mirrored about the stream's first or last frame
Pad = str  # "" | "repeat" | "mirror"
Window = tuple[list[int], Pad]


def mirror_index(i: int, n: int) -> int:
    """Frame ``i`` of a stream of ``n`` frames, mirrored about its first and last frames."""
    if i < 0:
        i = -i
    if i > n - 1:
        i = 2 * (n - 1) - i
    return min(max(i, 0), n - 1)


def check_options(stride: Any, ema: Any, batch_size: Any = 1, short: Any = "error") -> None:
    """:class:`ConfigError` for a stride, EMA weight, batch size or short-video policy out of
    range."""
    if isinstance(stride, bool) or not isinstance(stride, int) or stride < 1:
        raise ConfigError(
            f"stride {stride!r}: allowed: an integer >= 1 (frames between the starts of "
            "consecutive windows); try stride 1 for every window or stride T for "
            "non-overlapping ones"
        )
    if (
        isinstance(ema, bool)
        or not isinstance(ema, (int, float))
        or not math.isfinite(ema)
        or not 0 <= ema < 1
    ):
        raise ConfigError(
            f"ema {ema!r}: allowed: a number with 0 <= ema < 1 (the weight of the past in the "
            "moving average of logits; 0 turns smoothing off), e.g. ema 0.7"
        )
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ConfigError(f"batch_size {batch_size!r}: allowed: an integer >= 1")
    if short not in SHORT:
        raise ConfigError(
            f"short {short!r}: allowed: 'error' (refuse a video shorter than a window, as "
            "training does) or 'pad' (one window, its last frame repeated)"
        )


def check_input_values(
    contract: InputContract, batch_size: int, height: int, width: int, where: str
) -> None:
    """One model call's input (``batch_size`` windows of T frames) and the frames a window
    spans, at ``height`` x ``width``, within the inference bound: a contract asking for 512
    frames of 2048 x 2048 is refused, not allocated."""
    check_infer_values(batch_size, contract.frames, 3, height, width, where)
    span = contract.window_span()
    check_infer_values(1, span, 3, height, width, f"{where} (the {span} frames a window spans)")


def _check_predictor_options(
    model: nn.Module,
    contract: Any,
    stride: Any,
    ema: Any,
    batch_size: Any,
    reuse: Any,
    frame_batch: Any,
    short: Any = "error",
) -> None:
    """:class:`ConfigError` for an option out of range, or a contract or model the predictor
    cannot serve from raw frames (tracks from a store, a T the model does not take)."""
    check_options(stride, ema, batch_size, short)
    if frame_batch is not None and (
        isinstance(frame_batch, bool) or not isinstance(frame_batch, int) or frame_batch < 1
    ):
        raise ConfigError(f"frame_batch {frame_batch!r}: allowed: an integer >= 1 or None")
    if reuse not in REUSE:
        raise ConfigError(f"reuse {reuse!r}: allowed: 'auto', True or False")
    if not isinstance(contract, InputContract):
        raise ConfigError(f"contract must be an InputContract, got {type(contract).__name__}")
    tracks = [n for n, on in (("optical flow", contract.flow), ("audio", contract.audio)) if on]
    if contract.register is not None:
        tracks.append(f"{contract.register} registration")
    if tracks:
        raise ConfigError(
            f"Predictor reads raw video frames; this model was trained with "
            f"{' and '.join(tracks)} from a store, which the predictor cannot compute. "
            "Build a store of the videos (hyperframes build --audio/--flow) and evaluate "
            "there (hyperframes eval)"
        )

    why = other_frames_refusal(model, contract.frames)
    if why is not None:
        raise ConfigError(f"contract frames={contract.frames}: {why}")


def _class_names(
    model: nn.Module, contract: InputContract, classes: Sequence[str] | None
) -> list[str]:
    """``classes`` (default: the contract's, else the model's class numbers), as many as the
    model has classes."""
    num_classes = getattr(model, "num_classes", None)
    if classes is None:
        classes = list(contract.classes) or [str(i) for i in range(num_classes or 0)]
    names = [str(c) for c in classes]
    if num_classes is not None and len(names) != num_classes:
        raise ConfigError(f"{len(names)} class names for a model of {num_classes} classes")
    return names


def _reused_split(model: nn.Module, reuse: Any, stride: int, frames: int) -> FrameSplit | None:
    """The model's per-frame part to compute once per frame (None: the plain path)."""
    split = split_model(model) if reuse is not False else None
    if reuse is True and split is None:
        who = model_name(model)
        raise ConfigError(
            f"reuse=True: model {who!r} has no per-frame part to reuse (TSN, CNN+LSTM and "
            "TSM do); allowed for it: reuse='auto' or False"
        )
    if reuse == "auto" and stride >= frames:
        return None  # windows do not overlap: nothing to reuse
    return split


class Predictor:
    """Windowed, batched, smoothed predictions over a stream of frames (module doc)."""

    def __init__(
        self,
        model: nn.Module,
        contract: InputContract,
        classes: Sequence[str] | None = None,
        *,
        task: str | None = None,
        stride: int = 1,
        ema: float = 0.0,
        batch_size: int = 8,
        reuse: str | bool = "auto",
        frame_batch: int | None = None,
        device: str | torch.device | None = None,
        short: Short = "error",
        max_gap_seconds: float | None = DEFAULT_MAX_GAP_SECONDS,
    ) -> None:
        _check_predictor_options(
            model, contract, stride, ema, batch_size, reuse, frame_batch, short
        )
        #: a stream shorter than a window: "error" (refused) or "pad" (module doc)
        self.short = short
        self.model = model.eval()
        if device is not None:
            self.model.to(device)
        self.device = next((p.device for p in model.parameters()), torch.device("cpu"))
        self.contract = contract
        self.frames = contract.frames
        self.span = contract.window_span()
        # a name of its own: inside `task or ...` mypy infers the getattr as str | None
        model_task = getattr(model, "task", "classification")
        self.task: str = task or model_task
        #: what the task's outputs are (class scores, masks, boxes), by its registered traits
        self.traits = task_traits(self.task)
        if self.traits.reconstructs:  # reconstructs windows, predicts no class
            raise ConfigError(
                "a masked_video model (masked pretraining) predicts no classes over a video; "
                "`hyperframes predict CKPT VIDEO` writes its reconstructions (`hyperframes eval "
                "RUN --crops 1 --reconstructions N` those of its store), or fine-tune a "
                "classifier from it (model.pretrained)"
            )
        self.classes = _class_names(model, contract, classes)
        self.stride = stride
        self.ema = float(ema)
        self.batch_size = batch_size
        #: with reuse: frames per call of the per-frame part (default: batch_size * T, the
        #: images per call of the plain path); 1 for the lowest latency on a live stream
        self.frame_batch = frame_batch or batch_size * self.frames
        #: frames further apart than this (seconds) are not bridged when resampling
        self.max_gap_seconds = max_gap_seconds
        self._check_input_values(*contract.example_size())  # the crop's or size's; exact below
        self.split: FrameSplit | None = _reused_split(model, reuse, stride, self.frames)
        self.path: str | None = None
        self.notes: list[str] = []
        #: images run through the model's per-frame part (or, without reuse, the whole
        #: model: T per window) since the predictor was made; reset() keeps counting
        self.frames_computed = 0
        #: frames on the model's grid (after resampling) since the predictor was made
        self.frames_added = 0
        #: the last stream's first window as the model read it, uint8 (1, T, 3, H, W) (the
        #: PCA picture of a keyframe model's H_t that ``predict`` saves)
        self.first_window: Tensor | None = None
        self.reset()

    @classmethod
    def from_checkpoint(
        cls,
        checkpoint: str | os.PathLike | InferenceModel,
        *,
        size: Any = None,
        fps: Any = None,
        device: str | torch.device = "cpu",
        frames: int | None = None,
        **options: Any,
    ) -> Predictor:
        """A predictor for a ``hyperframes train`` checkpoint (``size``/``fps``/``frames``:
        see :func:`~hyperframes.infer.load_inference_model`), or for one already loaded (then
        ``size``/``fps``/``device``/``frames`` are its own)."""
        if isinstance(checkpoint, InferenceModel):
            loaded = checkpoint
        else:
            loaded = load_inference_model(
                checkpoint, size=size, fps=fps, device=device, frames=frames
            )
        batch = options.get("batch_size", 8)
        if isinstance(batch, int):  # (a bad one is refused by the constructor, by name)
            where = f"checkpoint {loaded.path}: its input contract"
            check_input_values(loaded.contract, batch, *loaded.contract.example_size(), where)
        p = cls(
            loaded.model,
            loaded.contract,
            loaded.classes,
            task=loaded.task,
            **options,
        )
        p.path = loaded.path
        p.notes = list(loaded.notes)
        return p

    # -- state ------------------------------------------------------------------------------
    def reset(self) -> None:
        """Forget the stream: the next frame pushed starts a new one."""

        fps = self.contract.fps
        self._resampler = FpsResampler(fps, max_gap_seconds=self.max_gap_seconds) if fps else None
        self._pushed = 0
        self._last_pts: float | None = None
        self._native: tuple[int, int] | None = None
        self._cached: tuple[int, Tensor] | None = None
        self._size: tuple[int, int] | None = None  # model input (H, W) of this stream
        self._n = 0  # frames added (after resampling)
        self._images: dict[int, Tensor] = {}  # uint8 (3, H, W) model-size frames
        self._feats: dict[int, Tensor] = {}  # per-frame features (reuse)
        self._pts: dict[int, float] = {}
        self._source: dict[int, int] = {}  # grid frame -> source frame number
        self._pending: deque[Window] = deque()  # windows awaiting the model
        self._last_end = -1  # last frame of the last regular window
        self._last_key = -1  # key frame of the last window queued
        self._smoothed: Tensor | None = None
        self._emitted = 0
        self._captured = False  # the stream's first window is in first_window

    @property
    def reuse(self) -> bool:
        """Whether per-frame features are computed once and reused across windows."""
        return self.split is not None

    @property
    def preprocess(self) -> InputContract:
        """The input contract (its former name)."""
        return self.contract

    @property
    def held_frames(self) -> int:
        """Frames (images or their features) held now: at most
        L + max(batch_size * S, frame_batch) (L: the frames a window spans)."""
        return len(self._images) + len(self._feats)

    def frame_size(self, height: int, width: int) -> tuple[int, int]:
        """(H, W) the store would hold of a ``height`` x ``width`` source frame: the size to
        hand :meth:`push` frames at (frames of another size are resized as the store's build
        resized them: with the resize of the decoder that built it, FFmpeg's swscale area
        filter for PyAV, the default; the contract's crop comes after)."""
        return self.contract.store_size(height, width)

    # -- input ------------------------------------------------------------------------------
    def push(self, frame: Any, pts_seconds: float | None = None) -> list[Prediction]:
        """Add the next frame: an (H, W, 3) uint8 RGB array with its time in seconds, a
        decoded frame (``hyperframes.decode``; its own ``pts_seconds``), or a stored frame, a
        (3, H, W) uint8 tensor as a store reads it, with its time. Returns the
        predictions that became ready (possibly none), in window order."""
        self._accept(frame, pts_seconds)
        return self._run(final=False)

    def _accept(self, frame: Any, pts_seconds: float | None) -> None:
        """Check and add a frame (its windows queued, none run): :meth:`push` less the model."""
        if isinstance(frame, Tensor):  # a stored frame, (3, H, W) uint8 (MultiStream)
            if frame.dtype != torch.uint8 or frame.dim() != 3 or frame.shape[0] != 3:
                raise InputError(
                    f"frame {self._pushed}: expected a (3, H, W) uint8 tensor, got shape "
                    f"{tuple(frame.shape)} dtype {frame.dtype}"
                )
            if pts_seconds is None:
                raise InputError(f"frame {self._pushed}: give its time: push(frame, pts_seconds)")
        elif isinstance(frame, np.ndarray):
            if frame.dtype != np.uint8 or frame.ndim != 3 or frame.shape[2] != 3:
                raise InputError(
                    f"frame {self._pushed}: expected an (H, W, 3) uint8 RGB array, got shape "
                    f"{frame.shape} dtype {frame.dtype}"
                )
            if pts_seconds is None:
                raise InputError(f"frame {self._pushed}: give its time: push(frame, pts_seconds)")
        elif hasattr(frame, "to_rgb"):
            if pts_seconds is None:
                pts_seconds = frame.pts_seconds
        else:
            raise InputError(
                f"frame {self._pushed}: expected an (H, W, 3) uint8 array or a decoded frame "
                f"(or a stored (3, H, W) uint8 tensor), got {type(frame).__name__}"
            )
        pts = float(pts_seconds)
        if not math.isfinite(pts):
            raise InputError(f"frame {self._pushed}: time {pts_seconds!r} is not a finite number")
        if self._last_pts is not None and pts <= self._last_pts:
            raise InputError(
                f"frame {self._pushed}: times must increase; {pts} s comes after {self._last_pts} s"
            )
        self._last_pts = pts
        source = self._pushed
        self._pushed += 1
        if self._resampler is None:
            self._add(frame, source, pts)
        else:
            for kept in self._resampler.push(frame, pts):
                self._add(kept.frame, kept.source_index, kept.pts_seconds)

    def flush(self, *, name: str | None = None) -> list[Prediction]:
        """End of stream: the remaining windows (see the module doc); then :meth:`reset`.
        ``name``: the video, for the error that refuses a stream shorter than a window."""
        try:
            if self._resampler is not None and self._pushed:
                for kept in self._resampler.finish():
                    self._add(kept.frame, kept.source_index, kept.pts_seconds)
            n, d, span = self._n, self.contract.frame_stride, self.span
            if 0 < n < span and self.short == "error":
                raise InputError(self._too_short(name or "the stream", n))
            if 0 < n < span:
                self._pending.append(([min(k * d, n - 1) for k in range(self.frames)], "repeat"))
            elif n and self._last_end != n - 1:
                self._queue(list(range(n - span, n, d)))
            if self.mirrored and n >= span:
                keys = list(range(self._last_key + self.stride, n, self.stride))
                if self._last_key < n - 1 and (not keys or keys[-1] != n - 1):
                    keys.append(n - 1)  # the last frame always gets one
                self._queue_mirrored(keys, n)
            return self._run(final=True)
        finally:
            self.reset()

    def _too_short(self, name: str, n: int) -> str:
        c = self.contract
        frames = (
            f"{n} frames"
            if self._resampler is None
            else (f"{n} frames at the model's {c.fps:g} fps (of {self._pushed} decoded)")
        )
        need = f"{self.span} a window of T={self.frames} frames"
        if c.frame_stride > 1:
            need += f" {c.frame_stride} apart"
        return (
            f"{name}: {frames}, fewer than the {need} spans; training refuses such a video "
            "(short: error) and so does predict. Pass short='pad' (hyperframes predict "
            "--short pad) to predict one window with its last frame repeated (marked padded), "
            "or predict a longer video"
        )

    def _rgb(self, frame: Any, source: int) -> Tensor:
        if self._cached is not None and self._cached[0] == source:
            return self._cached[1]  # a frame the resampler repeats
        if isinstance(frame, Tensor):  # stored: at the store's size already, or made so
            if tuple(frame.shape[1:]) == self.frame_size(*frame.shape[1:]):
                chw = self.contract.resize_crop(frame).contiguous()
                self._cached = (source, chw)
                return chw
            frame = frame.permute(1, 2, 0).numpy()
        if isinstance(frame, np.ndarray):
            h, w = self.frame_size(*frame.shape[:2])
            if frame.shape[:2] != (h, w):
                dec = self.contract.decoder
                frame = resize_rgb(frame, (h, w), like=dec["name"] if dec else "pyav")
            rgb = frame
        elif self.contract.size is None:
            rgb = frame.to_rgb()
        else:
            if self._native is None:
                self._native = frame.to_rgb().shape[:2]
            rgb = frame.to_rgb(size=self.frame_size(*self._native))
        # the contract's geometry, once per frame (a copy: callers reuse their buffers)
        chw = torch.from_numpy(np.array(rgb)).permute(2, 0, 1)
        chw = self.contract.resize_crop(chw).contiguous()
        self._cached = (source, chw)
        return chw

    def _add(self, frame: Any, source: int, pts: float) -> None:
        chw = self._rgb(frame, source)
        if self._size is None:
            self._check_input_values(chw.shape[-2], chw.shape[-1])
            self._size = (chw.shape[-2], chw.shape[-1])
        elif tuple(chw.shape[-2:]) != self._size:
            raise InputError(
                f"frame {source}: becomes {chw.shape[-2]}x{chw.shape[-1]} model input, earlier "
                f"frames {self._size[0]}x{self._size[1]}; a stream must keep its frame size "
                "(call flush() and start a new stream)"
            )
        i = self._n
        self._n += 1
        self.frames_added += 1
        self._images[i] = chw
        self._pts[i] = pts
        self._source[i] = source
        start = i - self.span + 1
        if start >= 0 and start % self.stride == 0:
            if start == 0 and self.mirrored:  # the key frames before the first window's
                first = (self.frames // 2) * self.contract.frame_stride
                keys = list(range(first % self.stride, first, self.stride))
                if first and (not keys or keys[0] != 0):
                    keys.insert(0, 0)  # frame 0 always gets one
                self._queue_mirrored(keys, i + 1)
            self._queue(list(range(start, i + 1, self.contract.frame_stride)))
            self._last_end = i

    @property
    def mirrored(self) -> bool:
        """Whether the stream's first and last frames get mirror-padded windows (a dense
        task's: module doc)."""
        return self.traits.spatial

    def _queue(self, idx: list[int], pad: Pad = "") -> None:
        self._pending.append((idx, pad))
        self._last_key = idx[len(idx) // 2]

    def _queue_mirrored(self, keys: list[int], n: int) -> None:
        """Windows whose key frames are ``keys``, frames outside ``[0, n)`` mirrored."""
        d, half = self.contract.frame_stride, self.frames // 2
        for key in keys:
            self._queue(
                [mirror_index(key + (j - half) * d, n) for j in range(self.frames)], "mirror"
            )

    def _check_input_values(self, height: int, width: int) -> None:
        check_input_values(self.contract, self.batch_size, height, width, "the input contract")

    # -- compute ----------------------------------------------------------------------------

    def _run(self, final: bool) -> list[Prediction]:
        out: list[Prediction] = []
        with torch.inference_mode():
            if self.split is None:
                while self._pending and (final or len(self._pending) >= self.batch_size):
                    wins = [
                        self._pending.popleft()
                        for _ in range(min(self.batch_size, len(self._pending)))
                    ]
                    logits = self._forward(wins)
                    out += self._emit(wins, logits)
                    self._prune()
            else:
                out += self._run_reuse(final)
        self._prune()
        return out

    def _forward(self, wins: list[Window]) -> Tensor:
        # uint8 (B, T, 3, H, W) -> the model's input, as eval prepares it
        return self.model(self.contract.prepare(self._windows(wins))).float()

    def _windows(self, wins: list[Window]) -> Tensor:
        """The uint8 (B, T, 3, H, W) frames of ``wins``, on the model's device."""
        uniq = sorted({i for idx, _ in wins for i in idx})
        pos = {i: k for k, i in enumerate(uniq)}
        frames = torch.stack([self._images[i] for i in uniq]).to(self.device, non_blocking=True)
        self.frames_computed += len(wins) * self.frames
        take = torch.tensor([[pos[i] for i in idx] for idx, _ in wins], device=frames.device)
        if not self._captured:
            self.first_window, self._captured = frames[take[:1]].cpu(), True
        return frames[take]

    def _run_reuse(self, final: bool) -> list[Prediction]:
        assert self.split is not None  # _run calls this only with a split
        todo = sorted(self._images)
        chunk = self.frame_batch
        while todo and (final or len(todo) >= chunk):
            part, todo = todo[:chunk], todo[chunk:]
            x = torch.stack([self._images.pop(i) for i in part])  # uint8 (N, 3, H, W)
            feats = self.split.frames(self.contract.normalize(x, device=self.device))
            self.frames_computed += len(part)
            for i, f in zip(part, feats):
                self._feats[i] = f
        out: list[Prediction] = []
        while self._pending:
            ready: list[Window] = []
            while self._pending and len(ready) < self.batch_size:
                idx = self._pending[0][0]
                if not all(i in self._feats for i in idx):
                    break
                ready.append(self._pending.popleft())
            if not ready:
                break
            x = torch.stack([torch.stack([self._feats[i] for i in idx]) for idx, _ in ready])
            out += self._emit(ready, self.split.head(x).float())
        self._prune()
        return out

    def _prune(self) -> None:
        keep = self._n - self.span  # the tail window may need the last L frames
        if self._pending:
            keep = min(keep, min(min(idx) for idx, _ in self._pending))
        for store in (self._images, self._feats, self._pts, self._source):
            for i in [i for i in store if i < keep]:
                del store[i]

    # -- output -----------------------------------------------------------------------------
    def _emit(self, wins: list[Window], logits: Tensor) -> list[Prediction]:
        out = []
        for (idx, pad), lg in zip(wins, logits):
            if self._smoothed is None or self.ema == 0:
                s = lg
            elif self.traits.boxes:  # the class scores only: boxes move
                k = len(self.classes)
                s = lg.clone()
                s[:, :k] = self.ema * self._smoothed[:, :k] + (1.0 - self.ema) * lg[:, :k]
            else:
                s = self.ema * self._smoothed + (1.0 - self.ema) * lg
            self._smoothed = s
            out.append(self._prediction(idx, pad, lg, s))
        return out

    def _prediction(self, idx: list[int], pad: Pad, raw: Tensor, s: Tensor) -> Prediction:
        first, last = min(idx), max(idx)
        t0, t1 = self._pts[first], self._pts[last]
        if last > first:
            dt = (t1 - t0) / (last - first)
        else:
            dt = 1.0 / self.contract.fps if self.contract.fps else 0.0
        key = idx[len(idx) // 2]
        boxes: np.ndarray | None = None
        if self.traits.boxes:  # (A, K + 9): decoded with the smoothed class scores
            decoded = decode_detections(self._head(), s[None], len(self.classes))[0]
            boxes = decoded.cpu().numpy()
            best = np.zeros(len(self.classes))  # each class's best score
            np.maximum.at(best, boxes[:, 5].astype(np.int64), boxes[:, 4])
            prob = torch.from_numpy(best)
        # a multi-label model's classes are independent: each its own sigmoid
        elif self.traits.multi_label:
            prob = torch.sigmoid(s)
        else:
            prob = torch.softmax(s, dim=0)
        mask = None
        if s.dim() == 3:  # segmentation: (K, H, W)
            mask = prob.argmax(0).to(torch.uint8).cpu().numpy()
            prob = prob.mean((1, 2))
        pred = Prediction(
            index=self._emitted,
            source_frames=tuple(self._source[i] for i in idx),
            start_seconds=t0,
            end_seconds=t1 + dt,
            key_seconds=self._pts[key],
            logits=raw.cpu().numpy(),
            smoothed=s.cpu().numpy(),
            probs=prob.cpu().numpy().astype(np.float64),
            classes=self.classes,
            mask=mask,
            padded=pad == "repeat",
            mirrored=pad == "mirror",
            boxes=boxes,
        )
        self._emitted += 1
        return pred

    def _head(self):
        """The FCOS decoding of a detection model's output (made once)."""
        if getattr(self, "_detection_head", None) is None:
            self._detection_head = detection_head(len(self.classes)).to(self.device)
        return self._detection_head
