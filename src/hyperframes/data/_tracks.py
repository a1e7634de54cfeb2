"""The tracks a dataset serves beside the frames, read from the store and aligned with a window:
log-mel ``audio`` (:mod:`._audio`), optical ``flow`` between the window's frames and
``register`` (frames warped onto the window's key frame; :mod:`._warp`).

Window flow: pair ``j`` of a window is the flow from its frame ``j`` to frame ``j + 1``. When
they are adjacent stored frames it is the stored pair flow; with a stride or a gap the stored
pair flows between them are chained (:func:`._warp.compose_flow`, each sampled where the
previous one points); a step backwards (reordered or repeated frames) is the negated forward
flow, zero for a repeated frame. The flow is read at the store's flow size and resized to the
stored frame size (vectors scaled by the size ratio), then follows the dataset transform's
geometry (:func:`follow_geometry`).

Registration happens first, on the frames as stored: ``"homography"`` composes the stored
per-pair homographies between each frame and the key frame; ``"flow"`` warps by the chained
flow from the key frame (backwards: the negated forward flow). ``sample.flow`` stays the flow
of the unregistered frames.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import torch

from .._core._contract import ContractCrop
from .._core._errors import ConfigError, DataError
from ._audio import AUDIO_MISSING, LogMelOptions, column_times, logmel_columns, resolve_audio
from ._warp import (
    compose_flow,
    compose_flows,
    compose_homography,
    resize_flow,
    warp_by_flow,
    warp_by_homography,
)
from .transforms import (
    CenterCrop,
    RandomAffine,
    RandomCrop,
    RandomHorizontalFlip,
    RandomResizedCrop,
    Resize,
    Window,
)

__all__ = ["REGISTER_MODES", "Tracks", "follow_geometry"]

REGISTER_MODES = ("homography", "flow")
_GEOMETRIC = (CenterCrop, RandomAffine, RandomCrop, RandomHorizontalFlip, RandomResizedCrop, Resize)


class Tracks:
    """The audio / flow / register options of a dataset over ``store``, checked once."""

    def __init__(
        self,
        store: Any,
        *,
        audio: Any = None,
        audio_missing: str = "zeros",
        flow: bool = False,
        register: str | None = None,
    ) -> None:
        self.store = store
        self.audio: LogMelOptions | None = resolve_audio(audio)
        if audio_missing not in AUDIO_MISSING:
            raise ConfigError(
                f"audio_missing={audio_missing!r}: allowed: {', '.join(AUDIO_MISSING)}"
            )
        self.audio_missing = audio_missing
        if not isinstance(flow, bool):
            raise ConfigError(f"flow={flow!r}: allowed: True or False")
        self.flow = flow
        if register not in (None, *REGISTER_MODES):
            raise ConfigError(
                f"register={register!r}: allowed: None, {', '.join(map(repr, REGISTER_MODES))}"
            )
        self.register = register
        self._last_pairs: tuple[tuple[int, int, int], torch.Tensor] | None = None
        where = getattr(store, "path", store)
        if (flow or register == "flow") and not getattr(store, "has_flow", False):
            what = "flow=True" if flow else "register='flow'"
            raise DataError(
                f"{what} needs a store built with flow; {where} has none (rebuild it with "
                "`hyperframes build ... --flow dis`)"
            )
        if register == "homography" and not callable(getattr(store, "homographies", None)):
            raise DataError(f"register='homography': {where} cannot give homographies")
        if (
            self.audio is not None
            and audio_missing == "error"
            and not getattr(store, "has_audio", False)
        ):
            raise DataError(
                f"audio_missing='error': {where} was built without audio (rebuild it with "
                "`hyperframes build ... --audio`, or use audio_missing='zeros')"
            )

    @property
    def any(self) -> bool:
        return self.audio is not None or self.flow or self.register is not None

    # -- audio -------------------------------------------------------------------------------
    def read_audio(
        self, video: int, path: str, pts: np.ndarray, fps: float, mask: np.ndarray
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """(n_mels, T*k) log-mel of the window shown at ``pts`` and the (T,) audio mask."""
        opts = self.audio
        assert opts is not None
        t, k = len(pts), opts.columns_per_frame
        out = torch.zeros(opts.n_mels, t * k, dtype=torch.float32)
        amask = torch.zeros(t, dtype=torch.bool)
        info = self.store.audio_info(video) if getattr(self.store, "has_audio", False) else None
        if info is None:
            if self.audio_missing == "error":
                raise DataError(f"video {path!r} (id {video}) has no audio in the store")
            return out, amask
        valid = np.flatnonzero(mask)
        if not valid.size:
            return out, amask
        rate = int(info["rate"])
        times = column_times(pts[valid], fps, k)
        half = opts.window_samples(rate) / rate
        got = self.store.read_audio(video, float(times.min() - half), float(times.max() + half))
        if got is None:
            if self.audio_missing == "error":
                raise DataError(f"video {path!r} (id {video}) has no audio in the store")
            return out, amask
        samples, rate, first = got
        cols = logmel_columns(samples, int(rate), float(first), times, opts)
        where = (valid[:, None] * k + np.arange(k)[None, :]).reshape(-1)
        out[:, torch.from_numpy(where)] = cols
        amask[torch.from_numpy(valid)] = True
        return out, amask

    # -- flow --------------------------------------------------------------------------------
    def _pairs(self, video: int, idx: np.ndarray) -> tuple[torch.Tensor, int]:
        """The stored pair flows spanning ``idx`` and the first pair's index."""
        lo, hi = int(idx.min()), int(idx.max())
        # one window asks twice with register="flow" and flow=True: the last read is kept
        # (one tuple, swapped whole: safe with the thread loader's workers)
        last = self._last_pairs
        if last is not None and last[0] == (video, lo, hi):
            return last[1], lo
        if hi == lo:
            h, w = self.store.flow_shape(video)
            pairs = torch.zeros(0, 2, h, w)
        else:
            flows = self.store.read_flow(video, np.arange(lo, hi))
            pairs = torch.from_numpy(np.ascontiguousarray(flows, np.float32))
        self._last_pairs = ((video, lo, hi), pairs)
        return pairs, lo

    def window_flow(self, video: int, idx: np.ndarray, size: tuple[int, int]) -> torch.Tensor:
        """(T-1, 2, H, W) flow between the window's consecutive frames (stored ``idx``), at
        the stored frame size ``size``."""
        pairs, first = self._pairs(video, idx)
        if len(idx) < 2:
            return torch.zeros(0, 2, *size)
        h, w = pairs.shape[-2:] if pairs.shape[0] else self.store.flow_shape(video)
        out = torch.stack(
            [
                compose_flow(pairs, first, int(a), int(b))
                if pairs.shape[0]
                else torch.zeros(2, h, w)
                for a, b in itertools.pairwise(idx)
            ]
        )
        return resize_flow(out, size)

    # -- registration ------------------------------------------------------------------------
    def registered(
        self, frames: torch.Tensor, video: int, path: str, idx: np.ndarray, key: int
    ) -> torch.Tensor:
        """``frames`` (T, C, H, W) warped onto frame ``key`` of the window."""
        h, w = frames.shape[-2:]
        if self.register == "homography":
            pair_h = self.store.homographies(video)
            if pair_h is None:
                raise DataError(
                    f"register='homography': video {path!r} (id {video}) has no stored "
                    "homographies (build the store with --flow)"
                )
            to_key = np.stack([compose_homography(pair_h, int(idx[key]), int(i)) for i in idx])
            return warp_by_homography(frames, to_key)
        pairs, first = self._pairs(video, idx)
        if not pairs.shape[0]:
            return frames
        flows = compose_flows(pairs, first, int(idx[key]), idx)
        return warp_by_flow(frames, resize_flow(flows, (h, w)))


def _aux(flow: torch.Tensor) -> torch.Tensor:
    """(n, 4, H, W): pixel coordinates (x, y) then the flow (dx, dy)."""
    n, _, h, w = flow.shape
    ys, xs = torch.meshgrid(
        torch.arange(h, dtype=torch.float32), torch.arange(w, dtype=torch.float32), indexing="ij"
    )
    coords = torch.stack([xs, ys]).expand(n, 2, h, w)
    return torch.cat([coords, flow.float()], 1)


def _jacobian(coords: torch.Tensor) -> torch.Tensor:
    """(2, 2) d(source x, y) / d(output x, y), the median finite difference over the image."""
    c = coords[0]
    jx = c[:, :, 1:] - c[:, :, :-1]  # along output x
    jy = c[:, 1:, :] - c[:, :-1, :]  # along output y
    cols = [
        jx.reshape(2, -1).median(1).values if jx.numel() else torch.tensor([1.0, 0.0]),
        jy.reshape(2, -1).median(1).values if jy.numel() else torch.tensor([0.0, 1.0]),
    ]
    return torch.stack(cols, 1)


def follow_geometry(transform, window: Window, flow: torch.Tensor, generator) -> tuple:
    """Apply ``transform`` to ``window`` and the same geometry to ``flow`` (n, 2, H, W).

    Each step of a :class:`~.transforms.Compose` runs on the frames; a geometric step (resize,
    crops, flip, affine) runs again, with the generator state it started from, on the flow
    beside a map of pixel coordinates, from which the step's Jacobian turns the resampled
    vectors into the output's pixels (a flip negates dx, a resize scales). Photometric steps
    leave the flow; steps that reorder frames are refused."""
    steps = list(getattr(transform, "transforms", [transform]))
    aux = _aux(flow) if flow.shape[0] else None
    for step in steps:
        who = type(step).__name__
        if getattr(step, "changes_sequence", False) or getattr(step, "changes_count", False):
            raise ConfigError(
                f"flow=True: transform {who} reorders or drops frames, which breaks the flow "
                "between consecutive frames; leave it out"
            )
        geometric = isinstance(step, (*_GEOMETRIC, ContractCrop))
        state = generator.get_state() if geometric and generator is not None else None
        if hasattr(step, "apply"):
            out = step.apply(window, generator)
        else:  # a callable transform (ContractCrop)
            out = step(*window, generator=generator)
        if geometric and aux is not None:
            g2 = None
            if state is not None:
                g2 = torch.Generator()
                g2.set_state(state)
            aw = Window(aux, torch.arange(aux.shape[0]), torch.ones(aux.shape[0], dtype=torch.bool))
            aux = (step.apply(aw, g2) if hasattr(step, "apply") else step(*aw, generator=g2))[0]
        elif not geometric and not _photometric(step):
            raise ConfigError(
                f"flow=True: cannot tell how transform {who} moves pixels; the flow follows "
                "Resize, CenterCrop, RandomCrop, RandomResizedCrop, RandomHorizontalFlip, "
                "RandomAffine and photometric transforms"
            )
        window = out
    if aux is None:
        return window, torch.zeros(0, 2, *window.frames.shape[-2:])
    jac = _jacobian(aux[:, :2])  # output -> source
    vec = aux[:, 2:]
    inv = torch.linalg.inv(jac)
    out_flow = torch.einsum("ij,njhw->nihw", inv, vec)
    return window, out_flow.contiguous()


def _photometric(step) -> bool:
    from .transforms import ColorJitter, Normalize, ToFloat

    return isinstance(step, ColorJitter | Normalize | ToFloat)
