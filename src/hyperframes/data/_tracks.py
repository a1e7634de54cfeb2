"""The tracks a dataset serves beside the frames, read from the store and aligned with a window:
log-mel ``audio`` (:mod:`._audio`), optical ``flow`` between the window's frames and
``register`` (frames warped onto the window's key frame; :mod:`._warp`).

Window flow: pair ``j`` of a window is the flow from its frame ``j`` to frame ``j + 1``. When
they are adjacent stored frames it is the stored pair flow; with a stride or a gap the stored
pair flows between them are chained (:func:`._warp.compose_flow`, each sampled where the
previous one points); a step backwards (reordered or repeated frames) is the negated forward
flow, zero for a repeated frame. The flow is read at the store's flow size and resized to the
stored frame size (vectors scaled by the size ratio), then follows the dataset transform's
geometry (:func:`._flow_geometry.follow_geometry`).

Registration happens first, on the frames as stored: ``"homography"`` composes the stored
per-pair homographies between each frame and the key frame; ``"flow"`` warps by the chained
flow from the key frame (backwards: the negated forward flow). ``sample.flow`` stays the flow
of the unregistered frames.

Per batch (the batch pipeline: frames already read, cropped to a box per window and resized
into one buffer): :meth:`WindowTracks.read_audio_batch` (the samples read once per video of the
batch, one STFT for all columns), :meth:`WindowTracks.window_flow_batch` (the stored flow
dequantised in torch, chained for every window at once, cropped to each box and resized in
one ``grid_sample``: :func:`._warp.crop_flow`) and :meth:`WindowTracks.registered_batch` (the
homographies conjugated by each box, or the key flows cropped like the window flow, then one
warp over B*T on the output buffer: only the box's pixels exist there). There are no
per-window methods: a window is a batch of one.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import torch

from .._core._errors import ConfigError, DataError
from ._audio import (
    AUDIO_MISSING,
    LogMelOptions,
    column_grid,
    frame_intervals_batch,
    logmel_of,
    resolve_audio,
)
from ._warp import (
    box_to_frame,
    chain_pairs,
    compose_flows_batch,
    crop_flow,
    homographies_to_key,
    warp_by_flow,
    warp_by_homography,
)

__all__ = ["REGISTER_MODES", "WindowTracks"]

REGISTER_MODES = ("homography", "flow")


class WindowTracks:
    """The tracks a dataset serves beside each window's frames (module doc): its audio / flow /
    register options over ``store``, checked once, and the reads that align them with a window."""

    def __init__(
        self,
        store: Any,
        *,
        audio: Any = None,
        audio_missing: str = "zeros",
        flow: bool = False,
        register: str | None = None,
        register_onto: str | None = None,
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
        if register_onto not in (None, "first", "middle"):
            raise ConfigError(f"register_onto={register_onto!r}: allowed: None, 'first', 'middle'")
        self.register_onto = register_onto
        self._last_pairs: tuple[tuple[bytes, bytes, bytes], torch.Tensor] | None = None
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
    def _no_audio(self, video: int) -> None:
        if self.audio_missing == "error":
            path = self.store.videos.paths[video]
            raise DataError(f"video {path!r} (id {video}) has no audio in the store")

    def read_audio_batch(
        self, videos: np.ndarray, pts: np.ndarray, fps: np.ndarray, mask: np.ndarray
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """(B, n_mels, T*k) log-mel of B windows (store ``videos`` (B,), shown at ``pts``
        (B, T) seconds, ``fps`` (B,), valid frames ``mask`` (B, T)) and the (B, T) audio
        mask. The samples are read once per video of the batch (one span covering its
        windows), the columns of the whole batch go through one STFT per sample rate."""
        opts = self.audio
        assert opts is not None
        videos = np.asarray(videos, np.int64).reshape(-1)
        pts, mask = np.asarray(pts, np.float64), np.asarray(mask, bool)
        bsz, t = pts.shape
        k, n_mels = opts.columns_per_frame, opts.n_mels
        out = torch.zeros(bsz, n_mels, t, k, dtype=torch.float32)
        amask = torch.zeros(bsz, t, dtype=torch.bool)
        start, dur = frame_intervals_batch(pts, fps, mask)
        times = column_grid(start, dur, k)  # (B, T, k)
        has_audio = getattr(self.store, "has_audio", False)
        by_rate: dict[int, list[tuple[torch.Tensor, np.ndarray, np.ndarray, np.ndarray]]] = {}
        for video in np.unique(videos).tolist():
            info = self.store.audio_info(video) if has_audio else None
            rows = np.flatnonzero((videos == video) & mask.any(1))
            got = None if info is None else self._audio_frames(video, info, times, mask, rows)
            if got is None:
                if info is None or rows.size:
                    self._no_audio(video)
                continue
            by_rate.setdefault(int(info["rate"]), []).append(got)  # type: ignore[index]
        for rate, parts in by_rate.items():
            n_fft = opts.n_fft(rate)
            frames = torch.empty(sum(len(p[1]) for p in parts), n_fft, dtype=torch.float32)
            at = 0
            for span, starts, _, _ in parts:  # every column's samples, into one buffer
                rows_of = frames[at : at + len(starts)]
                where = torch.from_numpy(starts)
                torch.index_select(span.unfold(0, n_fft, 1), 0, where, out=rows_of)
                at += len(starts)
            cols = logmel_of(frames, rate, opts)  # (M, n_mels)
            b = torch.from_numpy(np.concatenate([p[2] for p in parts]))
            j = torch.from_numpy(np.concatenate([p[3] for p in parts]))
            out[b, :, j] = cols.view(-1, k, n_mels).transpose(1, 2)
            amask[b, j] = True
        return out.view(bsz, n_mels, t * k), amask

    def _audio_frames(self, video: int, info: dict, times, mask, rows):
        """The samples of ``video`` the valid columns of windows ``rows`` need (one read),
        where each column's STFT frame starts in them (M,), and each one's (window, frame)
        — or None without audio. Each
        window's sample grid is the one a batch of that window alone reads
        (first sample nearest its first column less one window), so columns match it."""
        opts = self.audio
        assert opts is not None
        rate, first_s = int(info["rate"]), float(info["start_seconds"])
        win = opts.window_samples(rate)
        if not rows.size:
            return None
        valid = mask[rows]  # (R, T)
        tv = times[rows]  # (R, T, k)
        lo_t = np.where(valid[..., None], tv, np.inf).min((1, 2)) - win / rate
        first = np.rint((lo_t - first_s) * rate)  # what read_audio of one window starts at
        first_seconds = first_s + first / rate
        centre = np.rint((tv - first_seconds[:, None, None]) * rate) + first[:, None, None]
        begin = centre.astype(np.int64) - win // 2  # absolute sample index of each frame
        w_row, w_frame = np.nonzero(valid)
        begin = begin[w_row, w_frame].reshape(-1)  # (M,) valid frames' columns, in order
        a, z = int(begin.min()), int(begin.max()) + opts.n_fft(rate)  # rows of n_fft
        got = self.store.read_audio(video, first_s + (a - 2) / rate, first_s + (z + 2) / rate)
        if got is None:
            return None
        samples, _, got_first = got
        x = torch.as_tensor(np.asarray(samples, np.float32))
        x = (x[0] if x.shape[0] == 1 else x.mean(0)) if x.ndim == 2 else x.reshape(-1)
        at = round((float(got_first) - first_s) * rate)  # absolute index of x[0]
        span = torch.zeros(z - a, dtype=torch.float32)
        lo, hi = max(a, at), min(z, at + x.numel())
        if hi > lo:
            span[lo - a : hi - a] = x[lo - at : hi - at]
        return span, begin - a, rows[w_row], w_frame

    # -- flow --------------------------------------------------------------------------------
    def _read_pairs(self, videos: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> torch.Tensor:
        """The stored pair flows ``lo[b] .. hi[b] - 1`` of each ``videos[b]`` (all of one
        flow size), end to end in one float32 tensor, dequantised in one op per window.

        A window or batch asks twice with register="flow" and flow=True (the registration,
        then the flow): the last read is kept and handed out again (read-only to callers;
        one tuple, swapped whole: safe with the thread loader's workers)."""
        key = (videos.tobytes(), np.asarray(lo).tobytes(), np.asarray(hi).tobytes())
        last = self._last_pairs
        if last is not None and last[0] == key:
            return last[1]
        flat = self._read_pairs_now(videos, lo, hi)
        self._last_pairs = (key, flat)
        return flat

    def _read_pairs_now(self, videos: np.ndarray, lo: np.ndarray, hi: np.ndarray):
        store = self.store
        h, w = store.flow_shape(int(videos[0]))
        flat = torch.empty(int((hi - lo).sum()), 2, h, w, dtype=torch.float32)
        stored = getattr(store, "read_flow_stored", None)
        at = 0
        for v, a, z in zip(videos.tolist(), lo.tolist(), hi.tolist()):
            if z == a:
                continue
            if stored is None:  # a store-like object without the raw read
                part, scale = store.read_flow(v, np.arange(a, z)), 1.0
            else:
                part, scale = stored(v, a, z)
            dst = flat[at : at + z - a]
            dst.copy_(_read_only(np.asarray(part)))
            if scale != 1.0:
                dst.mul_(scale)
            at += z - a
        return flat

    def _window_pairs(self, videos, idx: np.ndarray) -> torch.Tensor:
        """(B, T-1, 2, h, w) window flows of stored ``idx`` (B, T) at the flow size (module
        doc), all of the batch's chaining steps at once."""
        videos = np.asarray(videos, np.int64).reshape(-1)
        bsz, t = idx.shape
        lo, hi = idx.min(1), idx.max(1)
        flat = self._read_pairs(videos, lo, hi)
        h, w = self.store.flow_shape(int(videos[0]))
        offset = np.concatenate([[0], np.cumsum(hi - lo)[:-1]]) - lo  # pair p of b: p + offset
        a, c = idx[:, :-1], idx[:, 1:]
        if (c - a == 1).all():  # consecutive frames: the stored pairs themselves, in order
            return flat.view(bsz, t - 1, 2, h, w)  # a view of the kept read: read-only
        out = torch.zeros(bsz * (t - 1), 2, h, w, dtype=torch.float32)
        moving = np.flatnonzero((a != c).reshape(-1))
        if moving.size:
            base = np.repeat(offset, t - 1)[moving]
            s, e = np.minimum(a, c).reshape(-1)[moving], np.maximum(a, c).reshape(-1)[moving]
            flows = chain_pairs(flat, s + base, e + base)
            back = torch.from_numpy((c < a).reshape(-1)[moving])
            flows[back] = -flows[back]
            out[torch.from_numpy(moving)] = flows
        return out.view(bsz, t - 1, 2, h, w)

    def window_flow_batch(
        self,
        videos: np.ndarray,
        idx: np.ndarray,
        boxes: np.ndarray,
        out_size: tuple[int, int],
        flip: np.ndarray,
        *,
        out: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """(B, T-1, 2, h, w) window flows (module doc) of store ``videos`` (B,) at
        stored ``idx`` (B, T), cropped to ``boxes`` (B, 4) (y0, x0, h, w in stored-frame
        pixels, mapped to the flow's own resolution), resized to ``out_size`` with the
        vectors in output pixels, dx negated where ``flip`` (B,): the geometry a
        crop-resize-flip gave the frames. Read, dequantised, chained and resampled per
        group of windows sharing a flow and frame size (one group on most stores): one
        resampling per group (:func:`._warp.crop_flow`), none where every box is whole flow pixels at the output
        size (a CenterCrop). Same as the whole window's flow at the stored frame size then
        :func:`follow_geometry` with the box, but for the resize filter (bilinear at the output pixels here, where a
        shrinking RandomResizedCrop antialiases; and the box edge reads just outside the
        box). ``out``: a (B, T-1, 2, h, w) tensor to write into (a view of the channel
        layout's buffer will do)."""
        videos = np.asarray(videos, np.int64).reshape(-1)
        idx = np.asarray(idx, np.int64)
        bsz, t = idx.shape
        oh, ow = int(out_size[0]), int(out_size[1])
        if out is None:
            out = torch.empty(bsz, max(t - 1, 0), 2, oh, ow, dtype=torch.float32)
        if t < 2 or not bsz:
            return out
        boxes = np.asarray(boxes).reshape(bsz, 4)
        flip = np.asarray(flip, bool).reshape(bsz)
        groups = self._flow_groups(videos)
        for rows, frame_size in groups:
            flows = self._window_pairs(videos[rows], idx[rows])
            if len(groups) == 1:  # the whole batch: straight into out
                return crop_flow(flows, boxes, frame_size, (oh, ow), flip, out=out)
            out[torch.from_numpy(rows)] = crop_flow(
                flows, boxes[rows], frame_size, (oh, ow), flip[rows]
            )
        return out

    def _flow_groups(self, videos: np.ndarray):
        """(rows, stored frame size) of the windows sharing a flow size and a frame size."""
        shapes = np.asarray(self.store.videos.shapes)[videos]
        keys = [(*self.store.flow_shape(v), *shapes[n][-2:]) for n, v in enumerate(videos)]
        groups: dict[tuple, list[int]] = {}
        for n, key in enumerate(keys):
            groups.setdefault(tuple(int(x) for x in key), []).append(n)
        return [(np.asarray(r), (key[2], key[3])) for key, r in groups.items()]

    # -- registration ------------------------------------------------------------------------
    def _to_key(self, video: int, idx: np.ndarray, key: int, pair_h=None) -> np.ndarray:
        """(T, 3, 3) mapping each frame's stored coordinates to the key frame's (``pair_h``:
        the video's homographies, when already read)."""
        pair_h = self.store.homographies(video) if pair_h is None else pair_h
        if pair_h is None:
            path = self.store.videos.paths[video]
            raise DataError(
                f"register='homography': video {path!r} (id {video}) has no stored "
                "homographies (build the store with --flow)"
            )
        return homographies_to_key(pair_h, int(idx[key]), idx)

    def registered_batch(
        self,
        frames: torch.Tensor,
        videos: np.ndarray,
        idx: np.ndarray,
        boxes: np.ndarray,
        key: int,
        *,
        flip: np.ndarray | None = None,
    ) -> torch.Tensor:
        """``frames`` (B, T, C, h, w), already cropped to ``boxes`` (B, 4) (y0, x0, h, w in
        stored-frame pixels) and resized, warped onto frame ``key`` of each window: the
        stored homographies (or the chained flows) are conjugated by each window's box so
        the warp runs on the batch as it is, one ``grid_sample`` over B*T. ``flip`` (B,):
        windows already mirrored (None: none).

        Only the box's pixels exist in the batch: where a frame's content comes from outside
        its box the output is zero (as the per-window warp gives zero outside the frame),
        so near the box's edges this differs from registering the whole frames then
        cropping them; inside, they agree (but for the resize filter)."""
        videos = np.asarray(videos, np.int64).reshape(-1)
        idx = np.asarray(idx, np.int64)
        bsz, t = idx.shape
        if not bsz or not t:
            return frames
        oh, ow = int(frames.shape[-2]), int(frames.shape[-1])
        boxes = np.asarray(boxes).reshape(bsz, 4)
        flat = frames.reshape(bsz * t, *frames.shape[2:])
        if self.register == "homography":
            homs: dict[int, np.ndarray | None] = {}
            to_key = np.empty((bsz, t, 3, 3))
            for b, v in enumerate(videos.tolist()):
                if v not in homs:  # each video's homographies read once per batch
                    homs[v] = self.store.homographies(v)
                to_key[b] = self._to_key(v, idx[b], key, homs[v])
            box = box_to_frame(boxes, (oh, ow), flip)  # output -> stored, (B, 3, 3)
            out_to_key = np.linalg.inv(box)[:, None] @ to_key @ box[:, None]
            return warp_by_homography(flat, out_to_key.reshape(-1, 3, 3)).view(frames.shape)
        fl = np.zeros(bsz, bool) if flip is None else np.asarray(flip, bool).reshape(bsz)
        flows = torch.empty(bsz, t, 2, oh, ow, dtype=torch.float32)
        for rows, frame_size in self._flow_groups(videos):
            g_idx = idx[rows]
            lo, hi = g_idx.min(1), g_idx.max(1)
            pairs = self._read_pairs(videos[rows], lo, hi)
            offset = np.concatenate([[0], np.cumsum(hi - lo)[:-1]]) - lo
            keyed = compose_flows_batch(pairs, offset, g_idx[:, key], g_idx)
            flows[torch.from_numpy(rows)] = crop_flow(
                keyed, boxes[rows], frame_size, (oh, ow), fl[rows]
            )
        return warp_by_flow(flat, flows.view(bsz * t, 2, oh, ow)).view(frames.shape)


def _read_only(array: np.ndarray) -> torch.Tensor:
    """A tensor over ``array`` (a read-only view of a mapped payload) to copy from: torch
    warns that it cannot mark it read-only; it is only read."""
    if array.flags.writeable:
        return torch.from_numpy(array)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return torch.from_numpy(array)
