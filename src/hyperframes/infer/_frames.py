"""Predict with a frame-task model (interpolation, super-resolution): frames written as PNG.

``hyperframes predict RUN/best.pt VIDEO`` takes this path when the checkpoint's contract has a
``frame_task`` (:func:`predict_frames`). Frames are decoded once, streaming, at the store's
size (what ``hyperframes build`` did; the store's ``fps`` is not resampled to: windows run over
the decoded frames, and a note says so when the rates differ). Two modes:

* default, new frames: **interpolation** writes a frame between each pair of consecutive frames
  ``i, i + 1`` (``between_<i>_<i+1>.png``): the window is the T - 1 frames around the gap with
  the new frame's place in the middle; **super-resolution** takes the decoded frames as the
  low-resolution input and writes each window's key frame ``factor`` times larger
  (``upscaled_<i>.png``).
* ``reconstruct=True``, what training measured: interpolation predicts each window's middle
  frame from the others, super-resolution first downscales the window with the contract's
  filter and factor; each output (``<kind>_<i>.png``) is scored against the real frame, PSNR
  and SSIM of the model and of the baseline, in ``frames.json``.

``frames.json`` lists every written frame (file, source frames, scores in reconstruct mode).
Windows start every ``stride`` frames. PNGs are written atomically (no partial file).
"""

from __future__ import annotations

import io
import os
import time
from collections import deque
from pathlib import Path

import numpy as np
import torch

from .._core._atomic import write_atomic, write_json_atomic
from .._core._errors import InputError
from ._load import InferenceModel
from ._video import PredictReport

__all__ = ["predict_frames"]


def _png(path: Path, chw: torch.Tensor) -> Path:
    """Write a (3, H, W) frame in [0, 1] (float) or uint8 as an RGB PNG, atomically."""
    from PIL import Image  # matplotlib's dependency, installed with hyperframes

    if chw.is_floating_point():
        chw = (chw.clamp(0, 1) * 255).round().to(torch.uint8)
    img = Image.fromarray(np.ascontiguousarray(chw.permute(1, 2, 0).cpu().numpy()))
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return write_atomic(path, lambda f: f.write(buf.getvalue()))


class _Windows:
    """What one mode takes from the frame stream: the window ending at the newest frame."""

    def __init__(self, kind: str, frames: int, reconstruct: bool, factor: int, filt: str):
        self.kind, self.t, self.reconstruct = kind, frames, reconstruct
        self.factor, self.filter = factor, filt
        # interpolation of new frames needs T - 1 real frames; every other mode T
        self.span = frames - 1 if kind == "interpolation" and not reconstruct else frames

    def make(self, held: list[torch.Tensor], first: int):
        """``(model window (T, 3, h, w) uint8, name, source frames, real frame or None)``."""
        from ..train import downscale

        k = self.t // 2
        if self.kind == "interpolation":
            if self.reconstruct:
                real = held[k]
                window = torch.stack(held).clone()
                window[k] = 0
                return window, f"interpolation_{first + k:06d}.png", [first + k], real
            blank = torch.zeros_like(held[0])
            window = torch.stack([*held[:k], blank, *held[k:]])
            pair = [first + k - 1, first + k]
            return window, f"between_{pair[0]:06d}_{pair[1]:06d}.png", pair, None
        window = torch.stack(held)
        if self.reconstruct:
            low = downscale(window, self.factor, self.filter)
            return low, f"super_resolution_{first + k:06d}.png", [first + k], held[k]
        return window, f"upscaled_{first + k:06d}.png", [first + k], None


def _baseline(kind: str, window: torch.Tensor, factor: int) -> torch.Tensor:
    from ..models import bicubic_upscale, neighbour_blend

    x = window.to(torch.float32) / 255
    if kind == "interpolation":
        return neighbour_blend(x)
    return bicubic_upscale(x[:, x.shape[1] // 2], factor).clamp(0, 1)


def predict_frames(
    loaded: InferenceModel,
    video: str | os.PathLike,
    *,
    out: str | os.PathLike | None = None,
    stride: int = 1,
    batch_size: int = 8,
    decoder: str = "pyav",
    reconstruct: bool = False,
) -> PredictReport:
    """Run a frame-task model over ``video`` and write its frames as PNG into ``out`` (default
    ``<video stem>_predict``); see the module doc."""
    from ..decode import create_decoder

    contract, video = loaded.contract, Path(video)
    ft = contract.frame_task
    if ft is None:
        raise InputError(f"{loaded.path}: not an interpolation or super-resolution model")
    dec = create_decoder(decoder)
    info = dec.probe(os.fspath(video))
    out = Path(out) if out is not None else Path(f"{video.stem}_predict")
    out.mkdir(parents=True, exist_ok=True)
    filt = str(ft.get("filter", "bicubic"))
    wins = _Windows(ft["kind"], contract.frames, reconstruct, contract.downscale, filt)
    notes = list(loaded.notes)
    if contract.fps is not None and info.fps and abs(float(info.fps) - contract.fps) > 1e-3:
        notes.append(
            f"the model was trained at {contract.fps:g} fps, the video is at {info.fps:g}: "
            "windows run over the decoded frames as they are"
        )
    held: deque[torch.Tensor] = deque(maxlen=wins.span)
    pending: list[tuple] = []
    rows: list[dict] = []
    t0, decoded = time.perf_counter(), 0

    def run() -> None:
        x = torch.stack([p[0] for p in pending])
        model_in = contract.prepare(x, device=next(loaded.model.parameters()).device)
        with torch.inference_mode():
            y = loaded.model(model_in).float().cpu()
        for (window, name, sources, real), frame in zip(pending, y):
            row: dict = {"file": name, "source_frames": sources}
            if real is not None:
                from ..train import psnr, ssim

                truth = real[None].to(torch.float32) / 255
                base = _baseline(ft["kind"], window[None], contract.downscale)
                row.update(psnr=float(psnr(frame[None], truth)[0]))
                row.update(ssim=float(ssim(frame[None], truth)[0]))
                row.update(baseline_psnr=float(psnr(base, truth)[0]))
                row.update(baseline_ssim=float(ssim(base, truth)[0]))
            _png(out / name, frame)
            rows.append(row)
        pending.clear()

    native = None
    for i, frame in enumerate(dec.frames(os.fspath(video))):
        decoded += 1
        if contract.size is None:
            rgb = frame.to_rgb()
        else:
            native = native or frame.to_rgb().shape[:2]
            rgb = frame.to_rgb(size=contract.store_size(*native))
        held.append(torch.from_numpy(np.array(rgb)).permute(2, 0, 1).contiguous())
        first = i - wins.span + 1
        if len(held) == wins.span and first % stride == 0:
            pending.append(wins.make(list(held), first))
            if len(pending) >= batch_size:
                run()
    if pending:
        run()
    if not rows:
        raise InputError(
            f"{video}: {decoded} frames decoded, fewer than the {wins.span} a window needs; "
            "nothing written"
        )
    summary: dict = {"video": str(video), "checkpoint": loaded.path, "task": loaded.task}
    summary.update(reconstruct=reconstruct, contract=contract.to_dict(), frames=rows)
    scored = [r for r in rows if "psnr" in r]
    for key in ("psnr", "ssim", "baseline_psnr", "baseline_ssim") if scored else ():
        summary[f"mean_{key}"] = float(np.mean([r[key] for r in scored]))
    listing = write_json_atomic(out / "frames.json", summary)
    if scored:
        notes.append(
            f"PSNR {summary['mean_psnr']:.2f} dB against the real frames (baseline "
            f"{summary['mean_baseline_psnr']:.2f} dB)"
        )
    return PredictReport(
        video=str(video),
        checkpoint=loaded.path,
        windows=len(rows),
        frames=decoded,
        decoded=decoded,
        seconds=time.perf_counter() - t0,
        reuse=False,
        outputs=[listing, out],
        notes=notes,
    )
